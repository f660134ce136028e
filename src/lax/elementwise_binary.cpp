// Elementwise binary primitives (operands of one shape and dtype), integer_pow and
// clamp: shape rules, derivatives, batching and lowerings. Their CPU kernels:
// src/backend/cpu/kernels/binary.cpp.
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

using rules::kAnyTypes;
using rules::kBitTypes;
using rules::kBoolTypes;
using rules::kFloatTypes;
using rules::kInexactTypes;
using rules::kIntTypes;
using rules::kNumberTypes;
using rules::kRealTypes;

// ---- rules written by hand ----

// pow(x, y): x floating or complex; y of x's dtype, or any integer dtype (as JAX).
std::vector<Aval> pow_rule(std::span<const Aval> in, const Params&) {
  rules::check_arity("pow", in, 2);
  rules::check_dtype("pow", in[0], kInexactTypes, "base");
  if (in[1].dtype != in[0].dtype && !is_integer(in[1].dtype))
    detail::fail("pow", "exponent must have the base's dtype or an integer dtype, got ", rules::avals_str(in));
  if (in[0].shape != in[1].shape)
    detail::fail("pow", "operands must have the same shape, got ", rules::avals_str(in));
  return {Aval{in[0].shape, in[0].dtype, rules::all_weak(in)}};
}

std::vector<Aval> integer_pow_rule(std::span<const Aval> in, const Params& params) {
  rules::check_arity("integer_pow", in, 1);
  rules::check_dtype("integer_pow", in[0], kNumberTypes);
  int64_t y = params.get_int("y");
  if (y < 0 && is_integer(in[0].dtype))
    detail::fail("integer_pow", "integers cannot be raised to negative powers, got ", in[0].str(), " ** ", y);
  return {in[0]};
}

// clamp(lo, x, hi): lo and hi are scalars or have x's shape; all share x's dtype.
std::vector<Aval> clamp_rule(std::span<const Aval> in, const Params&) {
  rules::check_arity("clamp", in, 3);
  const Aval& x = in[1];
  if (in[0].dtype != x.dtype || in[2].dtype != x.dtype)
    detail::fail("clamp", "lo, x and hi must have the same dtype, got ", rules::avals_str(in));
  for (int i : {0, 2}) {
    if (in[i].ndim() != 0 && in[i].shape != x.shape)
      detail::fail("clamp", i == 0 ? "lo" : "hi", " must be a scalar or have the shape of x ",
                   detail::shape_str(x.shape), ", got ", rules::avals_str(in));
  }
  return {Aval{x.shape, x.dtype, rules::all_weak(in)}};
}

constexpr uint32_t kFlat = kElementwise | kNotDifferentiable;

// ---- derivative helpers (lax calls only, so the rules compose) ----

using ad::full_like;
// JAX's _replace_zero: x with its zeros replaced by ones (keeps log and pow finite where
// the derivative is then masked to zero).
Array replace_zero(const Array& x) { return select_n(eq(x, full_like(x, 0.0)), {x, full_like(x, 1.0)}); }

// d rem(x, y)/dy = -trunc(x / y), trunc written as sign * floor(abs) (JAX's form).
Array rem_dy(const Array& x, const Array& y, const Array&, const Array& t) {
  Array q = div(x, y);
  return neg(mul(t, mul(sign(q), floor(abs(q)))));
}

// d pow(x, y)/dx = y * x^(y-1). An integer exponent keeps the exact integer pow and its
// y = 0 case is masked to zero (x^-1 would be inf at x = 0), as JAX does.
Array pow_dx(const Array& x, const Array& y, const Array&, const Array& t) {
  if (is_integer(y.dtype())) {
    Array y_minus_1 = sub(y, full_like(y, 1.0));
    Array jac = mul(convert_element_type(y, x.dtype()), pow(x, y_minus_1));
    return mul(t, select_n(eq(y, full_like(y, 0.0)), {jac, full_like(x, 0.0)}));
  }
  return mul(t, mul(y, pow(x, sub(y, full_like(y, 1.0)))));
}
// d pow(x, y)/dy = log(x) * out, taken as 0 where x == 0 (log of the replaced 1).
Array pow_dy(const Array& x, const Array&, const Array& out, const Array& t) {
  return mul(t, mul(log(replace_zero(x)), out));
}

// JAX's _balanced_eq for max/min: operand x gets the whole tangent where it alone is
// the result and half of it where both operands tie.
Array balanced_share(const Array& x, const Array& out, const Array& other) {
  Array mine = select_n(eq(x, out), {full_like(out, 0.0), full_like(out, 1.0)});
  Array split = select_n(eq(other, out), {full_like(out, 1.0), full_like(out, 2.0)});
  return div(mine, split);
}

// d atan2(x, y) = (y dx - x dy) / (x^2 + y^2).
Array atan2_dx(const Array& x, const Array& y, const Array&, const Array& t) {
  return mul(t, div(y, add(mul(x, x), mul(y, y))));
}
Array atan2_dy(const Array& x, const Array& y, const Array&, const Array& t) {
  return mul(t, div(neg(x), add(mul(x, x), mul(y, y))));
}

// A 0-d bound (or its tangent) seen with x's shape.
Array broadcast_like(const Array& a, const Array& x) {
  if (a.ndim() == x.ndim()) return a;
  return broadcast_in_dim(a, x.shape(), {});
}

// JAX's clamp jvp: x's tangent where lo < x < hi, lo's where x < lo < hi, hi's where
// x > hi. Ties pass no tangent from any operand.
JvpResult clamp_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params&) {
  const Array& x = primals[1];
  Array out = clamp(primals[0], x, primals[2]);
  Array lo = broadcast_like(primals[0], x), hi = broadcast_like(primals[2], x);
  Array zero = full_like(out, 0.0);
  Array t;
  if (tangents[1].valid())
    t = select_n(bitwise_and(gt(x, lo), lt(x, hi)), {zero, tangents[1]});
  if (tangents[0].valid())
    t = ad::add_tangents(t, select_n(bitwise_and(gt(lo, x), lt(lo, hi)), {zero, broadcast_like(tangents[0], x)}));
  if (tangents[2].valid())
    t = ad::add_tangents(t, select_n(lt(hi, x), {zero, broadcast_like(tangents[2], x)}));
  return JvpResult{{out}, {t}};
}

}  // namespace

extern const Primitive add_p, sub_p, mul_p, div_p;

const Primitive add_p("add", {.traits = kElementwise | kLinear | kCommutative,
                              .abstract_eval = rules::binary("add", kNumberTypes),
                              .jvp = ad_rules::binary(
                                  add_p, [](auto&, auto&, auto&, const Array& t) { return t; },
                                  [](auto&, auto&, auto&, const Array& t) { return t; }),
                              .transpose = [](std::span<const Array> cts, std::span<const TransposeOperand>,
                                              const Params&) { return std::vector<Array>{cts[0], cts[0]}; },
                              .batch = batch_rules::elementwise(add_p),
                              .lowering = {.elemental = elemental::add()}});
const Primitive sub_p("sub", {.traits = kElementwise | kLinear,
                              .abstract_eval = rules::binary("sub", kNumberTypes),
                              .jvp = ad_rules::binary(
                                  sub_p, [](auto&, auto&, auto&, const Array& t) { return t; },
                                  [](auto&, auto&, auto&, const Array& t) { return neg(t); }),
                              .transpose = [](std::span<const Array> cts, std::span<const TransposeOperand>,
                                              const Params&) { return std::vector<Array>{cts[0], neg(cts[0])}; },
                              .batch = batch_rules::elementwise(sub_p),
                              .lowering = {.elemental = elemental::sub()}});
// mul and div are linear in one operand at a time (JAX's bilinear transpose rules).
const Primitive mul_p("mul", {.traits = kElementwise | kLinear | kCommutative,
                              .abstract_eval = rules::binary("mul", kNumberTypes),
                              .jvp = ad_rules::binary(
                                  mul_p, [](auto&, const Array& y, auto&, const Array& t) { return mul(t, y); },
                                  [](const Array& x, auto&, auto&, const Array& t) { return mul(x, t); }),
                              .transpose =
                                  [](std::span<const Array> cts, std::span<const TransposeOperand> ops, const Params&) {
                                    if (ops[0].is_linear() && ops[1].is_linear())
                                      detail::fail("mul", "is not linear in both operands at once (",
                                                   ops[0].aval.str(), " * ", ops[1].aval.str(), ")");
                                    if (ops[0].is_linear()) return std::vector<Array>{mul(cts[0], ops[1].value), Array()};
                                    return std::vector<Array>{Array(), mul(ops[0].value, cts[0])};
                                  },
                              .batch = batch_rules::elementwise(mul_p),
                              .lowering = {.elemental = elemental::mul()}});
const Primitive div_p("div", {.traits = kElementwise | kLinear,
                              .abstract_eval = rules::binary("div", kNumberTypes),
                              .jvp = ad_rules::binary(
                                  div_p, [](auto&, const Array& y, auto&, const Array& t) { return div(t, y); },
                                  // d(x/y)/dy = -x / y^2, computed in JAX's order so results
                                  // agree with JAX to the last bit.
                                  [](const Array& x, const Array& y, auto&, const Array& t) {
                                    return mul(mul(neg(t), x), integer_pow(y, -2));
                                  }),
                              .transpose =
                                  [](std::span<const Array> cts, std::span<const TransposeOperand> ops, const Params&) {
                                    if (ops[1].is_linear())
                                      detail::fail("div", "is linear only in its numerator, but the denominator ",
                                                   ops[1].aval.str(), " depends on the tangent");
                                    return std::vector<Array>{div(cts[0], ops[1].value), Array()};
                                  },
                              .batch = batch_rules::elementwise(div_p),
                              .lowering = {.elemental = elemental::div(), .cost = 2}});
extern const Primitive rem_p, pow_p, integer_pow_p, max_p, min_p, atan2_p, nextafter_p, polygamma_p, zeta_p, and_p,
    or_p, xor_p,
    shift_left_p, shift_right_arithmetic_p, shift_right_logical_p, eq_p, ne_p, lt_p, le_p, gt_p, ge_p, clamp_p;

// vmap: elementwise batching, which broadcasts 0-d bounds to x's shape. The operands
// are validated unbatched first, so a bad bound reports clamp's own message rather
// than a failed broadcast.
static BatchResult clamp_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                        const BatchAxis& axis) {
  std::vector<Aval> unbatched;
  for (size_t i = 0; i < args.size(); ++i) {
    Aval a = args[i].aval();
    if (dims[i] != kNotMapped) a.shape.erase(a.shape.begin() + dims[i]);
    unbatched.push_back(std::move(a));
  }
  (void)clamp_rule(unbatched, params);
  static const BatchRule elementwise = batch_rules::elementwise(clamp_p);
  return elementwise(args, dims, params, axis);
}

const Primitive rem_p("rem", {.traits = kElementwise,
                              .abstract_eval = rules::binary("rem", kRealTypes),
                              .jvp = ad_rules::binary(
                                  rem_p, [](auto&, auto&, auto&, const Array& t) { return t; }, rem_dy),
                              .batch = batch_rules::elementwise(rem_p),
                              .lowering = {.elemental = elemental::rem(), .cost = 2}});
const Primitive pow_p("pow", {.traits = kElementwise,
                              .abstract_eval = pow_rule,
                              .jvp = ad_rules::binary(pow_p, pow_dx, pow_dy),
                              .batch = batch_rules::elementwise(pow_p),
                              .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                if (x.dtypes[1] == x.in()) return b.math("pow", x.in(), x.x);
                                // An integer exponent array: eager's exact repeated squaring (runtime "powi").
                                LValue* args[] = {x[0], b.convert(x[1], x.dtypes[1], DType::Int64)};
                                return b.math("powi", x.in(), args);
                              }, .cost = kTranscendental}});
// d x^n = n x^(n-1) dx; x^0 is constant (a symbolic zero tangent).
const Primitive integer_pow_p("integer_pow",
                              {.traits = kElementwise,
                               .abstract_eval = integer_pow_rule,
                               .jvp =
                                   [](std::span<const Array> primals, std::span<const Array> tangents,
                                      const Params& params) {
                                     const Array& x = primals[0];
                                     const int64_t y = params.get_int("y");
                                     Array out = integer_pow(x, y);
                                     if (y == 0) return JvpResult{{out}, {Array()}};
                                     Array jac = mul(full_like(x, static_cast<double>(y)), integer_pow(x, y - 1));
                                     return JvpResult{{out}, {mul(tangents[0], jac)}};
                                   },
                               .batch = batch_rules::elementwise(integer_pow_p),
                               .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                 return elemental::integer_pow(b, x.in(), x[0], x.params.get_int("y"));
                               }}});
const Primitive max_p("max", {.traits = kElementwise | kCommutative,
                              .abstract_eval = rules::binary("max", kAnyTypes),
                              .jvp = ad_rules::binary(
                                  max_p,
                                  [](const Array& x, const Array& y, const Array& out, const Array& t) {
                                    return mul(t, balanced_share(x, out, y));
                                  },
                                  [](const Array& x, const Array& y, const Array& out, const Array& t) {
                                    return mul(t, balanced_share(y, out, x));
                                  }),
                              .batch = batch_rules::elementwise(max_p),
                              .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                return elemental::max(b, x.in(), x[0], x[1]);
                              }}});
const Primitive min_p("min", {.traits = kElementwise | kCommutative,
                              .abstract_eval = rules::binary("min", kAnyTypes),
                              .jvp = ad_rules::binary(
                                  min_p,
                                  [](const Array& x, const Array& y, const Array& out, const Array& t) {
                                    return mul(t, balanced_share(x, out, y));
                                  },
                                  [](const Array& x, const Array& y, const Array& out, const Array& t) {
                                    return mul(t, balanced_share(y, out, x));
                                  }),
                              .batch = batch_rules::elementwise(min_p),
                              .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                return elemental::min(b, x.in(), x[0], x[1]);
                              }}});
const Primitive atan2_p("atan2", {.traits = kElementwise,
                                  .abstract_eval = rules::binary("atan2", kInexactTypes),
                                  .jvp = ad_rules::binary(atan2_p, atan2_dx, atan2_dy),
                                  .batch = batch_rules::elementwise(atan2_p),
                                  .lowering = {.elemental = elemental::math_binary("atan2"),
                                               .cost = kTranscendental}});
const Primitive nextafter_p("nextafter", {.traits = kFlat,
                                          .abstract_eval = rules::binary("nextafter", kFloatTypes),
                                          .batch = batch_rules::elementwise(nextafter_p),
                                          .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                            return elemental::nextafter(b, x.in(), x[0], x[1]);
                                          }}});
// JAX's polygamma and zeta: differentiable in x (polygamma) and q (zeta) only.
const Primitive polygamma_p(
    "polygamma", {.traits = kElementwise,
                  .abstract_eval = rules::binary("polygamma", kFloatTypes),
                  .jvp = ad_rules::binary(
                      polygamma_p,
                      [](const Array& m, auto&, auto&, auto&) -> Array {
                        detail::fail("polygamma", "is not differentiable with respect to m (", m.aval().str(),
                                     "), only x");
                      },
                      [](const Array& m, const Array& x, auto&, const Array& t) {
                        return mul(t, polygamma(add(m, full_like(m, 1.0)), x));
                      }),
                  .batch = batch_rules::elementwise(polygamma_p),
                  .lowering = {.elemental = elemental::math_binary("polygamma"), .cost = kTranscendental}});
const Primitive zeta_p(
    "zeta", {.traits = kElementwise,
             .abstract_eval = rules::binary("zeta", kFloatTypes),
             .jvp = ad_rules::binary(
                 zeta_p,
                 [](const Array& x, auto&, auto&, auto&) -> Array {
                   detail::fail("zeta", "is not differentiable with respect to x (", x.aval().str(), "), only q");
                 },
                 // d/dq zeta(x, q) = -x zeta(x + 1, q).
                 [](const Array& x, const Array& q, auto&, const Array& t) {
                   return mul(t, mul(neg(x), zeta(add(x, full_like(x, 1.0)), q)));
                 }),
             .batch = batch_rules::elementwise(zeta_p),
             .lowering = {.elemental = elemental::math_binary("zeta"), .cost = kTranscendental}});
const Primitive and_p("and", {.traits = kFlat | kCommutative,
                              .abstract_eval = rules::binary("and", kBitTypes),
                              .batch = batch_rules::elementwise(and_p),
                              .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                return b.bit_and(x[0], x[1]);
                              }}});
const Primitive or_p("or", {.traits = kFlat | kCommutative,
                            .abstract_eval = rules::binary("or", kBitTypes),
                            .batch = batch_rules::elementwise(or_p),
                            .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                              return b.bit_or(x[0], x[1]);
                            }}});
const Primitive xor_p("xor", {.traits = kFlat | kCommutative,
                              .abstract_eval = rules::binary("xor", kBitTypes),
                              .batch = batch_rules::elementwise(xor_p),
                              .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                return b.bit_xor(x[0], x[1]);
                              }}});
const Primitive shift_left_p("shift_left", {.traits = kFlat,
                                            .abstract_eval = rules::binary("shift_left", kIntTypes),
                                            .batch = batch_rules::elementwise(shift_left_p),
                                            .lowering = {.elemental = elemental::shift(elemental::Shift::kLeft)}});
const Primitive shift_right_arithmetic_p(
    "shift_right_arithmetic", {.traits = kFlat,
                               .abstract_eval = rules::binary("shift_right_arithmetic", kIntTypes),
                               .batch = batch_rules::elementwise(shift_right_arithmetic_p),
                               .lowering = {.elemental = elemental::shift(elemental::Shift::kRightArithmetic)}});
const Primitive shift_right_logical_p(
    "shift_right_logical", {.traits = kFlat,
                            .abstract_eval = rules::binary("shift_right_logical", kIntTypes),
                            .batch = batch_rules::elementwise(shift_right_logical_p),
                            .lowering = {.elemental = elemental::shift(elemental::Shift::kRightLogical)}});
const Primitive eq_p("eq", {.traits = kFlat | kCommutative,
                            .abstract_eval = rules::binary_to("eq", kAnyTypes, DType::Bool),
                            .batch = batch_rules::elementwise(eq_p),
                            .lowering = {.elemental = elemental::compare(Cmp::kEq)}});
const Primitive ne_p("ne", {.traits = kFlat | kCommutative,
                            .abstract_eval = rules::binary_to("ne", kAnyTypes, DType::Bool),
                            .batch = batch_rules::elementwise(ne_p),
                            .lowering = {.elemental = elemental::compare(Cmp::kNe)}});
const Primitive lt_p("lt", {.traits = kFlat,
                            .abstract_eval = rules::binary_to("lt", kBoolTypes | kRealTypes, DType::Bool),
                            .batch = batch_rules::elementwise(lt_p),
                            .lowering = {.elemental = elemental::compare(Cmp::kLt)}});
const Primitive le_p("le", {.traits = kFlat,
                            .abstract_eval = rules::binary_to("le", kBoolTypes | kRealTypes, DType::Bool),
                            .batch = batch_rules::elementwise(le_p),
                            .lowering = {.elemental = elemental::compare(Cmp::kLe)}});
const Primitive gt_p("gt", {.traits = kFlat,
                            .abstract_eval = rules::binary_to("gt", kBoolTypes | kRealTypes, DType::Bool),
                            .batch = batch_rules::elementwise(gt_p),
                            .lowering = {.elemental = elemental::compare(Cmp::kGt)}});
const Primitive ge_p("ge", {.traits = kFlat,
                            .abstract_eval = rules::binary_to("ge", kBoolTypes | kRealTypes, DType::Bool),
                            .batch = batch_rules::elementwise(ge_p),
                            .lowering = {.elemental = elemental::compare(Cmp::kGe)}});
// lo and hi may be 0-d, so operands need not share one shape: not kElementwise.
const Primitive clamp_p("clamp", {.traits = 0,
                                  .abstract_eval = clamp_rule,
                                  .jvp = clamp_jvp,
                                  .batch = clamp_batch,
                                  // min(max(x, lo), hi), as XLA and eager.
                                  .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                    const DType d = x.dtypes[1];
                                    return elemental::min(b, d, elemental::max(b, d, x[1], x[0]), x[2]);
                                  }}});

Array add(const Array& x, const Array& y) { return bind1(add_p, {x, y}); }
Array sub(const Array& x, const Array& y) { return bind1(sub_p, {x, y}); }
Array mul(const Array& x, const Array& y) { return bind1(mul_p, {x, y}); }
Array div(const Array& x, const Array& y) { return bind1(div_p, {x, y}); }
Array rem(const Array& x, const Array& y) { return bind1(rem_p, {x, y}); }
Array pow(const Array& x, const Array& y) { return bind1(pow_p, {x, y}); }
Array integer_pow(const Array& x, int64_t y) { return bind1(integer_pow_p, {x}, {{"y", y}}); }
Array max(const Array& x, const Array& y) { return bind1(max_p, {x, y}); }
Array min(const Array& x, const Array& y) { return bind1(min_p, {x, y}); }
Array atan2(const Array& x, const Array& y) { return bind1(atan2_p, {x, y}); }
Array nextafter(const Array& x, const Array& y) { return bind1(nextafter_p, {x, y}); }
Array polygamma(const Array& m, const Array& x) { return bind1(polygamma_p, {m, x}); }
Array zeta(const Array& x, const Array& q) { return bind1(zeta_p, {x, q}); }
Array bitwise_and(const Array& x, const Array& y) { return bind1(and_p, {x, y}); }
Array bitwise_or(const Array& x, const Array& y) { return bind1(or_p, {x, y}); }
Array bitwise_xor(const Array& x, const Array& y) { return bind1(xor_p, {x, y}); }
Array shift_left(const Array& x, const Array& y) { return bind1(shift_left_p, {x, y}); }
Array shift_right_arithmetic(const Array& x, const Array& y) { return bind1(shift_right_arithmetic_p, {x, y}); }
Array shift_right_logical(const Array& x, const Array& y) { return bind1(shift_right_logical_p, {x, y}); }
Array eq(const Array& x, const Array& y) { return bind1(eq_p, {x, y}); }
Array ne(const Array& x, const Array& y) { return bind1(ne_p, {x, y}); }
Array lt(const Array& x, const Array& y) { return bind1(lt_p, {x, y}); }
Array le(const Array& x, const Array& y) { return bind1(le_p, {x, y}); }
Array gt(const Array& x, const Array& y) { return bind1(gt_p, {x, y}); }
Array ge(const Array& x, const Array& y) { return bind1(ge_p, {x, y}); }
Array clamp(const Array& lo, const Array& x, const Array& hi) { return bind1(clamp_p, {lo, x, hi}); }

}  // namespace jx::lax
