// The CPU ScalarBuilder: the primitives' elemental emitters (their blocks in
// src/lax/elementwise_*.cpp, families in src/lax/elemental.cpp) become LLVM IR here.
// Integer ops wrap; the emitters guard every case LLVM leaves undefined (division by
// zero, INT_MIN / -1, shifts by the bit width or more) with eager's defined result; float
// ops are the IEEE operations eager's C++ compiles to (no fast-math), and
// transcendentals (ScalarBuilder::math) call jx_vm_<fn>_<dtype>_<isa> (runtime_math.cpp),
// declared memory(none) so the loop vectorizer widens them to the libmvec variant eager runs for that ISA
// (vector_math_library()), while elements left scalar (remainders) go through that same
// variant one lane at a time: kernels give eager's bits at every position. Except exp
// (f32, f64), tanh (f32), erf (f32) and logistic (f32, f64, 1 / (1 + exp(-x)) with the
// inline exp): those are inline polynomials (fast_math.h), measured faster than
// libmvec's variants, so they are no longer eager's bits but within 4 ULP of them
// (logistic 6). And per ISA the functions of the CPU backend's table
// (backend/cpu/inline_math.cpp, cpu::runs_inline; AVX2: expm1 f32, tanh f64, and past
// Zen 1 sin and cos f32, sin and expm1 f64; AVX-512: sin, cos, tan, expm1, and log and
// tanh f64): inline too, but eager runs the same code
// there, so they keep eager's bits; they hand their rare inputs to the libmvec variant. The table
// below was measured before those functions' inline code (it gives libmvec's errors for
// them); tests/jit_fast_functions_test.cpp measures the inline code of all seven
// functions of src/math/fast_functions.h.
//
// Accuracy of the transcendentals in native kernels, measured by
// tests/jit_vector_math_test.cpp: max error in ULP over 2^18 random inputs spread over
// each function's ranges (plus edge cases), against a float64 reference for f32 and a
// long double reference for f64. AMD EPYC (Zen 4) with AVX-512, glibc 2.36 libmvec,
// loops vectorized at 512 bits (the kernels call _ZGVeN16v_*f / _ZGVeN8v_*, every
// element, remainders too); columns for JX_VECTOR_ISA=avx2 (_ZGVd*) and =scalar (libm).
//
//   function   avx512 f32  f64 | avx2 f32  f64 | scalar f32  f64
//   exp *            0.84  0.88 |     0.84  0.88 |       0.84  0.88
//   exp2             0.98  1.02 |     0.81  1.63 |       0.50  0.51
//   expm1            1.76  1.00 |     1.47  1.47 |       0.75  0.74
//   log              3.83  1.51 |     3.83  1.51 |       0.80  0.51
//   log1p            1.66  1.62 |     1.66  1.60 |       0.75  0.75
//   sin              1.73  3.14 |     1.73  3.14 |       0.56  0.51
//   cos              1.72  3.36 |     1.72  3.36 |       0.56  0.51
//   tan              3.00  2.94 |     3.18  2.68 |       1.02  0.53
//   asin             3.07  2.45 |     2.49  2.38 |       0.87  0.51
//   acos             2.07  1.60 |     2.07  1.66 |       0.87  0.52
//   atan             1.45  1.58 |     1.98  1.58 |       0.78  0.52
//   sinh             1.38  1.75 |     1.38  1.75 |       1.77  1.80
//   cosh             2.17  1.79 |     2.01  1.40 |       0.99  0.99
//   tanh *           4.43  1.13 |     4.43  2.01 |       4.43  2.10   (f32 inline; f64 avx2 inline since: 2.28)
//   asinh            0.94  0.94 |     1.80  2.16 |       1.53  1.47
//   acosh            0.80  0.80 |     2.54  2.04 |       1.62  1.82
//   atanh            1.59  1.31 |     1.99  2.00 |       1.62  1.50
//   erf *            5.50  2.35 |     5.50  2.35 |       5.50  1.04   (f32 inline)
//   erfc             1.53  1.97 |     1.53  1.97 |       2.68  2.60
//   cbrt             1.93  1.76 |     2.84  1.49 |       0.93  3.18
//   logistic *       2.01  1.93 |     2.01  1.93 |       2.01  1.93   (1 / (1 + exp(-x)))
//   pow              0.62  1.00 |     0.62  1.00 |       0.50  0.51
//   atan2            3.25  2.39 |     3.25  2.39 |       1.35  0.52
//
// * inline code (fast_math.h) for the dtypes marked: the same code whatever the ISA, so
// the same error in every column (the 2^18-sample maxima here; fast_math.cpp's 2^22
// samples and every 61st float find exp f32 0.87 and exp f64 0.95, and every float32
// tanh 5.26 and erf 6.35: odd rationals as XLA's, which measure 4.37 and 5.19 on the same
// grid). They replace libmvec's expf 2.48, exp 2.60, tanhf 1.35, erff 4.00 (avx512)
// because they measured faster than those variants (fast_math.cpp); exp is also more
// accurate, tanh and erf trade accuracy for half the cost (XLA's choice too).
// The test asserts libmvec's documented bound, 4 ULP (6 for logistic's composition), and
// for the inline ones 1 ULP for exp, 5.5 for tanh and 6.5 for erf f32, 4 for logistic.
// The other transcendentals, and tanh and erf in float64, use the libmvec variants eager
// uses, so kernels and eager agree exactly (tests/jit_test.cpp,
// SameInputGivesTheSameResultAtEveryPosition); with JX_VECTOR_ISA=scalar both call scalar
// libm and agree exactly too. The inline functions give the same bits at every position
// (vector body and scalar remainder run the same code, equal to fast_math.h's C++ twins),
// within 4 ULP of eager (logistic 6, tanh f32 7; erf f32 runs the same rational eagerly),
// with libm's special values exactly (NaN, ±inf, ±0, exp's overflow / underflow
// thresholds, tanh and erf saturating to ±1;
// tests/jit_scalar_ops_test.cpp). sqrt, rsqrt, floor, ceil, round, rem, nextafter,
// erf_inv, lgamma, digamma and pow with an integer exponent are bit-exact with eager.
#include "jit/codegen/scalar_ops.h"

#include "jit/codegen/fast_math.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/codegen/llvm_session.h"
#include "jit/codegen/module_target.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>

#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include "backend/cpu/vector_math.h"
#include "jit/kernel_support.h"
#include "jx/error.h"
#include "jx/lowering.h"
#include "math/scalar_functions.h"

extern "C" {
double jx_rt_erf_inv_f64(double);
double jx_rt_digamma_f64(double);
float jx_rt_lgamma_f32(float);
double jx_rt_lgamma_f64(double);
float jx_rt_powi_f32(float, int64_t);
double jx_rt_powi_f64(double, int64_t);
}

namespace jx::compiler::codegen {
namespace {

using llvm::Value;


bool is_signed_int(DType d) { return is_integer(d) && !is_unsigned(d); }

// ---- calls ----

// Declares (once per module) a function without side effects: memory(none), nounwind,
// willreturn, which is what lets LLVM hoist, fold and vectorize calls to it.
llvm::FunctionCallee pure_function(llvm::IRBuilderBase& b, std::string_view name, llvm::Type* ret,
                                   llvm::ArrayRef<llvm::Type*> params) {
  llvm::Module* module = b.GetInsertBlock()->getModule();
  llvm::FunctionCallee callee =
      module->getOrInsertFunction(llvm::StringRef(name.data(), name.size()), llvm::FunctionType::get(ret, params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotAccessMemory();
    f->setDoesNotThrow();
    f->setWillReturn();
    f->setNoSync();
    f->setDoesNotFreeMemory();
  }
  return callee;
}

// The libmvec-backed runtime function jx_vm_<base>_<f32|f64>_<isa> (runtime_math.cpp)
// for the instruction set eager uses now, the name the vector-function table maps to
// that ISA's one vector variant.
std::string vector_math_name(std::string_view base, DType dtype, cpu::VectorIsa isa) {
  return detail::cat("jx_vm_", base, dtype == DType::Float32 ? "_f32_" : "_f64_", cpu::vector_isa_name(isa));
}

// Eager's float32 or float64 function `base` (a cpu::VecOp / VecOp2 one) on one element:
// a call the loop vectorizer widens to the libmvec variant eager runs, and which, where
// it stays scalar, computes the element with that same variant (bit-identical to eager
// at every position of a loop, remainders included).
Value* call_libm(llvm::IRBuilder<>& b, std::string_view base, DType dtype, llvm::ArrayRef<Value*> args) {
  const std::string name = vector_math_name(base, dtype, module_vector_isa(*b.GetInsertBlock()->getModule()));
  llvm::Type* t = args[0]->getType();
  std::vector<llvm::Type*> params(args.size(), t);
  return b.CreateCall(pure_function(b, name, t, params), args);
}

Value* call_intrinsic(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id, llvm::ArrayRef<Value*> args) {
  return b.CreateIntrinsic(id, {args[0]->getType()}, args);
}

// A float64 runtime helper applied to float32 or float64 values (eager computes these
// in double and rounds once).
Value* call_runtime_f64(llvm::IRBuilder<>& b, std::string_view name, llvm::ArrayRef<Value*> args, DType dtype) {
  llvm::Type* f64 = b.getDoubleTy();
  std::vector<Value*> wide;
  for (Value* x : args) wide.push_back(dtype == DType::Float32 ? b.CreateFPExt(x, f64) : x);
  std::vector<llvm::Type*> params(args.size(), f64);
  Value* r = b.CreateCall(pure_function(b, name, f64, params), wide);
  return dtype == DType::Float32 ? b.CreateFPTrunc(r, args[0]->getType()) : r;
}

// The runtime symbol of a scalar math library function (runtime_math_symbols()).
std::string scalar_function_symbol(std::string_view name) { return detail::cat("jx_math_", name, "_f64"); }

Value* float_const(llvm::Type* t, double v) { return llvm::ConstantFP::get(t, v); }
Value* int_const(llvm::Type* t, int64_t v) { return llvm::ConstantInt::get(t, static_cast<uint64_t>(v), true); }

// ---- inline math, in place or outlined ----

constexpr std::string_view kRarePrefix = "jx_rare.";
constexpr std::string_view kOutlinedPrefix = "jx_outline.";

std::optional<math::FastFunction> fast_function_named(std::string_view name) {
  for (math::FastFunction f : math::kFastFunctions)
    if (name == math::fast_function_name(f)) return f;
  return std::nullopt;
}

// Whether native kernels compute `fn` for `d` with inline code (fast_math.h) rather than
// eager's libmvec variant: exp, float32 tanh and erf, and inline_fast_function's table.
bool has_inline_math(std::string_view fn, DType d, cpu::VectorIsa isa) {
  if (fn == "exp") return true;
  if (d == DType::Float32 && (fn == "tanh" || fn == "erf")) return true;
  const std::optional<math::FastFunction> f = fast_function_named(fn);
  return f && inline_fast_function(*f, d, isa);
}

// That inline code on x (a value or a vector of them).
Value* emit_inline_math(llvm::IRBuilderBase& b, std::string_view fn, DType d, Value* x) {
  const bool f32 = d == DType::Float32;
  if (fn == "exp") return f32 ? emit_exp_f32(b, x) : emit_exp_f64(b, x);
  if (f32 && fn == "tanh") return emit_tanh_f32(b, x);
  if (f32 && fn == "erf") return emit_erf_f32(b, x);
  return emit_fast_function(b, *fast_function_named(fn), x, [fn, d](llvm::IRBuilderBase& rb, Value* v, Value* usual) {
    return emit_rare_math_call(rb, fn, d, v, usual);
  });
}

// `<prefix><fn>.<f32|f64>.<isa>`: the scalar function of a family whose vector variants
// append `.v<lanes>`.
std::string math_family_name(std::string_view prefix, std::string_view fn, DType d, cpu::VectorIsa isa) {
  return detail::cat(prefix, fn, d == DType::Float32 ? ".f32." : ".f64.", cpu::vector_isa_name(isa));
}

// Every vector width up to the host's registers, for a function whose vector variants
// exist at any width (inline code, outlined or not).
std::vector<unsigned> every_vector_width(DType d) {
  std::vector<unsigned> widths;
  for (int64_t lanes = 2; lanes * itemsize(d) <= host_vector_bytes(); lanes *= 2) widths.push_back(static_cast<unsigned>(lanes));
  return widths;
}

// A call of the pure scalar function `scalar_name` on args (all of one type) that the
// loop vectorizer may widen to `<scalar_name>.v<lanes>` for each of `widths` (declared
// here and kept in llvm.compiler.used until the optimizer has run, since the vectorizer
// only calls variants it finds declared). A call on vectors goes to the variant of their
// width directly where there is one, else lane by lane to the scalar function.
Value* call_with_vector_variants(llvm::IRBuilderBase& b, const std::string& scalar_name, llvm::ArrayRef<Value*> args,
                                 const std::vector<unsigned>& widths) {
  llvm::Module& module = *b.GetInsertBlock()->getModule();
  llvm::Type* t = args[0]->getType();
  auto vector_variant = [&](unsigned lanes) {
    const std::string name = detail::cat(scalar_name, ".v", lanes);
    if (llvm::Function* f = module.getFunction(name)) return f;
    auto* vt = llvm::FixedVectorType::get(t->getScalarType(), lanes);
    std::vector<llvm::Type*> params(args.size(), vt);
    auto* vf = llvm::Function::Create(llvm::FunctionType::get(vt, params, false), llvm::Function::ExternalLinkage, name,
                                      module);
    vf->setDoesNotAccessMemory();
    vf->setDoesNotThrow();
    vf->setWillReturn();
    llvm::appendToCompilerUsed(module, {vf});
    return vf;
  };
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t)) {
    const unsigned lanes = vt->getNumElements();
    if (std::find(widths.begin(), widths.end(), lanes) != widths.end()) return b.CreateCall(vector_variant(lanes), args);
    // Wider than every variant (an outlined function's vectors of several registers):
    // a call per part of the widest variant that divides it, the parts side by side.
    unsigned part = 0;
    for (unsigned w : widths)
      if (lanes % w == 0) part = std::max(part, w);
    if (part != 0) {
      std::vector<Value*> results;
      for (unsigned start = 0; start < lanes; start += part) {
        std::vector<int> picked(part);
        for (unsigned k = 0; k < part; ++k) picked[k] = static_cast<int>(start + k);
        std::vector<Value*> part_args;
        for (Value* a : args) part_args.push_back(b.CreateShuffleVector(a, picked));
        results.push_back(b.CreateCall(vector_variant(part), part_args));
      }
      return llvm::concatenateVectors(b, results);
    }
    llvm::Type* st = vt->getElementType();
    std::vector<llvm::Type*> params(args.size(), st);
    llvm::FunctionCallee scalar = pure_function(b, scalar_name, st, params);
    Value* result = llvm::PoisonValue::get(vt);
    for (unsigned lane = 0; lane < lanes; ++lane) {
      std::vector<Value*> lane_args;
      for (Value* a : args) lane_args.push_back(b.CreateExtractElement(a, lane));
      result = b.CreateInsertElement(result, b.CreateCall(scalar, lane_args), lane);
    }
    return result;
  }
  std::vector<llvm::Type*> params(args.size(), t);
  llvm::CallInst* call = b.CreateCall(pure_function(b, scalar_name, t, params), args);
  std::string variants;
  const std::string vs(args.size(), 'v');
  for (unsigned lanes : widths)
    variants += detail::cat(variants.empty() ? "" : ",", "_ZGV_LLVM_N", lanes, vs, "_", scalar_name, "(",
                            vector_variant(lanes)->getName().str(), ")");
  if (!variants.empty())
    call->addFnAttr(llvm::Attribute::get(b.getContext(), "vector-function-abi-variant", variants));
  return call;
}

// The inline code of fn as a call of jx_outline.<fn>.<dtype>.<isa> (or its vector
// variants), which define_outlined_math defines with that same code: a long body's
// code generation then sees one call per transcendental instead of its 20-60
// instructions, and its results keep their bits.
Value* call_outlined_math(llvm::IRBuilderBase& b, std::string_view fn, DType d, Value* x) {
  const cpu::VectorIsa isa = module_vector_isa(*b.GetInsertBlock()->getModule());
  // A large body's vectors span several registers (kernel_plan.h, kLargeBodyVectors):
  // its calls take them whole, their parts' chains overlapping inside the function.
  std::vector<unsigned> widths = every_vector_width(d);
  if (!widths.empty())
    for (int64_t registers = 2, lanes = widths.back(); registers <= kLargeBodyVectors; registers *= 2)
      widths.push_back(static_cast<unsigned>(lanes * registers));
  return call_with_vector_variants(b, math_family_name(kOutlinedPrefix, fn, d, isa), {x}, widths);
}

// ---- the CPU backend's ScalarBuilder (jx/lowering.h) on an LLVM IRBuilder ----

Value* as_llvm(lowering::Value* v) { return reinterpret_cast<Value*>(v); }
lowering::Value* as_jx(Value* v) { return reinterpret_cast<lowering::Value*>(v); }

// Is `fn` one of eager's libmvec functions (cpu/vector_math.h)?
bool is_vector_math_function(std::string_view fn) {
  static constexpr std::string_view kNames[] = {
#define JX_MATH_NAME(Name, fn) #fn,
      JX_VEC_UNARY_OPS(JX_MATH_NAME) JX_VEC_BINARY_OPS(JX_MATH_NAME)
#undef JX_MATH_NAME
  };
  for (std::string_view n : kNames)
    if (n == fn) return true;
  return false;
}

class LlvmScalarBuilder final : public lowering::ScalarBuilder {
 public:
  explicit LlvmScalarBuilder(llvm::IRBuilder<>& b) : b_(b) {}
  using V = lowering::Value;

  V* float_constant(DType d, double v) override { return as_jx(llvm::ConstantFP::get(type(d), v)); }
  V* int_constant(DType d, int64_t v) override {
    return as_jx(llvm::ConstantInt::get(type(d), static_cast<uint64_t>(v), true));
  }
  V* literal(const Array& scalar) override { return as_jx(emit_literal(b_, scalar)); }

  V* neg(DType d, V* a) override { return as_jx(is_floating(d) ? b_.CreateFNeg(as_llvm(a)) : b_.CreateNeg(as_llvm(a))); }
  V* add(DType d, V* a, V* c, bool reassociate) override {
    if (!is_floating(d)) return as_jx(b_.CreateAdd(as_llvm(a), as_llvm(c)));
    return reassociable(b_.CreateFAdd(as_llvm(a), as_llvm(c)), reassociate);
  }
  V* sub(DType d, V* a, V* c) override {
    return as_jx(is_floating(d) ? b_.CreateFSub(as_llvm(a), as_llvm(c)) : b_.CreateSub(as_llvm(a), as_llvm(c)));
  }
  V* mul(DType d, V* a, V* c, bool reassociate) override {
    if (!is_floating(d)) return as_jx(b_.CreateMul(as_llvm(a), as_llvm(c)));
    return reassociable(b_.CreateFMul(as_llvm(a), as_llvm(c)), reassociate);
  }
  V* div(DType d, V* a, V* c) override {
    if (is_floating(d)) return as_jx(b_.CreateFDiv(as_llvm(a), as_llvm(c)));
    return as_jx(is_unsigned(d) ? b_.CreateUDiv(as_llvm(a), as_llvm(c)) : b_.CreateSDiv(as_llvm(a), as_llvm(c)));
  }
  V* rem(DType d, V* a, V* c) override {
    if (is_floating(d)) return as_jx(b_.CreateFRem(as_llvm(a), as_llvm(c)));  // C's fmod: exact
    return as_jx(is_unsigned(d) ? b_.CreateURem(as_llvm(a), as_llvm(c)) : b_.CreateSRem(as_llvm(a), as_llvm(c)));
  }
  V* abs(DType d, V* a) override {
    if (is_floating(d)) return intrinsic(llvm::Intrinsic::fabs, {as_llvm(a)});
    return as_jx(b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, as_llvm(a), b_.getFalse()));
  }
  V* int_max(DType d, V* a, V* c) override {
    return intrinsic(is_unsigned(d) ? llvm::Intrinsic::umax : llvm::Intrinsic::smax, {as_llvm(a), as_llvm(c)});
  }
  V* int_min(DType d, V* a, V* c) override {
    return intrinsic(is_unsigned(d) ? llvm::Intrinsic::umin : llvm::Intrinsic::smin, {as_llvm(a), as_llvm(c)});
  }
  V* float_maximum(V* a, V* c) override { return intrinsic(llvm::Intrinsic::maximum, {as_llvm(a), as_llvm(c)}); }
  V* float_minimum(V* a, V* c) override { return intrinsic(llvm::Intrinsic::minimum, {as_llvm(a), as_llvm(c)}); }
  V* floor(V* a) override { return intrinsic(llvm::Intrinsic::floor, {as_llvm(a)}); }
  V* ceil(V* a) override { return intrinsic(llvm::Intrinsic::ceil, {as_llvm(a)}); }
  V* round(V* a, bool half_to_even) override {
    return intrinsic(half_to_even ? llvm::Intrinsic::roundeven : llvm::Intrinsic::round, {as_llvm(a)});
  }
  V* sqrt(V* a) override { return intrinsic(llvm::Intrinsic::sqrt, {as_llvm(a)}); }

  V* compare(lowering::Cmp cmp, DType d, V* a, V* c) override {
    using P = llvm::CmpInst::Predicate;
    static constexpr P kFloat[] = {P::FCMP_OEQ, P::FCMP_UNE, P::FCMP_OLT, P::FCMP_OLE, P::FCMP_OGT, P::FCMP_OGE};
    static constexpr P kSigned[] = {P::ICMP_EQ, P::ICMP_NE, P::ICMP_SLT, P::ICMP_SLE, P::ICMP_SGT, P::ICMP_SGE};
    const auto i = static_cast<size_t>(cmp);
    if (is_floating(d)) return as_jx(b_.CreateFCmp(kFloat[i], as_llvm(a), as_llvm(c)));
    // bool orders false < true, as unsigned.
    if (is_signed_int(d)) return as_jx(b_.CreateICmp(kSigned[i], as_llvm(a), as_llvm(c)));
    return compare_unsigned(cmp, a, c);
  }
  V* compare_unsigned(lowering::Cmp cmp, V* a, V* c) override {
    using P = llvm::CmpInst::Predicate;
    static constexpr P kUnsigned[] = {P::ICMP_EQ, P::ICMP_NE, P::ICMP_ULT, P::ICMP_ULE, P::ICMP_UGT, P::ICMP_UGE};
    return as_jx(b_.CreateICmp(kUnsigned[static_cast<size_t>(cmp)], as_llvm(a), as_llvm(c)));
  }
  V* unordered(V* a, V* c) override { return as_jx(b_.CreateFCmpUNO(as_llvm(a), as_llvm(c))); }
  V* select(V* cond, V* t, V* f) override { return as_jx(b_.CreateSelect(as_llvm(cond), as_llvm(t), as_llvm(f))); }

  V* bit_and(V* a, V* c) override { return as_jx(b_.CreateAnd(as_llvm(a), as_llvm(c))); }
  V* bit_or(V* a, V* c) override { return as_jx(b_.CreateOr(as_llvm(a), as_llvm(c))); }
  V* bit_xor(V* a, V* c) override { return as_jx(b_.CreateXor(as_llvm(a), as_llvm(c))); }
  V* bit_not(V* a) override { return as_jx(b_.CreateNot(as_llvm(a))); }
  V* shift_left(V* a, V* n) override { return as_jx(b_.CreateShl(as_llvm(a), as_llvm(n))); }
  V* shift_right_logical(V* a, V* n) override { return as_jx(b_.CreateLShr(as_llvm(a), as_llvm(n))); }
  V* shift_right_arithmetic(V* a, V* n) override { return as_jx(b_.CreateAShr(as_llvm(a), as_llvm(n))); }

  V* convert(V* a, DType from, DType to) override { return as_jx(emit_convert(b_, as_llvm(a), from, to)); }
  V* bitcast(V* a, DType to) override { return as_jx(b_.CreateBitCast(as_llvm(a), type(to))); }

  // The CPU math library: inline polynomials where they measured faster than libmvec
  // (fast_math.h), eager's libmvec variants (jx_vm_*), jx's runtime helpers, and the
  // scalar math library (src/math/scalar_functions.h) as float64 runtime calls.
  V* math(std::string_view fn, DType d, std::span<V* const> jx_args) override {
    if (d != DType::Float32 && d != DType::Float64)
      detail::fail("jit", "math function ", fn, " has no native form for ", dtype_name(d));
    std::vector<Value*> args;
    for (V* a : jx_args) args.push_back(as_llvm(a));
    const bool f32 = d == DType::Float32;
    auto arity = [&](size_t n) {
      if (args.size() != n) detail::fail("jit", "math function ", fn, " takes ", n, " arguments, got ", args.size());
    };
    if (has_inline_math(fn, d, module_vector_isa(module()))) {
      arity(1);
      return as_jx(module_outlines_math(module()) ? call_outlined_math(b_, fn, d, args[0])
                                                  : emit_inline_math(b_, fn, d, args[0]));
    }
    if (is_vector_math_function(fn)) return as_jx(call_libm(b_, fn, d, args));
    if (fn == "lgamma") {  // lgammaf for float32, as eager (not lgamma rounded)
      arity(1);
      llvm::Type* t = args[0]->getType();
      return as_jx(b_.CreateCall(pure_function(b_, f32 ? "jx_rt_lgamma_f32" : "jx_rt_lgamma_f64", t, {t}), {args[0]}));
    }
    if (fn == "powi") {  // x^n for an int64 n: eager's exact repeated squaring
      arity(2);
      llvm::Type* t = args[0]->getType();
      return as_jx(b_.CreateCall(pure_function(b_, f32 ? "jx_rt_powi_f32" : "jx_rt_powi_f64", t, {t, b_.getInt64Ty()}),
                                 {args[0], args[1]}));
    }
    if (fn == "erf_inv" || fn == "digamma")
      return arity(1), as_jx(call_runtime_f64(b_, detail::cat("jx_rt_", fn, "_f64"), args, d));
    if (const math::ScalarFunction* f = math::find_scalar_function(fn)) {
      arity(static_cast<size_t>(f->arity));
      return as_jx(call_runtime_f64(b_, scalar_function_symbol(f->name), args, d));
    }
    detail::fail("jit", "the CPU backend has no math function '", fn, "'");
  }

 private:
  llvm::Type* type(DType d) { return value_type(b_.getContext(), d); }
  const llvm::Module& module() const { return *b_.GetInsertBlock()->getModule(); }
  V* intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<Value*> args) { return as_jx(call_intrinsic(b_, id, args)); }
  V* reassociable(Value* v, bool reassociate) {
    if (reassociate) {
      llvm::FastMathFlags flags;
      flags.setAllowReassoc();
      llvm::cast<llvm::Instruction>(v)->setFastMathFlags(flags);
    }
    return as_jx(v);
  }
  llvm::IRBuilder<>& b_;
};

const lowering::Reducer& reducer_of(const Primitive& reduction, DType dtype) {
  const lowering::Reducer& r = reduction.rules().lowering.reducer;
  if (!r) detail::fail("jit", reduction.name(), " of ", dtype_name(dtype), " has no native reduction");
  return r;
}

// ---- the vector-function table ----

// eager's libmvec functions (cpu/vector_math.h): name and arity.
struct MathFunction {
  const char* name;
  int arity;
};
constexpr MathFunction kVectorMathFunctions[] = {
#define JX_MATH_UNARY(Name, fn) {#fn, 1},
#define JX_MATH_BINARY(Name, fn) {#fn, 2},
    JX_VEC_UNARY_OPS(JX_MATH_UNARY) JX_VEC_BINARY_OPS(JX_MATH_BINARY)
#undef JX_MATH_UNARY
#undef JX_MATH_BINARY
};

struct IsaVariant {
  cpu::VectorIsa isa;
  char letter;         // the vector ABI's ISA letter: d AVX2, e AVX-512
  unsigned f64_lanes;  // doubles per vector
};
constexpr IsaVariant kIsaVariants[] = {{cpu::VectorIsa::Avx2, 'd', 4}, {cpu::VectorIsa::Avx512, 'e', 8}};

// libmvec's one vector variant of `base` (of `arity` operands) for an ISA, the one eager
// runs, and its lanes; none for the scalar ISA.
struct LibmvecVariant {
  std::string name;
  unsigned lanes = 0;
};
LibmvecVariant libmvec_variant(std::string_view base, DType dtype, cpu::VectorIsa isa, int arity = 1) {
  for (const IsaVariant& v : kIsaVariants)
    if (v.isa == isa) {
      const bool f32 = dtype == DType::Float32;
      const unsigned lanes = f32 ? 2 * v.f64_lanes : v.f64_lanes;
      return {detail::cat("_ZGV", v.letter, "N", lanes, std::string(static_cast<size_t>(arity), 'v'), "_", base,
                          f32 ? "f" : ""),
              lanes};
    }
  return {};
}

// jx_vm_<fn>_<dtype>_<isa> -> the one variant eager's vec_unary/vec_binary runs for that
// ISA (AVX-512: _ZGVeN16v_<fn>f / _ZGVeN8v_<fn>; AVX2: _ZGVdN8v_<fn>f / _ZGVdN4v_<fn>),
// for every ISA the CPU has. Exactly one width per function: a loop that vectorizes at
// another width calls the scalar function per lane, which computes the same bits. The
// ISA is in the scalar name, so one table serves kernels compiled for any vector_isa().
// VecDesc holds StringRefs, so the names live here for the life of the process.
struct VectorTable {
  std::deque<std::string> names;
  std::vector<llvm::VecDesc> descs;

  VectorTable() {
    auto keep = [&](std::string s) -> llvm::StringRef { return names.emplace_back(std::move(s)); };
    for (const IsaVariant& isa : kIsaVariants) {
      if (isa.isa > cpu::best_vector_isa()) continue;
      for (const MathFunction& fn : kVectorMathFunctions)
        for (DType dtype : {DType::Float32, DType::Float64}) {
          const LibmvecVariant variant = libmvec_variant(fn.name, dtype, isa.isa, fn.arity);
          llvm::StringRef prefix =
              keep(detail::cat("_ZGV_LLVM_N", variant.lanes, std::string(static_cast<size_t>(fn.arity), 'v')));
          descs.emplace_back(keep(vector_math_name(fn.name, dtype, isa.isa)), keep(variant.name),
                             llvm::ElementCount::getFixed(variant.lanes), false, prefix);
        }
    }
  }
};

}  // namespace

// ---- rare paths of the inline functions ----

llvm::Value* emit_rare_math_call(llvm::IRBuilderBase& b, std::string_view base, DType dtype, llvm::Value* x,
                                 llvm::Value* usual) {
  const cpu::VectorIsa isa = module_vector_isa(*b.GetInsertBlock()->getModule());
  // A libmvec fallback exists at its variant's width only; exp's is inline code, so it
  // offers every width up to the host's registers (a loop that vectorizes at another
  // width would otherwise call the scalar rare path per lane).
  std::vector<unsigned> widths;
  if (base == kExpRarePath) {
    widths = every_vector_width(dtype);
  } else if (const LibmvecVariant variant = libmvec_variant(base, dtype, isa); variant.lanes != 0) {
    widths.push_back(variant.lanes);  // none for the scalar ISA
  }
  return call_with_vector_variants(b, math_family_name(kRarePrefix, base, dtype, isa), {x, usual}, widths);
}

bool is_rare_path(const llvm::Function& callee) {
  return callee.getName().starts_with(llvm::StringRef(kRarePrefix.data(), kRarePrefix.size()));
}

namespace {

// What a rare-path function (jx_rare.<fn>.<f32|f64>.<isa>[.v<lanes>]) tests: exp's
// full-range condition, or an inline function's (math::rare_condition).
struct RarePathKind {
  bool exp = false;
  std::optional<math::FastFunction> function;
};

RarePathKind rare_path_kind(llvm::StringRef name) {
  llvm::SmallVector<llvm::StringRef, 5> parts;
  name.split(parts, '.');
  const std::string_view base_name = parts.size() >= 4 ? std::string_view(parts[1].data(), parts[1].size()) : "";
  RarePathKind kind{base_name == kExpRarePath, fast_function_named(base_name)};
  if (!kind.function && !kind.exp) detail::internal_fail("jit", "malformed rare-path function name ", name.str());
  return kind;
}

Value* emit_rare_path_condition(llvm::IRBuilderBase& b, const RarePathKind& kind, Value* x) {
  return kind.exp ? emit_exp_rare_condition(b, x) : emit_rare_condition(b, *kind.function, x);
}

// Moves the pure instructions of `from` that only `to` uses (through its phis' incoming
// values from `to`, or its own instructions) to the start of `to`, in their order: the
// usual values of a shared rare test, computed after its branch, where they need no
// register across the test (a run of four exp chains computed before the test spilled
// their arguments to the stack for it).
void sink_into(llvm::BasicBlock& from, llvm::BasicBlock& to) {
  auto used_only_in_to = [&](llvm::Instruction& inst) {
    for (const llvm::Use& use : inst.uses()) {
      const auto* user = llvm::cast<llvm::Instruction>(use.getUser());
      if (const auto* phi = llvm::dyn_cast<llvm::PHINode>(user)) {
        if (phi->getIncomingBlock(use) != &to) return false;
      } else if (user->getParent() != &to) {
        return false;
      }
    }
    return !inst.use_empty();
  };
  llvm::Instruction* front = &*to.getFirstInsertionPt();
  for (auto it = from.rbegin(); it != from.rend();) {
    llvm::Instruction& inst = *it++;
    if (inst.isTerminator() || llvm::isa<llvm::PHINode>(inst) || inst.mayHaveSideEffects() || inst.mayReadFromMemory())
      continue;
    if (!used_only_in_to(inst)) continue;
    inst.moveBefore(front);
    front = &inst;
  }
}

llvm::CallInst* vector_rare_call(llvm::Instruction& i) {
  auto* call = llvm::dyn_cast<llvm::CallInst>(&i);
  if (call == nullptr || !call->getType()->isVectorTy()) return nullptr;
  const llvm::Function* callee = call->getCalledFunction();
  return callee != nullptr && callee->isDeclaration() && is_rare_path(*callee) ? call : nullptr;
}

// One test for a run of rare-path calls: the vectorizer widens an interleaved loop's
// call into side-by-side calls (one per part), and a rows kernel across rows computes a
// row's points one after another (a row of 10 floats: ten exps, each added to the row's
// sum as it comes), and each, inlined, would end its basic block with its own branch; the
// code generator then schedules each call's usual code alone in its block, one dependent
// chain at a time, which the out-of-order window does not overlap (on Zen 1 a float32
// sum of exp ran at 21 cycles per vector against about 10 of arithmetic). Here the run's
// conditions are or-ed into one branch before its last call, whose rare side gives every
// call of the run its rare result: exp's full-range code for every lane, the others their
// own rare path (which tests its lanes again), so the calls' usual code shares one block,
// and exp's, read by no rare side, is sunk after the branch. A run: calls in one block
// whose arguments read no result of the run. Pure instructions between them that read
// its results (the row sum's adds) are deferred: moved, in their order, to just after
// the branches meet, where the merged results are defined; any other reader ends the run.
struct RareRun {
  std::vector<llvm::CallInst*> calls;
  std::vector<llvm::Instruction*> deferred;  // readers of the run placed before its last call
};

std::vector<RareRun> rare_runs(llvm::Function& f) {
  std::vector<RareRun> runs;
  for (llvm::BasicBlock& bb : f) {
    RareRun run;
    // The run's calls and the deferred instructions, which read them.
    llvm::SmallPtrSet<const Value*, 32> from_run;
    auto close = [&] {
      if (run.calls.size() >= 2) {
        // Readers after the last call stay where they are.
        llvm::Instruction* last = run.calls.back();
        std::erase_if(run.deferred, [&](llvm::Instruction* i) { return last->comesBefore(i); });
        runs.push_back(std::move(run));
      }
      run = RareRun{};
      from_run.clear();
    };
    for (llvm::Instruction& i : bb) {
      const bool reads_run =
          std::any_of(i.op_begin(), i.op_end(), [&](const llvm::Use& u) { return from_run.contains(u.get()); });
      llvm::CallInst* call = vector_rare_call(i);
      if (call != nullptr) {
        if (reads_run) close();
        run.calls.push_back(call);
        from_run.insert(call);
        continue;
      }
      if (!reads_run) continue;
      const bool movable = !i.isTerminator() && !llvm::isa<llvm::PHINode>(i) && !i.mayHaveSideEffects() &&
                           !i.mayReadFromMemory();
      if (!movable) {
        close();
        continue;
      }
      run.deferred.push_back(&i);
      from_run.insert(&i);
    }
    close();
  }
  return runs;
}

void share_rare_tests(llvm::Function& f) {
  const std::vector<RareRun> runs = rare_runs(f);
  llvm::LLVMContext& ctx = f.getContext();
  for (const RareRun& run : runs) {
    const std::vector<llvm::CallInst*>& calls = run.calls;
    llvm::CallInst* last = calls.back();
    llvm::BasicBlock* head = last->getParent();
    llvm::IRBuilder<> b(last);
    // Conditions of one vector type are or-ed lane-wise, then each type's reduced.
    std::vector<std::pair<llvm::Type*, Value*>> any_by_type;
    for (llvm::CallInst* call : calls) {
      Value* where = emit_rare_path_condition(b, rare_path_kind(call->getCalledFunction()->getName()), call->getArgOperand(0));
      auto it = std::find_if(any_by_type.begin(), any_by_type.end(), [&](const auto& p) { return p.first == where->getType(); });
      if (it == any_by_type.end()) {
        any_by_type.emplace_back(where->getType(), where);
      } else {
        it->second = b.CreateOr(it->second, where);
      }
    }
    Value* any = nullptr;
    for (const auto& [type, where] : any_by_type) {
      Value* reduced = b.CreateOrReduce(where);
      any = any == nullptr ? reduced : b.CreateOr(any, reduced);
    }
    llvm::BasicBlock* tail = head->splitBasicBlock(last, "rare.join");
    auto* rare = llvm::BasicBlock::Create(ctx, "rare.any", &f, tail);
    auto* usual = llvm::BasicBlock::Create(ctx, "rare.none", &f, tail);
    head->getTerminator()->eraseFromParent();
    b.SetInsertPoint(head);
    b.CreateCondBr(any, rare, usual, llvm::MDBuilder(ctx).createUnlikelyBranchWeights());
    b.SetInsertPoint(usual);
    b.CreateBr(tail);
    b.SetInsertPoint(rare);
    std::vector<Value*> rare_results;
    for (llvm::CallInst* call : calls) {
      // exp's full-range code is right for every lane and reads no usual value, which
      // can then be computed after the test; the others keep their usual lanes.
      if (rare_path_kind(call->getCalledFunction()->getName()).exp) {
        rare_results.push_back(emit_exp_full_range(b, call->getArgOperand(0)));
      } else {
        rare_results.push_back(b.CreateCall(call->getFunctionType(), call->getCalledOperand(),
                                            {call->getArgOperand(0), call->getArgOperand(1)}));
      }
    }
    b.CreateBr(tail);
    b.SetInsertPoint(tail, tail->getFirstInsertionPt());
    for (size_t k = 0; k < calls.size(); ++k) {
      llvm::PHINode* merged = b.CreatePHI(calls[k]->getType(), 2);
      merged->addIncoming(calls[k]->getArgOperand(1), usual);
      merged->addIncoming(rare_results[k], rare);
      calls[k]->replaceAllUsesWith(merged);
      calls[k]->eraseFromParent();
    }
    // The deferred readers, after the merged results (the phis) and before the rest.
    llvm::Instruction* before = &*tail->getFirstInsertionPt();
    for (llvm::Instruction* reader : run.deferred) reader->moveBefore(before);
    sink_into(*head, *usual);
  }
}

}  // namespace

bool define_rare_math_variants(llvm::Module& module) {
  for (llvm::Function& f : module)
    if (!f.isDeclaration()) share_rare_tests(f);
  std::vector<llvm::Function*> defined;
  for (llvm::Function& f : module) {
    const llvm::StringRef name = f.getName();
    if (!f.isDeclaration() || !is_rare_path(f)) continue;
    const RarePathKind kind = rare_path_kind(name);
    const bool vector = f.getReturnType()->isVectorTy();
    llvm::LLVMContext& ctx = module.getContext();
    auto* entry = llvm::BasicBlock::Create(ctx, "entry", &f);
    auto* slow = llvm::BasicBlock::Create(ctx, "rare", &f);
    auto* none = llvm::BasicBlock::Create(ctx, "none", &f);
    llvm::IRBuilder<> b(entry);
    Value* x = f.getArg(0);
    Value* usual = f.getArg(1);
    Value* where = emit_rare_path_condition(b, kind, x);
    b.CreateCondBr(vector ? b.CreateOrReduce(where) : where, slow, none,
                   llvm::MDBuilder(ctx).createUnlikelyBranchWeights());
    b.SetInsertPoint(slow);
    if (kind.exp) {
      b.CreateRet(emit_exp_full_range(b, x));  // right for every element, rare or not
    } else {
      const cpu::VectorIsa isa = module_vector_isa(module);
      const DType dtype = f.getReturnType()->getScalarType()->isFloatTy() ? DType::Float32 : DType::Float64;
      const std::string_view base = math::fast_function_name(*kind.function);
      llvm::Type* t = f.getReturnType();
      const std::string callee = vector ? libmvec_variant(base, dtype, isa).name : vector_math_name(base, dtype, isa);
      llvm::FunctionCallee accurate = module.getOrInsertFunction(callee, llvm::FunctionType::get(t, {t}, false));
      llvm::CallInst* call = b.CreateCall(accurate, {x});
      call->addFnAttr(llvm::Attribute::Cold);
      b.CreateRet(vector ? b.CreateSelect(where, call, usual) : static_cast<Value*>(call));
    }
    b.SetInsertPoint(none);
    b.CreateRet(usual);
    f.setLinkage(llvm::GlobalValue::InternalLinkage);
    f.addFnAttr(llvm::Attribute::AlwaysInline);
    set_host_attributes(f);
    defined.push_back(&f);
  }
  if (defined.empty()) return false;
  llvm::removeFromUsedLists(module, [&](llvm::Constant* c) {
    return std::find(defined.begin(), defined.end(), c) != defined.end();
  });
  return true;
}

// ---- outlined inline math ----

bool is_outlined_math_symbol(std::string_view symbol) { return symbol.starts_with(kOutlinedPrefix); }

void define_outlined_math(llvm::Module& module, std::string_view symbol) {
  // jx_outline.<fn>.<f32|f64>.<isa>[.v<lanes>]
  llvm::SmallVector<llvm::StringRef, 5> parts;
  llvm::StringRef(symbol.data(), symbol.size()).split(parts, '.');
  auto malformed = [&] { detail::internal_fail("jit", "malformed outlined math function name ", symbol); };
  if (!is_outlined_math_symbol(symbol) || (parts.size() != 4 && parts.size() != 5)) malformed();
  const std::string fn = parts[1].str();
  if (parts[2] != "f32" && parts[2] != "f64") malformed();
  const DType dtype = parts[2] == "f32" ? DType::Float32 : DType::Float64;
  std::optional<cpu::VectorIsa> isa;
  for (cpu::VectorIsa candidate : {cpu::VectorIsa::Scalar, cpu::VectorIsa::Avx2, cpu::VectorIsa::Avx512})
    if (parts[3] == cpu::vector_isa_name(candidate)) isa = candidate;
  unsigned lanes = 0;
  if (!isa || !has_inline_math(fn, dtype, *isa) ||
      (parts.size() == 5 && (!parts[4].consume_front("v") || parts[4].getAsInteger(10, lanes) || lanes < 2)))
    malformed();
  set_module_vector_isa(module, *isa);
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Type* t = value_type(ctx, dtype);
  if (lanes != 0) t = llvm::FixedVectorType::get(t, lanes);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(t, {t}, false), llvm::Function::ExternalLinkage,
                                   llvm::StringRef(symbol.data(), symbol.size()), module);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  set_host_attributes(*f);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  b.CreateRet(emit_inline_math(b, fn, dtype, f->getArg(0)));
}

std::vector<std::string> drop_uncalled_outlined_math(llvm::Module& module) {
  std::vector<llvm::Function*> declared;
  for (llvm::Function& f : module)
    if (f.isDeclaration() && is_outlined_math_symbol(f.getName().str())) declared.push_back(&f);
  std::vector<std::string> called;
  if (declared.empty()) return called;
  llvm::removeFromUsedLists(module, [&](llvm::Constant* c) {
    return std::find(declared.begin(), declared.end(), c) != declared.end();
  });
  for (llvm::Function* f : declared) {
    if (f->use_empty()) f->eraseFromParent();
    else called.push_back(f->getName().str());
  }
  return called;
}

// ---- types, memory, constants ----

llvm::Type* value_type(llvm::LLVMContext& ctx, DType dtype) {
  switch (dtype) {
    case DType::Bool: return llvm::Type::getInt1Ty(ctx);
    case DType::Int8:
    case DType::UInt8: return llvm::Type::getInt8Ty(ctx);
    case DType::Int16: return llvm::Type::getInt16Ty(ctx);
    case DType::Int32:
    case DType::UInt32: return llvm::Type::getInt32Ty(ctx);
    case DType::Int64: return llvm::Type::getInt64Ty(ctx);
    case DType::Float32: return llvm::Type::getFloatTy(ctx);
    case DType::Float64: return llvm::Type::getDoubleTy(ctx);
    default: detail::fail("jit", dtype_name(dtype), " is not supported by native kernels");
  }
}

llvm::Type* storage_type(llvm::LLVMContext& ctx, DType dtype) {
  if (dtype == DType::Bool) return llvm::Type::getInt8Ty(ctx);
  return value_type(ctx, dtype);
}

llvm::Value* load_element(llvm::IRBuilder<>& b, llvm::Value* element_ptr, DType dtype) {
  llvm::Type* t = storage_type(b.getContext(), dtype);
  Value* v = b.CreateAlignedLoad(t, element_ptr, llvm::Align(static_cast<uint64_t>(itemsize(dtype))));
  if (dtype == DType::Bool) return b.CreateICmpNE(v, b.getInt8(0));
  return v;
}

void store_element(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* element_ptr, DType dtype) {
  if (dtype == DType::Bool) value = b.CreateZExt(value, b.getInt8Ty());
  b.CreateAlignedStore(value, element_ptr, llvm::Align(static_cast<uint64_t>(itemsize(dtype))));
}

llvm::Value* emit_literal(llvm::IRBuilder<>& b, const Array& scalar) {
  const DType dtype = scalar.dtype();
  if (scalar.size() != 1) detail::fail("jit", "a literal must hold one element, got ", scalar.aval().str());
  llvm::Type* t = value_type(b.getContext(), dtype);  // refuses the dtypes kernels lack
  uint64_t bits = 0;  // the element's own bytes (little-endian), so NaN payloads survive
  scalar.copy_to(&bits, dtype);
  switch (dtype) {
    case DType::Bool: return b.getInt1((bits & 0xff) != 0);
    case DType::Float32: return llvm::ConstantFP::get(b.getContext(), llvm::APFloat(llvm::APFloat::IEEEsingle(), llvm::APInt(32, bits & 0xffffffffu)));
    case DType::Float64: return llvm::ConstantFP::get(b.getContext(), llvm::APFloat(llvm::APFloat::IEEEdouble(), llvm::APInt(64, bits)));
    default: return llvm::ConstantInt::get(t, bits);  // truncated to the type's width
  }
}

llvm::Value* emit_convert(llvm::IRBuilder<>& b, llvm::Value* value, DType from, DType to) {
  if (from == to) return value;
  llvm::Type* t = value_type(b.getContext(), to);
  (void)value_type(b.getContext(), from);
  if (to == DType::Bool) {  // nonzero; NaN counts as nonzero (NaN != 0 in C++)
    if (is_floating(from)) return b.CreateFCmpUNE(value, float_const(value->getType(), 0.0));
    return b.CreateICmpNE(value, int_const(value->getType(), 0));
  }
  if (from == DType::Bool) return is_floating(to) ? b.CreateUIToFP(value, t) : b.CreateZExt(value, t);
  if (is_integer(from) && is_integer(to)) {
    // Widening follows the source's signedness; narrowing keeps the low bits (wraps).
    return is_unsigned(from) ? b.CreateZExtOrTrunc(value, t) : b.CreateSExtOrTrunc(value, t);
  }
  if (is_integer(from)) return is_unsigned(from) ? b.CreateUIToFP(value, t) : b.CreateSIToFP(value, t);
  if (is_floating(to)) return b.CreateFPCast(value, t);
  // float -> integer: NaN -> 0, saturating at the type's range, truncating inside it.
  // The saturating intrinsics compute exactly convert_value's clamps.
  auto id = is_unsigned(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
  return b.CreateIntrinsic(id, {t, value->getType()}, {value});
}

// ---- elementwise equations ----

llvm::Value* emit_scalar_op(llvm::IRBuilder<>& b, const Equation& eqn, std::span<llvm::Value* const> operands) {
  std::string why;
  if (!scalar_op_supported(eqn, &why)) detail::fail("jit", why);
  if (operands.size() != eqn.inputs.size())
    detail::fail("jit", eqn.primitive->name(), ": expected ", eqn.inputs.size(), " operand values, got ",
                 operands.size());
  std::vector<DType> dtypes;
  for (const Atom& in : eqn.inputs) dtypes.push_back(in.aval().dtype);
  std::vector<lowering::Value*> values;
  for (Value* v : operands) values.push_back(as_jx(v));
  LlvmScalarBuilder builder(b);
  const lowering::ElementalArgs args{values, dtypes, eqn.outputs[0].aval.dtype, eqn.params};
  return as_llvm(eqn.primitive->rules().lowering.elemental(builder, args));
}

// ---- reductions ----

llvm::Value* reduction_identity(llvm::IRBuilder<>& b, const Primitive& reduction, DType dtype) {
  (void)value_type(b.getContext(), dtype);
  return emit_literal(b, reducer_of(reduction, dtype).identity(dtype));
}

llvm::Value* emit_reduce_combine(llvm::IRBuilder<>& b, const Primitive& reduction, llvm::Value* acc, llvm::Value* x,
                                 DType dtype) {
  (void)value_type(b.getContext(), dtype);
  LlvmScalarBuilder builder(b);
  return as_llvm(reducer_of(reduction, dtype).combine(builder, dtype, as_jx(acc), as_jx(x)));
}

// ---- vector math ----

std::vector<llvm::VecDesc> vector_math_library() {
  static const VectorTable table;
  return table.descs;
}

std::vector<std::pair<std::string, void*>> runtime_math_symbols() {
  std::vector<std::pair<std::string, void*>> symbols = vector_math_runtime_symbols();
  symbols.insert(symbols.end(), {
      {"jx_rt_erf_inv_f64", reinterpret_cast<void*>(&jx_rt_erf_inv_f64)},
      {"jx_rt_digamma_f64", reinterpret_cast<void*>(&jx_rt_digamma_f64)},
      {"jx_rt_lgamma_f32", reinterpret_cast<void*>(&jx_rt_lgamma_f32)},
      {"jx_rt_lgamma_f64", reinterpret_cast<void*>(&jx_rt_lgamma_f64)},
      {"jx_rt_powi_f32", reinterpret_cast<void*>(&jx_rt_powi_f32)},
      {"jx_rt_powi_f64", reinterpret_cast<void*>(&jx_rt_powi_f64)},
  });
  for (const math::ScalarFunction& f : math::scalar_functions())
    symbols.emplace_back(scalar_function_symbol(f.name),
                         f.arity == 1 ? reinterpret_cast<void*>(f.unary) : reinterpret_cast<void*>(f.binary));
  return symbols;
}

}  // namespace jx::compiler::codegen

// ---- what native kernels compute (kernel_support.h) ----

namespace jx::compiler {

bool native_kernel_dtype(DType d) {
  switch (d) {
    case DType::Bool:
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
    case DType::UInt8:
    case DType::UInt32:
    case DType::Float32:
    case DType::Float64: return true;
    default: return false;
  }
}

bool scalar_op_supported(const Equation& eqn, std::string* why_not) {
  auto refuse = [&](auto&&... parts) {
    if (why_not) *why_not = detail::cat(parts...);
    return false;
  };
  const std::string& name = eqn.primitive->name();
  if (eqn.outputs.size() != 1)
    return refuse(name, " has ", eqn.outputs.size(), " outputs; native kernels compute one value per equation");
  if (!eqn.primitive->rules().lowering.elemental) {
    bool complex = is_complex(eqn.outputs[0].aval.dtype);
    for (const Atom& in : eqn.inputs) complex = complex || is_complex(in.aval().dtype);
    if (complex) return refuse(name, " works on complex numbers, which native kernels do not support");
    return refuse(name, " has no native implementation");
  }
  for (const Atom& in : eqn.inputs)
    if (!native_kernel_dtype(in.aval().dtype))
      return refuse(dtype_name(in.aval().dtype), " is not supported by native kernels (", name, ")");
  const DType out = eqn.outputs[0].aval.dtype;
  if (!native_kernel_dtype(out))
    return refuse(dtype_name(out), " is not supported by native kernels (", name, ")");
  // One value per element: operands of the result's shape, or scalars (a select's
  // predicate, a clamp's bounds) beside one of its shape. A bitcast to a narrower or
  // wider type changes the shape (a 0-d float32 gives 4 bytes).
  const Shape& shape = eqn.outputs[0].aval.shape;
  auto not_per_element = [&](const Atom& in) {
    return refuse(name, " of ", in.aval().str(), " giving ", eqn.outputs[0].aval.str(),
                  " does not compute one element from one element");
  };
  bool of_result_shape = eqn.inputs.empty() || shape.empty();
  for (const Atom& in : eqn.inputs) {
    if (in.aval().shape != shape && in.aval().ndim() != 0) return not_per_element(in);
    of_result_shape = of_result_shape || in.aval().shape == shape;
  }
  return of_result_shape || not_per_element(eqn.inputs[0]);
}

}  // namespace jx::compiler
