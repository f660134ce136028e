// float64 matrix products on jx's own packed AVX-512 kernel.
//
// OpenBLAS 0.3.21 (Debian's) runs small and middle dgemm well below the machine: on the
// 2-core Intel Xeon (Emerald Rapids, 123.7 GFLOP/s of float64 FMA per core measured)
// 256^3 ran at 144-157 GFLOP/s on 2 threads where MKL (inside torch) reaches 221, and
// oneDNN has no dgemm. jx's kernel (packed_dgemm_avx512.cpp) reaches the FMA peak on a
// 12 x 16 tile of C held in 24 registers: per step of k, two vector loads of a packed B
// row and 12 broadcasts of A's column, read in place (A is never packed: its 12 rows
// stream from cache, transposed or not). Each thread takes its own columns of C and packs
// only its own panels of B (384 rows of k at a time, 16 columns per panel, zero-padded),
// so the threads share nothing and meet once, at the end. Rows past the last full tile
// run on the same kernel built for fewer rows; columns past n are masked stores.
//
// Measured side by side with OpenBLAS (SkylakeX kernels) on that machine, 2 threads, best
// of many (GFLOP/s, OpenBLAS : jx): 128^3 82-91 : 176-190, 256^3 144-157 : 190-213,
// 384^3 173 : 194-200, 512^3 189 : 204-214, 1024^3 203-209 : 213-221, 2048^3 221 : 201-215.
// So jx's kernel takes products whose dimensions are all from 64 to 1024 on a CPU with
// AVX-512 (F, the rest of what OpenBLAS's kernels ask is not needed); OpenBLAS keeps the
// rest: larger products (its blocking for L3 leads there), skinny ones (fewer than 64
// rows or columns leave a 12 x 16 tile partly empty) and CPUs without AVX-512.
#pragma once

#include <cstdint>

// The kernel is written for x86-64's AVX-512; elsewhere every product stays on the BLAS.
#if defined(__x86_64__)
#define JX_PACKED_DGEMM 1
#endif

#include "backend/cpu/blas.h"

namespace jx::cpu {

// Whether packed_dgemm takes a product of these sizes on this CPU.
bool packed_dgemm_takes(int64_t m, int64_t n, int64_t k);

// C[m,n] = op(A) op(B) (row-major, C overwritten, its old contents never read) when
// packed_dgemm_takes(m, n, k); returns whether it ran.
bool packed_dgemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
                  int64_t ldb, double* c, int64_t ldc);

// The same product for any sizes >= 1 on a CPU with AVX-512 (tests reach the kernel's
// edges with it); false without AVX-512.
bool packed_dgemm_any_size(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
                           const double* b, int64_t ldb, double* c, int64_t ldc);

// ---- between packed_dgemm.cpp and the kernel's file (compiled for AVX-512) ----

struct DgemmJob {
  bool a_transposed, b_transposed;
  int64_t m, n, k;
  const double* a;
  int64_t lda;
  const double* b;
  int64_t ldb;
  double* c;
  int64_t ldc;
};

inline constexpr int kDgemmTileRows = 12, kDgemmPanelCols = 16;
inline constexpr int64_t kDgemmDepthBlock = 384, kDgemmPanelsPerBlock = 16;
// Doubles of scratch one part needs: a block of packed B panels.
inline constexpr int64_t kDgemmScratchDoubles = kDgemmDepthBlock * kDgemmPanelCols * kDgemmPanelsPerBlock;

// Computes rows [row_begin, row_end) of C in panels [panel_begin, panel_end) (columns
// panel * 16 on, clipped to n), packing B into `scratch` (64-byte aligned,
// kDgemmScratchDoubles long).
void dgemm_part_avx512(const DgemmJob& job, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                       int64_t panel_end, double* scratch);

}  // namespace jx::cpu
