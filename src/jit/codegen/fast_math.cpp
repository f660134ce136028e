// Inline float32 exp / tanh / erf (fast_math.h). Methods:
//
// exp:  x clamped to [-104, 88.8] (beyond, the result is 0 or inf anyway; selects keep
//       NaN); n = round(x / ln2) by the 1.5 * 2^23 shifter (the integer n then sits in
//       the shifted float's low bits, no float->int conversion); r = x - n ln2 in two
//       fma steps (Cody-Waite with ln2 = hi + lo, |r| <= 0.3466); exp(r) = 1 + r + r^2
//       P(r), P a degree-4 minimax fit (relative error 0.05 ULP), Horner with fma; then
//       the result times 2^n as 2^(n/2) * 2^(n - n/2): both factors are normal floats for
//       every n in [-150, 128], so subnormal results are rounded once, correctly
//       scaled, and large n overflows to inf as IEEE does.
// tanh: |x| < 0.625: x + x^3 P(x^2), P degree 4 (relative 0.08 ULP), so tiny x give x
//       and -0 stays -0. Above: (1 - e) / (1 + e) with e = exp(-2|x|) from the exp
//       above (e <= 0.29, so no cancellation), sign copied from x; e = 0 gives 1.
// erf:  |x| < 1: x (c0 + x^2 Q(x^2)), Q degree 5, with c0 = 2/sqrt(pi) split into float
//       hi + lo (rounding c0 alone would cost 0.87 ULP near 0); 1 <= |x| < 3.92:
//       a degree-14 polynomial in |x| - 2.46 (absolute error 0.14 * 2^-24 where erf >=
//       0.84), sign copied from x; |x| >= 3.92: ±1 (erf rounds to 1 above 3.9192).
//
// Coefficients: scripts/fit_fast_math.py (Lawson-reweighted least squares = minimax,
// rounded to float32 one coefficient at a time with the rest refitted).
//
// Measured max error against a float64 reference (glibc exp/tanh/erf in double), 2^22
// random inputs (uniform over each function's interesting range, random bit patterns
// over all floats, subnormals) plus edge cases, on Zen 4, loops vectorized at
// <16 x float>:  exp 1.00 ULP (see tests/jit_fast_math_test.cpp for the bounds checked).
#include "jit/codegen/fast_math.h"

#include <array>
#include <cmath>
#include <initializer_list>

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
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

}  // namespace

llvm::Value* emit_exp_f32(llvm::IRBuilderBase& b, llvm::Value* x) {
  // Ordered compares: NaN passes both selects and comes out as NaN below.
  Value* xc = b.CreateSelect(b.CreateFCmpOGT(x, f32(x, 88.8)), f32(x, 88.8), x);
  xc = b.CreateSelect(b.CreateFCmpOLT(xc, f32(x, -104.0)), f32(x, -104.0), xc);
  // z = 1.5 * 2^23 + round(x log2e): its low mantissa bits are n, two's complement.
  const double shifter = 0x1.8p23;
  Value* z = fma(b, xc, f32(x, static_cast<float>(kLog2e)), f32(x, shifter));
  Value* n = b.CreateFSub(z, f32(x, shifter));  // exact
  Value* r = fma(b, n, f32(x, -hi_part(kLn2)), xc);  // exact (Cody-Waite, fma form)
  r = fma(b, n, f32(x, -lo_part(kLn2)), r);
  // exp(r) on |r| <= 0.3466: 1 + r (1 + r P(r)), P from scripts/fit_fast_math.py.
  Value* p = horner(b, r, {0x1.fffffcp-2, 0x1.555492p-3, 0x1.5558b8p-5, 0x1.1239acp-7, 0x1.6a4572p-10});
  p = fma(b, p, r, f32(x, 1.0));
  p = fma(b, p, r, f32(x, 1.0));
  // 2^n as two normal factors 2^(n>>1) and 2^(n - (n>>1)), each in [2^-75, 2^64].
  llvm::Type* it = int_type_like(x);
  Value* ni = b.CreateSub(b.CreateBitCast(z, it), b.CreateBitCast(f32(x, shifter), it));
  Value* n1 = b.CreateAShr(ni, i32(x, 1));
  Value* n2 = b.CreateSub(ni, n1);
  auto power_of_two = [&](Value* e) { return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, i32(x, 127)), i32(x, 23)), x->getType()); };
  return b.CreateFMul(b.CreateFMul(p, power_of_two(n1)), power_of_two(n2));
}

llvm::Value* emit_tanh_f32(llvm::IRBuilderBase& b, llvm::Value* x) {
  Value* a = fabs(b, x);
  // |x| < 0.625: x + x^3 P(x^2).
  Value* x2 = b.CreateFMul(x, x);
  Value* p = horner(b, x2, {-0x1.555532p-2, 0x1.1106f6p-3, -0x1.b835a4p-5, 0x1.51f8cep-6, -0x1.750ce2p-8});
  Value* small = fma(b, b.CreateFMul(x, x2), p, x);
  // Otherwise (1 - e) / (1 + e), e = exp(-2|x|) in [0, 0.29].
  Value* e = emit_exp_f32(b, b.CreateFMul(a, f32(x, -2.0)));
  Value* one = f32(x, 1.0);
  Value* large = copysign(b, b.CreateFDiv(b.CreateFSub(one, e), b.CreateFAdd(one, e)), x);
  return b.CreateSelect(b.CreateFCmpOLT(a, f32(x, 0.625)), small, large);
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
  large = copysign(b, large, x);
  return b.CreateSelect(b.CreateFCmpOLT(a, f32(x, 1.0)), small, large);
}

FastMathLoop compile_fast_math_loop(FastMathFunction function, bool want_ir) {
  llvm::LLVMContext ctx;
  auto module = std::make_unique<llvm::Module>("jx_fast_math", ctx);
  llvm::IRBuilder<> b(ctx);
  llvm::Type* ptr = b.getPtrTy();
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
  Value* x = b.CreateAlignedLoad(b.getFloatTy(), b.CreateGEP(b.getFloatTy(), in, i), llvm::Align(4));
  Value* y = function == FastMathFunction::Exp    ? emit_exp_f32(b, x)
             : function == FastMathFunction::Tanh ? emit_tanh_f32(b, x)
                                                  : emit_erf_f32(b, x);
  b.CreateAlignedStore(y, b.CreateGEP(b.getFloatTy(), out, i), llvm::Align(4));
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
  loop.run = reinterpret_cast<void (*)(const float*, float*, int64_t)>(loop.object->lookup("jx_fast_math_loop"));
  loop.ir = std::move(compiled.ir);
  return loop;
}

}  // namespace jx::compiler::codegen
