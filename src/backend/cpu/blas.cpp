#include "backend/cpu/blas.h"

#include <algorithm>
#include <complex>
#include <vector>

// LAPACKE's default complex types are C99 `_Complex`; std::complex has the same layout.
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <cblas.h>
#include <lapacke.h>

#include "core/convert.h"
#include "backend/cpu/blas_threads.h"
#include "backend/cpu/onednn.h"
#include "backend/cpu/packed_gemm.h"
#include "backend/cpu/thread_pool.h"

namespace jx::cpu {

static_assert(sizeof(lapack_int) == sizeof(int32_t), "jx expects LP64 LAPACK (32-bit integers)");

namespace {

CBLAS_TRANSPOSE cblas_op(Op op) {
  switch (op) {
    case Op::None: return CblasNoTrans;
    case Op::Transpose: return CblasTrans;
    case Op::ConjTranspose: return CblasConjTrans;
  }
  return CblasNoTrans;
}

int to_int(int64_t v) { return static_cast<int>(v); }

// The accumulator of the fallback loop: wrapping unsigned arithmetic for integers (so
// overflow is defined and equals two's-complement wraparound), float for halves.
template <class T>
struct Accumulator {
  using type = std::conditional_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, uint64_t,
                                  detail::compute_t<T>>;
};
template <>
struct Accumulator<bool> {
  using type = uint8_t;
};

template <class T>
void matmul_loop(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
                 int64_t ldc) {
  using W = typename Accumulator<T>::type;
  // Row blocks keep the accumulators in cache; k blocks keep a panel of B there.
  constexpr int64_t kRowBlock = 16, kDepthBlock = 256;
  auto rows = [&](int64_t i0, int64_t i1) {
    std::vector<W> acc(static_cast<size_t>(kRowBlock * n));
    for (int64_t ib = i0; ib < i1; ib += kRowBlock) {
      const int64_t ie = std::min(ib + kRowBlock, i1);
      std::fill(acc.begin(), acc.end(), W{});
      for (int64_t kb = 0; kb < k; kb += kDepthBlock) {
        const int64_t ke = std::min(kb + kDepthBlock, k);
        for (int64_t i = ib; i < ie; ++i) {
          W* arow = acc.data() + (i - ib) * n;
          for (int64_t p = kb; p < ke; ++p) {
            const T* brow = b + p * ldb;
            if constexpr (std::is_same_v<T, bool>) {
              if (!a[i * lda + p]) continue;
              for (int64_t j = 0; j < n; ++j) arow[j] |= static_cast<W>(brow[j]);
            } else {
              const W av = static_cast<W>(a[i * lda + p]);
              for (int64_t j = 0; j < n; ++j) arow[j] += av * static_cast<W>(brow[j]);
            }
          }
        }
      }
      for (int64_t i = ib; i < ie; ++i)
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = static_cast<T>(acc[(i - ib) * n + j]);
    }
  };
  const int64_t work_per_row = std::max<int64_t>(1, n * k);
  parallel_for(m, std::max<int64_t>(kRowBlock, kParallelGrain / work_per_row), rows);
}

}  // namespace

// ---- gemm ----

// A product with one row or one column is a matrix-vector product: GEMV streams the
// matrix once where OpenBLAS's GEMM packs it first (a 1x64 by 64x64 float product cost
// 1.4 us through sgemm on an AVX2 machine, the whole step of a scanned RNN cell).
// False when the product has more rows and columns, or nothing to contract (BLAS's
// GEMV would then leave c unwritten).
template <class T, class Gemv>
bool gemm_as_gemv(Gemv gemv, Op oa, Op ob, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
                  int64_t ldb, T* c, int64_t ldc) {
  if (k == 0 || (m != 1 && n != 1)) return false;
  // beta = 0 must not read c (it may hold a recycled buffer's NaNs): some OpenBLAS
  // versions scale y by beta, and 0 * NaN is NaN, so c starts at zero.
  if (m == 1) std::fill(c, c + n, T(0));
  else
    for (int64_t i = 0; i < m; ++i) c[i * ldc] = T(0);
  if (m == 1) {  // c[0, :] = x op(B), x the one row of op(A)
    const int incx = oa == Op::None ? 1 : to_int(lda);
    if (ob == Op::None) gemv(CblasRowMajor, CblasTrans, to_int(k), to_int(n), T(1), b, to_int(ldb), a, incx, T(0), c, 1);
    else gemv(CblasRowMajor, CblasNoTrans, to_int(n), to_int(k), T(1), b, to_int(ldb), a, incx, T(0), c, 1);
    return true;
  }
  // n == 1: c[:, 0] = op(A) x, x the one column of op(B)
  const int incx = ob == Op::None ? to_int(ldb) : 1;
  if (oa == Op::None) gemv(CblasRowMajor, CblasNoTrans, to_int(m), to_int(k), T(1), a, to_int(lda), b, incx, T(0), c, to_int(ldc));
  else gemv(CblasRowMajor, CblasTrans, to_int(k), to_int(m), T(1), a, to_int(lda), b, incx, T(0), c, to_int(ldc));
  return true;
}

template <>
void gemm<float>(Op oa, Op ob, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float* c, int64_t ldc) {
  settle_blas_threads();
  if (gemm_as_gemv(cblas_sgemv, oa, ob, m, n, k, a, lda, b, ldb, c, ldc)) return;
  if (onednn_sgemm(oa, ob, m, n, k, a, lda, b, ldb, c, ldc)) return;  // small and middle sizes (onednn.h)
  if (packed_gemm(oa, ob, m, n, k, a, lda, b, ldb, c, ldc)) return;   // past those, to 1024 (packed_gemm.h)
  cblas_sgemm(CblasRowMajor, cblas_op(oa), cblas_op(ob), to_int(m), to_int(n), to_int(k), 1.0f, a, to_int(lda),
              b, to_int(ldb), 0.0f, c, to_int(ldc));
}
template <>
void gemm<double>(Op oa, Op ob, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
                  int64_t ldb, double* c, int64_t ldc) {
  settle_blas_threads();
  if (gemm_as_gemv(cblas_dgemv, oa, ob, m, n, k, a, lda, b, ldb, c, ldc)) return;
  if (packed_gemm(oa, ob, m, n, k, a, lda, b, ldb, c, ldc)) return;  // small and middle sizes (packed_gemm.h)
  cblas_dgemm(CblasRowMajor, cblas_op(oa), cblas_op(ob), to_int(m), to_int(n), to_int(k), 1.0, a, to_int(lda),
              b, to_int(ldb), 0.0, c, to_int(ldc));
}
template <>
void gemm<complex64_t>(Op oa, Op ob, int64_t m, int64_t n, int64_t k, const complex64_t* a, int64_t lda,
                       const complex64_t* b, int64_t ldb, complex64_t* c, int64_t ldc) {
  settle_blas_threads();
  const complex64_t one(1), zero(0);
  cblas_cgemm(CblasRowMajor, cblas_op(oa), cblas_op(ob), to_int(m), to_int(n), to_int(k), &one, a, to_int(lda),
              b, to_int(ldb), &zero, c, to_int(ldc));
}
template <>
void gemm<complex128_t>(Op oa, Op ob, int64_t m, int64_t n, int64_t k, const complex128_t* a, int64_t lda,
                        const complex128_t* b, int64_t ldb, complex128_t* c, int64_t ldc) {
  settle_blas_threads();
  const complex128_t one(1), zero(0);
  cblas_zgemm(CblasRowMajor, cblas_op(oa), cblas_op(ob), to_int(m), to_int(n), to_int(k), &one, a, to_int(lda),
              b, to_int(ldb), &zero, c, to_int(ldc));
}

// ---- matmul: BLAS where it applies ----

template <class T>
void matmul(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
            int64_t ldc) {
  if (m == 0 || n == 0) return;
  if constexpr (is_blas_type_v<T>) {
    if (k == 0) {
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
      return;
    }
    if (std::max({m, n, k, lda, ldb, ldc}) <= kMaxBlasDim) {
      gemm<T>(Op::None, Op::None, m, n, k, a, std::max<int64_t>(lda, std::max<int64_t>(k, 1)), b,
              std::max<int64_t>(ldb, n), c, ldc);
      return;
    }
  }
  matmul_loop(m, n, k, a, lda, b, ldb, c, ldc);
}

#define JX_INSTANTIATE_MATMUL(T)                                                                       \
  template void matmul<T>(int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, T*, int64_t);
JX_INSTANTIATE_MATMUL(bool)
JX_INSTANTIATE_MATMUL(int8_t)
JX_INSTANTIATE_MATMUL(int16_t)
JX_INSTANTIATE_MATMUL(int32_t)
JX_INSTANTIATE_MATMUL(int64_t)
JX_INSTANTIATE_MATMUL(uint8_t)
JX_INSTANTIATE_MATMUL(uint32_t)
JX_INSTANTIATE_MATMUL(float16_t)
JX_INSTANTIATE_MATMUL(bfloat16_t)
JX_INSTANTIATE_MATMUL(float)
JX_INSTANTIATE_MATMUL(double)
JX_INSTANTIATE_MATMUL(complex64_t)
JX_INSTANTIATE_MATMUL(complex128_t)
#undef JX_INSTANTIATE_MATMUL

// ---- trsm ----

namespace {
struct TrsmArgs {
  CBLAS_SIDE side;
  CBLAS_UPLO uplo;
  CBLAS_TRANSPOSE trans;
  CBLAS_DIAG diag;
};
TrsmArgs trsm_args(bool left, bool lower, Op op_a, bool unit_diagonal) {
  settle_blas_threads();  // every trsm starts here
  return {left ? CblasLeft : CblasRight, lower ? CblasLower : CblasUpper, cblas_op(op_a),
          unit_diagonal ? CblasUnit : CblasNonUnit};
}
}  // namespace

template <>
void trsm<float>(bool left, bool lower, Op op_a, bool unit, int64_t m, int64_t n, const float* a, int64_t lda,
                 float* b, int64_t ldb) {
  auto t = trsm_args(left, lower, op_a, unit);
  cblas_strsm(CblasRowMajor, t.side, t.uplo, t.trans, t.diag, to_int(m), to_int(n), 1.0f, a, to_int(lda), b,
              to_int(ldb));
}
template <>
void trsm<double>(bool left, bool lower, Op op_a, bool unit, int64_t m, int64_t n, const double* a, int64_t lda,
                  double* b, int64_t ldb) {
  auto t = trsm_args(left, lower, op_a, unit);
  cblas_dtrsm(CblasRowMajor, t.side, t.uplo, t.trans, t.diag, to_int(m), to_int(n), 1.0, a, to_int(lda), b,
              to_int(ldb));
}
template <>
void trsm<complex64_t>(bool left, bool lower, Op op_a, bool unit, int64_t m, int64_t n, const complex64_t* a,
                       int64_t lda, complex64_t* b, int64_t ldb) {
  auto t = trsm_args(left, lower, op_a, unit);
  const complex64_t one(1);
  cblas_ctrsm(CblasRowMajor, t.side, t.uplo, t.trans, t.diag, to_int(m), to_int(n), &one, a, to_int(lda), b,
              to_int(ldb));
}
template <>
void trsm<complex128_t>(bool left, bool lower, Op op_a, bool unit, int64_t m, int64_t n, const complex128_t* a,
                        int64_t lda, complex128_t* b, int64_t ldb) {
  auto t = trsm_args(left, lower, op_a, unit);
  const complex128_t one(1);
  cblas_ztrsm(CblasRowMajor, t.side, t.uplo, t.trans, t.diag, to_int(m), to_int(n), &one, a, to_int(lda), b,
              to_int(ldb));
}

// ---- LAPACK ----

#define JX_LAPACK_FOUR(DECL, S, D, C, Z) DECL(float, S) DECL(double, D) DECL(complex64_t, C) DECL(complex128_t, Z)

#define JX_POTRF(T, F)                                                           \
  template <>                                                                    \
  int potrf<T>(bool lower, int64_t n, T* a, int64_t lda) {                       \
    settle_blas_threads();                                                       \
    return F(LAPACK_ROW_MAJOR, lower ? 'L' : 'U', to_int(n), a, to_int(lda));    \
  }
JX_LAPACK_FOUR(JX_POTRF, LAPACKE_spotrf, LAPACKE_dpotrf, LAPACKE_cpotrf, LAPACKE_zpotrf)

#define JX_GETRF(T, F)                                                            \
  template <>                                                                     \
  int getrf<T>(int64_t m, int64_t n, T* a, int64_t lda, int32_t* ipiv) {          \
    settle_blas_threads();                                                        \
    return F(LAPACK_ROW_MAJOR, to_int(m), to_int(n), a, to_int(lda), ipiv);       \
  }
JX_LAPACK_FOUR(JX_GETRF, LAPACKE_sgetrf, LAPACKE_dgetrf, LAPACKE_cgetrf, LAPACKE_zgetrf)

#define JX_GEQRF(T, F)                                                       \
  template <>                                                                \
  int geqrf<T>(int64_t m, int64_t n, T* a, int64_t lda, T* tau) {            \
    settle_blas_threads();                                                   \
    return F(LAPACK_ROW_MAJOR, to_int(m), to_int(n), a, to_int(lda), tau);   \
  }
JX_LAPACK_FOUR(JX_GEQRF, LAPACKE_sgeqrf, LAPACKE_dgeqrf, LAPACKE_cgeqrf, LAPACKE_zgeqrf)

#define JX_ORGQR(T, F)                                                                     \
  template <>                                                                              \
  int orgqr<T>(int64_t m, int64_t n, int64_t k, T* a, int64_t lda, const T* tau) {         \
    settle_blas_threads();                                                                 \
    return F(LAPACK_ROW_MAJOR, to_int(m), to_int(n), to_int(k), a, to_int(lda), tau);      \
  }
JX_LAPACK_FOUR(JX_ORGQR, LAPACKE_sorgqr, LAPACKE_dorgqr, LAPACKE_cungqr, LAPACKE_zungqr)

#define JX_SYEVD(T, R, F)                                                              \
  template <>                                                                          \
  int syevd<T, R>(bool lower, int64_t n, T* a, int64_t lda, R* w) {                    \
    settle_blas_threads();                                                             \
    return F(LAPACK_ROW_MAJOR, 'V', lower ? 'L' : 'U', to_int(n), a, to_int(lda), w);  \
  }
JX_SYEVD(float, float, LAPACKE_ssyevd)
JX_SYEVD(double, double, LAPACKE_dsyevd)
JX_SYEVD(complex64_t, float, LAPACKE_cheevd)
JX_SYEVD(complex128_t, double, LAPACKE_zheevd)

#define JX_GESDD(T, R, F)                                                                              \
  template <>                                                                                          \
  int gesdd<T, R>(char jobz, int64_t m, int64_t n, T* a, int64_t lda, R* s, T* u, int64_t ldu, T* vt,  \
                  int64_t ldvt) {                                                                      \
    settle_blas_threads();                                                                             \
    return F(LAPACK_ROW_MAJOR, jobz, to_int(m), to_int(n), a, to_int(lda), s, u, to_int(ldu), vt,      \
             to_int(ldvt));                                                                            \
  }
JX_GESDD(float, float, LAPACKE_sgesdd)
JX_GESDD(double, double, LAPACKE_dgesdd)
JX_GESDD(complex64_t, float, LAPACKE_cgesdd)
JX_GESDD(complex128_t, double, LAPACKE_zgesdd)

}  // namespace jx::cpu
