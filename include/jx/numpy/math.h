// jx::numpy elementwise math: NumPy's ufuncs with broadcasting and JAX's type promotion.
// Float functions of bool/integer inputs compute in float32 (sin(int32) -> float32), as JAX.
#pragma once

#include <optional>

#include "jx/numpy/core.h"

namespace jx::numpy {

// ---- arithmetic ----
// x1 + x2 (logical or on bools).
Array add(const Array& x1, const Array& x2);
// x1 - x2; bools raise, as NumPy's boolean subtract.
Array subtract(const Array& x1, const Array& x2);
// x1 * x2 (logical and on bools).
Array multiply(const Array& x1, const Array& x2);
// True division: integers divide as float32 (ints -> float).
Array divide(const Array& x1, const Array& x2);
// Same as divide.
Array true_divide(const Array& x1, const Array& x2);
// floor(x1 / x2); integer division rounds toward -inf, x / 0.0 is +-inf as in NumPy.
Array floor_divide(const Array& x1, const Array& x2);
// Remainder with the sign of the divisor (Python's %); integer x % 0 is 0 as in NumPy.
Array remainder(const Array& x1, const Array& x2);
// Same as remainder.
Array mod(const Array& x1, const Array& x2);
// C's fmod: remainder with the sign of the dividend; integer x % 0 is 0.
Array fmod(const Array& x1, const Array& x2);
// x1 ** x2; integer ** integer stays integer (negative exponents give 0 except for +-1 bases,
// where NumPy raises).
Array power(const Array& x1, const Array& x2);
// Same as power.
Array pow(const Array& x1, const Array& x2);
// -x; bools raise as NumPy's boolean negative.
Array negative(const Array& x);
// +x.
Array positive(const Array& x);
// |x|; complex -> its real dtype.
Array abs(const Array& x);
// Same as abs.
Array absolute(const Array& x);
// Same as abs (real inputs only in NumPy; here any).
Array fabs(const Array& x);
// -1, 0 or 1 (x / |x| for complex).
Array sign(const Array& x);
// x * x.
Array square(const Array& x);
// 1 / x, in float for integer inputs (as JAX; NumPy would truncate).
Array reciprocal(const Array& x);

// ---- exponents and logarithms ----
// e ** x.
Array exp(const Array& x);
// 2 ** x.
Array exp2(const Array& x);
// e ** x - 1, accurate near 0.
Array expm1(const Array& x);
// Natural logarithm.
Array log(const Array& x);
// Base-2 logarithm.
Array log2(const Array& x);
// Base-10 logarithm.
Array log10(const Array& x);
// log(1 + x), accurate near 0.
Array log1p(const Array& x);
// Square root (NaN for negative reals).
Array sqrt(const Array& x);
// Cube root (real, defined for negatives).
Array cbrt(const Array& x);
// log(exp(x1) + exp(x2)) without overflow.
Array logaddexp(const Array& x1, const Array& x2);
// log2(2**x1 + 2**x2) without overflow.
Array logaddexp2(const Array& x1, const Array& x2);

// ---- trigonometry ----
// Sine (radians).
Array sin(const Array& x);
// Cosine (radians).
Array cos(const Array& x);
// Tangent (radians).
Array tan(const Array& x);
// Inverse sine, in [-pi/2, pi/2].
Array arcsin(const Array& x);
// Inverse cosine, in [0, pi].
Array arccos(const Array& x);
// Inverse tangent, in (-pi/2, pi/2).
Array arctan(const Array& x);
// Hyperbolic sine.
Array sinh(const Array& x);
// Hyperbolic cosine.
Array cosh(const Array& x);
// Hyperbolic tangent.
Array tanh(const Array& x);
// Inverse hyperbolic sine.
Array arcsinh(const Array& x);
// Inverse hyperbolic cosine (x >= 1).
Array arccosh(const Array& x);
// Inverse hyperbolic tangent (|x| < 1).
Array arctanh(const Array& x);
// atan(x1 / x2) in the right quadrant.
Array arctan2(const Array& x1, const Array& x2);
// sqrt(x1**2 + x2**2) without overflow.
Array hypot(const Array& x1, const Array& x2);
// Degrees to radians.
Array deg2rad(const Array& x);
// Radians to degrees.
Array rad2deg(const Array& x);
// Same as rad2deg.
Array degrees(const Array& x);
// Same as deg2rad.
Array radians(const Array& x);
// sin(pi x) / (pi x), 1 at 0.
Array sinc(const Array& x);

// ---- rounding ----
// Integer inputs are returned unchanged by floor, ceil and trunc (as JAX).
// Largest integer <= x.
Array floor(const Array& x);
// Smallest integer >= x.
Array ceil(const Array& x);
// Rounds toward zero.
Array trunc(const Array& x);
// Same as trunc.
Array fix(const Array& x);
// Round half to even; integer inputs become float32 (as JAX).
Array rint(const Array& x);
// Round half to even to `decimals` places; negative decimals round integers to tens etc.
Array round(const Array& x, int decimals = 0);
// Same as round.
Array around(const Array& x, int decimals = 0);

// ---- comparisons and selection ----
// Elementwise maximum/minimum; NaNs propagate.
Array maximum(const Array& x1, const Array& x2);
Array minimum(const Array& x1, const Array& x2);
// Maximum/minimum ignoring NaNs (NaN only when both are).
Array fmax(const Array& x1, const Array& x2);
Array fmin(const Array& x1, const Array& x2);
// Limits x to [lo, hi]; either bound may be absent. As jnp.clip: maximum then minimum.
Array clip(const Array& x, const std::optional<Array>& lo = std::nullopt,
           const std::optional<Array>& hi = std::nullopt);
// x where condition, else y (condition is converted to bool); all three broadcast.
Array where(const Array& condition, const Array& x, const Array& y);
// Elementwise comparisons (bool results) after promotion and broadcasting.
Array equal(const Array& x1, const Array& x2);
Array not_equal(const Array& x1, const Array& x2);
Array less(const Array& x1, const Array& x2);
Array less_equal(const Array& x1, const Array& x2);
Array greater(const Array& x1, const Array& x2);
Array greater_equal(const Array& x1, const Array& x2);
// Whether x is NaN (false for integers and bools).
Array isnan(const Array& x);
// Whether x is +-inf (either part for complex).
Array isinf(const Array& x);
// Whether x is +inf.
Array isposinf(const Array& x);
// Whether x is -inf.
Array isneginf(const Array& x);
// Whether x is neither inf nor NaN (true for integers).
Array isfinite(const Array& x);
// |a - b| <= atol + rtol * |b|, elementwise; infinities equal when equal, NaN never unless
// equal_nan. Integers compare as float (as NumPy; JAX compares integers exactly).
Array isclose(const Array& a, const Array& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
// Whether every element is close (concrete arrays only).
bool allclose(const Array& a, const Array& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
// Same shape and equal elements (concrete arrays only).
bool array_equal(const Array& a, const Array& b, bool equal_nan = false);
// Broadcastable and equal elements (concrete arrays only).
bool array_equiv(const Array& a, const Array& b);

// ---- logic and bits ----
// Logical ops on truth values (nonzero is true); bool results.
Array logical_and(const Array& x1, const Array& x2);
Array logical_or(const Array& x1, const Array& x2);
Array logical_xor(const Array& x1, const Array& x2);
// Logical not of the truth value.
Array logical_not(const Array& x);
// Bitwise ops on bool and integer dtypes.
Array bitwise_and(const Array& x1, const Array& x2);
Array bitwise_or(const Array& x1, const Array& x2);
Array bitwise_xor(const Array& x1, const Array& x2);
Array bitwise_not(const Array& x);
// Same as bitwise_not.
Array invert(const Array& x);
// x1 << x2 on integers.
Array left_shift(const Array& x1, const Array& x2);
// Arithmetic shift for signed integers, logical for unsigned.
Array right_shift(const Array& x1, const Array& x2);

// ---- complex numbers ----
// Complex conjugate (identity on reals).
Array conj(const Array& x);
// Same as conj.
Array conjugate(const Array& x);
// Real part (identity on reals).
Array real(const Array& x);
// Imaginary part (zeros for real inputs).
Array imag(const Array& x);
// Argument of a complex number (radians, or degrees when `deg`).
Array angle(const Array& z, bool deg = false);

// ---- floating-point functions ----
// 0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0.
Array heaviside(const Array& x1, const Array& x2);
// |x1| with the sign of x2.
Array copysign(const Array& x1, const Array& x2);
// Whether the sign bit is set (true for -0.0 and negative NaN).
Array signbit(const Array& x);
// NaN -> nan, +inf -> posinf (default the dtype's max), -inf -> neginf (default its lowest).
Array nan_to_num(const Array& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                 std::optional<double> neginf = std::nullopt);

}  // namespace jx::numpy
