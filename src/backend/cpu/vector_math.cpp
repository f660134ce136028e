#include "backend/cpu/vector_math.h"

#include <math.h>  // lgamma_r (glibc)

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <optional>
#include <string>

#if defined(JX_HAVE_LIBMVEC) && defined(__x86_64__) && defined(__GNUC__)
#define JX_USE_LIBMVEC 1
#include <immintrin.h>
#endif

#include "backend/cpu/inline_math.h"
#include "core/config_internal.h"
#include "math/odd_rational.h"

namespace jx::cpu {
namespace {

using UnaryF32 = void (*)(const float*, float*, int64_t);
using UnaryF64 = void (*)(const double*, double*, int64_t);
using BinaryF32 = void (*)(const float*, const float*, float*, int64_t);
using BinaryF64 = void (*)(const double*, const double*, double*, int64_t);

// ---- scalar libm ----

#define JX_SCALAR_UNARY(Name, fn)                                                              \
  void fn##_f32_scalar(const float* x, float* y, int64_t n) {                                  \
    for (int64_t i = 0; i < n; ++i) y[i] = ::fn##f(x[i]);                                      \
  }                                                                                            \
  void fn##_f64_scalar(const double* x, double* y, int64_t n) {                                \
    for (int64_t i = 0; i < n; ++i) y[i] = ::fn(x[i]);                                         \
  }
JX_VEC_UNARY_OPS(JX_SCALAR_UNARY)
#undef JX_SCALAR_UNARY

#define JX_SCALAR_BINARY(Name, fn)                                                             \
  void fn##_f32_scalar(const float* a, const float* b, float* y, int64_t n) {                  \
    for (int64_t i = 0; i < n; ++i) y[i] = ::fn##f(a[i], b[i]);                                \
  }                                                                                            \
  void fn##_f64_scalar(const double* a, const double* b, double* y, int64_t n) {               \
    for (int64_t i = 0; i < n; ++i) y[i] = ::fn(a[i], b[i]);                                   \
  }
JX_VEC_BINARY_OPS(JX_SCALAR_BINARY)
#undef JX_SCALAR_BINARY

#ifdef JX_USE_LIBMVEC

// ---- libmvec, AVX-512 ("e" variants: 16 floats or 8 doubles per call) ----
// Only these functions are compiled for AVX-512; they run only after the CPU check, so
// the library stays portable x86-64. A partial last vector uses masked loads/stores.

#define JX_AVX512_UNARY(Name, fn)                                                              \
  extern "C" __m512 _ZGVeN16v_##fn##f(__m512);                                                 \
  extern "C" __m512d _ZGVeN8v_##fn(__m512d);                                                   \
  __attribute__((target("avx512f"))) void fn##_f32_avx512(const float* x, float* y, int64_t n) { \
    int64_t i = 0;                                                                             \
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _ZGVeN16v_##fn##f(_mm512_loadu_ps(x + i))); \
    if (i < n) {                                                                               \
      __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);                               \
      _mm512_mask_storeu_ps(y + i, m, _ZGVeN16v_##fn##f(_mm512_mask_loadu_ps(_mm512_set1_ps(x[i]), m, x + i)));     \
    }                                                                                          \
  }                                                                                            \
  __attribute__((target("avx512f"))) void fn##_f64_avx512(const double* x, double* y, int64_t n) { \
    int64_t i = 0;                                                                             \
    for (; i + 8 <= n; i += 8) _mm512_storeu_pd(y + i, _ZGVeN8v_##fn(_mm512_loadu_pd(x + i))); \
    if (i < n) {                                                                               \
      __mmask8 m = static_cast<__mmask8>((1u << (n - i)) - 1);                                 \
      _mm512_mask_storeu_pd(y + i, m, _ZGVeN8v_##fn(_mm512_mask_loadu_pd(_mm512_set1_pd(x[i]), m, x + i)));         \
    }                                                                                          \
  }

#define JX_AVX512_BINARY(Name, fn)                                                             \
  extern "C" __m512 _ZGVeN16vv_##fn##f(__m512, __m512);                                        \
  extern "C" __m512d _ZGVeN8vv_##fn(__m512d, __m512d);                                         \
  __attribute__((target("avx512f"))) void fn##_f32_avx512(const float* a, const float* b, float* y, \
                                                          int64_t n) {                         \
    int64_t i = 0;                                                                             \
    for (; i + 16 <= n; i += 16)                                                               \
      _mm512_storeu_ps(y + i, _ZGVeN16vv_##fn##f(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i))); \
    if (i < n) {                                                                               \
      __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);                               \
      _mm512_mask_storeu_ps(                                                                   \
          y + i, m, _ZGVeN16vv_##fn##f(_mm512_mask_loadu_ps(_mm512_set1_ps(a[i]), m, a + i), _mm512_mask_loadu_ps(_mm512_set1_ps(b[i]), m, b + i))); \
    }                                                                                          \
  }                                                                                            \
  __attribute__((target("avx512f"))) void fn##_f64_avx512(const double* a, const double* b, double* y, \
                                                          int64_t n) {                         \
    int64_t i = 0;                                                                             \
    for (; i + 8 <= n; i += 8)                                                                 \
      _mm512_storeu_pd(y + i, _ZGVeN8vv_##fn(_mm512_loadu_pd(a + i), _mm512_loadu_pd(b + i))); \
    if (i < n) {                                                                               \
      __mmask8 m = static_cast<__mmask8>((1u << (n - i)) - 1);                                 \
      _mm512_mask_storeu_pd(                                                                   \
          y + i, m, _ZGVeN8vv_##fn(_mm512_mask_loadu_pd(_mm512_set1_pd(a[i]), m, a + i), _mm512_mask_loadu_pd(_mm512_set1_pd(b[i]), m, b + i))); \
    }                                                                                          \
  }

// Copies the count < width real elements of a partial vector and fills the rest with
// the last of them: a valid input keeps the padding lanes off libmvec's special-case
// paths (log(0), say), which cost more than the whole vector and dominate when a kernel
// calls one lane at a time (the per-row log of logsumexp).
template <typename T>
void pad_tail(T* buf, int width, const T* x, int64_t count) {
  for (int k = 0; k < width; ++k) buf[k] = x[std::min<int64_t>(k, count - 1)];
}

// ---- libmvec, AVX2 ("d" variants: 8 floats or 4 doubles per call) ----
// The partial last vector goes through a stack copy (AVX2 has no cheap masked load for
// every width) whose padding lanes repeat the last real element and are discarded.

#define JX_AVX2_UNARY(Name, fn)                                                                \
  extern "C" __m256 _ZGVdN8v_##fn##f(__m256);                                                  \
  extern "C" __m256d _ZGVdN4v_##fn(__m256d);                                                   \
  __attribute__((target("avx2,fma"))) void fn##_f32_avx2(const float* x, float* y, int64_t n) { \
    int64_t i = 0;                                                                             \
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _ZGVdN8v_##fn##f(_mm256_loadu_ps(x + i))); \
    if (i < n) {                                                                               \
      alignas(32) float buf[8];                                                                \
      pad_tail(buf, 8, x + i, n - i);                                                          \
      _mm256_store_ps(buf, _ZGVdN8v_##fn##f(_mm256_load_ps(buf)));                             \
      std::memcpy(y + i, buf, static_cast<size_t>(n - i) * sizeof(float));                     \
    }                                                                                          \
  }                                                                                            \
  __attribute__((target("avx2,fma"))) void fn##_f64_avx2(const double* x, double* y, int64_t n) { \
    int64_t i = 0;                                                                             \
    for (; i + 4 <= n; i += 4) _mm256_storeu_pd(y + i, _ZGVdN4v_##fn(_mm256_loadu_pd(x + i))); \
    if (i < n) {                                                                               \
      alignas(32) double buf[4];                                                               \
      pad_tail(buf, 4, x + i, n - i);                                                          \
      _mm256_store_pd(buf, _ZGVdN4v_##fn(_mm256_load_pd(buf)));                                \
      std::memcpy(y + i, buf, static_cast<size_t>(n - i) * sizeof(double));                   \
    }                                                                                          \
  }

#define JX_AVX2_BINARY(Name, fn)                                                               \
  extern "C" __m256 _ZGVdN8vv_##fn##f(__m256, __m256);                                         \
  extern "C" __m256d _ZGVdN4vv_##fn(__m256d, __m256d);                                         \
  __attribute__((target("avx2,fma"))) void fn##_f32_avx2(const float* a, const float* b, float* y, \
                                                         int64_t n) {                          \
    int64_t i = 0;                                                                             \
    for (; i + 8 <= n; i += 8)                                                                 \
      _mm256_storeu_ps(y + i, _ZGVdN8vv_##fn##f(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i))); \
    if (i < n) {                                                                               \
      alignas(32) float ba[8], bb[8];                                                          \
      pad_tail(ba, 8, a + i, n - i);                                                           \
      pad_tail(bb, 8, b + i, n - i);                                                           \
      _mm256_store_ps(ba, _ZGVdN8vv_##fn##f(_mm256_load_ps(ba), _mm256_load_ps(bb)));          \
      std::memcpy(y + i, ba, static_cast<size_t>(n - i) * sizeof(float));                     \
    }                                                                                          \
  }                                                                                            \
  __attribute__((target("avx2,fma"))) void fn##_f64_avx2(const double* a, const double* b, double* y, \
                                                         int64_t n) {                          \
    int64_t i = 0;                                                                             \
    for (; i + 4 <= n; i += 4)                                                                 \
      _mm256_storeu_pd(y + i, _ZGVdN4vv_##fn(_mm256_loadu_pd(a + i), _mm256_loadu_pd(b + i))); \
    if (i < n) {                                                                               \
      alignas(32) double ba[4], bb[4];                                                         \
      pad_tail(ba, 4, a + i, n - i);                                                           \
      pad_tail(bb, 4, b + i, n - i);                                                           \
      _mm256_store_pd(ba, _ZGVdN4vv_##fn(_mm256_load_pd(ba), _mm256_load_pd(bb)));             \
      std::memcpy(y + i, ba, static_cast<size_t>(n - i) * sizeof(double));                    \
    }                                                                                          \
  }

// GCC warns that passing vector types changes the ABI; the callees are libmvec's, built
// for exactly that ABI, and every caller carries the matching target attribute.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
JX_VEC_UNARY_OPS(JX_AVX512_UNARY)
JX_VEC_BINARY_OPS(JX_AVX512_BINARY)
JX_VEC_UNARY_OPS(JX_AVX2_UNARY)
JX_VEC_BINARY_OPS(JX_AVX2_BINARY)
#pragma GCC diagnostic pop
#undef JX_AVX512_UNARY
#undef JX_AVX512_BINARY
#undef JX_AVX2_UNARY
#undef JX_AVX2_BINARY

// F16C: 8 conversions per instruction; CPUs with AVX2 all have it.
__attribute__((target("avx2,f16c"))) void f16_to_f32_f16c(const float16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  for (; i < n; ++i) y[i] = static_cast<float>(x[i]);
}
__attribute__((target("avx2,f16c"))) void f32_to_f16_f16c(const float* x, float16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) y[i] = float16_t(x[i]);
}
constexpr bool kHaveF16c = true;

#define JX_ISA_ROW(Name, fn) {fn##_f32_scalar, fn##_f32_avx2, fn##_f32_avx512},
constexpr UnaryF32 kUnaryF32[][3] = {JX_VEC_UNARY_OPS(JX_ISA_ROW)};
constexpr BinaryF32 kBinaryF32[][3] = {JX_VEC_BINARY_OPS(JX_ISA_ROW)};
#undef JX_ISA_ROW
#define JX_ISA_ROW(Name, fn) {fn##_f64_scalar, fn##_f64_avx2, fn##_f64_avx512},
constexpr UnaryF64 kUnaryF64[][3] = {JX_VEC_UNARY_OPS(JX_ISA_ROW)};
constexpr BinaryF64 kBinaryF64[][3] = {JX_VEC_BINARY_OPS(JX_ISA_ROW)};
#undef JX_ISA_ROW

VectorIsa detect_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return VectorIsa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return VectorIsa::Avx2;
  return VectorIsa::Scalar;
}

#else  // no libmvec: scalar libm only

#define JX_ISA_ROW(Name, fn) {fn##_f32_scalar, fn##_f32_scalar, fn##_f32_scalar},
constexpr UnaryF32 kUnaryF32[][3] = {JX_VEC_UNARY_OPS(JX_ISA_ROW)};
constexpr BinaryF32 kBinaryF32[][3] = {JX_VEC_BINARY_OPS(JX_ISA_ROW)};
#undef JX_ISA_ROW
#define JX_ISA_ROW(Name, fn) {fn##_f64_scalar, fn##_f64_scalar, fn##_f64_scalar},
constexpr UnaryF64 kUnaryF64[][3] = {JX_VEC_UNARY_OPS(JX_ISA_ROW)};
constexpr BinaryF64 kBinaryF64[][3] = {JX_VEC_BINARY_OPS(JX_ISA_ROW)};
#undef JX_ISA_ROW

VectorIsa detect_isa() { return VectorIsa::Scalar; }

constexpr bool kHaveF16c = false;
void f16_to_f32_f16c(const float16_t*, float*, int64_t) {}
void f32_to_f16_f16c(const float*, float16_t*, int64_t) {}

#endif

static_assert(std::size(kUnaryF32) == static_cast<size_t>(VecOp::kCount));
static_assert(std::size(kBinaryF32) == static_cast<size_t>(VecOp2::kCount));

// The configuration's request (JX_VECTOR_ISA or set_vector_isa, validated there), capped
// at what this CPU runs.
VectorIsa initial_isa(VectorIsa best) {
  const std::string want = detail::stored_config().vector_isa;
  VectorIsa isa = best;
  if (want == "scalar") isa = VectorIsa::Scalar;
  else if (want == "avx2") isa = VectorIsa::Avx2;
  else if (want == "avx512") isa = VectorIsa::Avx512;
  return std::min(isa, best);
}

std::atomic<VectorIsa>& current_isa() {
  static std::atomic<VectorIsa> isa{initial_isa(best_vector_isa())};
  return isa;
}

int isa_index() { return static_cast<int>(current_isa().load(std::memory_order_relaxed)); }

}  // namespace

const char* vector_isa_name(VectorIsa isa) {
  switch (isa) {
    case VectorIsa::Scalar: return "scalar";
    case VectorIsa::Avx2: return "avx2";
    case VectorIsa::Avx512: return "avx512";
  }
  return "?";
}

VectorIsa best_vector_isa() {
  static const VectorIsa best = detect_isa();
  return best;
}

VectorIsa vector_isa() { return current_isa().load(std::memory_order_relaxed); }

VectorIsa set_vector_isa(VectorIsa isa) {
  return current_isa().exchange(std::min(isa, best_vector_isa()), std::memory_order_relaxed);
}

void vec_unary(VecOp op, const float* x, float* y, int64_t n) { vec_unary(op, vector_isa(), x, y, n); }
void vec_unary(VecOp op, const double* x, double* y, int64_t n) { vec_unary(op, vector_isa(), x, y, n); }
void vec_binary(VecOp2 op, const float* a, const float* b, float* y, int64_t n) {
  if (n > 0) kBinaryF32[static_cast<int>(op)][isa_index()](a, b, y, n);
}
void vec_binary(VecOp2 op, const double* a, const double* b, double* y, int64_t n) {
  if (n > 0) kBinaryF64[static_cast<int>(op)][isa_index()](a, b, y, n);
}

// The function of src/math/fast_functions.h an op is, if any.
std::optional<math::FastFunction> fast_function_of(VecOp op) {
  switch (op) {
    case VecOp::Sin: return math::FastFunction::Sin;
    case VecOp::Cos: return math::FastFunction::Cos;
    case VecOp::Tan: return math::FastFunction::Tan;
    case VecOp::Log: return math::FastFunction::Log;
    case VecOp::Log1p: return math::FastFunction::Log1p;
    case VecOp::Expm1: return math::FastFunction::Expm1;
    case VecOp::Tanh: return math::FastFunction::Tanh;
    default: return std::nullopt;
  }
}

// Where kernels compute op with inline code (inline_math.h), eager runs that code too.
template <class T, class Table>
void unary_at(VecOp op, VectorIsa isa, const T* x, T* y, int64_t n, const Table& table) {
  if (n <= 0) return;
  isa = std::min(isa, best_vector_isa());
  if (const auto f = fast_function_of(op); f && runs_inline(*f, dtype_of<T>, isa)) return inline_unary(*f, isa, x, y, n);
  table[static_cast<int>(op)][static_cast<int>(isa)](x, y, n);
}

void vec_unary(VecOp op, VectorIsa isa, const float* x, float* y, int64_t n) { unary_at(op, isa, x, y, n, kUnaryF32); }
void vec_unary(VecOp op, VectorIsa isa, const double* x, double* y, int64_t n) { unary_at(op, isa, x, y, n, kUnaryF64); }
void vec_binary(VecOp2 op, VectorIsa isa, const float* a, const float* b, float* y, int64_t n) {
  if (n > 0) kBinaryF32[static_cast<int>(op)][static_cast<int>(std::min(isa, best_vector_isa()))](a, b, y, n);
}
void vec_binary(VecOp2 op, VectorIsa isa, const double* a, const double* b, double* y, int64_t n) {
  if (n > 0) kBinaryF64[static_cast<int>(op)][static_cast<int>(std::min(isa, best_vector_isa()))](a, b, y, n);
}

void f16_to_f32(const float16_t* x, float* y, int64_t n) {
  if (kHaveF16c && isa_index() >= static_cast<int>(VectorIsa::Avx2)) return f16_to_f32_f16c(x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
}
void f32_to_f16(const float* x, float16_t* y, int64_t n) {
  if (kHaveF16c && isa_index() >= static_cast<int>(VectorIsa::Avx2)) return f32_to_f16_f16c(x, y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = float16_t(x[i]);
}

float scalar_unary(VecOp op, float x) {
  float y;
  kUnaryF32[static_cast<int>(op)][0](&x, &y, 1);
  return y;
}
double scalar_unary(VecOp op, double x) {
  double y;
  kUnaryF64[static_cast<int>(op)][0](&x, &y, 1);
  return y;
}
float scalar_binary(VecOp2 op, float a, float b) {
  float y;
  kBinaryF32[static_cast<int>(op)][0](&a, &b, &y, 1);
  return y;
}
double scalar_binary(VecOp2 op, double a, double b) {
  double y;
  kBinaryF64[static_cast<int>(op)][0](&a, &b, &y, 1);
  return y;
}

// ---- special functions ----

namespace {

// erf in float32 by the method jit kernels inline: the odd rational of
// src/math/odd_rational.h, whose scalar evaluation the jit's emitter matches operation for
// operation, so eager and jit give the same bits (tests/numpy_math_test checks it).
void odd_rational_generic(const math::OddRational& r, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = math::odd_rational(r, x[i]);
}
#ifdef JX_USE_LIBMVEC
// The same operations on 8 floats: min/max with the constant first return the second
// operand (x) when it is NaN, as the scalar ordered selects do; the remainder one at a time.
__attribute__((target("avx2,fma"))) void odd_rational_avx2(const math::OddRational& r, const float* x, float* y,
                                                           int64_t n) {
  const __m256 hi = _mm256_set1_ps(r.clamp), lo = _mm256_set1_ps(-r.clamp);
  const __m256 one = _mm256_set1_ps(1.0f), minus_one = _mm256_set1_ps(-1.0f), p0 = _mm256_set1_ps(r.p[0]);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 xc = _mm256_max_ps(lo, _mm256_min_ps(hi, _mm256_loadu_ps(x + i)));
    const __m256 t = _mm256_mul_ps(xc, xc);
    __m256 p = _mm256_set1_ps(r.p.back());
    for (size_t k = r.p.size() - 2; k >= 1; --k) p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(r.p[k]));
    __m256 q = _mm256_set1_ps(r.q.back());
    for (size_t k = r.q.size() - 1; k-- > 0;) q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(r.q[k]));
    q = _mm256_fmadd_ps(q, t, one);
    const __m256 v = _mm256_div_ps(_mm256_fmadd_ps(_mm256_mul_ps(xc, t), p, _mm256_mul_ps(xc, p0)), q);
    _mm256_storeu_ps(y + i, _mm256_max_ps(minus_one, _mm256_min_ps(one, v)));
  }
  for (; i < n; ++i) y[i] = math::odd_rational(r, x[i]);
}
#endif

}  // namespace

void erf_f32(const float* x, float* y, int64_t n) {
#ifdef JX_USE_LIBMVEC
  // AVX-512 CPUs have AVX2 and FMA: the 8-wide code serves both.
  if (current_isa().load(std::memory_order_relaxed) >= VectorIsa::Avx2) return odd_rational_avx2(math::kErfF32, x, y, n);
#endif
  odd_rational_generic(math::kErfF32, x, y, n);
}

double erf_inv(double x) {
  if (!(x >= -1.0 && x <= 1.0)) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0.0) return x;  // keeps the sign of zero
  double a = std::fabs(x);
  if (a == 1.0) return std::copysign(std::numeric_limits<double>::infinity(), x);
  // Starting guess: M. Giles' single-precision approximation ("Approximating the erfinv
  // function", 2010), then Newton steps on erf (or on erfc near 1, where 1 - a is exact
  // and erf would lose the digits) to full double precision.
  double w = -std::log((1.0 - a) * (1.0 + a));
  double p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double y = p * a;
  constexpr double kTwoOverSqrtPi = 2.0 / 1.7724538509055160273;
  for (int it = 0; it < 8; ++it) {
    double step;
    if (a <= 0.5) {
      step = (std::erf(y) - a) / (kTwoOverSqrtPi * std::exp(-y * y));
    } else {
      // Newton on log erfc(y) = log(1 - a): nearly linear in the tail, where Newton on
      // erfc itself would creep toward the root.
      double c = std::erfc(y);
      step = (std::log(c) - std::log1p(-a)) / (-kTwoOverSqrtPi * std::exp(-y * y) / c);
    }
    y -= step;
    if (std::fabs(step) <= 1e-16 * y) break;
  }
  return std::copysign(y, x);
}

double digamma(double x) {
  if (std::isnan(x)) return x;
  if (x == std::numeric_limits<double>::infinity()) return x;
  if (x <= 0.0 && x == std::floor(x)) return std::numeric_limits<double>::quiet_NaN();  // poles, -inf
  double result = 0.0;
  if (x < 0.5) {
    // Reflection psi(x) = psi(1 - x) - pi cot(pi x); reducing x to [-1/2, 1/2] first keeps
    // tan accurate for large |x|.
    double r = x - std::round(x);
    result = -std::numbers::pi / std::tan(std::numbers::pi * r);
    x = 1.0 - x;
  }
  while (x < 12.0) {  // recurrence psi(x) = psi(x + 1) - 1/x up to the asymptotic range
    result -= 1.0 / x;
    x += 1.0;
  }
  double inv = 1.0 / x, inv2 = inv * inv;
  double series =
      inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 * (1.0 / 132)))));
  return result + std::log(x) - 0.5 * inv - series;
}

double lgamma(double x) {
  int sign;
  return ::lgamma_r(x, &sign);
}
float lgamma(float x) {
  int sign;
  return ::lgammaf_r(x, &sign);
}

}  // namespace jx::cpu
