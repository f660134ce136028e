// CPU kernel of sort (the primitive's rules: src/lax/sort.cpp). JAX's total order,
// described there, is a strict weak order, so std::sort and std::stable_sort are well
// defined on it.
#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <vector>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/reductions_loops.h"
#include "backend/cpu/thread_pool.h"
#include "core/array_internal.h"
#include "core/convert.h"
#include "lax/rules.h"

namespace jx::cpu {
namespace {

namespace rules = lax::rules;

template <class R>
inline bool real_less(R a, R b) {
  return !std::isnan(a) && (std::isnan(b) || a < b);
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
    reduction_loops::Scratch<A> buf(n);
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

}  // namespace

void add_sort_kernels(detail::KernelTable& table) { table.add("sort", sort_impl); }

}  // namespace jx::cpu
