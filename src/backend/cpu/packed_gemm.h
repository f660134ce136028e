// float64 and float32 matrix products on jx's own packed kernel, built for AVX-512 and
// for AVX2 + FMA (packed_gemm_kernel.inc).
//
// The kernel holds a tile of C in registers, `rows` rows by two vectors (AVX-512: 12 x 16
// doubles or 12 x 32 floats in 24 of its 32 registers; AVX2: 6 x 8 doubles or 6 x 16
// floats in 12 of 16): per step of k, two vector loads of a packed B row and one
// broadcast of A's column per row, read in place (A is never packed: its rows stream
// from cache, transposed or not). Each thread takes its own columns of C and packs only
// its own panels of B (384 rows of k at a time, one tile wide, zero-padded), so the
// threads share nothing and meet once, at the end. Rows past the last full tile run on
// the same kernel built for fewer rows; columns past n are masked stores.
//
// AVX-512: OpenBLAS 0.3.21 (Debian's) runs small and middle dgemm well below the machine:
// on the 2-core Intel Xeon (Emerald Rapids, 123.7 GFLOP/s of float64 FMA per core
// measured) 256^3 ran at 144-157 GFLOP/s on 2 threads where MKL (inside torch) reaches
// 221, and oneDNN has no dgemm. Measured side by side with OpenBLAS (SkylakeX kernels)
// on that machine, 2 threads, best of many (GFLOP/s, OpenBLAS : jx): 128^3 82-91 :
// 176-190, 256^3 144-157 : 190-213, 384^3 173 : 194-200, 512^3 189 : 204-214, 1024^3
// 203-209 : 213-221, 2048^3 221 : 201-215. So jx's kernel takes float64 products whose
// dimensions are all from 64 to 1024; OpenBLAS keeps the rest: larger products (its
// blocking for L3 leads there) and skinny ones (fewer than 64 rows or columns leave a
// tile partly empty). float32 products take the same sizes once oneDNN has declined them
// (past 2^26 multiply-adds or a dimension past 512: onednn.h), where jx's kernel led
// OpenBLAS in the same runs (GFLOP/s, OpenBLAS : jx, 2 threads): 512^3 306-345 : 355-404,
// 768^3 369-375 : 380-388, 1024^3 361-420 : 371-424; at 2048^3 OpenBLAS leads (407-444 :
// 394-426), and below 512 oneDNN (256^3 336-339 : 328-330).
//
// AVX2 (see packed_gemm_takes in packed_gemm.cpp for the sizes it takes and the
// measurements that chose them).
#pragma once

#include <cstdint>
#include <functional>

// The kernel is written for x86-64's AVX-512 and AVX2; elsewhere every product stays on the BLAS.
#if defined(__x86_64__)
#define JX_PACKED_GEMM 1
#endif

#include "backend/cpu/blas.h"

namespace jx::cpu {

// Whether packed_gemm<T> takes a product of these sizes on this CPU (T: float, double).
template <class T>
bool packed_gemm_takes(int64_t m, int64_t n, int64_t k);

// C[m,n] = op(A) op(B) (row-major, C overwritten, its old contents never read) when
// packed_gemm_takes<T>(m, n, k); returns whether it ran.
template <class T>
bool packed_gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                 T* c, int64_t ldc);

// Work on rows [row_begin, row_end) of a finished C, run by the thread that computed them
// while they are in its cache (the jit's fused epilogue of a matmul: gelu(A @ B + b)).
using RowsDone = std::function<void(int64_t row_begin, int64_t row_end)>;

// The kernel's builds, narrowest first.
enum class GemmKernel { None, Avx2, Avx512 };
// The widest build this CPU runs (None: neither AVX-512 nor AVX2 with FMA).
GemmKernel packed_gemm_kernel();

// The same product for any sizes >= 1 on the widest build this CPU runs (tests reach the
// kernel's edges with it); false where it runs none. With `rows_done`, the threads split C by rows
// (each packs all of B) and each calls it on its own rows once they are final, at most
// once per row, every row of C covered once.
template <class T>
bool packed_gemm_any_size(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                          int64_t ldb, T* c, int64_t ldc, const RowsDone* rows_done = nullptr);
// The same on a given build (tests run each build the CPU has); false where it lacks it.
template <class T>
bool packed_gemm_on(GemmKernel kernel, Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                    const T* b, int64_t ldb, T* c, int64_t ldc, const RowsDone* rows_done = nullptr);

// ---- between packed_gemm.cpp and the kernel's builds (each file compiled for its ISA) ----

template <class T>
struct GemmJob {
  bool a_transposed, b_transposed;
  int64_t m, n, k;
  const T* a;
  int64_t lda;
  const T* b;
  int64_t ldb;
  T* c;
  int64_t ldc;
};

// A build's tile of C: `rows` rows by kGemmPanelVectors registers of `vector_bytes`; a
// panel of B is one tile wide.
struct GemmTile {
  int rows, vector_bytes;
};
inline constexpr GemmTile kGemmTileAvx512{12, 64}, kGemmTileAvx2{6, 32};
inline constexpr int kGemmPanelVectors = 2;
template <class T>
constexpr int gemm_panel_cols(GemmTile tile) {
  return kGemmPanelVectors * tile.vector_bytes / static_cast<int>(sizeof(T));
}
inline constexpr int64_t kGemmDepthBlock = 384, kGemmPanelsPerBlock = 16;
// Bytes of scratch one part needs: a block of packed B panels at the widest tile (768 KiB).
inline constexpr int64_t kGemmScratchBytes =
    kGemmDepthBlock * kGemmPanelVectors * kGemmTileAvx512.vector_bytes * kGemmPanelsPerBlock;

// Computes rows [row_begin, row_end) of C in panels [panel_begin, panel_end) (columns
// panel * gemm_panel_cols<T>(that build's tile) on, clipped to n), packing B into `scratch` (64-byte aligned,
// kGemmScratchBytes long).
void gemm_part_avx512(const GemmJob<double>& job, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                      int64_t panel_end, double* scratch);
void gemm_part_avx512(const GemmJob<float>& job, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                      int64_t panel_end, float* scratch);
void gemm_part_avx2(const GemmJob<double>& job, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                    int64_t panel_end, double* scratch);
void gemm_part_avx2(const GemmJob<float>& job, int64_t row_begin, int64_t row_end, int64_t panel_begin,
                    int64_t panel_end, float* scratch);

}  // namespace jx::cpu
