// Inline exp / tanh / erf (fast_math.h): IR emitters, their C++ twins, and a test loop.
//
// exp:  x clamped to [-104, 88.8] (beyond, the result is 0 or inf anyway; ordered
//       selects keep NaN); n = round(x / ln2) by the 1.5 * 2^23 shifter (the integer n
//       then sits in the shifted float's low bits: no float->int conversion, which would
//       be poison for NaN); r = x - n ln2 in two fma steps (Cody-Waite, ln2 = hi + lo,
//       |r| <= 0.3466, the first step exact); exp(r) = 1 + r (1 + r P(r)), P a degree-4
//       minimax fit (relative error 0.05 * 2^-24), Horner with fma; then times 2^n as
//       2^(n>>1) * 2^(n - (n>>1)): both factors are normal floats for every n in
//       [-150, 128], so subnormal results are rounded once from the exact scaling, and
//       n = 128 overflows to inf as IEEE does.
// exp f64: the same in double: clamp [-746, 709.9], 1.5 * 2^52 shifter, P degree 9
//       (relative 0.15 * 2^-53, mpmath Chebyshev fit).
// tanh: |x| < 0.625: x + x^3 P(x^2), P degree 4 (relative 0.08 * 2^-24), so tiny x give
//       x exactly. Above: (1 - e) / (1 + e) with e = exp(-2|x|) <= 0.29 (no
//       cancellation), |x| clamped to 9.1 (tanh rounds to 1 above 9.01) so that
//       e = p 2^n is an integer add to p's exponent field. x's sign is copied onto
//       both (so -0 stays -0); NaN takes the polynomial path.
// erf:  |x| < 1: x (c0 + x^2 Q(x^2)), Q degree 5, c0 = 2/sqrt(pi) split into float
//       hi + lo (rounding c0 alone would cost 0.87 ULP near 0); 1 <= |x| < 3.92: a
//       degree-14 polynomial in |x| - 2.46 (absolute error 0.14 * 2^-24 where erf >=
//       0.84); |x| >= 3.92: 1 (erf rounds to 1 above 3.9192); x's sign copied on.
//
// Coefficients: scripts/fit_fast_math.py (float32: Lawson-reweighted least squares, i.e.
// minimax, rounded to float32 one coefficient at a time with the rest refitted).
//
// Measured max error, AMD EPYC Zen 4, loops vectorized at <16 x float> / <8 x double>,
// against glibc's double exp / tanh / erf for float32 and expl for float64, over 2^22
// random inputs (uniform over each function's range, uniform in [-1, 1], random bit
// patterns, subnormals) plus every float around the switch points and thresholds:
//   exp f32 0.86 ULP, tanh f32 1.50 ULP, erf f32 1.25 ULP, exp f64 0.95 ULP;
// every 61st float32 bit pattern (70M inputs, all ranges): exp 0.87, tanh 1.50, erf 1.23.
// tests/jit_fast_math_test.cpp asserts 2 / 3 / 3 / 2 ULP over 2^20 inputs. libmvec's,
// for comparison (scalar_ops.cpp's table): expf 2.48, tanhf 1.35, erff 4.00, exp 2.60.
// Speed, one thread, 4096-element cache-resident buffers, ns per element, ours vs a loop
// calling libmvec's AVX-512 variant: expf 0.22 vs 0.27-0.29, tanhf 0.38 vs 0.39-0.40,
// erff 0.45 vs 0.60, exp f64 0.63-0.68 vs 0.73-0.82 (and inline code neither spills
// a fused kernel's live vector registers around a call nor leaves remainders scalar calls).
#include "jit/codegen/fast_math.h"

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
#include "jx/error.h"

namespace jx::compiler::codegen {
namespace {

using llvm::Value;

Value* f32(Value* like, double v) { return llvm::ConstantFP::get(like->getType(), v); }
llvm::Type* int_type_like(Value* like) { return like->getType()->getWithNewType(llvm::Type::getInt32Ty(like->getContext())); }
Value* i32(Value* like, int32_t v) { return llvm::ConstantInt::get(int_type_like(like), static_cast<uint64_t>(v), true); }

Value* fma(llvm::IRBuilderBase& b, Value* a, Value* m, Value* c) {
  return b.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, m, c});
}
Value* fabs(llvm::IRBuilderBase& b, Value* x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x); }
Value* copysign(llvm::IRBuilderBase& b, Value* magnitude, Value* sign) {
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, magnitude, sign);
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

// Shared by exp and tanh: z = 1.5 * 2^23 + round(x log2e), whose low mantissa bits are
// n in two's complement, and exp(r) for r = x - n ln2 (|r| <= 0.3466). x must be a clamped
// argument (|x| < 2^21 or NaN, which flows through as NaN).
struct ReducedExp {
  Value* z;  // the shifted n
  Value* p;  // exp(r), in [0.707, 1.415]
};
constexpr double kShifter = 0x1.8p23;
ReducedExp reduced_exp(llvm::IRBuilderBase& b, Value* x) {
  Value* z = fma(b, x, f32(x, static_cast<float>(kLog2e)), f32(x, kShifter));
  Value* n = b.CreateFSub(z, f32(x, kShifter));  // exact
  Value* r = fma(b, n, f32(x, -hi_part(kLn2)), x);  // exact (Cody-Waite, fma form)
  r = fma(b, n, f32(x, -lo_part(kLn2)), r);
  // exp(r) = 1 + r (1 + r P(r)), P from scripts/fit_fast_math.py.
  Value* p = horner(b, r, {0x1.fffffcp-2, 0x1.555492p-3, 0x1.5558b8p-5, 0x1.1239acp-7, 0x1.6a4572p-10});
  p = fma(b, p, r, f32(x, 1.0));
  p = fma(b, p, r, f32(x, 1.0));
  return {z, p};
}

}  // namespace

llvm::Value* emit_exp_f32(llvm::IRBuilderBase& b, llvm::Value* x) {
  // Ordered compares: NaN passes both selects and comes out as NaN below.
  Value* xc = b.CreateSelect(b.CreateFCmpOGT(x, f32(x, 88.8)), f32(x, 88.8), x);
  xc = b.CreateSelect(b.CreateFCmpOLT(xc, f32(x, -104.0)), f32(x, -104.0), xc);
  auto [z, p] = reduced_exp(b, xc);
  // 2^n as two normal factors 2^(n>>1) and 2^(n - (n>>1)), each in [2^-75, 2^64].
  llvm::Type* it = int_type_like(x);
  Value* ni = b.CreateSub(b.CreateBitCast(z, it), b.CreateBitCast(f32(x, kShifter), it));
  Value* n1 = b.CreateAShr(ni, i32(x, 1));
  Value* n2 = b.CreateSub(ni, n1);
  auto power_of_two = [&](Value* e) { return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, i32(x, 127)), i32(x, 23)), x->getType()); };
  return b.CreateFMul(b.CreateFMul(p, power_of_two(n1)), power_of_two(n2));
}

llvm::Value* emit_exp_f64(llvm::IRBuilderBase& b, llvm::Value* x) {
  // exp_f32's method in double: clamp to [-746, 709.9] (selects keep NaN), n =
  // round(x / ln2) by the 1.5 * 2^52 shifter, r = x - n ln2 in two exact-enough fma
  // steps, exp(r) = 1 + r (1 + r P(r)) with P degree 9 (relative 0.15 * 2^-53, mpmath
  // Chebyshev fit in scripts/fit_fast_math.py), times 2^(n>>1) 2^(n - (n>>1)).
  const double shifter = 0x1.8p52;
  Value* xc = b.CreateSelect(b.CreateFCmpOGT(x, f32(x, 709.9)), f32(x, 709.9), x);
  xc = b.CreateSelect(b.CreateFCmpOLT(xc, f32(x, -746.0)), f32(x, -746.0), xc);
  Value* z = fma(b, xc, f32(x, kLog2e), f32(x, shifter));
  Value* n = b.CreateFSub(z, f32(x, shifter));
  const double ln2_hi = 0x1.62e42fefa39efp-1;  // ln2 rounded to double
  const double ln2_lo = 0x1.abc9e3b39803fp-56;  // ln2 - ln2_hi
  Value* r = fma(b, n, f32(x, -ln2_hi), xc);
  r = fma(b, n, f32(x, -ln2_lo), r);
  Value* p = horner(b, r, {0x1.0000000000001p-1, 0x1.5555555555556p-3, 0x1.5555555553d56p-5, 0x1.11111111109afp-7,
                           0x1.6c16c17890eb4p-10, 0x1.a01a01a7c73c0p-13, 0x1.a019b8f9792eep-16, 0x1.71de0da24602dp-19,
                           0x1.28919ccaf9211p-22, 0x1.af38c67fbb53ep-26});
  p = fma(b, p, r, f32(x, 1.0));
  p = fma(b, p, r, f32(x, 1.0));
  llvm::Type* it = x->getType()->getWithNewType(llvm::Type::getInt64Ty(x->getContext()));
  auto i64 = [&](int64_t v) { return llvm::ConstantInt::get(it, static_cast<uint64_t>(v), true); };
  Value* ni = b.CreateSub(b.CreateBitCast(z, it), b.CreateBitCast(f32(x, shifter), it));
  Value* n1 = b.CreateAShr(ni, i64(1));
  Value* n2 = b.CreateSub(ni, n1);
  auto power_of_two = [&](Value* e) { return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, i64(1023)), i64(52)), x->getType()); };
  return b.CreateFMul(b.CreateFMul(p, power_of_two(n1)), power_of_two(n2));
}

llvm::Value* emit_tanh_f32(llvm::IRBuilderBase& b, llvm::Value* x) {
  Value* a = fabs(b, x);
  // |x| < 0.625: x + x^3 P(x^2).
  Value* x2 = b.CreateFMul(x, x);
  Value* p = horner(b, x2, {-0x1.555532p-2, 0x1.1106f6p-3, -0x1.b835a4p-5, 0x1.51f8cep-6, -0x1.750ce2p-8});
  Value* small = fma(b, b.CreateFMul(x, x2), p, x);
  // Otherwise (1 - e) / (1 + e), e = exp(-2|x|) in [0, 0.29]. |x| is clamped to 9.1
  // (tanh rounds to 1 above 9.01), so n >= -27 and e = p 2^n is the integer addition
  // of n to p's exponent field: n << 23 is z's bits << 23, as the shifter's low bits are 0.
  Value* ac = b.CreateSelect(b.CreateFCmpOGT(a, f32(x, 9.1)), f32(x, 9.1), a);
  auto [z, p_exp] = reduced_exp(b, b.CreateFMul(ac, f32(x, -2.0)));
  llvm::Type* it = int_type_like(x);
  Value* e = b.CreateBitCast(b.CreateAdd(b.CreateBitCast(p_exp, it), b.CreateShl(b.CreateBitCast(z, it), i32(x, 23))),
                             x->getType());
  Value* one = f32(x, 1.0);
  Value* large = b.CreateFDiv(b.CreateFSub(one, e), b.CreateFAdd(one, e));
  // x's sign on both (tanh is odd; for x = -0 the polynomial's sum is +0). NaN takes the
  // polynomial: the exponent-field addition above may have turned it into a number.
  return copysign(b, b.CreateSelect(b.CreateFCmpULT(a, f32(x, 0.625)), small, large), x);
}

llvm::Value* emit_erf_f32(llvm::IRBuilderBase& b, llvm::Value* x) {
  Value* a = fabs(b, x);
  // |x| < 1: x (c0_hi + (c0_lo + t Q(t))), t = x^2.
  const double two_over_sqrt_pi = 1.12837916709551257389615890312154517;
  Value* t = b.CreateFMul(x, x);
  Value* q = horner(b, t, {-0x1.812740p-2, 0x1.ce2d28p-4, -0x1.b7fab0p-6, 0x1.540a3cp-8, -0x1.a3ec54p-11, 0x1.48f0bap-14});
  Value* s = fma(b, t, q, f32(x, lo_part(two_over_sqrt_pi)));
  Value* small = fma(b, x, f32(x, hi_part(two_over_sqrt_pi)), b.CreateFMul(x, s));
  // 1 <= |x| < 3.92: Q(|x| - 2.46); above, 1. The clamp keeps inf out of the polynomial.
  const double limit = 3.92;
  Value* ac = b.CreateSelect(b.CreateFCmpOGT(a, f32(x, limit)), f32(x, limit), a);
  Value* u = b.CreateFSub(ac, f32(x, 2.46));
  Value* large = horner(b, u, {0x1.ffbe06p-1, 0x1.5c2a6cp-9, -0x1.ac3d7cp-8, 0x1.422c12p-7, -0x1.44e14cp-7,
                               0x1.bdba22p-8, -0x1.80e4c2p-9, 0x1.df12c0p-12, 0x1.7485e0p-12, -0x1.38519ep-12,
                               0x1.3f6902p-14, 0x1.940a8cp-16, -0x1.2439a4p-16, 0x1.83e932p-23, 0x1.283ab4p-20});
  large = b.CreateSelect(b.CreateFCmpOGE(a, f32(x, limit)), f32(x, 1.0), large);
  // x's sign on both (erf is odd; for x = -0 the small form's sum is +0).
  return copysign(b, b.CreateSelect(b.CreateFCmpOLT(a, f32(x, 1.0)), small, large), x);
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

float tanh_f32_scalar(float x) {
  const float a = std::fabs(x);
  const float x2 = x * x;
  const float p = horner_scalar<float>(x2, {-0x1.555532p-2, 0x1.1106f6p-3, -0x1.b835a4p-5, 0x1.51f8cep-6, -0x1.750ce2p-8});
  const float small = std::fma(x * x2, p, x);
  const float ac = a > 9.1f ? 9.1f : a;
  auto [z, p_exp] = reduced_exp_scalar(ac * -2.0f);
  const float e = std::bit_cast<float>(std::bit_cast<uint32_t>(p_exp) + (std::bit_cast<uint32_t>(z) << 23));
  const float large = (1.0f - e) / (1.0f + e);
  return std::copysign(!(a >= 0.625f) ? small : large, x);  // unordered-or-less, as fcmp ult
}

float erf_f32_scalar(float x) {
  const double two_over_sqrt_pi = 1.12837916709551257389615890312154517;
  const float a = std::fabs(x);
  const float t = x * x;
  const float q = horner_scalar<float>(t, {-0x1.812740p-2, 0x1.ce2d28p-4, -0x1.b7fab0p-6, 0x1.540a3cp-8, -0x1.a3ec54p-11, 0x1.48f0bap-14});
  const float s = std::fma(t, q, lo_part(two_over_sqrt_pi));
  const float small = std::fma(x, hi_part(two_over_sqrt_pi), x * s);
  const float limit = 3.92f;
  const float ac = a > limit ? limit : a;
  const float u = ac - 2.46f;
  float large = horner_scalar<float>(u, {0x1.ffbe06p-1, 0x1.5c2a6cp-9, -0x1.ac3d7cp-8, 0x1.422c12p-7, -0x1.44e14cp-7,
                                         0x1.bdba22p-8, -0x1.80e4c2p-9, 0x1.df12c0p-12, 0x1.7485e0p-12, -0x1.38519ep-12,
                                         0x1.3f6902p-14, 0x1.940a8cp-16, -0x1.2439a4p-16, 0x1.83e932p-23, 0x1.283ab4p-20});
  large = a >= limit ? 1.0f : large;
  return std::copysign(a < 1.0f ? small : large, x);
}

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

FastMathLoop compile_fast_math_loop(FastMathFunction function, bool want_ir) {
  llvm::LLVMContext ctx;
  auto module = std::make_unique<llvm::Module>("jx_fast_math", ctx);
  llvm::IRBuilder<> b(ctx);
  llvm::Type* ptr = b.getPtrTy();
  llvm::Type* element = function == FastMathFunction::ExpF64 ? b.getDoubleTy() : b.getFloatTy();
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
  Value* y = nullptr;
  switch (function) {
    case FastMathFunction::Exp: y = emit_exp_f32(b, x); break;
    case FastMathFunction::Tanh: y = emit_tanh_f32(b, x); break;
    case FastMathFunction::Erf: y = emit_erf_f32(b, x); break;
    case FastMathFunction::ExpF64: y = emit_exp_f64(b, x); break;
  }
  b.CreateAlignedStore(y, b.CreateGEP(element, out, i), align);
  Value* next = b.CreateAdd(i, b.getInt64(1), "", true, true);
  i->addIncoming(next, body);
  b.CreateCondBr(b.CreateICmpSLT(next, n), body, done);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*module, &os)) detail::fail("jit", "fast math loop does not verify: ", os.str());
  CompiledModule compiled = compile_module(*module, want_ir);
  FastMathLoop loop;
  loop.object = load_object(compiled.object, "jx_fast_math_loop");
  loop.run = reinterpret_cast<void (*)(const void*, void*, int64_t)>(loop.object->lookup("jx_fast_math_loop"));
  loop.ir = std::move(compiled.ir);
  return loop;
}

}  // namespace jx::compiler::codegen
