// Inline exp / tanh / erf (fast_math.h): IR emitters, their C++ twins, and a test loop.
//
// exp:  n = round(x / ln2) by the 1.5 * 2^23 shifter (the integer n then sits in the
//       shifted float's low bits: no float->int conversion, which would be poison for
//       NaN); r = x - n ln2 in two fma steps (Cody-Waite, ln2 = hi + lo, |r| <= 0.3466,
//       the first step exact); exp(r) = 1 + r (1 + r P(r)), P a degree-4 minimax fit
//       (relative error 0.05 * 2^-24), Horner with fma; then times 2^n. For |x| <= 87
//       2^n is one normal float (one shift, one add, one multiply). Any other input
//       (overflow, subnormal results, NaN) takes a rare path (scalar_ops.h's
//       emit_rare_math_call: a vector test, a branch not taken): x clamped to [-104, 88.8]
//       (beyond, the result is 0 or inf anyway; ordered selects keep NaN) and 2^n as
//       2^(n>>1) * 2^(n - (n>>1)): both factors are normal floats for every n in [-150,
//       128], so subnormal results are rounded once from the exact scaling, and n = 128
//       overflows to inf as IEEE does. Where both apply they give the same bits. The
//       single scaling made exp 27% cheaper on AVX2 (4096 cached floats, one thread,
//       1.13 -> 0.83 ns per element, Zen 1; float64's n >> 1 has no AVX2 instruction).
// exp f64: the same in double: 2^n in one factor for |x| <= 708, else clamp [-746,
//       709.9]; 1.5 * 2^52 shifter, P degree 9 (relative 0.15 * 2^-53, mpmath Chebyshev
//       fit).
// tanh, erf: odd rationals x P(x^2) / Q(x^2) after a clamp of x (9.02 and 4, where
//       they round to ±1), the result clamped to [-1, 1]: src/math/odd_rational.h
//       (degrees 4/4 and 4/6 in x^2; one division instead of exp plus a second branch).
//
// Coefficients: scripts/fit_fast_math.py (float32: Lawson-reweighted least squares, i.e.
// minimax, rounded to float32 one coefficient at a time with the rest refitted).
//
// Measured max error, loops vectorized at <16 x float> / <8 x double> (AMD EPYC Zen 4)
// against glibc's double exp and expl for float64, over 2^22 random inputs (uniform over
// each function's range, uniform in [-1, 1], random bit patterns, subnormals) plus every
// float around the switch points and thresholds: exp f32 0.86 ULP, exp f64 0.95 ULP;
// every 61st float32 bit pattern (70M inputs, all ranges): exp 0.87.
// tanh and erf against double tanh / erf at every non-negative float32 (2^31, AVX2,
// 2026-12-04; both are odd to the bit): tanh max 5.26 ULP (mean 0.033), erf max 6.35
// ULP (mean 0.32), both at results just below 1. XLA's (jax.jit, the same method) on
// every 61st float32 from 1e-30 up: tanh 4.37, erf 5.19; ours on the same inputs: 5.26,
// 5.18. The exp-based tanh and two-polynomial erf these replaced had 1.50 and 1.23 ULP
// at twice the cost (4M elements, 2 threads: tanh 1.94 -> 0.90 ms, erf 2.25 -> 1.11 ms).
// tests/jit_fast_math_test.cpp asserts 2 / 5.5 / 6.5 / 2 ULP over 2^20 inputs. libmvec's,
// for comparison (scalar_ops.cpp's table): expf 2.48, tanhf 1.35, erff 4.00, exp 2.60.
// Speed of exp, one thread, 4096-element cache-resident buffers, ns per element, ours vs
// a loop calling libmvec's AVX-512 variant: expf 0.22 vs 0.27-0.29, exp f64 0.63-0.68 vs
// 0.73-0.82 (and inline code neither spills a fused kernel's live vector registers around
// a call nor leaves remainders scalar calls).
#include "jit/codegen/fast_math.h"

#include "backend/cpu/inline_math.h"

#include <array>
#include <bit>
#include <cmath>
#include <initializer_list>

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>

#include "jit/codegen/llvm_session.h"
#include "jit/codegen/module_target.h"
#include "jit/codegen/scalar_ops.h"
#include "math/odd_rational.h"
#include "jx/error.h"

namespace jx::compiler::codegen {
namespace {

using llvm::Value;

Value* f32(Value* like, double v) { return llvm::ConstantFP::get(like->getType(), v); }

Value* fma(llvm::IRBuilderBase& b, Value* a, Value* m, Value* c) {
  return b.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, m, c});
}

// c[0] + t (c[1] + t (c[2] + ...)), Horner with fma; coefficients as float32 bit-exact
// hex floats (they were rounded to float32 by the fit).
Value* horner(llvm::IRBuilderBase& b, Value* t, std::initializer_list<double> coefficients) {
  const double* c = coefficients.begin();
  size_t k = coefficients.size() - 1;
  Value* p = f32(t, c[k]);
  while (k-- > 0) p = fma(b, p, t, f32(t, c[k]));
  return p;
}

// A float32 constant from a double, and the float32 rounding of what that leaves.
float hi_part(double v) { return static_cast<float>(v); }
float lo_part(double v) { return static_cast<float>(v - static_cast<double>(static_cast<float>(v))); }

constexpr double kLn2 = 0.693147180559945309417232121458176568;
constexpr double kLog2e = 1.44269504088896340735992468100189214;

// exp's reduction: z = 1.5 * 2^23 + offset + round(x log2e), whose low mantissa bits
// are offset + n in two's complement (an integer offset moves no rounding: x log2e is
// never halfway between integers for |x| < 2^21), and exp(r) for r = x - n ln2 (|r| <= 0.3466) where |x| < 2^21
// (NaN flows through as NaN; larger arguments give garbage, never poison).
struct ReducedExp {
  Value* z;  // the shifted n (a float; a double for reduced_exp_f64)
  Value* p;  // exp(r), in [0.707, 1.415]
};
constexpr double kShifter = 0x1.8p23;
ReducedExp reduced_exp(llvm::IRBuilderBase& b, Value* x, int offset) {
  const double shifter = kShifter + offset;
  Value* z = fma(b, x, f32(x, static_cast<float>(kLog2e)), f32(x, shifter));
  Value* n = b.CreateFSub(z, f32(x, shifter));  // exact
  Value* r = fma(b, n, f32(x, -hi_part(kLn2)), x);  // exact (Cody-Waite, fma form)
  r = fma(b, n, f32(x, -lo_part(kLn2)), r);
  // exp(r) = 1 + r (1 + r P(r)), P from scripts/fit_fast_math.py.
  Value* p = horner(b, r, {0x1.fffffcp-2, 0x1.555492p-3, 0x1.5558b8p-5, 0x1.1239acp-7, 0x1.6a4572p-10});
  p = fma(b, p, r, f32(x, 1.0));
  p = fma(b, p, r, f32(x, 1.0));
  return {z, p};
}

// exp_f32's reduction in double: n = round(x / ln2) by the 1.5 * 2^52 shifter, r = x - n
// ln2 in two exact-enough fma steps, exp(r) = 1 + r (1 + r P(r)) with P degree 9
// (relative 0.15 * 2^-53, mpmath Chebyshev fit in scripts/fit_fast_math.py).
constexpr double kShifterF64 = 0x1.8p52;
ReducedExp reduced_exp_f64(llvm::IRBuilderBase& b, Value* x, int offset) {
  const double shifter = kShifterF64 + offset;
  Value* z = fma(b, x, f32(x, kLog2e), f32(x, shifter));
  Value* n = b.CreateFSub(z, f32(x, shifter));
  const double ln2_hi = 0x1.62e42fefa39efp-1;  // ln2 rounded to double
  const double ln2_lo = 0x1.abc9e3b39803fp-56;  // ln2 - ln2_hi
  Value* r = fma(b, n, f32(x, -ln2_hi), x);
  r = fma(b, n, f32(x, -ln2_lo), r);
  Value* p = horner(b, r, {0x1.0000000000001p-1, 0x1.5555555555556p-3, 0x1.5555555553d56p-5, 0x1.11111111109afp-7,
                           0x1.6c16c17890eb4p-10, 0x1.a01a01a7c73c0p-13, 0x1.a019b8f9792eep-16, 0x1.71de0da24602dp-19,
                           0x1.28919ccaf9211p-22, 0x1.af38c67fbb53ep-26});
  p = fma(b, p, r, f32(x, 1.0));
  p = fma(b, p, r, f32(x, 1.0));
  return {z, p};
}

// One float format's exp: its reduction, the bound of the usual path (|x| <= bound: n
// well inside the exponent range, exp(87) = 6.1e37 and exp(-87) = 1.6e-38 > FLT_MIN,
// exp(708) = 3e307 and exp(-708) = 3.3e-308 > DBL_MIN), and the full range's clamp.
struct ExpFormat {
  ReducedExp (*reduce)(llvm::IRBuilderBase&, Value*, int offset);
  double shifter, usual_bound, clamp_low, clamp_high;
  int mantissa_bits, exponent_bias;
};
constexpr ExpFormat kExpF32{reduced_exp, kShifter, 87.0, -104.0, 88.8, 23, 127};
constexpr ExpFormat kExpF64{reduced_exp_f64, kShifterF64, 708.0, -746.0, 709.9, 52, 1023};
const ExpFormat& exp_format(Value* x) { return x->getType()->getScalarType()->isFloatTy() ? kExpF32 : kExpF64; }

llvm::Type* bits_type(Value* like) {
  return like->getType()->getWithNewType(llvm::Type::getIntNTy(like->getContext(), like->getType()->getScalarSizeInBits()));
}
Value* bits_constant(Value* like, int64_t v) { return llvm::ConstantInt::get(bits_type(like), static_cast<uint64_t>(v), true); }

// The usual case, |x| <= usual_bound: 2^n is one normal number and p 2^n a normal result,
// the same bits as the two factors below give. The shifter is offset by the exponent
// bias, so z's low bits are n + bias, above them only bits that a shift by the mantissa
// width drops: 2^n's bits are z's shifted, one instruction.
// Garbage (never poison) for other inputs, which the rare path replaces.
Value* exp_usual(llvm::IRBuilderBase& b, Value* x) {
  const ExpFormat& f = exp_format(x);
  auto [z, p] = f.reduce(b, x, f.exponent_bias);
  Value* scale = b.CreateShl(b.CreateBitCast(z, bits_type(x)), bits_constant(x, f.mantissa_bits));
  return b.CreateFMul(p, b.CreateBitCast(scale, x->getType()));
}

}  // namespace

llvm::Value* emit_exp_f32(llvm::IRBuilderBase& b, llvm::Value* x) {
  return emit_rare_math_call(b, kExpRarePath, DType::Float32, x, exp_usual(b, x));
}

llvm::Value* emit_exp_f64(llvm::IRBuilderBase& b, llvm::Value* x) {
  return emit_rare_math_call(b, kExpRarePath, DType::Float64, x, exp_usual(b, x));
}

llvm::Value* emit_exp_rare_condition(llvm::IRBuilderBase& b, llvm::Value* x) {
  Value* magnitude = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  return b.CreateFCmpUGT(magnitude, f32(x, exp_format(x).usual_bound));  // NaN too
}

// Every input: x clamped (ordered compares: NaN passes both selects and comes out as NaN),
// then 2^n as two normal factors 2^(n>>1) and 2^(n - (n>>1)) (float32: each in [2^-75,
// 2^64]), so a subnormal result is rounded once and n past the top overflows to inf.
llvm::Value* emit_exp_full_range(llvm::IRBuilderBase& b, llvm::Value* x) {
  const ExpFormat& f = exp_format(x);
  Value* xc = b.CreateSelect(b.CreateFCmpOGT(x, f32(x, f.clamp_high)), f32(x, f.clamp_high), x);
  xc = b.CreateSelect(b.CreateFCmpOLT(xc, f32(x, f.clamp_low)), f32(x, f.clamp_low), xc);
  auto [z, p] = f.reduce(b, xc, 0);
  llvm::Type* it = bits_type(x);
  Value* ni = b.CreateSub(b.CreateBitCast(z, it), b.CreateBitCast(f32(x, f.shifter), it));
  Value* n1 = b.CreateAShr(ni, bits_constant(x, 1));
  Value* n2 = b.CreateSub(ni, n1);
  auto power_of_two = [&](Value* e) {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, bits_constant(x, f.exponent_bias)), bits_constant(x, f.mantissa_bits)),
                           x->getType());
  };
  return b.CreateFMul(b.CreateFMul(p, power_of_two(n1)), power_of_two(n2));
}

namespace {

// x P(x^2) / Q(x^2) as math::odd_rational evaluates it (src/math/odd_rational.h), the
// same operations in the same order. The clamps are ordered compares and selects (NaN
// passes), which x86 lowers to one min/max each.
Value* emit_odd_rational(llvm::IRBuilderBase& b, const math::OddRational& r, Value* x) {
  auto clamp = [&](Value* v, double lo, double hi) {
    v = b.CreateSelect(b.CreateFCmpOGT(v, f32(x, hi)), f32(x, hi), v);
    return b.CreateSelect(b.CreateFCmpOLT(v, f32(x, lo)), f32(x, lo), v);
  };
  Value* xc = clamp(x, -r.clamp, r.clamp);
  Value* t = b.CreateFMul(xc, xc);
  Value* p = f32(x, r.p.back());
  for (size_t k = r.p.size() - 2; k >= 1; --k) p = fma(b, p, t, f32(x, r.p[k]));
  Value* q = f32(x, r.q.back());
  for (size_t k = r.q.size() - 1; k-- > 0;) q = fma(b, q, t, f32(x, r.q[k]));
  q = fma(b, q, t, f32(x, 1.0));
  Value* n = fma(b, b.CreateFMul(xc, t), p, b.CreateFMul(xc, f32(x, r.p[0])));
  return clamp(b.CreateFDiv(n, q), -1.0, 1.0);
}

}  // namespace

llvm::Value* emit_tanh_f32(llvm::IRBuilderBase& b, llvm::Value* x) { return emit_odd_rational(b, math::kTanhF32, x); }

llvm::Value* emit_erf_f32(llvm::IRBuilderBase& b, llvm::Value* x) { return emit_odd_rational(b, math::kErfF32, x); }

// ---- src/math/fast_functions.h's arithmetic on LLVM values ----

namespace {

// Float values of one type (float, double, or vectors of them), integers of the same
// width, i1 masks. No fast-math flags: each operation rounds as IEEE says, so the code
// computes ScalarArithmetic's bits.
class IrArithmetic {
 public:
  using F = Value*;
  using I = Value*;
  using B = Value*;
  IrArithmetic(llvm::IRBuilderBase& b, llvm::Type* type)
      : b_(b),
        type_(type),
        int_type_(type->getWithNewType(llvm::Type::getIntNTy(type->getContext(), type->getScalarSizeInBits()))) {}

  F c(double v) const { return llvm::ConstantFP::get(type_, v); }
  I ci(int64_t v) const { return llvm::ConstantInt::get(int_type_, static_cast<uint64_t>(v), true); }
  F add(F x, F y) { return b_.CreateFAdd(x, y); }
  F sub(F x, F y) { return b_.CreateFSub(x, y); }
  F mul(F x, F y) { return b_.CreateFMul(x, y); }
  F div(F x, F y) { return b_.CreateFDiv(x, y); }
  F neg(F x) { return b_.CreateFNeg(x); }
  F fma(F x, F y, F z) { return b_.CreateIntrinsic(llvm::Intrinsic::fma, {type_}, {x, y, z}); }
  F abs(F x) { return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x); }
  B gt(F x, F y) { return b_.CreateFCmpOGT(x, y); }
  B lt(F x, F y) { return b_.CreateFCmpOLT(x, y); }
  B eq(F x, F y) { return b_.CreateFCmpOEQ(x, y); }
  B nge(F x, F y) { return b_.CreateFCmpULT(x, y); }
  B nlt(F x, F y) { return b_.CreateFCmpUGE(x, y); }
  B nle(F x, F y) { return b_.CreateFCmpUGT(x, y); }
  B ngt(F x, F y) { return b_.CreateFCmpULE(x, y); }
  B b_or(B x, B y) { return b_.CreateOr(x, y); }
  B ine(I x, I y) { return b_.CreateICmpNE(x, y); }
  F select(B m, F x, F y) { return b_.CreateSelect(m, x, y); }
  I iselect(B m, I x, I y) { return b_.CreateSelect(m, x, y); }
  I bits(F x) { return b_.CreateBitCast(x, int_type_); }
  F from_bits(I i) { return b_.CreateBitCast(i, type_); }
  I iadd(I x, I y) { return b_.CreateAdd(x, y); }
  I isub(I x, I y) { return b_.CreateSub(x, y); }
  I iand(I x, I y) { return b_.CreateAnd(x, y); }
  I ixor(I x, I y) { return b_.CreateXor(x, y); }
  I shl(I x, int s) { return b_.CreateShl(x, ci(s)); }
  I ashr(I x, int s) { return b_.CreateAShr(x, ci(s)); }
  F to_float(I x) { return b_.CreateSIToFP(x, type_); }

  // y = cond ? fallback(x) : usual, all of it in the fallback (emit_rare_math_call): a
  // call whose body, given after vectorization, tests cond itself (math::rare_condition)
  // and returns `usual` when no element needs the accurate function. So the loop
  // vectorizer widens one plain call, and the compare is emitted after InstCombine,
  // which would otherwise rewrite it into integer tests on the bits.
  template <class Rare>
  F rare(B /*cond: recomputed by the fallback*/, F usual, F x, Rare fallback) {
    return fallback(x, usual);
  }

 private:
  llvm::IRBuilderBase& b_;
  llvm::Type* type_;
  llvm::Type* int_type_;
};

}  // namespace

// The choice is the CPU backend's table, which eager follows too (backend/cpu/inline_math.h).
bool inline_fast_function(math::FastFunction f, DType dtype, cpu::VectorIsa isa) { return cpu::runs_inline(f, dtype, isa); }

llvm::Value* emit_rare_condition(llvm::IRBuilderBase& b, math::FastFunction f, llvm::Value* x) {
  IrArithmetic a(b, x->getType());
  if (x->getType()->getScalarType()->isFloatTy()) return math::rare_condition<float>(f, a, x);
  return math::rare_condition<double>(f, a, x);
}

llvm::Value* emit_fast_function(llvm::IRBuilderBase& b, math::FastFunction f, llvm::Value* x, const RarePath& rare) {
  IrArithmetic a(b, x->getType());
  auto fallback = [&](Value* v, Value* usual) { return rare(b, v, usual); };
  if (x->getType()->getScalarType()->isFloatTy()) return math::fast_function<float>(f, a, x, fallback);
  return math::fast_function<double>(f, a, x, fallback);
}

// ---- the same computations in C++, operation for operation ----

namespace {

template <class T>
T horner_scalar(T t, std::initializer_list<double> coefficients) {
  const double* c = coefficients.begin();
  size_t k = coefficients.size() - 1;
  T p = static_cast<T>(c[k]);
  while (k-- > 0) p = std::fma(p, t, static_cast<T>(c[k]));
  return p;
}

constexpr float kShifterF = 0x1.8p23f;

struct ReducedExpScalar {
  float z, p;
};
ReducedExpScalar reduced_exp_scalar(float x) {
  const float z = std::fma(x, static_cast<float>(kLog2e), kShifterF);
  const float n = z - kShifterF;
  float r = std::fma(n, -hi_part(kLn2), x);
  r = std::fma(n, -lo_part(kLn2), r);
  float p = horner_scalar<float>(r, {0x1.fffffcp-2, 0x1.555492p-3, 0x1.5558b8p-5, 0x1.1239acp-7, 0x1.6a4572p-10});
  p = std::fma(p, r, 1.0f);
  p = std::fma(p, r, 1.0f);
  return {z, p};
}

}  // namespace

float exp_f32_scalar(float x) {
  float xc = x > 88.8f ? 88.8f : x;
  xc = xc < -104.0f ? -104.0f : xc;
  auto [z, p] = reduced_exp_scalar(xc);
  const uint32_t ni = std::bit_cast<uint32_t>(z) - std::bit_cast<uint32_t>(kShifterF);
  const uint32_t n1 = static_cast<uint32_t>(static_cast<int32_t>(ni) >> 1);
  const uint32_t n2 = ni - n1;
  auto power_of_two = [](uint32_t e) { return std::bit_cast<float>((e + 127u) << 23); };
  return p * power_of_two(n1) * power_of_two(n2);
}

float tanh_f32_scalar(float x) { return math::odd_rational(math::kTanhF32, x); }

float erf_f32_scalar(float x) { return math::odd_rational(math::kErfF32, x); }

double exp_f64_scalar(double x) {
  const double shifter = 0x1.8p52;
  double xc = x > 709.9 ? 709.9 : x;
  xc = xc < -746.0 ? -746.0 : xc;
  const double z = std::fma(xc, kLog2e, shifter);
  const double n = z - shifter;
  double r = std::fma(n, -0x1.62e42fefa39efp-1, xc);
  r = std::fma(n, -0x1.abc9e3b39803fp-56, r);
  double p = horner_scalar<double>(r, {0x1.0000000000001p-1, 0x1.5555555555556p-3, 0x1.5555555553d56p-5, 0x1.11111111109afp-7,
                                       0x1.6c16c17890eb4p-10, 0x1.a01a01a7c73c0p-13, 0x1.a019b8f9792eep-16, 0x1.71de0da24602dp-19,
                                       0x1.28919ccaf9211p-22, 0x1.af38c67fbb53ep-26});
  p = std::fma(p, r, 1.0);
  p = std::fma(p, r, 1.0);
  const uint64_t ni = std::bit_cast<uint64_t>(z) - std::bit_cast<uint64_t>(shifter);
  const uint64_t n1 = static_cast<uint64_t>(static_cast<int64_t>(ni) >> 1);
  const uint64_t n2 = ni - n1;
  auto power_of_two = [](uint64_t e) { return std::bit_cast<double>((e + 1023u) << 52); };
  return p * power_of_two(n1) * power_of_two(n2);
}

namespace {

// void jx_fast_math_loop(const T* in, T* out, int64_t n): out[i] = emit(x = in[i]).
FastMathLoop compile_loop(bool f64, cpu::VectorIsa isa, bool want_ir,
                          const std::function<Value*(llvm::IRBuilder<>&, Value*)>& emit) {
  llvm::LLVMContext ctx;
  auto module = std::make_unique<llvm::Module>("jx_fast_math", ctx);
  set_module_vector_isa(*module, isa);
  llvm::IRBuilder<> b(ctx);
  llvm::Type* ptr = b.getPtrTy();
  llvm::Type* element = f64 ? b.getDoubleTy() : b.getFloatTy();
  llvm::Type* i64 = b.getInt64Ty();
  auto* type = llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, i64}, false);
  auto* f = llvm::Function::Create(type, llvm::Function::ExternalLinkage, "jx_fast_math_loop", *module);
  f->addParamAttr(0, llvm::Attribute::NoAlias);
  f->addParamAttr(1, llvm::Attribute::NoAlias);
  set_host_attributes(*f);
  Value* in = f->getArg(0);
  Value* out = f->getArg(1);
  Value* n = f->getArg(2);
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", f);
  auto* body = llvm::BasicBlock::Create(ctx, "body", f);
  auto* done = llvm::BasicBlock::Create(ctx, "done", f);
  b.SetInsertPoint(entry);
  b.CreateCondBr(b.CreateICmpSGT(n, b.getInt64(0)), body, done);
  b.SetInsertPoint(body);
  llvm::PHINode* i = b.CreatePHI(i64, 2);
  i->addIncoming(b.getInt64(0), entry);
  const llvm::Align align(element->getPrimitiveSizeInBits() / 8);
  Value* x = b.CreateAlignedLoad(element, b.CreateGEP(element, in, i), align);
  Value* y = emit(b, x);
  b.CreateAlignedStore(y, b.CreateGEP(element, out, i), align);
  Value* next = b.CreateAdd(i, b.getInt64(1), "", true, true);
  i->addIncoming(next, b.GetInsertBlock());
  b.CreateCondBr(b.CreateICmpSLT(next, n), body, done);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os)) detail::fail("jit", "fast math loop does not verify: ", os.str());
  CompiledModule compiled = compile_module(*module, Optimization::kElementwiseLoop, want_ir);
  FastMathLoop loop;
  loop.object = load_object(compiled.object, "jx_fast_math_loop");
  loop.run = reinterpret_cast<void (*)(const void*, void*, int64_t)>(loop.object->lookup("jx_fast_math_loop"));
  loop.ir = std::move(compiled.ir);
  return loop;
}

}  // namespace

FastMathLoop compile_fast_math_loop(FastMathFunction function, bool want_ir) {
  return compile_loop(function == FastMathFunction::ExpF64, cpu::vector_isa(), want_ir,
                      [function](llvm::IRBuilder<>& b, Value* x) -> Value* {
                        switch (function) {
                          case FastMathFunction::Exp: return emit_exp_f32(b, x);
                          case FastMathFunction::Tanh: return emit_tanh_f32(b, x);
                          case FastMathFunction::Erf: return emit_erf_f32(b, x);
                          case FastMathFunction::ExpF64: return emit_exp_f64(b, x);
                        }
                        return x;
                      });
}

FastMathLoop compile_fast_function_loop(math::FastFunction function, bool f64, cpu::VectorIsa isa, bool want_ir) {
  return compile_loop(f64, isa, want_ir, [function, f64](llvm::IRBuilder<>& b, Value* x) {
    return emit_fast_function(b, function, x, [function, f64](llvm::IRBuilderBase& rb, Value* v, Value* usual) {
      return emit_rare_math_call(rb, math::fast_function_name(function), f64 ? DType::Float64 : DType::Float32, v, usual);
    });
  });
}

}  // namespace jx::compiler::codegen
