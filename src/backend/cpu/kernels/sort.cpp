// CPU kernel of sort (the primitive's rules: src/lax/sort.cpp). JAX's total order,
// described there, is a strict weak order, so std::sort and std::stable_sort are well
// defined on it.
//
// Real and integer keys go through Highway's vqsort (vectorized quicksort, dispatched at
// run time on the CPU's instruction set; 10-15x std::sort on 10^6 floats; loaded from its
// module on the first sort, vqsort/vqsort_loader.h):
//   values alone  NaNs are partitioned to the end, the rest sorted (floats as integers of
//                 the same order); a stable sort then rewrites the run of zeros with their
//                 signs in input order (-0 and 0 are equal keys, the only equal keys that
//                 differ), so the result is exactly the stable one.
//   by key        each key becomes an unsigned integer in the same order (-0 made 0, NaN
//                 the largest), packed above the element's position in the permutation,
//                 and the packed words are sorted: ties break by position, which makes
//                 every pass stable and the lexicographic multi-key sort come out.
// Complex keys keep std::sort with the (real, imag) order.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <vector>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/reductions_loops.h"
#include "backend/cpu/parallel_sort.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu/vqsort/vqsort_loader.h"
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

// The compute types vqsort sorts directly.
template <class A>
constexpr bool kVqsortValues = std::is_same_v<A, float> || std::is_same_v<A, double> ||
                               std::is_same_v<A, int16_t> || std::is_same_v<A, int32_t> ||
                               std::is_same_v<A, int64_t> || std::is_same_v<A, uint16_t> ||
                               std::is_same_v<A, uint32_t> || std::is_same_v<A, uint64_t>;

// Runs body(begin, end) over [0, n), split over the pool when the line is sorted alone
// and long. Short lines, and lines inside a chunk of the pool (each thread sorting lines
// of its own), call the body directly: handing it to parallel_for wraps it in a
// std::function per call, which made sorting 200000 rows of 8 floats 13% slower.
template <class Body>
void each_part(int64_t n, const Body& body) {
  if (n < cpu::kParallelGrain || cpu::in_parallel_chunk()) return body(int64_t{0}, n);
  cpu::parallel_for(n, cpu::kParallelGrain, body);
}

// Sorts p[0, n) ascending with vqsort; a long line sorted alone is sorted in parts on
// every thread and merged (parallel_sort.h), each part with a sorter of its own.
template <class I>
void vqsort_spread(const Vqsorter& sorter, I* p, size_t n) {
  const int parts = sort_parts(n);
  if (parts == 1) return sorter(p, n);
  sort_in_parts(p, n, parts, std::less<I>(), [](I* first, size_t count) { Vqsorter()(first, count); });
}

// A 128-bit unsigned integer as Highway's vqsort lays one out (the low word first).
struct U128 {
  uint64_t lo, hi;
};

void vqsort_spread(const Vqsorter& sorter, U128* p, size_t n) {
  auto words = [](U128* first) { return reinterpret_cast<uint64_t*>(first); };
  const int parts = sort_parts(n);
  if (parts == 1) return sorter.sort_pairs(words(p), n);
  auto less = [](const U128& a, const U128& b) { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo); };
  sort_in_parts(p, n, parts, less, [&](U128* first, size_t count) { Vqsorter().sort_pairs(words(first), count); });
}

// Sorts the n elements p[0], p[step], ... in JAX's order with vqsort into buf[0, n), in
// A, their real or integer compute type. `signs`: scratch for a stable sort's zero signs.
template <class T, class A>
void vqsort_line(const Vqsorter& sorter, const T* p, int64_t step, A* buf, int64_t n, bool stable,
                 std::vector<bool>& signs) {
  if constexpr (std::is_floating_point_v<A>) {
    // Sorted as signed integers in the same order (a negative float's magnitude bits
    // flipped): vqsort's float path (Highway 1.0.3) turns +inf into the largest finite
    // value. The elements are rewritten through bit_cast; the sorter, compiled apart,
    // reads the same bytes as integers. NaNs flip to integers outside those of -inf and
    // +inf; they are partitioned to the end (in input order for a stable sort).
    using I = std::conditional_t<sizeof(A) == 4, int32_t, int64_t>;
    auto flip_bits = [](I i) { return static_cast<I>(i ^ ((i >> (sizeof(I) * 8 - 1)) & std::numeric_limits<I>::max())); };
    auto flip = [&](A v) { return std::bit_cast<A>(flip_bits(std::bit_cast<I>(v))); };
    // A stable sort's zeros in input order, over the finished line's run of zeros.
    auto restore_zero_signs = [&](int64_t m) {
      A* zeros = std::lower_bound(buf, buf + m, A(0));
      for (bool negative : signs) *zeros++ = negative ? -A(0) : A(0);
    };
    // A long line sorted alone: split by value into a bucket per thread on the way into
    // buf (as integers), each bucket sorted and turned back into floats on its thread
    // while in cache (parallel_sort.h's sort_by_splitters). Lines with NaNs, and lines
    // of few distinct values, go the way below.
    if (const int parts = sort_parts(static_cast<size_t>(n)); parts > 1) {
      std::atomic<int64_t> zeros = 0;
      auto load = [&](size_t k) { return flip_bits(std::bit_cast<I>(static_cast<A>(p[static_cast<int64_t>(k) * step]))); };
      auto no_nans = [&](size_t lo, size_t hi) {
        int64_t chunk_nans = 0, chunk_zeros = 0;
        for (size_t k = lo; k < hi; ++k) {  // branch-free: vectorizes
          const A v = static_cast<A>(p[static_cast<int64_t>(k) * step]);
          chunk_nans += std::isnan(v);
          chunk_zeros += v == A(0);
        }
        zeros += chunk_zeros;
        return chunk_nans == 0;
      };
      auto sort_bucket = [&](I* first, size_t count) {
        Vqsorter()(first, count);
        for (I* e = first; e != first + count; ++e) *e = flip_bits(*e);
      };
      if (sort_by_splitters(static_cast<size_t>(n), parts, load, reinterpret_cast<I*>(buf), std::less<I>(), no_nans,
                            sort_bucket)) {
        signs.clear();
        if (stable && zeros) {
          for (int64_t k = 0; k < n; ++k)
            if (const A v = static_cast<A>(p[k * step]); v == A(0)) signs.push_back(std::signbit(v));
          restore_zero_signs(n);
        }
        return;
      }
    }
    std::atomic<int64_t> nans = 0, zeros = 0;
    each_part(n, [&](int64_t begin, int64_t end) {
      int64_t part_nans = 0, part_zeros = 0;
      for (int64_t k = begin; k < end; ++k) {  // branch-free: vectorizes
        const A v = static_cast<A>(p[k * step]);
        part_nans += std::isnan(v);
        part_zeros += v == A(0);
        buf[k] = flip(v);
      }
      nans += part_nans;
      zeros += part_zeros;
    });
    signs.clear();
    if (stable && zeros) {  // (compared as bits: a flipped -0 is a NaN pattern)
      const I plus = std::bit_cast<I>(flip(A(0))), minus = std::bit_cast<I>(flip(-A(0)));
      for (int64_t k = 0; k < n; ++k) {
        const I i = std::bit_cast<I>(buf[k]);
        if (i == plus || i == minus) signs.push_back(i == minus);
      }
    }
    int64_t m = n;
    if (nans) {
      const I lo = std::bit_cast<I>(flip(-std::numeric_limits<A>::infinity()));
      const I hi = std::bit_cast<I>(flip(std::numeric_limits<A>::infinity()));
      auto not_nan = [lo, hi](A f) { const I i = std::bit_cast<I>(f); return i >= lo && i <= hi; };
      m = (stable ? std::stable_partition(buf, buf + n, not_nan) : std::partition(buf, buf + n, not_nan)) - buf;
    }
    vqsort_spread(sorter, reinterpret_cast<I*>(buf), static_cast<size_t>(m));
    each_part(n, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) buf[k] = flip(buf[k]);
    });
    if (!signs.empty()) restore_zero_signs(m);  // the zeros' run, with their signs in input order
  } else {
    if (const int parts = sort_parts(static_cast<size_t>(n)); parts > 1) {
      auto load = [&](size_t k) { return static_cast<A>(p[static_cast<int64_t>(k) * step]); };
      auto any = [](size_t, size_t) { return true; };
      auto sort_bucket = [](A* first, size_t count) { Vqsorter()(first, count); };
      if (sort_by_splitters(static_cast<size_t>(n), parts, load, buf, std::less<A>(), any, sort_bucket)) return;
    }
    each_part(n, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) buf[k] = static_cast<A>(p[k * step]);
    });
    vqsort_spread(sorter, buf, static_cast<size_t>(n));
  }
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
    // Grown on the first line not sorted in place: a contiguous output needs none, and
    // allocating (and zeroing) it anyway cost 0.4 ms of a 10^6-float sort's 11.
    reduction_loops::Scratch<A> buf;
    std::vector<int64_t> off(2);
    [[maybe_unused]] std::optional<Vqsorter> sorter;
    std::vector<bool> signs;
    if constexpr (kVqsortValues<A>) sorter.emplace();
    for (int64_t line = begin; line < end; ++line) {
      lay.offsets(line, off);
      const T* p = x0 + off[0];
      T* q = y0 + off[1];
      if constexpr (kVqsortValues<A>) {
        if constexpr (std::is_same_v<A, T>) {
          if (out_step == 1) {  // sorted in place in the output (a contiguous line)
            vqsort_line(*sorter, p, in_step, q, n, stable, signs);
            continue;
          }
        }
        buf.grow(n);
        vqsort_line(*sorter, p, in_step, buf.data(), n, stable, signs);
      } else {
        buf.grow(n);
        for (int64_t k = 0; k < n; ++k) buf[k] = static_cast<A>(p[k * in_step]);
        sort_nan_last(buf.data(), buf.data() + n, stable, [](const A& v) -> const A& { return v; });
      }
      for (int64_t k = 0; k < n; ++k) q[k * out_step] = static_cast<T>(buf[k]);
    }
  });
}

// An unsigned integer in JAX's order of a real or integer key: -0 as 0, every NaN the
// largest (the one canonical NaN's bits), integers offset so that signed order becomes
// unsigned order.
template <class A>
auto ordered_bits(A v) {
  if constexpr (std::is_floating_point_v<A>) {
    using U = std::conditional_t<sizeof(A) == 4, uint32_t, uint64_t>;
    if (std::isnan(v)) return std::numeric_limits<U>::max();
    const U bits = std::bit_cast<U>(v == A(0) ? A(0) : v);
    constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
    return (bits & sign) ? U(~bits) : U(bits | sign);
  } else if constexpr (std::is_same_v<A, bool>) {
    return static_cast<uint8_t>(v);
  } else {
    using U = std::make_unsigned_t<A>;
    return static_cast<U>(static_cast<U>(v) ^ (std::is_signed_v<A> ? U(1) << (sizeof(U) * 8 - 1) : U(0)));
  }
}

// Orders `perm` (indices into one line) by one key operand, stably (ties keep their
// order in perm, so later passes over more significant keys give the lexicographic
// order): the keys' ordered bits above each one's position in perm, sorted as one
// unsigned word (64 bits for keys up to 32 bits, 128 above). `identity`: perm is 0, 1,
// ... (the first pass), so positions are indices and need no lookup.
template <class T>
void sort_perm_by_key(const T* line, int64_t step, std::vector<int64_t>& perm, bool stable, bool identity) {
  using A = jx::detail::compute_t<T>;
  const size_t n = perm.size();
  if constexpr (is_complex_v<A>) {
    struct Entry {
      A key;
      int64_t index;
    };
    std::unique_ptr<Entry[]> entries(new Entry[n]);
    for (size_t k = 0; k < n; ++k) entries[k] = {static_cast<A>(line[perm[k] * step]), perm[k]};
    sort_nan_last(entries.get(), entries.get() + n, stable, [](const Entry& e) -> const A& { return e.key; });
    for (size_t k = 0; k < n; ++k) perm[k] = entries[k].index;
  } else {
    const Vqsorter sorter;
    std::vector<int64_t> order;
    if (!identity) order = perm;
    auto index = [&](uint64_t position) { return identity ? static_cast<int64_t>(position) : order[position]; };
    if (sizeof(ordered_bits(A())) <= 4 && n <= std::numeric_limits<uint32_t>::max()) {
      std::unique_ptr<uint64_t[]> words(new uint64_t[n]);
      each_part(n, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k)
          words[k] = (static_cast<uint64_t>(ordered_bits(static_cast<A>(line[perm[k] * step]))) << 32) | k;
      });
      vqsort_spread(sorter, words.get(), n);
      each_part(n, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) perm[k] = index(words[k] & 0xffffffffu);
      });
    } else {
      // Pairs {lo, hi} sorted as 128-bit integers: the key's bits high, the position low.
      std::unique_ptr<U128[]> words(new U128[n]);
      each_part(n, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k)
          words[k] = {static_cast<uint64_t>(k), static_cast<uint64_t>(ordered_bits(static_cast<A>(line[perm[k] * step])))};
      });
      vqsort_spread(sorter, words.get(), n);
      each_part(n, [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) perm[k] = index(words[k].lo);
      });
    }
  }
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
          sort_perm_by_key<K>(jx::detail::data<K>(ops[k]) + off[k], lay.step[k], perm, stable || k != num_keys - 1,
                              k == num_keys - 1);
        });
      }
      sort_perm_by_key<T>(jx::detail::data<T>(ops[0]) + off[0], lay.step[0], perm, stable || num_keys > 1,
                          num_keys == 1);
      for (size_t i = 0; i < num_ops; ++i) {
        dispatch_dtype(ops[i].dtype(), [&]<class V>() {
          const V* p = jx::detail::data<V>(ops[i]) + off[i];
          V* q = jx::detail::mutable_data<V>(outs[i]) + off[num_ops];
          const int64_t in_step = lay.step[i], out_step = lay.step[num_ops];
          each_part(n, [&](int64_t begin, int64_t end) {
            for (int64_t k = begin; k < end; ++k) q[k * out_step] = p[perm[k] * in_step];
          });
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
