// CPU kernel of conv_general_dilated (the primitive's rules: src/lax/conv.cpp): im2col
// followed by one matrix product per image and group (BLAS for float and complex types,
// the blocked loop for integers).
#include <algorithm>
#include <functional>

#include "backend/cpu/blas.h"
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/thread_pool.h"
#include "core/array_internal.h"
#include "lax/conv_params.h"

namespace jx::cpu {
namespace {

using lax::conv_params::ConvGeometry;
using lax::conv_params::read_geometry;

// x's dims reordered by `spec` (batch/feature first, then spatial), as contiguous T.
template <class T>
Array pack_canonical(const Array& x, const std::vector<int64_t>& spec) {
  Shape shape;
  std::vector<int64_t> strides;
  for (int64_t d : spec) {
    shape.push_back(x.shape()[d]);
    strides.push_back(detail::strides(x)[d]);
  }
  Array view = detail::make_view(x, Aval{shape, x.dtype(), false}, strides, x.impl().offset);
  Array packed = detail::alloc_array(Aval{shape, dtype_of<T>, false});
  view.copy_to(detail::mutable_data<T>(packed), dtype_of<T>);
  return packed;
}

// For each spatial dim, the input index read by kernel tap k at output position o, or
// -1 where that falls on padding or between dilated input elements.
std::vector<std::vector<int64_t>> tap_tables(const ConvGeometry& g) {
  std::vector<std::vector<int64_t>> tables;
  for (int64_t s = 0; s < g.num_spatial(); ++s) {
    const int64_t nk = g.kernel_spatial[s], no = g.out_spatial[s];
    std::vector<int64_t> t(static_cast<size_t>(nk * no), -1);
    for (int64_t k = 0; k < nk; ++k)
      for (int64_t o = 0; o < no; ++o) {
        const int64_t pos = o * g.strides[s] + k * g.rhs_dilation[s] - g.pad_lo[s];
        if (pos < 0 || pos % g.lhs_dilation[s] != 0) continue;
        const int64_t q = pos / g.lhs_dilation[s];
        if (q < g.in_spatial[s]) t[k * no + o] = q;
      }
    tables.push_back(std::move(t));
  }
  return tables;
}

// Fills cols[(c, taps), out positions] from one image of `channels` channels.
template <class T>
void im2col(const T* image, int64_t channels, const ConvGeometry& g, const std::vector<std::vector<int64_t>>& tables,
            T* cols) {
  const int64_t ns = g.num_spatial();
  const int64_t in_size = shape_size(g.in_spatial), taps = shape_size(g.kernel_spatial);
  std::vector<int64_t> in_strides = detail::contiguous_strides(g.in_spatial);
  std::vector<int64_t> tap(static_cast<size_t>(ns));
  T* dst = cols;
  // Writes every output position for one (channel, tap): spatial dims outermost first.
  std::function<void(int64_t, const T*, bool)> row = [&](int64_t s, const T* src, bool valid) {
    const int64_t no = g.out_spatial[s];
    const int64_t* t = tables[s].data() + tap[s] * no;
    if (s == ns - 1) {
      for (int64_t o = 0; o < no; ++o) *dst++ = (valid && t[o] >= 0) ? src[t[o] * in_strides[s]] : T(0);
      return;
    }
    for (int64_t o = 0; o < no; ++o) row(s + 1, src + std::max<int64_t>(t[o], 0) * in_strides[s], valid && t[o] >= 0);
  };
  for (int64_t c = 0; c < channels; ++c) {
    const T* img = image + c * in_size;
    if (ns == 0) {
      *dst++ = *img;
      continue;
    }
    std::fill(tap.begin(), tap.end(), 0);
    for (int64_t k = 0; k < taps; ++k) {
      row(0, img, true);
      for (int64_t s = ns - 1; s >= 0; --s) {  // next tap (odometer)
        if (++tap[s] < g.kernel_spatial[s]) break;
        tap[s] = 0;
      }
    }
  }
}

template <class T>
void conv_kernel(const Array& lhs, const Array& rhs, const ConvGeometry& g, T* out) {
  Array lhs_c = pack_canonical<T>(lhs, g.lhs_spec);  // (N, C, spatial...)
  Array rhs_c = pack_canonical<T>(rhs, g.rhs_spec);  // (O, I, taps...)
  const T* x = detail::data<T>(lhs_c);
  const T* w = detail::data<T>(rhs_c);
  const int64_t groups = std::max(g.feature_groups, g.batch_groups);
  const int64_t out_batch = g.batch / g.batch_groups;
  const int64_t group_out = g.out_features / groups;
  const int64_t channels = g.kernel_in_features;
  const int64_t in_size = shape_size(g.in_spatial), taps = shape_size(g.kernel_spatial);
  const int64_t out_size = shape_size(g.out_spatial);
  const int64_t depth = channels * taps;
  const auto tables = tap_tables(g);
  auto run = [&](int64_t begin, int64_t end) {
    std::vector<T> cols(static_cast<size_t>(depth * out_size));
    for (int64_t job = begin; job < end; ++job) {
      const int64_t n = job / groups, grp = job % groups;
      // Feature groups take a slice of the channels; batch groups a slice of the batch
      // (group-major: lhs image grp * out_batch + n), each for its own output features.
      const int64_t image = g.batch_groups > 1 ? grp * out_batch + n : n;
      const int64_t first_channel = g.feature_groups > 1 ? grp * channels : 0;
      im2col(x + (image * g.in_features + first_channel) * in_size, channels, g, tables, cols.data());
      cpu::matmul<T>(group_out, out_size, depth, w + grp * group_out * depth, depth, cols.data(), out_size,
                     out + (n * g.out_features + grp * group_out) * out_size, out_size);
    }
  };
  const int64_t jobs = out_batch * groups;
  const int64_t work = std::max<int64_t>(1, group_out * out_size * depth);
  // Small products leave BLAS single-threaded, so spread the images over threads; large
  // ones run one after another with BLAS's own threads (nesting both oversubscribes).
  if (work < (int64_t{1} << 18)) cpu::parallel_for(jobs, std::max<int64_t>(1, cpu::kParallelGrain / work), run);
  else run(0, jobs);
}

std::vector<Array> conv_impl(std::span<const Array> in, const Params& p, std::span<const Aval> out_avals) {
  const Aval& out_aval = out_avals[0];
  Array out = detail::alloc_array(out_aval);
  if (out_aval.size() == 0) return {out};
  const ConvGeometry g = read_geometry(in[0].aval(), in[1].aval(), p);
  const DType dtype = out_aval.dtype;
  const DType compute = (dtype == DType::Float16 || dtype == DType::BFloat16) ? DType::Float32 : dtype;
  // The canonical (N, O, spatial...) result, then permuted into out_spec's layout.
  Shape canon_shape{g.batch / g.batch_groups, g.out_features};
  canon_shape.insert(canon_shape.end(), g.out_spatial.begin(), g.out_spatial.end());
  Array canon = detail::alloc_array(Aval{canon_shape, compute, false});
  dispatch_dtype(compute, [&]<class T>() {
    if constexpr (!is_half_v<T> && !std::is_same_v<T, bool>)
      conv_kernel<T>(in[0], in[1], g, detail::mutable_data<T>(canon));
  });
  const auto canon_strides = detail::contiguous_strides(canon_shape);
  std::vector<int64_t> view_strides(canon_shape.size());
  for (size_t c = 0; c < canon_shape.size(); ++c) view_strides[g.out_spec[c]] = canon_strides[c];
  Array view = detail::make_view(canon, Aval{out_aval.shape, compute, false}, view_strides, 0);
  view.copy_to(detail::mutable_data<void>(out), dtype);
  return {out};
}

}  // namespace

void add_conv_kernels(detail::KernelTable& table) { table.add("conv_general_dilated", conv_impl); }

}  // namespace jx::cpu
