// Inline float32 exp, tanh and erf for native kernels: branch-free LLVM IR (selects; exp
// has a rare path, a call given its body after vectorization), so the loop vectorizer
// widens them like plain arithmetic instead of calling glibc's libmvec. exp is a range
// reduction plus a minimax polynomial; tanh and erf are odd rationals x P(x^2) / Q(x^2) (src/math/odd_rational.h); all evaluated with llvm.fma
// (coefficients from scripts/fit_fast_math.py), with libm's IEEE special cases.
// Max error against a float64 reference, measured over 2^22 random inputs across each
// function's ranges plus edge cases (tests/jit_fast_math_test.cpp checks 2^20 of them):
// see the table in fast_math.cpp. Only the emitted polynomials use fma; nothing carries
// fast-math flags.
//
// The emitters take any IRBuilder (IRBuilder<> converts to IRBuilderBase&) and a float
// value or a vector of floats, and return a value of the same type.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "backend/cpu/vector_math.h"
#include "math/fast_functions.h"

namespace llvm {
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace jx::compiler::codegen {

class LoadedObject;

// exp(x): max 1 ULP; overflow to inf above ~88.72, correctly scaled subnormal results
// down to ~-103.97, 0 below; exp(-inf) = 0, exp(inf) = inf, exp(NaN) = NaN.
llvm::Value* emit_exp_f32(llvm::IRBuilderBase& b, llvm::Value* x);
// exp for float64, the same method: max 1 ULP (measured against long double).
llvm::Value* emit_exp_f64(llvm::IRBuilderBase& b, llvm::Value* x);
// Both compute the usual inputs' result with one scaling by 2^n and call their rare path
// (scalar_ops.h's emit_rare_math_call, "exp") with it; these give that path's body:
// true where x takes the rare path (|x| beyond the usual bound, or NaN), and exp(x)
// computed for every input (float or double by x's element type; the same bits as the
// usual path where both apply).
llvm::Value* emit_exp_rare_condition(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* emit_exp_full_range(llvm::IRBuilderBase& b, llvm::Value* x);
// tanh(x): x P(x^2) / Q(x^2) on |x| <= 9.02, ±1 beyond; max 5.26 ULP (every float32),
// tanh(x) = x for tiny x, tanh(-0) = -0, ±1 at ±inf, NaN for NaN, odd to the bit.
llvm::Value* emit_tanh_f32(llvm::IRBuilderBase& b, llvm::Value* x);
// erf(x): x P(x^2) / Q(x^2) on |x| <= 4, ±1 beyond; max 6.35 ULP (every float32);
// erf(-0) = -0, erf(±inf) = ±1, NaN for NaN, odd to the bit.
llvm::Value* emit_erf_f32(llvm::IRBuilderBase& b, llvm::Value* x);

// Whether native kernels compute `f` for `dtype` with the inline code below rather than
// libmvec's variant for `isa` (scalar_ops.cpp's math()): where it measured faster; the CPU
// backend's table (cpu::runs_inline, backend/cpu/inline_math.cpp), which eager follows too.
bool inline_fast_function(math::FastFunction f, DType dtype, cpu::VectorIsa isa);
// sin, cos, tan, log, log1p and expm1 (float32 or float64 by x's element type) as the
// inline code of src/math/fast_functions.h, whose ScalarArithmetic twin computes the same
// bits. `rare` emits, for one element x whose fast result is `usual`, the final result:
// eager's accurate function where math::rare_condition holds, else `usual`
// (scalar_ops.h's emit_rare_math_call).
using RarePath = std::function<llvm::Value*(llvm::IRBuilderBase&, llvm::Value* x, llvm::Value* usual)>;
llvm::Value* emit_fast_function(llvm::IRBuilderBase& b, math::FastFunction f, llvm::Value* x, const RarePath& rare);
// math::rare_condition on x (a value or a vector): i1 (or a vector of them) true where
// the fast path hands x to the rare path.
llvm::Value* emit_rare_condition(llvm::IRBuilderBase& b, math::FastFunction f, llvm::Value* x);

// The same computations in C++ (std::fma, the same constants, operation for operation):
// bit-identical to the emitted code at every input (tests/jit_fast_math_test.cpp checks
// it), so an eager kernel calling these agrees exactly with a jit kernel using the
// emitters. Scalar and unhurried: a compiler without FMA hardware calls libm's fma.
float exp_f32_scalar(float x);
float tanh_f32_scalar(float x);
float erf_f32_scalar(float x);
double exp_f64_scalar(double x);

// For tests and benchmarks: one of the emitters in a compiled loop
//   void jx_fast_math_loop(const T* in, T* out, int64_t n)   // out[i] = f(in[i])
// (T float, double for ExpF64)
// built like an elementwise kernel (host attributes, llvm_session.h's kElementwiseLoop
// pipeline) and loaded.
enum class FastMathFunction { Exp, Tanh, Erf, ExpF64 };
struct FastMathLoop {
  std::shared_ptr<LoadedObject> object;  // keeps the code loaded
  void (*run)(const void* in, void* out, int64_t n) = nullptr;
  std::string ir;  // the optimized IR, when asked for
};
FastMathLoop compile_fast_math_loop(FastMathFunction function, bool want_ir);
// The same loop around one of fast_functions.h's functions, for T = float or double
// (`f64`), whose rare path calls eager's libmvec variant for `isa` as kernels do.
FastMathLoop compile_fast_function_loop(math::FastFunction function, bool f64, cpu::VectorIsa isa, bool want_ir);

}  // namespace jx::compiler::codegen
