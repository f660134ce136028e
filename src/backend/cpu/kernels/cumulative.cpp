// CPU kernels of cumsum, cumprod, cummax and cummin (the primitives' rules:
// src/lax/cumulative.cpp). Sums run sequentially, as NumPy's cumsum, accumulating in
// float for float16/bfloat16 and in wrapping unsigned arithmetic for integers.
//
// When the scanned axis is innermost in memory each line is scanned on its own; when
// a kept dim is innermost, whole rows are scanned together (a tile of accumulators
// per task), so reads stay contiguous either way.
#include <algorithm>
#include <cstdlib>
#include <vector>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/reductions_loops.h"
#include "backend/cpu/thread_pool.h"
#include "core/array_internal.h"
#include "lax/reduction_ops.h"
#include "lax/rules.h"

namespace jx::cpu {
namespace {

using jx::detail::fail;
using namespace lax::kernels;
using namespace reduction_loops;
namespace rules = lax::rules;

constexpr int64_t kTile = 256;  // lines one tiled task scans side by side

template <class Op, class T>
void cumulative_kernel(const Array& x, int64_t axis, bool reverse, Array& result) {
  using Acc = typename Op::Acc;
  const Shape& shape = x.shape();
  if (shape_size(shape) == 0) return;
  const std::vector<int64_t>& in_strides = jx::detail::strides(x);
  const std::vector<int64_t>& out_strides = jx::detail::strides(result);
  const int64_t n = shape[axis];
  // Scanning backwards is scanning forwards from the last element with negated strides.
  int64_t in_step = in_strides[axis], out_step = out_strides[axis];
  int64_t in_start = 0, out_start = 0;
  if (reverse) {
    in_start = (n - 1) * in_step;
    out_start = (n - 1) * out_step;
    in_step = -in_step;
    out_step = -out_step;
  }
  Shape kept_shape = shape;
  std::vector<int64_t> kept_in = in_strides, kept_out = out_strides;
  kept_shape.erase(kept_shape.begin() + axis);
  kept_in.erase(kept_in.begin() + axis);
  kept_out.erase(kept_out.begin() + axis);
  const cpu::StridedLoop<2> kept(kept_shape, {&kept_in, &kept_out});
  const T* x0 = jx::detail::data<T>(x) + in_start;
  T* y0 = jx::detail::mutable_data<T>(result) + out_start;
  const int64_t lines = shape_size(kept_shape);
  const int64_t kept_cols = kept.inner_size();
  const int64_t kin = kept.strides[0].back(), kout = kept.strides[1].back();
  const bool tiled = lines > 1 && kept_cols >= 8 && std::abs(kin) < std::abs(in_step);

  if (!tiled) {
    const int64_t grain = std::max<int64_t>(1, cpu::kParallelGrain / n);
    cpu::parallel_for(lines, grain, [&](int64_t begin, int64_t end) {
      LoopCursor<2> cursor(kept, begin);
      for (int64_t line = begin; line < end; ++line, cursor.next()) {
        const T* p = x0 + cursor.offset(0);
        T* q = y0 + cursor.offset(1);
        Acc acc = Op::identity();
        for (int64_t k = 0; k < n; ++k) {
          acc = Op::combine(acc, Op::load(p[k * in_step]));
          q[k * out_step] = Op::store(acc);
        }
      }
    });
    return;
  }
  const int64_t segs = (kept_cols + kTile - 1) / kTile;
  const int64_t tiles = kept.outer_size() * segs;
  const int64_t grain = std::max<int64_t>(1, cpu::kParallelGrain / (n * std::min(kept_cols, kTile)));
  cpu::parallel_for(tiles, grain, [&](int64_t begin, int64_t end) {
    Scratch<Acc> acc(kTile);
    for (int64_t tile = begin; tile < end; ++tile) {
      const int64_t krow = tile / segs, j0 = (tile % segs) * kTile;
      const int64_t w = std::min(kTile, kept_cols - j0);
      const auto off = row_offset(kept, krow);
      const T* p = x0 + off[0] + j0 * kin;
      T* q = y0 + off[1] + j0 * kout;
      std::fill_n(acc.data(), w, Op::identity());
      for (int64_t k = 0; k < n; ++k, p += in_step, q += out_step) {
        if (kin == 1 && kout == 1) {
          for (int64_t j = 0; j < w; ++j) {
            acc[j] = Op::combine(acc[j], Op::load(p[j]));
            q[j] = Op::store(acc[j]);
          }
        } else {
          for (int64_t j = 0; j < w; ++j) {
            acc[j] = Op::combine(acc[j], Op::load(p[j * kin]));
            q[j * kout] = Op::store(acc[j]);
          }
        }
      }
    }
  });
}

template <template <class> class OpT>
ImplRule cumulative_impl(std::string op) {
  return [op](std::span<const Array> in, const Params& params, std::span<const Aval> out_avals) {
    const Array& x = in[0];
    const int64_t axis = rules::canonical_axis(op, params.get_int("axis"), x.ndim(), x.shape());
    const bool reverse = params.get_bool("reverse");
    Array result = jx::detail::alloc_array(out_avals[0]);
    dispatch_dtype(x.dtype(), [&]<class T>() {
      if constexpr (OpT<T>::kSupported) cumulative_kernel<OpT<T>, T>(x, axis, reverse, result);
      else fail(op, "unsupported dtype ", dtype_name(x.dtype()));  // the shape rule rejects it first
    });
    return std::vector<Array>{result};
  };
}

}  // namespace

void add_cumulative_kernels(detail::KernelTable& table) {
  table.add("cumsum", cumulative_impl<SumOp>("cumsum"));
  table.add("cumprod", cumulative_impl<ProdOp>("cumprod"));
  table.add("cummax", cumulative_impl<MaxOp>("cummax"));
  table.add("cummin", cumulative_impl<MinOp>("cummin"));
}

}  // namespace jx::cpu
