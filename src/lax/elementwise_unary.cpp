// Elementwise unary primitives: shape rules from rules::unary*, derivatives, batching and
// lowerings. Their CPU kernels: src/backend/cpu/kernels/unary.cpp.
#include <limits>
#include <numbers>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "lax/ad_rules.h"
#include "lax/batch_rules.h"
#include "lax/elemental.h"
#include "lax/rules.h"
#include "transforms/ad_util.h"

namespace jx::lax {
namespace {

using elemental::ElementalArgs;
using elemental::ScalarBuilder;
using lowering::Cmp;
using LValue = lowering::Value;
constexpr int kTranscendental = elemental::kTranscendentalCost;

using rules::kBitTypes;
using rules::kComplexTypes;
using rules::kFloatTypes;
using rules::kInexactTypes;
using rules::kNumberTypes;
using rules::kSignedTypes;

// conj takes float32/float64 too (as JAX) and always gives a complex dtype.
std::vector<Aval> conj_rule(std::span<const Aval> in, const Params&) {
  rules::check_arity("conj", in, 1);
  DType d = in[0].dtype;
  if (!is_complex(d) && d != DType::Float32 && d != DType::Float64)
    detail::fail("conj", "operand must be float32, float64 or complex, got ", in[0].str());
  return {Aval{in[0].shape, complex_dtype(d), in[0].weak_type}};
}

std::vector<Aval> round_rule(std::span<const Aval> in, const Params& params) {
  rules::check_arity("round", in, 1);
  rules::check_dtype("round", in[0], kFloatTypes);
  int64_t method = params.get_int("rounding_method");
  if (method != 0 && method != 1)
    detail::fail("round", "rounding_method must be 0 (away from zero) or 1 (to nearest even), got ", method);
  return {in[0]};
}

// sign on scalars: floats keep ±0 and NaN; integers (x > 0) - (x < 0), unsigned x != 0.
LValue* sign_elemental(ScalarBuilder& b, const ElementalArgs& x) {
  const DType d = x.in();
  if (is_floating(d)) {
    LValue* r = b.select(b.compare(Cmp::kLt, d, x[0], b.float_constant(d, 0.0)), b.float_constant(d, -1.0), x[0]);
    return b.select(b.compare(Cmp::kGt, d, x[0], b.float_constant(d, 0.0)), b.float_constant(d, 1.0), r);
  }
  auto is = [&](Cmp c) { return b.convert(b.compare(c, d, x[0], b.int_constant(d, 0)), DType::Bool, d); };
  if (is_unsigned(d)) return is(Cmp::kNe);
  return b.sub(d, is(Cmp::kGt), is(Cmp::kLt));
}

// logistic on scalars: 1 / (1 + exp(-x)), eager's composition.
LValue* logistic_elemental(ScalarBuilder& b, const ElementalArgs& x) {
  const DType d = x.in();
  LValue* minus_x[] = {b.neg(d, x[0])};
  LValue* e = b.math("exp", d, minus_x);
  return b.div(d, b.float_constant(d, 1.0), b.add(d, b.float_constant(d, 1.0), e));
}

// Outputs that carry no tangent (zero derivative almost everywhere, or not numbers).
constexpr uint32_t kFlat = kElementwise | kNotDifferentiable;

// ---- derivative helpers (lax calls only, so the rules compose) ----

using ad::full_like;
Array square(const Array& x) { return mul(x, x); }
// erf'(x) = 2/sqrt(pi) exp(-x^2).
constexpr double kTwoOverSqrtPi = 2 * std::numbers::inv_sqrtpi;
// -i as a complex constant of dtype `c`, shaped like x.
Array minus_i_like(const Array& x, DType c) {
  Array s = convert_element_type(Array(complex128_t(0.0, -1.0)), c);
  if (x.ndim() == 0) return s;
  return broadcast_in_dim(s, x.shape(), {});
}
// 1 - x^2, the factor shared by asin, acos, atanh and tanh.
Array one_minus_square(const Array& x) { return sub(full_like(x, 1.0), square(x)); }

// d|x|: for real x JAX picks the +1 branch at 0 (select(x >= 0, t, -t)); for complex x,
// Re(conj(x) t) / |x|, with |x| = 0 replaced by 1 so the tangent at 0 is 0.
Array abs_tangent(const Array& x, const Array& y, const Array& t) {
  if (!is_complex(x.dtype())) return select_n(ge(x, full_like(x, 0.0)), {neg(t), t});
  Array safe = select_n(eq(y, full_like(y, 0.0)), {y, full_like(y, 1.0)});
  return real(mul(t, div(conj(x), convert_element_type(safe, x.dtype()))));
}

}  // namespace

// Rules capture their primitive by reference, so each is declared before its definition.
extern const Primitive neg_p, sin_p, cos_p, abs_p, sign_p, floor_p, ceil_p, round_p, exp_p, exp2_p, log_p, log1p_p,
    expm1_p, sqrt_p, rsqrt_p, cbrt_p, tan_p, asin_p, acos_p, atan_p, sinh_p, cosh_p, tanh_p, asinh_p, acosh_p,
    atanh_p, logistic_p, erf_p, erfc_p, erf_inv_p, lgamma_p, digamma_p, is_finite_p, not_p, real_p, imag_p, conj_p;

const Primitive neg_p("neg", {.traits = kElementwise | kLinear,
                              .abstract_eval = rules::unary("neg", kNumberTypes),
                              .jvp = ad_rules::linear(neg_p),
                              .transpose = ad_rules::unary_transpose([](const Array& ct, auto&, auto&) { return neg(ct); }),
                              .batch = batch_rules::elementwise(neg_p),
                              .lowering = {.elemental = elemental::neg(), .cost = 0}});
const Primitive abs_p("abs", {.traits = kElementwise,
                              .abstract_eval = rules::unary_to_real("abs", kSignedTypes | kInexactTypes),
                              .jvp = ad_rules::unary(abs_p, [](auto& x, auto& y, auto& t) {
                                return abs_tangent(x, y, t);
                              }),
                              .batch = batch_rules::elementwise(abs_p),
                              .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                return b.abs(x.in(), x[0]);
                              }}});
const Primitive sign_p("sign", {.traits = kFlat,
                                .abstract_eval = rules::unary("sign", kNumberTypes),
                                .batch = batch_rules::elementwise(sign_p),
                                .lowering = {.elemental = sign_elemental}});
const Primitive floor_p("floor", {.traits = kFlat,
                                  .abstract_eval = rules::unary("floor", kFloatTypes),
                                  .batch = batch_rules::elementwise(floor_p),
                                  .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                    return b.floor(x[0]);
                                  }}});
const Primitive ceil_p("ceil", {.traits = kFlat,
                                .abstract_eval = rules::unary("ceil", kFloatTypes),
                                .batch = batch_rules::elementwise(ceil_p),
                                .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                  return b.ceil(x[0]);
                                }}});
const Primitive round_p("round", {.traits = kFlat, .abstract_eval = round_rule,
                                  .batch = batch_rules::elementwise(round_p),
                                  .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                    return b.round(x[0], /*half_to_even=*/x.params.get_int("rounding_method") == 1);
                                  }}});
const Primitive exp_p("exp", {.traits = kElementwise,
                              .abstract_eval = rules::unary("exp", kInexactTypes),
                              .jvp = ad_rules::unary(exp_p, [](auto& x, auto& y, auto& t) { return mul(t, y); }),
                              .batch = batch_rules::elementwise(exp_p),
                              .lowering = {.elemental = elemental::math_unary("exp"), .cost = kTranscendental}});
const Primitive exp2_p("exp2", {.traits = kElementwise,
                                .abstract_eval = rules::unary("exp2", kInexactTypes),
                                .jvp = ad_rules::unary(exp2_p, [](auto& x, auto& y, auto& t) {
                                  return mul(t, mul(y, full_like(y, std::numbers::ln2)));
                                }),
                                .batch = batch_rules::elementwise(exp2_p),
                                .lowering = {.elemental = elemental::math_unary("exp2"), .cost = kTranscendental}});
const Primitive log_p("log", {.traits = kElementwise,
                              .abstract_eval = rules::unary("log", kInexactTypes),
                              .jvp = ad_rules::unary(log_p, [](auto& x, auto& y, auto& t) { return div(t, x); }),
                              .batch = batch_rules::elementwise(log_p),
                              .lowering = {.elemental = elemental::math_unary("log"), .cost = kTranscendental}});
const Primitive log1p_p("log1p", {.traits = kElementwise,
                                  .abstract_eval = rules::unary("log1p", kInexactTypes),
                                  .jvp = ad_rules::unary(log1p_p, [](auto& x, auto& y, auto& t) {
                                    return div(t, add(x, full_like(x, 1.0)));
                                  }),
                                  .batch = batch_rules::elementwise(log1p_p),
                                  .lowering = {.elemental = elemental::math_unary("log1p"),
                                               .cost = kTranscendental}});
const Primitive expm1_p("expm1", {.traits = kElementwise,
                                  .abstract_eval = rules::unary("expm1", kInexactTypes),
                                  .jvp = ad_rules::unary(expm1_p, [](auto& x, auto& y, auto& t) {
                                    return mul(t, add(y, full_like(y, 1.0)));
                                  }),
                                  .batch = batch_rules::elementwise(expm1_p),
                                  .lowering = {.elemental = elemental::math_unary("expm1"),
                                               .cost = kTranscendental}});
const Primitive sqrt_p("sqrt", {.traits = kElementwise,
                                .abstract_eval = rules::unary("sqrt", kInexactTypes),
                                .jvp = ad_rules::unary(sqrt_p, [](auto& x, auto& y, auto& t) {
                                  return mul(t, div(full_like(y, 0.5), y));
                                }),
                                .batch = batch_rules::elementwise(sqrt_p),
                                .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                  return b.sqrt(x[0]);
                                }, .cost = 2}});
const Primitive rsqrt_p("rsqrt", {.traits = kElementwise,
                                  .abstract_eval = rules::unary("rsqrt", kInexactTypes),
                                  .jvp = ad_rules::unary(rsqrt_p, [](auto& x, auto& y, auto& t) {
                                    return mul(t, mul(full_like(x, -0.5), div(y, x)));
                                  }),
                                  .batch = batch_rules::elementwise(rsqrt_p),
                                  // 1 / sqrt(x): two correctly rounded steps, as eager.
                                  .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                    return b.div(x.in(), b.float_constant(x.in(), 1.0), b.sqrt(x[0]));
                                  }, .cost = 2}});
const Primitive cbrt_p("cbrt", {.traits = kElementwise,
                                .abstract_eval = rules::unary("cbrt", kFloatTypes),
                                .jvp = ad_rules::unary(cbrt_p, [](auto& x, auto& y, auto& t) {
                                  return mul(t, div(full_like(y, 1.0 / 3.0), square(y)));
                                }),
                                .batch = batch_rules::elementwise(cbrt_p),
                                .lowering = {.elemental = elemental::math_unary("cbrt"), .cost = kTranscendental}});
const Primitive sin_p("sin", {.traits = kElementwise,
                              .abstract_eval = rules::unary("sin", kInexactTypes),
                              .jvp = ad_rules::unary(sin_p, [](const Array& x, auto&, const Array& t) { return mul(t, cos(x)); }),
                              .batch = batch_rules::elementwise(sin_p),
                              .lowering = {.elemental = elemental::math_unary("sin"), .cost = kTranscendental}});
const Primitive cos_p("cos", {.traits = kElementwise,
                              .abstract_eval = rules::unary("cos", kInexactTypes),
                              .jvp = ad_rules::unary(cos_p, [](const Array& x, auto&, const Array& t) { return neg(mul(t, sin(x))); }),
                              .batch = batch_rules::elementwise(cos_p),
                              .lowering = {.elemental = elemental::math_unary("cos"), .cost = kTranscendental}});
const Primitive tan_p("tan", {.traits = kElementwise,
                              .abstract_eval = rules::unary("tan", kInexactTypes),
                              .jvp = ad_rules::unary(tan_p, [](auto& x, auto& y, auto& t) {
                                return mul(t, add(full_like(y, 1.0), square(y)));
                              }),
                              .batch = batch_rules::elementwise(tan_p),
                              .lowering = {.elemental = elemental::math_unary("tan"), .cost = kTranscendental}});
const Primitive asin_p("asin", {.traits = kElementwise,
                                .abstract_eval = rules::unary("asin", kInexactTypes),
                                .jvp = ad_rules::unary(asin_p, [](auto& x, auto& y, auto& t) {
                                  return mul(t, rsqrt(one_minus_square(x)));
                                }),
                                .batch = batch_rules::elementwise(asin_p),
                                .lowering = {.elemental = elemental::math_unary("asin"), .cost = kTranscendental}});
const Primitive acos_p("acos", {.traits = kElementwise,
                                .abstract_eval = rules::unary("acos", kInexactTypes),
                                .jvp = ad_rules::unary(acos_p, [](auto& x, auto& y, auto& t) {
                                  return neg(mul(t, rsqrt(one_minus_square(x))));
                                }),
                                .batch = batch_rules::elementwise(acos_p),
                                .lowering = {.elemental = elemental::math_unary("acos"), .cost = kTranscendental}});
const Primitive atan_p("atan", {.traits = kElementwise,
                                .abstract_eval = rules::unary("atan", kInexactTypes),
                                .jvp = ad_rules::unary(atan_p, [](auto& x, auto& y, auto& t) {
                                  return div(t, add(full_like(x, 1.0), square(x)));
                                }),
                                .batch = batch_rules::elementwise(atan_p),
                                .lowering = {.elemental = elemental::math_unary("atan"), .cost = kTranscendental}});
const Primitive sinh_p("sinh", {.traits = kElementwise,
                                .abstract_eval = rules::unary("sinh", kInexactTypes),
                                .jvp = ad_rules::unary(sinh_p, [](auto& x, auto& y, auto& t) {
                                  return mul(t, cosh(x));
                                }),
                                .batch = batch_rules::elementwise(sinh_p),
                                .lowering = {.elemental = elemental::math_unary("sinh"), .cost = kTranscendental}});
const Primitive cosh_p("cosh", {.traits = kElementwise,
                                .abstract_eval = rules::unary("cosh", kInexactTypes),
                                .jvp = ad_rules::unary(cosh_p, [](auto& x, auto& y, auto& t) {
                                  return mul(t, sinh(x));
                                }),
                                .batch = batch_rules::elementwise(cosh_p),
                                .lowering = {.elemental = elemental::math_unary("cosh"), .cost = kTranscendental}});
const Primitive tanh_p("tanh", {.traits = kElementwise,
                                .abstract_eval = rules::unary("tanh", kInexactTypes),
                                .jvp = ad_rules::unary(tanh_p, [](auto& x, auto& y, auto& t) {
                                  return mul(t, one_minus_square(y));
                                }),
                                .batch = batch_rules::elementwise(tanh_p),
                                .lowering = {.elemental = elemental::math_unary("tanh"), .cost = kTranscendental}});
const Primitive asinh_p("asinh", {.traits = kElementwise,
                                  .abstract_eval = rules::unary("asinh", kInexactTypes),
                                  .jvp = ad_rules::unary(asinh_p, [](auto& x, auto& y, auto& t) {
                                    return mul(t, rsqrt(add(square(x), full_like(x, 1.0))));
                                  }),
                                  .batch = batch_rules::elementwise(asinh_p),
                                  .lowering = {.elemental = elemental::math_unary("asinh"),
                                               .cost = kTranscendental}});
const Primitive acosh_p("acosh", {.traits = kElementwise,
                                  .abstract_eval = rules::unary("acosh", kInexactTypes),
                                  .jvp = ad_rules::unary(acosh_p, [](auto& x, auto& y, auto& t) {
                                    return mul(t, rsqrt(mul(sub(x, full_like(x, 1.0)), add(x, full_like(x, 1.0)))));
                                  }),
                                  .batch = batch_rules::elementwise(acosh_p),
                                  .lowering = {.elemental = elemental::math_unary("acosh"),
                                               .cost = kTranscendental}});
const Primitive atanh_p("atanh", {.traits = kElementwise,
                                  .abstract_eval = rules::unary("atanh", kInexactTypes),
                                  .jvp = ad_rules::unary(atanh_p, [](auto& x, auto& y, auto& t) {
                                    return div(t, one_minus_square(x));
                                  }),
                                  .batch = batch_rules::elementwise(atanh_p),
                                  .lowering = {.elemental = elemental::math_unary("atanh"),
                                               .cost = kTranscendental}});
const Primitive logistic_p("logistic", {.traits = kElementwise,
                                        .abstract_eval = rules::unary("logistic", kInexactTypes),
                                        .jvp = ad_rules::unary(logistic_p, [](auto& x, auto& y, auto& t) {
                                          return mul(t, mul(y, sub(full_like(y, 1.0), y)));
                                        }),
                                        .batch = batch_rules::elementwise(logistic_p),
                                        .lowering = {.elemental = logistic_elemental, .cost = kTranscendental}});
const Primitive erf_p("erf", {.traits = kElementwise,
                              .abstract_eval = rules::unary("erf", kFloatTypes),
                              .jvp = ad_rules::unary(erf_p, [](auto& x, auto& y, auto& t) {
                                return mul(t, mul(full_like(x, kTwoOverSqrtPi), exp(neg(square(x)))));
                              }),
                              .batch = batch_rules::elementwise(erf_p),
                              .lowering = {.elemental = elemental::math_unary("erf"), .cost = kTranscendental}});
const Primitive erfc_p("erfc", {.traits = kElementwise,
                                .abstract_eval = rules::unary("erfc", kFloatTypes),
                                .jvp = ad_rules::unary(erfc_p, [](auto& x, auto& y, auto& t) {
                                  return mul(t, mul(full_like(x, -kTwoOverSqrtPi), exp(neg(square(x)))));
                                }),
                                .batch = batch_rules::elementwise(erfc_p),
                                .lowering = {.elemental = elemental::math_unary("erfc"), .cost = kTranscendental}});
const Primitive erf_inv_p("erf_inv", {.traits = kElementwise,
                                      .abstract_eval = rules::unary("erf_inv", kFloatTypes),
                                      .jvp = ad_rules::unary(erf_inv_p, [](auto& x, auto& y, auto& t) {
                                        return mul(t, mul(full_like(y, 1 / kTwoOverSqrtPi), exp(square(y))));
                                      }),
                                      .batch = batch_rules::elementwise(erf_inv_p),
                                      .lowering = {.elemental = elemental::math_unary("erf_inv"),
                                                   .cost = kTranscendental}});
const Primitive lgamma_p("lgamma", {.traits = kElementwise,
                                    .abstract_eval = rules::unary("lgamma", kFloatTypes),
                                    .jvp = ad_rules::unary(lgamma_p, [](auto& x, auto& y, auto& t) {
                                      return mul(t, digamma(x));
                                    }),
                                    .batch = batch_rules::elementwise(lgamma_p),
                                    .lowering = {.elemental = elemental::math_unary("lgamma"),
                                                 .cost = kTranscendental}});
const Primitive digamma_p("digamma", {.traits = kElementwise,
                                      .abstract_eval = rules::unary("digamma", kFloatTypes),
                                      // JAX's rule: digamma' = polygamma(1, x).
                                      .jvp = ad_rules::unary(digamma_p, [](auto& x, auto& y, auto& t) {
                                        return mul(t, polygamma(full_like(x, 1.0), x));
                                      }),
                                      .batch = batch_rules::elementwise(digamma_p),
                                      .lowering = {.elemental = elemental::math_unary("digamma"),
                                                   .cost = kTranscendental}});
const Primitive is_finite_p("is_finite", {.traits = kFlat,
                                          .abstract_eval = rules::unary_to("is_finite", kFloatTypes, DType::Bool),
                                          .batch = batch_rules::elementwise(is_finite_p),
                                          .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                            const double inf = std::numeric_limits<double>::infinity();
                                            return b.compare(Cmp::kLt, x.in(), b.abs(x.in(), x[0]), b.float_constant(x.in(), inf));
                                          }}});
const Primitive not_p("not", {.traits = kFlat,
                              .abstract_eval = rules::unary("not", kBitTypes),
                              .batch = batch_rules::elementwise(not_p),
                              .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                return b.bit_not(x[0]);
                              }, .cost = 0}});
const Primitive real_p("real", {.traits = kElementwise | kLinear,
                                .abstract_eval = rules::unary_to_real("real", kComplexTypes),
                                .jvp = ad_rules::linear(real_p),
                                // JAX: the cotangent of real(z) is complex(ct, 0).
                                .transpose = ad_rules::unary_transpose([](const Array& ct, const Aval& z, auto&) {
                                  return convert_element_type(ct, z.dtype);
                                }),
                                .batch = batch_rules::elementwise(real_p)});
const Primitive imag_p("imag", {.traits = kElementwise | kLinear,
                                .abstract_eval = rules::unary_to_real("imag", kComplexTypes),
                                .jvp = ad_rules::linear(imag_p),
                                // JAX: the cotangent of imag(z) is complex(0, -ct) = -i ct.
                                .transpose = ad_rules::unary_transpose([](const Array& ct, const Aval& z, auto&) {
                                  return mul(convert_element_type(ct, z.dtype), minus_i_like(ct, z.dtype));
                                }),
                                .batch = batch_rules::elementwise(imag_p)});
const Primitive conj_p("conj", {.traits = kElementwise | kLinear,
                                .abstract_eval = conj_rule,
                                .jvp = ad_rules::linear(conj_p),
                                // conj of a complex operand is its own transpose; a real operand (promoted to
                                // complex by conj) receives the real part of the cotangent.
                                .transpose = ad_rules::unary_transpose([](const Array& ct, const Aval& x, auto&) {
                                  return is_complex(x.dtype) ? conj(ct) : real(ct);
                                }),
                                .batch = batch_rules::elementwise(conj_p)});

Array neg(const Array& x) { return bind1(neg_p, {x}); }
Array abs(const Array& x) { return bind1(abs_p, {x}); }
Array sign(const Array& x) { return bind1(sign_p, {x}); }
Array floor(const Array& x) { return bind1(floor_p, {x}); }
Array ceil(const Array& x) { return bind1(ceil_p, {x}); }
Array round(const Array& x, RoundingMethod method) {
  return bind1(round_p, {x}, {{"rounding_method", static_cast<int64_t>(method)}});
}
Array exp(const Array& x) { return bind1(exp_p, {x}); }
Array exp2(const Array& x) { return bind1(exp2_p, {x}); }
Array log(const Array& x) { return bind1(log_p, {x}); }
Array log1p(const Array& x) { return bind1(log1p_p, {x}); }
Array expm1(const Array& x) { return bind1(expm1_p, {x}); }
Array sqrt(const Array& x) { return bind1(sqrt_p, {x}); }
Array rsqrt(const Array& x) { return bind1(rsqrt_p, {x}); }
Array cbrt(const Array& x) { return bind1(cbrt_p, {x}); }
Array sin(const Array& x) { return bind1(sin_p, {x}); }
Array cos(const Array& x) { return bind1(cos_p, {x}); }
Array tan(const Array& x) { return bind1(tan_p, {x}); }
Array asin(const Array& x) { return bind1(asin_p, {x}); }
Array acos(const Array& x) { return bind1(acos_p, {x}); }
Array atan(const Array& x) { return bind1(atan_p, {x}); }
Array sinh(const Array& x) { return bind1(sinh_p, {x}); }
Array cosh(const Array& x) { return bind1(cosh_p, {x}); }
Array tanh(const Array& x) { return bind1(tanh_p, {x}); }
Array asinh(const Array& x) { return bind1(asinh_p, {x}); }
Array acosh(const Array& x) { return bind1(acosh_p, {x}); }
Array atanh(const Array& x) { return bind1(atanh_p, {x}); }
Array logistic(const Array& x) { return bind1(logistic_p, {x}); }
Array erf(const Array& x) { return bind1(erf_p, {x}); }
Array erfc(const Array& x) { return bind1(erfc_p, {x}); }
Array erf_inv(const Array& x) { return bind1(erf_inv_p, {x}); }
Array lgamma(const Array& x) { return bind1(lgamma_p, {x}); }
Array digamma(const Array& x) { return bind1(digamma_p, {x}); }
Array is_finite(const Array& x) { return bind1(is_finite_p, {x}); }
Array bitwise_not(const Array& x) { return bind1(not_p, {x}); }
Array real(const Array& x) { return bind1(real_p, {x}); }
Array imag(const Array& x) { return bind1(imag_p, {x}); }
Array conj(const Array& x) { return bind1(conj_p, {x}); }

}  // namespace jx::lax
