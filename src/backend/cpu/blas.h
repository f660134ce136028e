// Typed wrappers over CBLAS and LAPACKE, so kernels call one overloaded name per
// routine (gemm, trsm, potrf, ...) for float, double, complex64_t and complex128_t.
// Matrices are row-major with a leading dimension (elements between rows).
// LAPACK wrappers return LAPACK's info: 0 on success, < 0 for a bad argument (LAPACKE
// also reports NaN input this way), > 0 for a numerical failure.
#pragma once

#include <cstdint>
#include <type_traits>

#include "jx/dtype.h"

namespace jx::cpu {

template <class T>
inline constexpr bool is_blas_type_v = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                       std::is_same_v<T, complex64_t> || std::is_same_v<T, complex128_t>;

// How a matrix operand enters a product: as is, transposed, or conjugate-transposed.
enum class Op { None, Transpose, ConjTranspose };

// Largest dimension BLAS/LAPACK accept (their integers are 32-bit).
inline constexpr int64_t kMaxBlasDim = 0x7fffffff;

// C[m,n] = op(A) op(B) (beta = 0: C is overwritten; NaNs in old C do not leak).
template <class T>
void gemm(Op op_a, Op op_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T* c, int64_t ldc);

// Any element type: BLAS for float/double/complex, a cache-blocked loop otherwise
// (integers wrap modulo 2^bits, bool is OR of ANDs). Operands are row-major and
// untransposed: A[m,k] with rows lda apart, B[k,n] rows ldb apart, C[m,n] rows ldc apart.
template <class T>
void matmul(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
            int64_t ldc);

// Solves op(A) X = B (left) or X op(A) = B in place of B; A is m x m (left) or n x n.
template <class T>
void trsm(bool left, bool lower, Op op_a, bool unit_diagonal, int64_t m, int64_t n, const T* a,
          int64_t lda, T* b, int64_t ldb);

// LAPACK, row-major. `R` is the real type of T.
template <class T>
int potrf(bool lower, int64_t n, T* a, int64_t lda);
template <class T>
int getrf(int64_t m, int64_t n, T* a, int64_t lda, int32_t* ipiv);
template <class T>
int geqrf(int64_t m, int64_t n, T* a, int64_t lda, T* tau);
// Forms the m x n Q with orthonormal columns from k reflectors (orgqr / ungqr).
template <class T>
int orgqr(int64_t m, int64_t n, int64_t k, T* a, int64_t lda, const T* tau);
// Eigen-decomposition of a symmetric/Hermitian matrix (syevd / heevd): ascending w,
// eigenvectors overwrite a as columns.
template <class T, class R>
int syevd(bool lower, int64_t n, T* a, int64_t lda, R* w);
// SVD by divide and conquer; jobz 'A' (full), 'S' (reduced) or 'N' (values only).
template <class T, class R>
int gesdd(char jobz, int64_t m, int64_t n, T* a, int64_t lda, R* s, T* u, int64_t ldu, T* vt,
          int64_t ldvt);

}  // namespace jx::cpu
