// sort: sorts several operands of one shape along `dimension`, ordered
// lexicographically by the first `num_keys` of them (XLA's variadic sort; argsort is
// sort((x, iota)) with num_keys=1).
//
// The order is JAX's total order: -inf < ... < -0 == 0 < ... < inf < NaN, every NaN
// equal to every other, complex numbers by real part then imaginary part. That is a
// strict weak order, so std::sort and std::stable_sort are well defined on it.
#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <vector>

#include "core/convert.h"
#include "backend/cpu/thread_pool.h"
#include "jx/lax.h"
#include "lax/batch_rules.h"
#include "lax/reduction_ops.h"
#include "lax/rules.h"

namespace jx::lax {
namespace {

using jx::detail::fail;

template <class R>
inline bool real_less(R a, R b) {
  return !std::isnan(a) && (std::isnan(b) || a < b);
}

std::vector<Aval> sort_rule(std::span<const Aval> in, const Params& params) {
  if (in.empty()) fail("sort", "needs at least one operand");
  const int64_t num_keys = params.get_int("num_keys");
  if (num_keys < 1 || num_keys > static_cast<int64_t>(in.size()))
    fail("sort", "num_keys=", num_keys, " must be between 1 and the number of operands (", in.size(), ")");
  for (const Aval& a : in)
    if (a.shape != in[0].shape) fail("sort", "operands must have the same shape, got ", rules::avals_str(in));
  rules::canonical_axis("sort", params.get_int("dimension"), in[0].ndim(), in[0].shape);
  (void)params.get_bool("is_stable");
  return std::vector<Aval>(in.begin(), in.end());
}

// Where each operand's line starts, for every line (all indices but `dimension`).
struct SortLayout {
  Shape kept_shape;
  std::vector<std::vector<int64_t>> kept_strides;  // per operand, then the output
  std::vector<int64_t> step;                       // per operand, then the output
  int64_t n = 0, lines = 0;

  SortLayout(std::span<const Array> in, const Array& out, int64_t dim) {
    const Shape& shape = in[0].shape();
    n = shape[dim];
    kept_shape = shape;
    kept_shape.erase(kept_shape.begin() + dim);
    lines = shape_size(kept_shape);
    auto add = [&](const std::vector<int64_t>& strides) {
      std::vector<int64_t> s = strides;
      step.push_back(s[dim]);
      s.erase(s.begin() + dim);
      kept_strides.push_back(std::move(s));
    };
    for (const Array& a : in) add(jx::detail::strides(a));
    add(jx::detail::strides(out));
  }
  // Element offset of `line`'s first element in operand k (k == number of operands: the outputs).
  void offsets(int64_t line, std::vector<int64_t>& off) const {
    std::fill(off.begin(), off.end(), 0);
    for (size_t d = kept_shape.size(); d-- > 0;) {
      const int64_t i = line % kept_shape[d];
      line /= kept_shape[d];
      for (size_t k = 0; k < off.size(); ++k) off[k] += i * kept_strides[k][d];
    }
  }
};

// Sorts [first, last) in the total order. Real NaNs are moved to the end first
// (keeping their order), so the rest sorts with the plain `<`, which already treats
// -0 and 0 as equal. `key` maps an element to its compute-type key.
template <class It, class Key>
void sort_nan_last(It first, It last, bool stable, Key key) {
  using A = std::remove_cvref_t<decltype(key(*first))>;
  if constexpr (std::is_floating_point_v<A>) {
    auto not_nan = [&](const auto& e) { return !std::isnan(key(e)); };
    last = stable ? std::stable_partition(first, last, not_nan) : std::partition(first, last, not_nan);
  }
  auto less = [&](const auto& a, const auto& b) {
    if constexpr (is_complex_v<A>) {  // (real, imag) with NaN greatest in each: rare, so not partitioned
      const A ka = key(a), kb = key(b);
      return real_less(ka.real(), kb.real()) ||
             (!real_less(kb.real(), ka.real()) && real_less(ka.imag(), kb.imag()));
    } else {
      return key(a) < key(b);
    }
  };
  if (stable) std::stable_sort(first, last, less);
  else std::sort(first, last, less);
}

// One operand: sort each line's values directly, in the compute type (float16 and
// bfloat16 round-trip through float exactly).
template <class T>
void sort_values(const Array& x, Array& out, const SortLayout& lay, bool stable) {
  using A = jx::detail::compute_t<T>;
  const T* x0 = jx::detail::data<T>(x);
  T* y0 = jx::detail::mutable_data<T>(out);
  const int64_t n = lay.n, in_step = lay.step[0], out_step = lay.step[1];
  cpu::parallel_for(lay.lines, std::max<int64_t>(1, cpu::kParallelGrain / n), [&](int64_t begin, int64_t end) {
    kernels::Scratch<A> buf(n);
    std::vector<int64_t> off(2);
    for (int64_t line = begin; line < end; ++line) {
      lay.offsets(line, off);
      const T* p = x0 + off[0];
      for (int64_t k = 0; k < n; ++k) buf[k] = static_cast<A>(p[k * in_step]);
      sort_nan_last(buf.data(), buf.data() + n, stable, [](const A& v) -> const A& { return v; });
      T* q = y0 + off[1];
      for (int64_t k = 0; k < n; ++k) q[k * out_step] = static_cast<T>(buf[k]);
    }
  });
}

// Orders `perm` (indices into one line) by one key operand, sorting (key, index)
// pairs so comparisons read adjacent memory. Later passes over earlier keys must be
// stable for the lexicographic order to come out.
template <class T>
void sort_perm_by_key(const T* line, int64_t step, std::vector<int64_t>& perm, bool stable) {
  using A = jx::detail::compute_t<T>;
  struct Entry {
    A key;
    int64_t index;
  };
  const size_t n = perm.size();
  std::unique_ptr<Entry[]> entries(new Entry[n]);
  for (size_t k = 0; k < n; ++k) entries[k] = {static_cast<A>(line[perm[k] * step]), perm[k]};
  sort_nan_last(entries.get(), entries.get() + n, stable, [](const Entry& e) -> const A& { return e.key; });
  for (size_t k = 0; k < n; ++k) perm[k] = entries[k].index;
}

template <class T>
void sort_by_key(const std::vector<Array>& ops, std::vector<Array>& outs, const SortLayout& lay, int64_t num_keys,
                 bool stable) {
  const size_t num_ops = ops.size();
  const int64_t n = lay.n;
  cpu::parallel_for(lay.lines, std::max<int64_t>(1, cpu::kParallelGrain / n), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> perm(static_cast<size_t>(n)), off(num_ops + 1);
    for (int64_t line = begin; line < end; ++line) {
      lay.offsets(line, off);
      std::iota(perm.begin(), perm.end(), int64_t{0});
      // Least significant key first; the primary key (typed T, dispatched once) last.
      for (int64_t k = num_keys - 1; k >= 1; --k) {
        dispatch_dtype(ops[k].dtype(), [&]<class K>() {
          sort_perm_by_key<K>(jx::detail::data<K>(ops[k]) + off[k], lay.step[k], perm, stable || k != num_keys - 1);
        });
      }
      sort_perm_by_key<T>(jx::detail::data<T>(ops[0]) + off[0], lay.step[0], perm, stable || num_keys > 1);
      for (size_t i = 0; i < num_ops; ++i) {
        dispatch_dtype(ops[i].dtype(), [&]<class V>() {
          const V* p = jx::detail::data<V>(ops[i]) + off[i];
          V* q = jx::detail::mutable_data<V>(outs[i]) + off[num_ops];
          const int64_t in_step = lay.step[i], out_step = lay.step[num_ops];
          for (int64_t k = 0; k < n; ++k) q[k * out_step] = p[perm[k] * in_step];
        });
      }
    }
  });
}

std::vector<Array> sort_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out_avals) {
  const int64_t dim = rules::canonical_axis("sort", params.get_int("dimension"), in[0].ndim(), in[0].shape());
  const bool stable = params.get_bool("is_stable");
  const int64_t num_keys = params.get_int("num_keys");
  std::vector<Array> outs;
  for (const Aval& a : out_avals) outs.push_back(jx::detail::alloc_array(a));
  if (in[0].size() == 0) return outs;
  const SortLayout lay(in, outs[0], dim);
  if (in.size() == 1) {
    dispatch_dtype(in[0].dtype(), [&]<class T>() { sort_values<T>(in[0], outs[0], lay, stable); });
  } else {
    std::vector<Array> ops(in.begin(), in.end());
    dispatch_dtype(in[0].dtype(), [&]<class T>() { sort_by_key<T>(ops, outs, lay, num_keys, stable); });
  }
  return outs;
}

extern const Primitive sort_p;

// x[..., perm[...], ...] along `dim` (take_along_axis) as a gather: the index vector
// of every output element is its own position with `perm` substituted at `dim`.
Array take_along(const Array& x, const Array& perm, int64_t dim) {
  const Shape& shape = x.shape();
  const int64_t rank = x.ndim();
  Shape column_shape = shape;
  column_shape.push_back(1);
  std::vector<int64_t> keep(static_cast<size_t>(rank));
  std::iota(keep.begin(), keep.end(), int64_t{0});
  std::vector<Array> columns;
  for (int64_t d = 0; d < rank; ++d) {
    Array position = d == dim ? perm : broadcasted_iota(perm.dtype(), shape, static_cast<int>(d));
    columns.push_back(broadcast_in_dim(position, column_shape, keep));
  }
  GatherDimensionNumbers dn;
  dn.collapsed_slice_dims = keep;
  dn.start_index_map = keep;
  return gather(x, concatenate(columns, rank), dn, Shape(static_cast<size_t>(rank), 1));
}

// jvp: sort the operands together with an iota to learn the permutation, then apply
// it to the tangents with a gather (linear, so reverse mode can transpose it).
JvpResult sort_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
  const Shape& shape = primals[0].shape();
  const int64_t dim = rules::canonical_axis("sort", params.get_int("dimension"), primals[0].ndim(), shape);
  const DType index_dtype = shape[dim] <= INT32_MAX ? DType::Int32 : DType::Int64;
  std::vector<Array> operands(primals.begin(), primals.end());
  operands.push_back(broadcasted_iota(index_dtype, shape, static_cast<int>(dim)));
  std::vector<Array> sorted = jx::bind(sort_p, operands, params);
  const Array perm = sorted.back();
  sorted.pop_back();
  std::vector<Array> tangents_out(primals.size());
  for (size_t i = 0; i < primals.size(); ++i)
    if (tangents[i].valid()) tangents_out[i] = take_along(tangents[i], perm, dim);
  return {sorted, tangents_out};
}

// Batching: operands share one shape, so all get the batch axis in front (unmapped
// ones broadcast, a view) and the sorted dimension shifts by one.
BatchResult sort_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                       const BatchAxis& axis) {
  std::vector<Array> in;
  for (size_t i = 0; i < args.size(); ++i) in.push_back(batch_rules::batch_to_front(args[i], dims[i], axis.size));
  const int64_t rank = in[0].ndim() - 1;
  Shape inner(in[0].shape().begin() + 1, in[0].shape().end());
  Params batched = params;
  batched.set("dimension", rules::canonical_axis("sort", params.get_int("dimension"), rank, inner) + 1);
  std::vector<Array> out = jx::bind(sort_p, in, batched);
  return {out, std::vector<int64_t>(out.size(), 0)};
}

const Primitive sort_p("sort", {.traits = 0,
                                .num_outputs = -1,
                                .abstract_eval = sort_rule,
                                .impl = sort_impl,
                                .jvp = sort_jvp,
                                .transpose = {},
                                .batch = sort_batch});

}  // namespace

std::vector<Array> sort(const std::vector<Array>& operands, int64_t dimension, bool is_stable, int num_keys) {
  if (!operands.empty()) {
    const int64_t nd = operands[0].ndim();
    if (dimension < 0 && dimension >= -nd) dimension += nd;  // canonical in the IR
  }
  return bind(sort_p, operands,
              {{"dimension", dimension}, {"is_stable", is_stable}, {"num_keys", static_cast<int64_t>(num_keys)}});
}

Array sort(const Array& x, int64_t dimension, bool is_stable) { return sort({x}, dimension, is_stable, 1)[0]; }

}  // namespace jx::lax
