// jx's GEMM kernel (packed_gemm.h), compiled for AVX-512 (CMakeLists.txt) and run only
// where the CPU has it (packed_gemm.cpp). Nothing here is an inline function or template
// with outside linkage: a copy of one compiled for AVX-512 could be the one the linker
// keeps for the whole library.
#include "backend/cpu/packed_gemm.h"

#ifdef JX_PACKED_GEMM
#include <immintrin.h>

#include <cstring>

namespace jx::cpu {
namespace {

// One 512-bit vector of T: 8 doubles or 16 floats.
template <class T>
struct Vec;
template <>
struct Vec<double> {
  using Reg = __m512d;
  using Mask = __mmask8;
  static constexpr int kLanes = 8;
  static Reg zero() { return _mm512_setzero_pd(); }
  static Reg load(const double* p) { return _mm512_load_pd(p); }
  static Reg loadu(const double* p) { return _mm512_loadu_pd(p); }
  static Reg broadcast(double x) { return _mm512_set1_pd(x); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_pd(a, b, c); }
  static Reg add(Reg a, Reg b) { return _mm512_add_pd(a, b); }
  static void storeu(double* p, Reg x) { _mm512_storeu_pd(p, x); }
  static Reg maskz_loadu(Mask m, const double* p) { return _mm512_maskz_loadu_pd(m, p); }
  static void mask_storeu(double* p, Mask m, Reg x) { _mm512_mask_storeu_pd(p, m, x); }
};
template <>
struct Vec<float> {
  using Reg = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg load(const float* p) { return _mm512_load_ps(p); }
  static Reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  static Reg broadcast(float x) { return _mm512_set1_ps(x); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static void storeu(float* p, Reg x) { _mm512_storeu_ps(p, x); }
  static Reg maskz_loadu(Mask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  static void mask_storeu(float* p, Mask m, Reg x) { _mm512_mask_storeu_ps(p, m, x); }
};

constexpr int kRows = kGemmTileRows, kVectors = kGemmPanelVectors;

int64_t smaller(int64_t x, int64_t y) { return x < y ? x : y; }

// C[0:R, 0:cols] (=|+=) A[0:R, 0:depth] B_panel, B's panel packed as `depth` rows of
// kCols (zero past `cols`). A is read in place: element (r, p) at a[r * row_step + p *
// depth_step]. R accumulator rows of two vectors stay in registers across the whole depth.
template <class T, int R, bool kATransposed>
__attribute__((always_inline)) inline void tile(int64_t depth, const T* a, int64_t lda, const T* panel, T* c,
                                                int64_t ldc, int cols, bool accumulate) {
  using V = Vec<T>;
  constexpr int kCols = kGemmPanelCols<T>;
  const int64_t row_step = kATransposed ? 1 : lda, depth_step = kATransposed ? lda : 1;
  typename V::Reg acc[R][kVectors];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    // The tile's rows of C are written at the end: ask for them now (for writing).
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_ET0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + kCols - 1), _MM_HINT_ET0);
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) acc[r][v] = V::zero();
  }
  for (int64_t p = 0; p < depth; ++p) {
    typename V::Reg row[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) row[v] = V::load(panel + V::kLanes * v);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const typename V::Reg x = V::broadcast(a[r * row_step]);
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) acc[r][v] = V::fma(x, row[v], acc[r][v]);
    }
    a += depth_step;
    panel += kCols;
  }
  if (cols == kCols) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) {
        T* out = c + r * ldc + V::kLanes * v;
        V::storeu(out, accumulate ? V::add(acc[r][v], V::loadu(out)) : acc[r][v]);
      }
    return;
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kVectors; ++v) {
      const int left = cols - V::kLanes * v;
      if (left <= 0) break;
      const auto mask = static_cast<typename V::Mask>(left >= V::kLanes ? ~0u : (1u << left) - 1);
      T* out = c + r * ldc + V::kLanes * v;
      V::mask_storeu(out, mask, accumulate ? V::add(acc[r][v], V::maskz_loadu(mask, out)) : acc[r][v]);
    }
}

// The tile for `rows` (1 to 12) rows: one build of the kernel per row count, so a last,
// short row block costs its own rows, not a whole tile's.
template <class T, bool kATransposed, int R = kRows>
void tile_of_rows(int rows, int64_t depth, const T* a, int64_t lda, const T* panel, T* c, int64_t ldc, int cols,
                  bool accumulate) {
  if constexpr (R > 1) {
    if (rows < R) return tile_of_rows<T, kATransposed, R - 1>(rows, depth, a, lda, panel, c, ldc, cols, accumulate);
  }
  tile<T, R, kATransposed>(depth, a, lda, panel, c, ldc, cols, accumulate);
}

// Packs op(B)[p0 : p0 + depth, j0 : j0 + cols] as `depth` rows of kCols, zeros past `cols`.
template <class T>
void pack_panel(const GemmJob<T>& job, int64_t p0, int64_t depth, int64_t j0, int64_t cols, T* out) {
  constexpr int kCols = kGemmPanelCols<T>;
  if (!job.b_transposed) {
    const T* row = job.b + p0 * job.ldb + j0;
    if (cols == kCols) {
      // A whole panel's row is two vectors: a copy of constant size, inlined (a call to
      // memcpy per 128 bytes was a tenth of a 256^3 float32 product).
      for (int64_t p = 0; p < depth; ++p, row += job.ldb, out += kCols) std::memcpy(out, row, sizeof(T) * kCols);
      return;
    }
    for (int64_t p = 0; p < depth; ++p, row += job.ldb, out += kCols) {
      std::memcpy(out, row, sizeof(T) * static_cast<size_t>(cols));
      for (int64_t j = cols; j < kCols; ++j) out[j] = T(0);
    }
    return;
  }
  // op(B)[p, j] = B[j, p]: each of the panel's columns is a row of B, read along its length.
  for (int64_t j = 0; j < kCols; ++j) {
    if (j < cols) {
      const T* col = job.b + (j0 + j) * job.ldb + p0;
      for (int64_t p = 0; p < depth; ++p) out[p * kCols + j] = col[p];
    } else {
      for (int64_t p = 0; p < depth; ++p) out[p * kCols + j] = T(0);
    }
  }
}

template <class T, bool kATransposed>
void part(const GemmJob<T>& job, int64_t row_begin, int64_t row_end, int64_t panel_begin, int64_t panel_end,
          T* scratch) {
  constexpr int kCols = kGemmPanelCols<T>;
  // A's element (i, p) is a[i * lda + p], or a[p * lda + i] transposed.
  const auto a_at = [&](int64_t i, int64_t p) {
    return kATransposed ? job.a + p * job.lda + i : job.a + i * job.lda + p;
  };
  for (int64_t block = panel_begin; block < panel_end; block += kGemmPanelsPerBlock) {
    const int64_t block_end = smaller(panel_end, block + kGemmPanelsPerBlock);
    for (int64_t p0 = 0; p0 < job.k; p0 += kGemmDepthBlock) {
      const int64_t depth = smaller(kGemmDepthBlock, job.k - p0);
      const bool accumulate = p0 > 0;
      for (int64_t panel = block; panel < block_end; ++panel)
        pack_panel(job, p0, depth, panel * kCols, smaller(kCols, job.n - panel * kCols),
                   scratch + (panel - block) * depth * kCols);
      // One row block's A (12 rows by `depth`, in L1) meets every packed panel (in L2).
      for (int64_t i0 = row_begin; i0 < row_end; i0 += kRows) {
        const int rows = static_cast<int>(smaller(kRows, row_end - i0));
        for (int64_t panel = block; panel < block_end; ++panel) {
          const int cols = static_cast<int>(smaller(kCols, job.n - panel * kCols));
          tile_of_rows<T, kATransposed>(rows, depth, a_at(i0, p0), job.lda, scratch + (panel - block) * depth * kCols,
                                        job.c + i0 * job.ldc + panel * kCols, job.ldc, cols, accumulate);
        }
      }
    }
  }
}

template <class T>
void any_part(const GemmJob<T>& job, int64_t row_begin, int64_t row_end, int64_t panel_begin, int64_t panel_end,
              T* scratch) {
  if (job.a_transposed) part<T, true>(job, row_begin, row_end, panel_begin, panel_end, scratch);
  else part<T, false>(job, row_begin, row_end, panel_begin, panel_end, scratch);
}

}  // namespace

void gemm_part_avx512(const GemmJob<double>& job, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                      int64_t panel_end, double* scratch) {
  any_part(job, row_begin, row_end, panel_begin, panel_end, scratch);
}

void gemm_part_avx512(const GemmJob<float>& job, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                      int64_t panel_end, float* scratch) {
  any_part(job, row_begin, row_end, panel_begin, panel_end, scratch);
}

}  // namespace jx::cpu
#endif  // JX_PACKED_GEMM
