// jx's float64 GEMM kernel (packed_dgemm.h), compiled for AVX-512 (CMakeLists.txt) and
// run only where the CPU has it (packed_dgemm.cpp). Nothing here is an inline function or
// template with outside linkage: a copy of one compiled for AVX-512 could be the one the
// linker keeps for the whole library.
#include "backend/cpu/packed_dgemm.h"

#ifdef JX_PACKED_DGEMM
#include <immintrin.h>

#include <cstring>

namespace jx::cpu {
namespace {

constexpr int kRows = kDgemmTileRows, kCols = kDgemmPanelCols, kVectors = kCols / 8;

int64_t smaller(int64_t x, int64_t y) { return x < y ? x : y; }

// C[0:R, 0:cols] (=|+=) A[0:R, 0:depth] B_panel, B's panel packed as `depth` rows of 16
// (zero past `cols`). A is read in place: element (r, p) at a[r * row_step + p * depth_step].
// R accumulator rows of two vectors stay in registers across the whole depth.
template <int R, bool kATransposed>
__attribute__((always_inline)) inline void tile(int64_t depth, const double* a, int64_t lda, const double* panel,
                                                double* c, int64_t ldc, int cols, bool accumulate) {
  const int64_t row_step = kATransposed ? 1 : lda, depth_step = kATransposed ? lda : 1;
  __m512d acc[R][kVectors];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    // The tile's rows of C are written at the end: ask for them now (for writing).
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_ET0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + kCols - 1), _MM_HINT_ET0);
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_setzero_pd();
  }
  for (int64_t p = 0; p < depth; ++p) {
    __m512d row[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) row[v] = _mm512_load_pd(panel + 8 * v);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512d x = _mm512_set1_pd(a[r * row_step]);
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_fmadd_pd(x, row[v], acc[r][v]);
    }
    a += depth_step;
    panel += kCols;
  }
  if (cols == kCols) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) {
        double* out = c + r * ldc + 8 * v;
        _mm512_storeu_pd(out, accumulate ? _mm512_add_pd(acc[r][v], _mm512_loadu_pd(out)) : acc[r][v]);
      }
    return;
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kVectors; ++v) {
      const int left = cols - 8 * v;
      if (left <= 0) break;
      const __mmask8 mask = left >= 8 ? __mmask8(0xff) : __mmask8((1u << left) - 1);
      double* out = c + r * ldc + 8 * v;
      _mm512_mask_storeu_pd(out, mask, accumulate ? _mm512_add_pd(acc[r][v], _mm512_maskz_loadu_pd(mask, out)) : acc[r][v]);
    }
}

// The tile for `rows` (1 to 12) rows: one build of the kernel per row count, so a last,
// short row block costs its own rows, not a whole tile's.
template <bool kATransposed, int R = kRows>
void tile_of_rows(int rows, int64_t depth, const double* a, int64_t lda, const double* panel, double* c,
                  int64_t ldc, int cols, bool accumulate) {
  if constexpr (R > 1) {
    if (rows < R)
      return tile_of_rows<kATransposed, R - 1>(rows, depth, a, lda, panel, c, ldc, cols, accumulate);
  }
  tile<R, kATransposed>(depth, a, lda, panel, c, ldc, cols, accumulate);
}

// Packs op(B)[p0 : p0 + depth, j0 : j0 + cols] as `depth` rows of 16, zeros past `cols`.
void pack_panel(const DgemmJob& job, int64_t p0, int64_t depth, int64_t j0, int64_t cols, double* out) {
  if (!job.b_transposed) {
    const double* row = job.b + p0 * job.ldb + j0;
    for (int64_t p = 0; p < depth; ++p, row += job.ldb, out += kCols) {
      std::memcpy(out, row, sizeof(double) * static_cast<size_t>(cols));
      for (int64_t j = cols; j < kCols; ++j) out[j] = 0.0;
    }
    return;
  }
  // op(B)[p, j] = B[j, p]: each of the panel's columns is a row of B, read along its length.
  for (int64_t j = 0; j < kCols; ++j) {
    if (j < cols) {
      const double* col = job.b + (j0 + j) * job.ldb + p0;
      for (int64_t p = 0; p < depth; ++p) out[p * kCols + j] = col[p];
    } else {
      for (int64_t p = 0; p < depth; ++p) out[p * kCols + j] = 0.0;
    }
  }
}

template <bool kATransposed>
void part(const DgemmJob& job, int64_t row_begin, int64_t row_end, int64_t panel_begin, int64_t panel_end,
          double* scratch) {
  // A's element (i, p) is a[i * lda + p], or a[p * lda + i] transposed.
  const auto a_at = [&](int64_t i, int64_t p) {
    return kATransposed ? job.a + p * job.lda + i : job.a + i * job.lda + p;
  };
  for (int64_t block = panel_begin; block < panel_end; block += kDgemmPanelsPerBlock) {
    const int64_t block_end = smaller(panel_end, block + kDgemmPanelsPerBlock);
    for (int64_t p0 = 0; p0 < job.k; p0 += kDgemmDepthBlock) {
      const int64_t depth = smaller(kDgemmDepthBlock, job.k - p0);
      const bool accumulate = p0 > 0;
      for (int64_t panel = block; panel < block_end; ++panel)
        pack_panel(job, p0, depth, panel * kCols, smaller(kCols, job.n - panel * kCols),
                   scratch + (panel - block) * depth * kCols);
      // One row block's A (12 rows by `depth`, in L1) meets every packed panel (in L2).
      for (int64_t i0 = row_begin; i0 < row_end; i0 += kRows) {
        const int rows = static_cast<int>(smaller(kRows, row_end - i0));
        for (int64_t panel = block; panel < block_end; ++panel) {
          const int cols = static_cast<int>(smaller(kCols, job.n - panel * kCols));
          tile_of_rows<kATransposed>(rows, depth, a_at(i0, p0), job.lda, scratch + (panel - block) * depth * kCols,
                                     job.c + i0 * job.ldc + panel * kCols, job.ldc, cols, accumulate);
        }
      }
    }
  }
}

}  // namespace

void dgemm_part_avx512(const DgemmJob& job, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                       int64_t panel_end, double* scratch) {
  if (job.a_transposed) part<true>(job, row_begin, row_end, panel_begin, panel_end, scratch);
  else part<false>(job, row_begin, row_end, panel_begin, panel_end, scratch);
}

}  // namespace jx::cpu
#endif  // JX_PACKED_DGEMM
