// Vector math over contiguous float32/float64 buffers: glibc's libmvec SIMD variants
// chosen at run time (AVX-512, AVX2, else scalar libm), plus the scalar special
// functions libm lacks (erf_inv, digamma).
#pragma once

#include <cstdint>

#include "jx/dtype.h"

namespace jx::cpu {

// One-operand functions with libmvec variants. The order is the dispatch tables' order.
#define JX_VEC_UNARY_OPS(X) \
  X(Exp, exp)               \
  X(Exp2, exp2)             \
  X(Expm1, expm1)           \
  X(Log, log)               \
  X(Log1p, log1p)           \
  X(Sin, sin)               \
  X(Cos, cos)               \
  X(Tan, tan)               \
  X(Asin, asin)             \
  X(Acos, acos)             \
  X(Atan, atan)             \
  X(Sinh, sinh)             \
  X(Cosh, cosh)             \
  X(Tanh, tanh)             \
  X(Asinh, asinh)           \
  X(Acosh, acosh)           \
  X(Atanh, atanh)           \
  X(Cbrt, cbrt)             \
  X(Erf, erf)               \
  X(Erfc, erfc)
#define JX_VEC_BINARY_OPS(X) \
  X(Atan2, atan2)            \
  X(Pow, pow)

#define JX_VEC_ENUM_ITEM(Name, fn) Name,
enum class VecOp : uint8_t { JX_VEC_UNARY_OPS(JX_VEC_ENUM_ITEM) kCount };
enum class VecOp2 : uint8_t { JX_VEC_BINARY_OPS(JX_VEC_ENUM_ITEM) kCount };
#undef JX_VEC_ENUM_ITEM

enum class VectorIsa : uint8_t { Scalar, Avx2, Avx512 };
const char* vector_isa_name(VectorIsa isa);

// The instruction set the vector functions use now: config's vector_isa (JX_VECTOR_ISA,
// jx::config::set_vector_isa), capped at what the CPU has; by default the best.
VectorIsa vector_isa();
// Switches the instruction set (tests and benchmarks compare them); requests beyond
// what the CPU supports fall back to the best it has. Returns the previous one.
VectorIsa set_vector_isa(VectorIsa isa);
// The best instruction set this CPU and build support.
VectorIsa best_vector_isa();

// y[i] = op(x[i]) for i < n. x and y may be the same buffer (not partly overlapping).
void vec_unary(VecOp op, const float* x, float* y, int64_t n);
void vec_unary(VecOp op, const double* x, double* y, int64_t n);
// y[i] = op(a[i], b[i]); y may alias a or b.
void vec_binary(VecOp2 op, const float* a, const float* b, float* y, int64_t n);
void vec_binary(VecOp2 op, const double* a, const double* b, double* y, int64_t n);
// The same through one given instruction set's variants instead of vector_isa()'s (capped
// at best_vector_isa()): jit kernels pin the ISA they were compiled for (runtime_math.cpp).
void vec_unary(VecOp op, VectorIsa isa, const float* x, float* y, int64_t n);
void vec_unary(VecOp op, VectorIsa isa, const double* x, double* y, int64_t n);
void vec_binary(VecOp2 op, VectorIsa isa, const float* a, const float* b, float* y, int64_t n);
void vec_binary(VecOp2 op, VectorIsa isa, const double* a, const double* b, double* y, int64_t n);

// Bulk float16 <-> float32 conversion of contiguous buffers: F16C instructions with the
// AVX2 or AVX-512 instruction set, else one element at a time. Round to nearest even.
void f16_to_f32(const float16_t* x, float* y, int64_t n);
void f32_to_f16(const float* x, float16_t* y, int64_t n);

// Scalar libm, for single values and for operands the vector paths do not take.
float scalar_unary(VecOp op, float x);
double scalar_unary(VecOp op, double x);
float scalar_binary(VecOp2 op, float a, float b);
double scalar_binary(VecOp2 op, double a, double b);

// erf over a float32 buffer by the polynomial jit kernels inline (fast_math.h), bit for
// bit, so eager and jit agree (max 1.25 ULP; libmvec's erff has 4). y may be x.
void erf_f32(const float* x, float* y, int64_t n);
// Inverse error function: ±inf at ±1, NaN outside [-1, 1]; within 2 ulp in float64.
double erf_inv(double x);
// The digamma function psi(x); NaN at 0, the negative integers and -inf (as XLA).
double digamma(double x);
// log|Gamma(x)| without touching the global signgam (thread-safe).
double lgamma(double x);
float lgamma(float x);

}  // namespace jx::cpu
