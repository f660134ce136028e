// CPU kernels of the reductions: reduce_sum, reduce_prod, reduce_max, reduce_min,
// reduce_and, reduce_or, argmax and argmin (the primitives' rules: src/lax/reductions.cpp).
//
// Layout decides the loop. When the reduced dims are innermost in memory ("inner"
// mode) each output reduces contiguous runs with eight accumulators and pairwise
// recursion, so float sums keep O(log n) error and vectorize. When a kept dim is
// innermost ("outer" mode) whole rows are added into an accumulator row, again
// combined pairwise. Work is split into chunks whose boundaries depend only on the
// shape, so results do not change with the thread count.
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>

#include <immintrin.h>
#include <vector>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/reductions_loops.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu/vector_math.h"
#include "core/array_internal.h"
#include "lax/reduction_ops.h"
#include "lax/rules.h"

namespace jx::cpu {
namespace {

using jx::detail::fail;
using namespace lax::kernels;
using namespace reduction_loops;
namespace rules = lax::rules;

constexpr int64_t kPairwiseBlock = 128;  // below this, one pass with eight accumulators
constexpr int64_t kInnerChunk = 1 << 14;  // elements of one output per inner-mode task
constexpr int64_t kOuterChunk = 1 << 10;  // reduced rows per outer-mode task
// Outputs one outer-mode task accumulates, at most: wide tiles read long runs of each
// row (a column sum of 4096 x 4096 floats in tiles of 1024 read 4 KiB runs 16 KiB apart
// and took 4.3 ms, in tiles of 4096 2.4 ms; NumPy 2.0), narrower ones (down to
// kMinTile) when the tiles would be too few to share among the threads. Each column's
// terms combine in the same order whatever the tile, so results do not depend on it.
constexpr int64_t kTile = 4096;
constexpr int64_t kMinTile = 512;

// The outer-mode tile for `rows` kept rows of `cols` outputs, each split in `chunks`.
int64_t outer_tile_width(int64_t rows, int64_t cols, int64_t chunks) {
  int64_t width = kTile;
  while (width > kMinTile && rows * ((cols + width - 1) / width) * chunks < 2 * cpu::num_threads()) width /= 2;
  return width;
}
constexpr int64_t kBlockRows = 8;        // rows added plainly before a pairwise step

// The extreme of a contiguous float run in the widest vectors the CPU (cpu::vector_isa())
// runs: block_extreme.inc, compiled once per ISA (the library is built for baseline x86-64,
// whose 16-byte vectors are a quarter of AVX-512's). Used by argmax/argmin's blocks and
// by max/min reductions of contiguous runs (a 65536-float max 8.2 -> 4.1 us on the AVX-512
// Xeon; NumPy 3.4).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq")
#define JX_EXTREME_BYTES 64
#define JX_EXTREME_NAME block_extreme_avx512
#include "backend/cpu/kernels/block_extreme.inc"
#undef JX_EXTREME_BYTES
#undef JX_EXTREME_NAME
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2")
#define JX_EXTREME_BYTES 32
#define JX_EXTREME_NAME block_extreme_avx2
#include "backend/cpu/kernels/block_extreme.inc"
#undef JX_EXTREME_BYTES
#undef JX_EXTREME_NAME
#pragma GCC pop_options
#define JX_EXTREME_BYTES 16
#define JX_EXTREME_NAME block_extreme_baseline
#include "backend/cpu/kernels/block_extreme.inc"
#undef JX_EXTREME_BYTES
#undef JX_EXTREME_NAME
#pragma GCC diagnostic pop

// The block extreme for the vector ISA in use (cpu::vector_isa(): the CPU's best unless
// configured lower).
template <bool kMax, class T, bool kIeee = false>
auto block_extreme_for(VectorIsa isa) {
  return isa == VectorIsa::Avx512 ? &block_extreme_avx512<kMax, kIeee, T>
         : isa == VectorIsa::Avx2 ? &block_extreme_avx2<kMax, kIeee, T>
                                  : &block_extreme_baseline<kMax, kIeee, T>;
}

// ---- reduction kernels ----

// Pairwise reduction of n elements p[0], p[st], ...: eight independent accumulators
// per block (vectorizable), halves combined recursively above kPairwiseBlock.
template <class Op, class T>
typename Op::Acc reduce_run(const T* p, int64_t n, int64_t st) {
  using Acc = typename Op::Acc;
  constexpr bool kFloatExtreme = (std::is_same_v<T, float> || std::is_same_v<T, double>) &&
                                 (std::is_same_v<Op, MaxOp<T>> || std::is_same_v<Op, MinOp<T>>);
  if constexpr (kFloatExtreme) {
    if (st == 1 && n > 0) {
      const auto extreme = block_extreme_for<std::is_same_v<Op, MaxOp<T>>, T, /*kIeee=*/true>(cpu::vector_isa());
      const T r = extreme(p, n);
      if (r == r) return r;
      Acc exact = Op::identity();  // a NaN: the run's first, as the other loops give
      for (int64_t k = 0; k < n; ++k) exact = Op::combine(exact, p[k]);
      return exact;
    }
  }
  if constexpr (VectorSelect<Op> && std::is_same_v<T, Acc>) {
    if (st == 1 && (!Pairwise<Op> || n <= kPairwiseBlock)) return reduce_contiguous_vector<Op>(p, n);
  }
  if (n > kPairwiseBlock) {
    int64_t half = (n / 2) & ~int64_t{7};
    return Op::combine(reduce_run<Op>(p, half, st), reduce_run<Op>(p + half * st, n - half, st));
  }
  Acc a[8];
  for (Acc& v : a) v = Op::identity();
  int64_t i = 0;
  if (st == 1) {
    for (; i + 8 <= n; i += 8) combine_row<Op>(a, p + i, 8);
  } else {
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; ++j) a[j] = Op::combine(a[j], Op::load(p[(i + j) * st]));
  }
  for (; i < n; ++i) a[0] = Op::combine(a[0], Op::load(p[i * st]));
  return Op::combine(Op::combine(Op::combine(a[0], a[1]), Op::combine(a[2], a[3])),
                     Op::combine(Op::combine(a[4], a[5]), Op::combine(a[6], a[7])));
}

// Pairwise combination of a stream of partials in O(log n) space: the k-th partial
// merges with earlier ones the way a binary counter carries.
template <class Op>
class Cascade {
 public:
  using Acc = typename Op::Acc;
  void push(Acc v) {
    for (uint64_t c = count_++; c & 1; c >>= 1) v = Op::combine(levels_[--depth_], v);
    levels_[depth_++] = v;
  }
  Acc result() const {
    Acc r = Op::identity();
    for (int i = 0; i < depth_; ++i) r = Op::combine(r, levels_[i]);
    return r;
  }

 private:
  Acc levels_[64];
  int depth_ = 0;
  uint64_t count_ = 0;
};

// The same cascade over rows of up to kTile accumulators (outer mode). Its levels are
// rows of the tile's width, room for every level of up to `pushes` rows made at reset
// (levels kTile apart, grown one at a time, made a sum over 1024 x 64 floats allocate,
// clear and copy half a megabyte a call: 71 us, NumPy's 18).
template <class Op>
class RowCascade {
 public:
  using Acc = typename Op::Acc;
  void reset(int64_t width, int64_t pushes) {
    width_ = width;
    depth_ = 0;
    count_ = 0;
    levels_.grow((std::bit_width(static_cast<uint64_t>(std::max<int64_t>(pushes, 1))) + 1) * width);
  }
  void push(const Acc* row) {
    levels_.grow((depth_ + 1) * width_);
    std::copy(row, row + width_, level(depth_));
    for (uint64_t c = count_++; c & 1; c >>= 1) {
      Acc* lo = level(depth_ - 1);
      const Acc* hi = level(depth_);
      for (int64_t j = 0; j < width_; ++j) lo[j] = Op::combine(lo[j], hi[j]);
      --depth_;
    }
    ++depth_;
  }
  // The combined row (valid after at least one push).
  const Acc* result() {
    Acc* r = level(0);
    for (int i = 1; i < depth_; ++i) {
      const Acc* li = level(i);
      for (int64_t j = 0; j < width_; ++j) r[j] = Op::combine(r[j], li[j]);
    }
    return r;
  }

 private:
  Acc* level(int i) { return levels_.data() + static_cast<int64_t>(i) * width_; }
  Scratch<Acc> levels_;
  int64_t width_ = 0;
  int depth_ = 0;
  uint64_t count_ = 0;
};

// The operand split into kept dims (output order) and reduced dims (memory order,
// negative strides flipped: the order of a reduction's terms is free).
struct ReduceLayout {
  Shape kept_shape, reduced_shape;
  std::vector<int64_t> kept_strides, reduced_strides;
  int64_t base = 0;  // element offset of reduced index 0 after flips
  int64_t out_size = 1, reduce_size = 1;

  ReduceLayout(const Array& x, const std::vector<int64_t>& axes) {
    const Shape& shape = x.shape();
    const std::vector<int64_t>& strides = jx::detail::strides(x);
    std::vector<std::pair<int64_t, int64_t>> reduced;  // (stride, size)
    for (size_t d = 0; d < shape.size(); ++d) {
      if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) == axes.end()) {
        kept_shape.push_back(shape[d]);
        kept_strides.push_back(strides[d]);
        out_size *= shape[d];
        continue;
      }
      reduce_size *= shape[d];
      int64_t s = strides[d];
      if (s < 0) {
        base += (shape[d] - 1) * s;
        s = -s;
      }
      reduced.emplace_back(s, shape[d]);
    }
    std::stable_sort(reduced.begin(), reduced.end(), [](auto& a, auto& b) { return a.first > b.first; });
    for (auto& [s, n] : reduced) {
      reduced_shape.push_back(n);
      reduced_strides.push_back(s);
    }
  }
};

template <class Op, class T>
void reduce_kernel(const Array& x, const std::vector<int64_t>& axes, Array& result) {
  using Acc = typename Op::Acc;
  const ReduceLayout lay(x, axes);
  T* out = jx::detail::mutable_data<T>(result);
  const int64_t O = lay.out_size, R = lay.reduce_size;
  if (O == 0) return;
  if (R == 0) {
    std::fill_n(out, O, Op::store(Op::identity()));
    return;
  }
  const cpu::StridedLoop<1> kept(lay.kept_shape, {&lay.kept_strides});
  const cpu::StridedLoop<1> reduced(lay.reduced_shape, {&lay.reduced_strides});
  const T* x0 = jx::detail::data<T>(x) + lay.base;
  const int64_t kept_cols = kept.inner_size(), kept_stride = kept.strides[0].back();
  const bool outer = O > 1 && kept_cols >= 8 && std::abs(kept_stride) < reduced.strides[0].back();

  if (!outer) {
    // Each task reduces one chunk of one output's elements.
    const int64_t chunks = (R + kInnerChunk - 1) / kInnerChunk;
    Scratch<Acc> partials(chunks > 1 ? O * chunks : 0);
    auto reduce_chunk = [&](const T* p, int64_t begin, int64_t end) -> Acc {
      if (reduced.ndim() == 1) return reduce_run<Op>(p + begin * reduced.strides[0][0], end - begin, reduced.strides[0][0]);
      Cascade<Op> cascade;
      for_runs(reduced, begin, end, [&](int64_t off, int64_t n, int64_t st) { cascade.push(reduce_run<Op>(p + off, n, st)); });
      return cascade.result();
    };
    const int64_t grain = std::max<int64_t>(1, cpu::kParallelGrain / std::min(R, kInnerChunk));
    cpu::parallel_for(O * chunks, grain, [&](int64_t begin, int64_t end) {
      int64_t o = begin / chunks, c = begin % chunks;
      LoopCursor<1> cursor(kept, o);
      for (int64_t t = begin; t < end; ++t) {
        Acc v = reduce_chunk(x0 + cursor.offset(), c * kInnerChunk, std::min(R, (c + 1) * kInnerChunk));
        if (chunks == 1) out[o] = Op::store(v);
        else partials[t] = v;
        if (++c == chunks) {
          c = 0;
          ++o;
          cursor.next();
        }
      }
    });
    if (chunks > 1) {
      for (int64_t o = 0; o < O; ++o) {
        combine_pairwise<Op>(&partials[o * chunks], chunks);
        out[o] = Op::store(partials[o * chunks]);
      }
    }
    return;
  }

  // Outer mode: a task owns a tile of up to kTile adjacent outputs (a segment of one
  // kept row) and adds kOuterChunk reduced rows into it.
  const int64_t chunks = (R + kOuterChunk - 1) / kOuterChunk;
  const int64_t tile_width = outer_tile_width(kept.outer_size(), kept_cols, chunks);
  const int64_t segs = (kept_cols + tile_width - 1) / tile_width;
  const int64_t tiles = kept.outer_size() * segs;
  const int64_t width = std::min(kept_cols, tile_width);
  Scratch<Acc> partials(chunks > 1 ? tiles * chunks * width : 0);
  const int64_t grain = std::max<int64_t>(1, cpu::kParallelGrain / (width * std::min(R, kOuterChunk)));
  cpu::parallel_for(tiles * chunks, grain, [&](int64_t begin, int64_t end) {
    RowCascade<Op> cascade;
    Scratch<Acc> block(width);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t tile = t / chunks, c = t % chunks;
      const int64_t krow = tile / segs, j0 = (tile % segs) * tile_width;
      const int64_t w = std::min(tile_width, kept_cols - j0);
      const T* row0 = x0 + row_offset(kept, krow)[0] + j0 * kept_stride;
      cascade.reset(w, (std::min(R, (c + 1) * kOuterChunk) - c * kOuterChunk + kBlockRows - 1) / kBlockRows);
      std::fill_n(block.data(), w, Op::identity());
      int64_t rows = 0;
      for_runs(reduced, c * kOuterChunk, std::min(R, (c + 1) * kOuterChunk), [&](int64_t off, int64_t n, int64_t st) {
        for (int64_t i = 0; i < n; ++i) {
          const T* p = row0 + off + i * st;
          Acc* b = block.data();
          if (kept_stride == 1) {
            combine_row<Op>(b, p, w);
          } else {
            for (int64_t j = 0; j < w; ++j) b[j] = Op::combine(b[j], Op::load(p[j * kept_stride]));
          }
          if (++rows == kBlockRows) {
            cascade.push(b);
            std::fill_n(block.data(), w, Op::identity());
            rows = 0;
          }
        }
      });
      if (rows) cascade.push(block.data());
      const Acc* sum = cascade.result();
      if (chunks == 1) {
        T* o = out + krow * kept_cols + j0;
        for (int64_t j = 0; j < w; ++j) o[j] = Op::store(sum[j]);
      } else {
        std::copy(sum, sum + w, partials.data() + t * width);
      }
    }
  });
  if (chunks > 1) {
    for (int64_t tile = 0; tile < tiles; ++tile) {
      const int64_t krow = tile / segs, j0 = (tile % segs) * tile_width;
      const int64_t w = std::min(tile_width, kept_cols - j0);
      Acc* first = &partials[tile * chunks * width];
      for (int64_t j = 0; j < w; ++j) {
        combine_pairwise<Op>(first + j, chunks, width);
        out[krow * kept_cols + j0 + j] = Op::store(first[j]);
      }
    }
  }
}

template <template <class> class OpT>
ImplRule reduce_impl(std::string op) {
  return [op](std::span<const Array> in, const Params& params, std::span<const Aval> out_avals) {
    const Array& x = in[0];
    std::vector<int64_t> axes = rules::canonical_axes(op, params.get_ints("axes"), x.shape());
    Array result = jx::detail::alloc_array(out_avals[0]);
    dispatch_dtype(x.dtype(), [&]<class T>() {
      if constexpr (OpT<T>::kSupported) reduce_kernel<OpT<T>, T>(x, axes, result);
      else fail(op, "unsupported dtype ", dtype_name(x.dtype()));  // the shape rule rejects it first
    });
    return std::vector<Array>{result};
  };
}

// ---- argmax / argmin ----

// Whether v replaces the current best b: strictly better (so the first index of the
// extreme wins), or the first NaN, which counts as the extreme (NumPy).
template <bool kMax, class A>
inline bool improves(const A& v, const A& b) {
  if constexpr (is_complex_v<A>) {
    if (is_nan(b)) return false;
    if (is_nan(v)) return true;
    return kMax ? complex_greater(v, b) : complex_greater(b, v);
  } else if constexpr (std::is_floating_point_v<A>) {
    return (kMax ? v > b : v < b) || (v != v && b == b);
  } else {
    return kMax ? v > b : v < b;
  }
}

// The index of a float row's first maximum (minimum), or of its first NaN, in two
// branch-free scans: the extreme (max/min select no NaN) with whether a NaN was seen,
// then the first index holding it. The one scan that kept the best so far branched on
// each comparison, mispredicting about ln(n) times a row of random values (argmax over
// rows of 10 floats: 12 ns a row).
// Longer rows scan in blocks where contiguous (float_arg_extreme_blocked), else keep the
// branching scan: its branches mispredict rarely there, and the select's dependent chain
// costs more (rows of 100: 0.9 -> 1.4 ms as two scans).
constexpr int64_t kShortScan = 32;
template <bool kMax, class T>
int64_t float_arg_extreme(const T* p, int64_t n, int64_t stride) {
  T m = p[0];
  bool nan = p[0] != p[0];
  for (int64_t k = 1; k < n; ++k) {
    const T v = p[k * stride];
    nan |= v != v;
    m = kMax ? (v > m ? v : m) : (v < m ? v : m);
  }
  int64_t first = n;
  for (int64_t k = n; k-- > 0;) {
    const T v = p[k * stride];
    const bool hit = nan ? v != v : v == m;
    first = hit ? k : first;
  }
  return first;
}

// A contiguous float row that fits one AVX-512 register (16 floats, 8 doubles): one
// masked load (the lanes past the row hold the extreme's identity), a NaN test, the
// register's extreme, and the first lane equal to it. Branch-free but for the NaN test,
// where the two scalar scans took about 3 ns a row of 10 (argmax over 160000 x 10
// floats: 862 -> 290 us).
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq")
// The extreme of a register without NaN, halving it. GCC 12's extract intrinsics warn of
// an uninitialized value inside their own header (the merge operand they pass unmasked).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <bool kMax>
float register_extreme(__m512 v) {
  auto pick = [](auto a, auto b) {
    if constexpr (sizeof(a) == 32) return kMax ? _mm256_max_ps(a, b) : _mm256_min_ps(a, b);
    else return kMax ? _mm_max_ps(a, b) : _mm_min_ps(a, b);
  };
  const __m256 h = pick(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 q = pick(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = pick(q, _mm_movehl_ps(q, q));
  q = pick(q, _mm_shuffle_ps(q, q, 1));
  return _mm_cvtss_f32(q);
}
template <bool kMax>
double register_extreme(__m512d v) {
  auto pick = [](auto a, auto b) {
    if constexpr (sizeof(a) == 32) return kMax ? _mm256_max_pd(a, b) : _mm256_min_pd(a, b);
    else return kMax ? _mm_max_pd(a, b) : _mm_min_pd(a, b);
  };
  const __m256d h = pick(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
  __m128d q = pick(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
  q = pick(q, _mm_unpackhi_pd(q, q));
  return _mm_cvtsd_f64(q);
}
template <bool kMax>
int64_t register_arg_extreme(const float* p, int64_t n) {
  const auto live = static_cast<__mmask16>((1u << n) - 1);
  const __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(kMax ? -INFINITY : INFINITY), live, p);
  if (const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q)) return __builtin_ctz(nan);
  const float m = register_extreme<kMax>(v);
  return __builtin_ctz(_mm512_cmp_ps_mask(v, _mm512_set1_ps(m), _CMP_EQ_OQ));
}
template <bool kMax>
int64_t register_arg_extreme(const double* p, int64_t n) {
  const auto live = static_cast<__mmask8>((1u << n) - 1);
  const __m512d v = _mm512_mask_loadu_pd(_mm512_set1_pd(kMax ? -INFINITY : INFINITY), live, p);
  if (const __mmask8 nan = _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q)) return __builtin_ctz(nan);
  const double m = register_extreme<kMax>(v);
  return __builtin_ctz(_mm512_cmp_pd_mask(v, _mm512_set1_pd(m), _CMP_EQ_OQ));
}
#pragma GCC diagnostic pop
#pragma GCC pop_options

// A contiguous float row longer than kShortScan, in blocks of kArgBlock: each block's
// extreme in vectors (block_extreme.inc, a NaN sticking), compared with the best so
// far; only a block that beats it, or holds a NaN, is scanned again for the first index
// of its extreme. On random rows the best improves in about ln(blocks) blocks, so the
// row is read about once, in vectors, where the branching scan compared element by
// element. The block's extreme runs in the vectors of the ISA in use (cpu::vector_isa(),
// by default the CPU's best: the library is built for baseline x86-64, whose 16-byte
// vectors are a quarter of AVX-512's). Argmax
// over float32 rows on the AVX-512 Xeon, branching scan -> this: 1600 x 1000 587 ->
// 202 us (NumPy 211), 16000 x 100 871 -> 479 (727), 160000 x 40 4839 -> 3111 (9084).
constexpr int64_t kArgBlock = 256;

template <bool kMax, class T>
int64_t float_arg_extreme_blocked(const T* p, int64_t n, T (*extreme)(const T*, int64_t)) {
  T best = p[0];
  int64_t best_index = 0;
  for (int64_t b = 0; b < n; b += kArgBlock) {
    const int64_t len = std::min(kArgBlock, n - b);
    const T m = extreme(p + b, len);
    if (m != m) {  // the first NaN is the result
      int64_t k = 0;
      while (p[b + k] == p[b + k]) ++k;
      return b + k;
    }
    if (kMax ? m > best : m < best) {
      int64_t k = 0;
      while (p[b + k] != m) ++k;
      best = m;
      best_index = b + k;
    }
  }
  return best_index;
}

template <bool kMax, class T>
void argminmax_kernel(const Array& x, int64_t axis, int64_t* out) {
  using A = jx::detail::compute_t<T>;
  const Shape& shape = x.shape();
  const std::vector<int64_t>& strides = jx::detail::strides(x);
  const int64_t n = shape[axis], axis_stride = strides[axis];
  Shape kept_shape = shape;
  std::vector<int64_t> kept_strides = strides;
  kept_shape.erase(kept_shape.begin() + axis);
  kept_strides.erase(kept_strides.begin() + axis);
  const int64_t O = shape_size(kept_shape);
  if (O == 0) return;
  const cpu::StridedLoop<1> kept(kept_shape, {&kept_strides});
  const T* x0 = jx::detail::data<T>(x);
  const int64_t kept_cols = kept.inner_size(), kept_stride = kept.strides[0].back();
  const bool tiled = O > 1 && kept_cols >= 8 && std::abs(kept_stride) < std::abs(axis_stride);

  if (!tiled) {
    const int64_t grain = std::max<int64_t>(1, cpu::kParallelGrain / n);
    if constexpr (std::is_floating_point_v<A> && std::is_same_v<A, T>) {
      // out[o] = index_of(row o) over every row, in parallel.
      auto each_row = [&](auto&& index_of) {
        cpu::parallel_for(O, grain, [&](int64_t begin, int64_t end) {
          LoopCursor<1> cursor(kept, begin);
          for (int64_t o = begin; o < end; ++o, cursor.next()) out[o] = index_of(x0 + cursor.offset());
        });
      };
      const VectorIsa isa = vector_isa();
      if (isa == VectorIsa::Avx512 && axis_stride == 1 && n * static_cast<int64_t>(sizeof(T)) <= 64)
        return each_row([&](const T* p) { return register_arg_extreme<kMax>(p, n); });
      if (n <= kShortScan) return each_row([&](const T* p) { return float_arg_extreme<kMax>(p, n, axis_stride); });
      if (axis_stride == 1) {
        const auto extreme = block_extreme_for<kMax, T>(isa);
        return each_row([&](const T* p) { return float_arg_extreme_blocked<kMax>(p, n, extreme); });
      }
    }
    cpu::parallel_for(O, grain, [&](int64_t begin, int64_t end) {
      LoopCursor<1> cursor(kept, begin);
      for (int64_t o = begin; o < end; ++o, cursor.next()) {
        const T* p = x0 + cursor.offset();
        A best = static_cast<A>(p[0]);
        int64_t best_index = 0;
        for (int64_t k = 1; k < n; ++k) {
          A v = static_cast<A>(p[k * axis_stride]);
          if (improves<kMax>(v, best)) {
            best = v;
            best_index = k;
          }
        }
        out[o] = best_index;
      }
    });
    return;
  }
  // A kept dim is innermost: sweep whole rows, tracking a best value per column.
  const int64_t tile_width = outer_tile_width(kept.outer_size(), kept_cols, 1);
  const int64_t segs = (kept_cols + tile_width - 1) / tile_width;
  const int64_t tiles = kept.outer_size() * segs;
  const int64_t grain = std::max<int64_t>(1, cpu::kParallelGrain / (n * std::min(kept_cols, tile_width)));
  cpu::parallel_for(tiles, grain, [&](int64_t begin, int64_t end) {
    Scratch<A> best(tile_width);
    for (int64_t tile = begin; tile < end; ++tile) {
      const int64_t krow = tile / segs, j0 = (tile % segs) * tile_width;
      const int64_t w = std::min(tile_width, kept_cols - j0);
      const T* row0 = x0 + row_offset(kept, krow)[0] + j0 * kept_stride;
      int64_t* o = out + krow * kept_cols + j0;
      for (int64_t j = 0; j < w; ++j) {
        best[j] = static_cast<A>(row0[j * kept_stride]);
        o[j] = 0;
      }
      for (int64_t k = 1; k < n; ++k) {
        const T* p = row0 + k * axis_stride;
        for (int64_t j = 0; j < w; ++j) {
          A v = static_cast<A>(p[j * kept_stride]);
          if (improves<kMax>(v, best[j])) {
            best[j] = v;
            o[j] = k;
          }
        }
      }
    }
  });
}

template <bool kMax>
ImplRule argminmax_impl(std::string op) {
  return [op](std::span<const Array> in, const Params& params, std::span<const Aval> out_avals) {
    const Array& x = in[0];
    const int64_t axis = rules::canonical_axis(op, params.get_ints("axes")[0], x.ndim(), x.shape());
    std::vector<int64_t> index(static_cast<size_t>(out_avals[0].size()));
    dispatch_dtype(x.dtype(), [&]<class T>() { argminmax_kernel<kMax, T>(x, axis, index.data()); });
    Array result = jx::detail::alloc_array(out_avals[0]);
    jx::detail::convert_buffer(index.data(), DType::Int64, jx::detail::mutable_data<void>(result),
                               out_avals[0].dtype, static_cast<int64_t>(index.size()));
    return std::vector<Array>{result};
  };
}

}  // namespace

void add_reduction_kernels(detail::KernelTable& table) {
  table.add("reduce_sum", reduce_impl<SumOp>("reduce_sum"));
  table.add("reduce_prod", reduce_impl<ProdOp>("reduce_prod"));
  table.add("reduce_max", reduce_impl<MaxOp>("reduce_max"));
  table.add("reduce_min", reduce_impl<MinOp>("reduce_min"));
  table.add("reduce_and", reduce_impl<AndOp>("reduce_and"));
  table.add("reduce_or", reduce_impl<OrOp>("reduce_or"));
  table.add("argmax", argminmax_impl<true>("argmax"));
  table.add("argmin", argminmax_impl<false>("argmin"));
}

}  // namespace jx::cpu
