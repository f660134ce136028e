// The inline functions of src/math/fast_functions.h (sin, cos, tan, log, log1p, expm1,
// tanh) where they replace libmvec's variants: which ones, per ISA (runs_inline, the one
// table jit kernels and eager both follow), and eager's loops over them. Jit kernels emit
// the same templates as LLVM IR (jit/codegen/fast_math.cpp); eager instantiates them on
// SIMD registers (simd_arithmetic.h), so the two agree bit for bit, rare inputs included
// (both hand those to libmvec's variant of the ISA).
#pragma once

#include <cstdint>

#include "backend/cpu/vector_math.h"
#include "math/fast_functions.h"

#if defined(JX_HAVE_LIBMVEC) && defined(__x86_64__) && defined(__GNUC__)
#define JX_INLINE_MATH 1
#endif

namespace jx::cpu {

// Whether kernels and eager compute f for dtype with the inline code on isa rather than
// with libmvec's variant (inline_math.cpp has the measurements).
bool runs_inline(math::FastFunction f, DType dtype, VectorIsa isa);
// Whether this CPU's vector units split a 256-bit operation into two 128-bit halves
// (AMD's Zen 1 and Zen+), where libmvec's AVX2 variants cost what the inline code does.
bool half_width_vector_units();

// y[i] = f(x[i]) by the inline code at isa's width (Avx2 or Avx512, which the CPU must
// run). y may be x.
void inline_unary(math::FastFunction f, VectorIsa isa, const float* x, float* y, int64_t n);
void inline_unary(math::FastFunction f, VectorIsa isa, const double* x, double* y, int64_t n);

// The per-ISA loops (inline_math_avx2.cpp, inline_math_avx512.cpp: compiled for that ISA,
// called only where the CPU has it).
void inline_unary_avx2(math::FastFunction f, const float* x, float* y, int64_t n);
void inline_unary_avx2(math::FastFunction f, const double* x, double* y, int64_t n);
void inline_unary_avx512(math::FastFunction f, const float* x, float* y, int64_t n);
void inline_unary_avx512(math::FastFunction f, const double* x, double* y, int64_t n);

}  // namespace jx::cpu
