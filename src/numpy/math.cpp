// jx::numpy elementwise math: promotion and broadcasting, then jx::lax primitives.
#include "jx/numpy/math.h"

#include <cfloat>
#include <cmath>
#include <numbers>

#include "core/array_internal.h"
#include "jx/numpy/creation.h"
#include "jx/numpy/reductions.h"
#include "numpy/core_util.h"
#include "transforms/custom_jvp.h"

namespace jx::numpy {

using util::full_like_value;
using util::promote2;
using util::promote2_inexact;

namespace {

bool is_bool_dtype(const Array& x) { return x.dtype() == DType::Bool; }
bool is_int_or_bool(const Array& x) { return is_integer(x.dtype()) || is_bool_dtype(x); }

void require_bits(std::string_view op, const Array& x) {
  if (!is_int_or_bool(x))
    detail::fail(op, "only integer and bool dtypes are supported, got ", x.dtype());
}
void require_real(std::string_view op, const Array& x) {
  if (is_complex(x.dtype())) detail::fail(op, "complex dtypes are not supported, got ", x.dtype());
}

Array select(const Array& pred, const Array& on_true, const Array& on_false) {
  return lax::select_n(pred, {on_false, on_true});
}

Array false_like(const Array& x) { return full_like_value(util::convert(x, DType::Bool, false), 0); }
Array true_like(const Array& x) { return full_like_value(util::convert(x, DType::Bool, false), 1); }

// The largest finite value of a floating dtype (NumPy's finfo(d).max).
double finfo_max(DType d) {
  switch (d) {
    case DType::Float16: return 65504.0;
    case DType::BFloat16: return 3.3895313892515355e38;
    case DType::Float32: return FLT_MAX;
    default: return DBL_MAX;
  }
}

}  // namespace

// ---- arithmetic ----

Array add(const Array& x1, const Array& x2) {
  auto [a, b] = promote2(x1, x2, "add");
  return is_bool_dtype(a) ? lax::bitwise_or(a, b) : lax::add(a, b);
}

Array subtract(const Array& x1, const Array& x2) {
  auto [a, b] = promote2(x1, x2, "subtract");
  if (is_bool_dtype(a))
    detail::fail("subtract", "boolean subtract is not supported (as NumPy's); use logical_xor or bitwise_xor");
  return lax::sub(a, b);
}

Array multiply(const Array& x1, const Array& x2) {
  auto [a, b] = promote2(x1, x2, "multiply");
  return is_bool_dtype(a) ? lax::bitwise_and(a, b) : lax::mul(a, b);
}

Array true_divide(const Array& x1, const Array& x2) {
  auto [a, b] = promote2_inexact(x1, x2, "divide");
  return lax::div(a, b);
}
Array divide(const Array& x1, const Array& x2) { return true_divide(x1, x2); }

Array floor_divide(const Array& x1, const Array& x2) {
  auto [a, b] = promote2(x1, x2, "floor_divide");
  require_real("floor_divide", a);
  if (is_bool_dtype(a)) detail::fail("floor_divide", "bool operands are not supported");
  if (is_integer(a.dtype())) {
    Array zero = full_like_value(b, 0);
    Array b_is_zero = lax::eq(b, zero);
    Array safe_b = select(b_is_zero, full_like_value(b, 1), b);
    Array q = lax::div(a, safe_b);
    if (!is_unsigned(a.dtype())) {
      // C division truncates; step down where the remainder's sign differs from b's.
      Array r = lax::rem(a, safe_b);
      Array fix = lax::bitwise_and(lax::ne(r, zero), lax::ne(lax::lt(r, zero), lax::lt(safe_b, zero)));
      q = select(fix, lax::sub(q, full_like_value(q, 1)), q);
    }
    return select(b_is_zero, zero, q);  // NumPy gives 0 for integer division by zero
  }
  // JAX's float divmod: trunc division corrected toward -inf; x / 0 is NumPy's +-inf or NaN.
  Array zero = full_like_value(a, 0);
  Array m = lax::rem(a, b);
  Array q = lax::div(lax::sub(a, m), b);
  Array fix = lax::bitwise_and(lax::ne(m, zero), lax::ne(lax::sign(b), lax::sign(m)));
  q = select(fix, lax::sub(q, full_like_value(q, 1)), q);
  q = lax::round(q, lax::RoundingMethod::ToNearestEven);
  return select(lax::eq(b, zero), lax::div(a, b), q);
}

Array remainder(const Array& x1, const Array& x2) {
  auto [a, b] = promote2(x1, x2, "remainder");
  require_real("remainder", a);
  if (is_bool_dtype(a)) detail::fail("remainder", "bool operands are not supported");
  Array zero = full_like_value(a, 0);
  Array safe_b = b;
  if (is_integer(b.dtype())) safe_b = select(lax::eq(b, zero), full_like_value(b, 1), b);
  Array r = lax::rem(a, safe_b);
  Array do_plus = lax::bitwise_and(lax::ne(r, zero), lax::ne(lax::lt(r, zero), lax::lt(safe_b, zero)));
  return select(do_plus, lax::add(r, safe_b), r);
}
Array mod(const Array& x1, const Array& x2) { return remainder(x1, x2); }

Array fmod(const Array& x1, const Array& x2) {
  auto [a, b] = promote2(x1, x2, "fmod");
  require_real("fmod", a);
  if (is_bool_dtype(a)) detail::fail("fmod", "bool operands are not supported");
  if (is_integer(b.dtype())) b = select(lax::eq(b, full_like_value(b, 0)), full_like_value(b, 1), b);
  return lax::rem(a, b);
}

namespace {
// Binary exponentiation on integer arrays: exact, and free of float rounding.
Array integer_power(const Array& base, const Array& exponent) {
  Array zero = full_like_value(exponent, 0), one_e = full_like_value(exponent, 1);
  Array one = full_like_value(base, 1);
  // Negative exponents: 1 for base 1, +-1 for base -1, else 0 (NumPy raises instead).
  Array negative_exp = lax::lt(exponent, zero);
  Array acc = one;
  Array b = base, e = select(negative_exp, lax::neg(exponent), exponent);
  int bits = itemsize(exponent.dtype()) * 8;
  for (int i = 0; i < bits; ++i) {
    acc = select(lax::ne(lax::bitwise_and(e, one_e), zero), lax::mul(acc, b), acc);
    b = lax::mul(b, b);
    e = lax::shift_right_logical(e, one_e);
  }
  Array is_unit = lax::bitwise_or(lax::eq(base, one), lax::eq(base, full_like_value(base, -1)));
  return select(lax::bitwise_and(negative_exp, lax::bitwise_not(is_unit)), full_like_value(base, 0), acc);
}
}  // namespace

Array power(const Array& x1, const Array& x2) {
  // A concrete integer scalar exponent becomes lax.integer_pow, as in jnp.power.
  if (x2.is_concrete() && x2.ndim() == 0 && is_integer(x2.dtype()) && x2.weak_type() &&
      !is_bool_dtype(x1) && (is_inexact(x1.dtype()) || x2.item<int64_t>() >= 0)) {
    int64_t e = x2.item<int64_t>();
    if (e >= -(1 << 20) && e <= (1 << 20)) return lax::integer_pow(x1, e);
  }
  auto [a, b] = promote2(x1, x2, "power");
  if (is_bool_dtype(a)) return lax::bitwise_or(a, lax::bitwise_not(b));  // x ** 0 = 1, x ** 1 = x
  if (is_integer(a.dtype())) {
    return integer_power(a, b);
  }
  return lax::pow(a, b);
}
Array pow(const Array& x1, const Array& x2) { return power(x1, x2); }

Array negative(const Array& x) {
  if (is_bool_dtype(x))
    detail::fail("negative", "boolean negative is not supported (as NumPy's); use logical_not");
  return lax::neg(x);
}
Array positive(const Array& x) { return x; }

Array abs(const Array& x) {
  if (is_bool_dtype(x) || is_unsigned(x.dtype())) return x;
  return lax::abs(x);
}
Array absolute(const Array& x) { return abs(x); }
Array fabs(const Array& x) { return abs(x); }
Array sign(const Array& x) { return lax::sign(x); }
Array square(const Array& x) { return is_bool_dtype(x) ? x : lax::mul(x, x); }
Array reciprocal(const Array& x) {
  Array y = util::as_inexact(x);
  return lax::div(full_like_value(y, 1), y);
}

// ---- exponents and logarithms ----

#define JX_FLOAT_UNARY(name, lax_fn) \
  Array name(const Array& x) { return lax::lax_fn(util::as_inexact(x)); }
JX_FLOAT_UNARY(exp, exp)
JX_FLOAT_UNARY(exp2, exp2)
JX_FLOAT_UNARY(expm1, expm1)
JX_FLOAT_UNARY(log, log)
JX_FLOAT_UNARY(log1p, log1p)
JX_FLOAT_UNARY(sqrt, sqrt)
JX_FLOAT_UNARY(cbrt, cbrt)
JX_FLOAT_UNARY(sin, sin)
JX_FLOAT_UNARY(cos, cos)
JX_FLOAT_UNARY(tan, tan)
JX_FLOAT_UNARY(arcsin, asin)
JX_FLOAT_UNARY(arccos, acos)
JX_FLOAT_UNARY(arctan, atan)
JX_FLOAT_UNARY(sinh, sinh)
JX_FLOAT_UNARY(cosh, cosh)
JX_FLOAT_UNARY(tanh, tanh)
JX_FLOAT_UNARY(arcsinh, asinh)
JX_FLOAT_UNARY(arccosh, acosh)
JX_FLOAT_UNARY(arctanh, atanh)
#undef JX_FLOAT_UNARY

Array log2(const Array& x) {
  Array y = lax::log(util::as_inexact(x));
  return lax::div(y, full_like_value(y, std::numbers::ln2));
}
Array log10(const Array& x) {
  Array y = lax::log(util::as_inexact(x));
  return lax::div(y, full_like_value(y, std::numbers::ln10));
}

namespace {

// log(b^x1 + b^x2) for b = e or 2 (`log_b` = ln b), as max + log_b(1 + b^-|x1 - x2|).
Array logaddexp_value(const Array& a, const Array& b, bool base2) {
  Array amax = lax::max(a, b);
  Array delta = lax::sub(a, b);
  Array neg_abs = lax::neg(lax::abs(delta));
  Array l = base2 ? lax::div(lax::log1p(lax::exp2(neg_abs)), full_like_value(neg_abs, std::numbers::ln2))
                  : lax::log1p(lax::exp(neg_abs));
  // delta is NaN when both are the same infinity (or either is NaN): a + b is then right.
  return select(lax::ne(delta, delta), lax::add(a, b), lax::add(amax, l));
}

// JAX's derivative of logaddexp(2): the softmax weights b^(x_i - out), with +inf read as
// 0 on both sides, so ties give (1/2, 1/2) and (+inf, +inf) gives (1, 1) (the composition
// gives (0, 1) and NaN there).
Array logaddexp_custom(const char* name, const Array& x1, const Array& x2, bool base2) {
  auto [a, b] = promote2_inexact(x1, x2, name);
  require_real(name, a);
  auto f = [base2](std::span<const Array> x) { return std::vector<Array>{logaddexp_value(x[0], x[1], base2)}; };
  auto rule = [base2](std::span<const Array> x, std::span<const Array> t) {
    Array out = logaddexp_value(x[0], x[1], base2);
    auto finite_inf = [](const Array& v) { return select(lax::eq(v, full_like_value(v, INFINITY)), full_like_value(v, 0), v); };
    auto weight = [&](const Array& v) {
      Array d = lax::sub(finite_inf(v), finite_inf(out));
      return base2 ? lax::exp2(d) : lax::exp(d);
    };
    Array tangent = lax::add(lax::mul(t[0], weight(x[0])), lax::mul(t[1], weight(x[1])));
    return std::pair{std::vector<Array>{out}, std::vector<Array>{tangent}};
  };
  const Array args[] = {a, b};
  return detail::custom_jvp_call(name, f, rule, args)[0];
}

}  // namespace

Array logaddexp(const Array& x1, const Array& x2) { return logaddexp_custom("logaddexp", x1, x2, false); }
Array logaddexp2(const Array& x1, const Array& x2) { return logaddexp_custom("logaddexp2", x1, x2, true); }

// ---- trigonometry ----

Array arctan2(const Array& x1, const Array& x2) {
  auto [a, b] = promote2_inexact(x1, x2, "arctan2");
  require_real("arctan2", a);
  return lax::atan2(a, b);
}

Array hypot(const Array& x1, const Array& x2) {
  auto [a, b] = promote2_inexact(x1, x2, "hypot");
  require_real("hypot", a);
  a = lax::abs(a);
  b = lax::abs(b);
  Array inf = full_like_value(a, INFINITY);
  Array any_inf = lax::bitwise_or(lax::eq(a, inf), lax::eq(b, inf));
  Array hi = lax::max(a, b), lo = lax::min(a, b);
  Array zero = full_like_value(hi, 0);
  Array hi_is_zero = lax::eq(hi, zero);
  Array safe_hi = select(hi_is_zero, full_like_value(hi, 1), hi);
  Array ratio = lax::div(lo, safe_hi);
  Array r = lax::mul(hi, lax::sqrt(lax::add(full_like_value(ratio, 1), lax::mul(ratio, ratio))));
  // At (0, 0) the value is hi itself, so the derivative is max's: (1/2, 1/2), as JAX's.
  return select(any_inf, inf, select(hi_is_zero, hi, r));
}

namespace {
Array scale(const Array& x, double factor) {
  Array y = util::as_inexact(x);
  return lax::mul(y, full_like_value(y, factor));
}
}  // namespace
Array deg2rad(const Array& x) { return scale(x, std::numbers::pi / 180.0); }
Array rad2deg(const Array& x) { return scale(x, 180.0 / std::numbers::pi); }
Array degrees(const Array& x) { return rad2deg(x); }
Array radians(const Array& x) { return deg2rad(x); }

Array sinc(const Array& x) {
  Array y = util::as_inexact(x);
  Array is_zero = lax::eq(y, full_like_value(y, 0));
  Array pix = lax::mul(y, full_like_value(y, std::numbers::pi));
  Array safe = select(is_zero, full_like_value(y, 1), pix);
  // At 0, sin(y)/y's Maclaurin polynomial in y = pi x: its value is exactly 1 and its
  // derivatives are sinc's (to order 9), as JAX's rule gives them (-pi^2/3 for the second).
  Array y2 = lax::mul(pix, pix);
  Array series = full_like_value(y, 1.0 / 362880.0);
  for (double c : {-1.0 / 5040.0, 1.0 / 120.0, -1.0 / 6.0, 1.0})
    series = lax::add(lax::mul(series, y2), full_like_value(y, c));
  return select(is_zero, series, lax::div(lax::sin(safe), safe));
}

// ---- rounding ----

Array floor(const Array& x) { return is_int_or_bool(x) ? x : lax::floor(x); }
Array ceil(const Array& x) { return is_int_or_bool(x) ? x : lax::ceil(x); }
Array trunc(const Array& x) {
  if (is_int_or_bool(x)) return x;
  return select(lax::lt(x, full_like_value(x, 0)), lax::ceil(x), lax::floor(x));
}
Array fix(const Array& x) { return trunc(x); }
Array rint(const Array& x) {
  return lax::round(util::as_inexact(x), lax::RoundingMethod::ToNearestEven);
}

Array round(const Array& x, int decimals) {
  if (is_bool_dtype(x)) return x;
  if (is_integer(x.dtype())) {
    if (decimals >= 0) return x;
    // Round half to even at 10**-decimals, in integer arithmetic.
    double f = std::pow(10.0, -decimals);
    Array fa = full_like_value(x, f);
    Array q = floor_divide(x, fa);
    Array r = lax::sub(x, lax::mul(q, fa));
    Array twice = lax::add(r, r);
    Array odd = lax::ne(lax::bitwise_and(q, full_like_value(q, 1)), full_like_value(q, 0));
    Array up = lax::bitwise_or(lax::gt(twice, fa), lax::bitwise_and(lax::eq(twice, fa), odd));
    return lax::mul(select(up, lax::add(q, full_like_value(q, 1)), q), fa);
  }
  require_real("round", x);
  if (decimals == 0) return lax::round(x, lax::RoundingMethod::ToNearestEven);
  // Scale, round, unscale (as JAX); half precision scales in float32 to keep digits.
  bool half = x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16;
  Array y = half ? util::convert(x, DType::Float32, x.weak_type()) : x;
  Array factor = full_like_value(y, std::pow(10.0, decimals));
  Array out = lax::div(lax::round(lax::mul(y, factor), lax::RoundingMethod::ToNearestEven), factor);
  return half ? util::convert(out, x.dtype(), x.weak_type()) : out;
}
Array around(const Array& x, int decimals) { return round(x, decimals); }

// ---- comparisons and selection ----

Array maximum(const Array& x1, const Array& x2) {
  auto [a, b] = promote2(x1, x2, "maximum");
  return is_bool_dtype(a) ? lax::bitwise_or(a, b) : lax::max(a, b);
}
Array minimum(const Array& x1, const Array& x2) {
  auto [a, b] = promote2(x1, x2, "minimum");
  return is_bool_dtype(a) ? lax::bitwise_and(a, b) : lax::min(a, b);
}
Array fmax(const Array& x1, const Array& x2) {
  auto [a, b] = promote2(x1, x2, "fmax");
  if (!is_inexact(a.dtype())) return is_bool_dtype(a) ? lax::bitwise_or(a, b) : lax::max(a, b);
  return select(lax::bitwise_or(lax::gt(a, b), lax::ne(b, b)), a, b);
}
Array fmin(const Array& x1, const Array& x2) {
  auto [a, b] = promote2(x1, x2, "fmin");
  if (!is_inexact(a.dtype())) return is_bool_dtype(a) ? lax::bitwise_and(a, b) : lax::min(a, b);
  return select(lax::bitwise_or(lax::lt(a, b), lax::ne(b, b)), a, b);
}

Array clip(const Array& x, const std::optional<Array>& lo, const std::optional<Array>& hi) {
  Array out = x;
  if (lo) out = maximum(*lo, out);
  if (hi) out = minimum(*hi, out);
  return out;
}

Array where(const Array& condition, const Array& x, const Array& y) {
  Array c = util::convert(condition, DType::Bool);
  Shape common = broadcast_shapes({c.shape(), x.shape(), y.shape()}, "where");
  std::vector<Array> xy = promote_dtypes({x, y});
  return lax::select_n(broadcast_to(c, common), {broadcast_to(xy[1], common), broadcast_to(xy[0], common)});
}

#define JX_COMPARISON(name, lax_fn)                     \
  Array name(const Array& x1, const Array& x2) {        \
    auto [a, b] = promote2(x1, x2, #name);              \
    return lax::lax_fn(a, b);                           \
  }
JX_COMPARISON(equal, eq)
JX_COMPARISON(not_equal, ne)
JX_COMPARISON(less, lt)
JX_COMPARISON(less_equal, le)
JX_COMPARISON(greater, gt)
JX_COMPARISON(greater_equal, ge)
#undef JX_COMPARISON

Array isnan(const Array& x) {
  if (!is_inexact(x.dtype())) return false_like(x);
  return lax::ne(x, x);
}

Array isinf(const Array& x) {
  if (is_complex(x.dtype())) return lax::bitwise_or(isinf(lax::real(x)), isinf(lax::imag(x)));
  if (!is_floating(x.dtype())) return false_like(x);
  return lax::eq(lax::abs(x), full_like_value(x, INFINITY));
}
Array isposinf(const Array& x) {
  require_real("isposinf", x);
  if (!is_floating(x.dtype())) return false_like(x);
  return lax::eq(x, full_like_value(x, INFINITY));
}
Array isneginf(const Array& x) {
  require_real("isneginf", x);
  if (!is_floating(x.dtype())) return false_like(x);
  return lax::eq(x, full_like_value(x, -INFINITY));
}
Array isfinite(const Array& x) {
  if (is_complex(x.dtype())) return lax::bitwise_and(lax::is_finite(lax::real(x)), lax::is_finite(lax::imag(x)));
  if (!is_floating(x.dtype())) return true_like(x);
  return lax::is_finite(x);
}

Array isclose(const Array& a0, const Array& b0, double rtol, double atol, bool equal_nan) {
  auto [a, b] = promote2_inexact(a0, b0, "isclose");
  Array diff = lax::abs(lax::sub(a, b));
  Array bound = lax::add(full_like_value(diff, atol), lax::mul(full_like_value(diff, rtol), lax::abs(b)));
  Array out = lax::le(diff, bound);
  Array a_inf = isinf(a), b_inf = isinf(b);
  out = lax::bitwise_and(out, lax::bitwise_not(lax::bitwise_or(a_inf, b_inf)));
  out = lax::bitwise_or(out, lax::bitwise_and(lax::bitwise_and(a_inf, b_inf), lax::eq(a, b)));
  Array a_nan = isnan(a), b_nan = isnan(b);
  out = lax::bitwise_and(out, lax::bitwise_not(lax::bitwise_or(a_nan, b_nan)));
  if (equal_nan) out = lax::bitwise_or(out, lax::bitwise_and(a_nan, b_nan));
  return out;
}

bool allclose(const Array& a, const Array& b, double rtol, double atol, bool equal_nan) {
  return all(isclose(a, b, rtol, atol, equal_nan)).item<bool>();
}

bool array_equal(const Array& a, const Array& b, bool equal_nan) {
  if (a.shape() != b.shape()) return false;
  Array eq = equal(a, b);
  if (equal_nan) eq = lax::bitwise_or(eq, lax::bitwise_and(isnan(a), isnan(b)));
  return all(eq).item<bool>();
}

bool array_equiv(const Array& a, const Array& b) {
  try {
    broadcast_shapes({a.shape(), b.shape()}, "array_equiv");
  } catch (const Error&) {
    return false;
  }
  return all(equal(a, b)).item<bool>();
}

// ---- logic and bits ----

namespace {
std::pair<Array, Array> as_bools(const Array& x1, const Array& x2, std::string_view op) {
  return promote2(util::convert(x1, DType::Bool), util::convert(x2, DType::Bool), op);
}
std::pair<Array, Array> bit_operands(const Array& x1, const Array& x2, std::string_view op) {
  auto [a, b] = promote2(x1, x2, op);
  require_bits(op, a);
  return {a, b};
}
}  // namespace

Array logical_and(const Array& x1, const Array& x2) {
  auto [a, b] = as_bools(x1, x2, "logical_and");
  return lax::bitwise_and(a, b);
}
Array logical_or(const Array& x1, const Array& x2) {
  auto [a, b] = as_bools(x1, x2, "logical_or");
  return lax::bitwise_or(a, b);
}
Array logical_xor(const Array& x1, const Array& x2) {
  auto [a, b] = as_bools(x1, x2, "logical_xor");
  return lax::bitwise_xor(a, b);
}
Array logical_not(const Array& x) { return lax::bitwise_not(util::convert(x, DType::Bool)); }

Array bitwise_and(const Array& x1, const Array& x2) {
  auto [a, b] = bit_operands(x1, x2, "bitwise_and");
  return lax::bitwise_and(a, b);
}
Array bitwise_or(const Array& x1, const Array& x2) {
  auto [a, b] = bit_operands(x1, x2, "bitwise_or");
  return lax::bitwise_or(a, b);
}
Array bitwise_xor(const Array& x1, const Array& x2) {
  auto [a, b] = bit_operands(x1, x2, "bitwise_xor");
  return lax::bitwise_xor(a, b);
}
Array bitwise_not(const Array& x) {
  require_bits("bitwise_not", x);
  return lax::bitwise_not(x);
}
Array invert(const Array& x) {
  require_bits("invert", x);
  return lax::bitwise_not(x);
}
Array left_shift(const Array& x1, const Array& x2) {
  auto [a, b] = bit_operands(x1, x2, "left_shift");
  if (is_bool_dtype(a)) detail::fail("left_shift", "bool operands are not supported");
  return lax::shift_left(a, b);
}
Array right_shift(const Array& x1, const Array& x2) {
  auto [a, b] = bit_operands(x1, x2, "right_shift");
  if (is_bool_dtype(a)) detail::fail("right_shift", "bool operands are not supported");
  return is_unsigned(a.dtype()) ? lax::shift_right_logical(a, b) : lax::shift_right_arithmetic(a, b);
}

// ---- complex numbers ----

Array conj(const Array& x) { return is_complex(x.dtype()) ? lax::conj(x) : x; }
Array conjugate(const Array& x) { return conj(x); }
Array real(const Array& x) { return is_complex(x.dtype()) ? lax::real(x) : x; }
Array imag(const Array& x) { return is_complex(x.dtype()) ? lax::imag(x) : full_like_value(x, 0); }

Array angle(const Array& z, bool deg) {
  Array re = util::as_inexact(real(z)), im = util::as_inexact(imag(z));
  Array out = lax::atan2(im, re);
  if (deg) out = lax::mul(out, full_like_value(out, 180.0 / std::numbers::pi));
  return out;
}

// ---- floating-point functions ----

Array heaviside(const Array& x1, const Array& x2) {
  auto [a, b] = promote2_inexact(x1, x2, "heaviside");
  require_real("heaviside", a);
  Array zero = full_like_value(a, 0);
  Array out = select(lax::lt(a, zero), zero, select(lax::gt(a, zero), full_like_value(a, 1), b));
  return select(lax::ne(a, a), a, out);  // NaN stays NaN, as NumPy
}

Array signbit(const Array& x) {
  require_real("signbit", x);
  DType d = x.dtype();
  if (d == DType::Bool || is_unsigned(d)) return false_like(x);
  if (is_integer(d)) return lax::lt(x, full_like_value(x, 0));
  DType bits = itemsize(d) == 2 ? DType::Int16 : itemsize(d) == 4 ? DType::Int32 : DType::Int64;
  Array i = lax::bitcast_convert_type(x, bits);
  return lax::lt(i, full_like_value(i, 0));
}

Array copysign(const Array& x1, const Array& x2) {
  auto [a, b] = promote2_inexact(x1, x2, "copysign");
  require_real("copysign", a);
  Array mag = lax::abs(a);
  return select(signbit(b), lax::neg(mag), mag);
}

Array nan_to_num(const Array& x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
  if (is_complex(x.dtype())) {
    Array re = nan_to_num(lax::real(x), nan, posinf, neginf);
    Array im = nan_to_num(lax::imag(x), nan, posinf, neginf);
    Array j = util::convert(Array(complex128_t(0, 1)), x.dtype(), x.weak_type());
    Array re_c = util::convert(re, x.dtype(), x.weak_type()), im_c = util::convert(im, x.dtype(), x.weak_type());
    return lax::add(re_c, lax::mul(im_c, broadcast_to(j, x.shape())));
  }
  if (!is_floating(x.dtype())) return x;
  double big = finfo_max(x.dtype());
  Array out = select(lax::ne(x, x), full_like_value(x, nan), x);
  out = select(lax::eq(x, full_like_value(x, INFINITY)), full_like_value(x, posinf.value_or(big)), out);
  out = select(lax::eq(x, full_like_value(x, -INFINITY)), full_like_value(x, neginf.value_or(-big)), out);
  return out;
}

}  // namespace jx::numpy
