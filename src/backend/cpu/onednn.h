// float32 matrix products of small and middle sizes through oneDNN.
//
// OpenBLAS 0.3.21 threads a small sgemm poorly: on the 2-core Zen 1, 256^3 ran at 54-59
// GFLOP/s and 128^3 at 25-44, where oneDNN's sgemm (Debian's libdnnl2, its own JIT
// kernels, OpenMP threads) ran at 73-77 and jax.jit and torch (MKL) at 55 and 72.
// Measured side by side (best of 5, GFLOP/s, OpenBLAS : oneDNN), oneDNN leads for every
// shape whose dimensions are all at most 512, square or skinny, transposed or not:
// 32^3 7.8 : 27.5, 64^3 19 : 56, 128^3 44 : 73, 256^3 59 : 76, 384^3 56 : 73,
// 512x64x512 32 : 71, 256x256x8 7.5 : 27.5, 64x512x512 32 : 44, 300x200x100 (B^T) 38 : 64;
// it is level at 512^3 (65 : 70, transposed 59 : 56) and behind past it (768^3 68 : 49,
// 64x1024x256 68 : 31, 1000x10x784 33 : 26), and for 16^3 (12 : 11). So a product goes
// to oneDNN when every dimension is at most 512 and m n k is from 32^3 to 2^26 (406^3);
// OpenBLAS keeps the rest, float64 (oneDNN has no dgemm), and products inside a chunk of
// jx's thread pool (batches of small matrices spread over the pool, where oneDNN would
// start a team of threads per chunk).
//
// libdnnl is loaded on the first such product (dlopen: a process that multiplies no
// small float32 matrices never maps its 40 MB), with OpenMP's spin before its threads
// sleep set to 30000 rounds (about 1 ms; libgomp's default, 300000, burned 9 ms of a core
// after every product, competing with jx's pool; 3000 made back-to-back 256^3 products
// 25% slower) unless the user set GOMP_SPINCOUNT or OMP_WAIT_POLICY or OpenMP is already
// loaded. Its teams take
// num_threads() threads. The first product costs about 28 ms more, once per process
// (oneDNN generating its kernels). Without libdnnl every product stays on OpenBLAS.
#pragma once

#include <cstdint>

#include "backend/cpu/blas.h"

namespace jx::cpu {

// C[m,n] = op(A) op(B) (row-major, C overwritten) through oneDNN when the product is one
// oneDNN leads for (above) and the library loaded; returns whether it ran.
bool onednn_sgemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                  int64_t ldb, float* c, int64_t ldc);

// Whether a product of these sizes, from this thread, would go to oneDNN (loading it).
bool onednn_takes(int64_t m, int64_t n, int64_t k);

// dnnl_sgemm itself (oneapi/dnnl/dnnl.h, oneDNN 2.x: row-major, alpha and beta, returns
// dnnl_status_t, 0 on success), loaded as above, or null without libdnnl: for callers
// that time the library directly (the bench's matmul limit).
using DnnlSgemm = int(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                      int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
DnnlSgemm* onednn_sgemm_function();

}  // namespace jx::cpu
