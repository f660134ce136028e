// The Array operators and NumPy-style methods of jx/array.h, all through jx::numpy.
#include "jx/array.h"
#include "jx/numpy.h"

namespace jx {

namespace jnp = jx::numpy;

Array Array::astype(DType dtype) const { return jnp::astype(*this, dtype); }
Array Array::reshape(Shape shape) const { return jnp::reshape(*this, shape); }
Array Array::T() const { return jnp::transpose(*this); }
Array Array::sum() const { return jnp::sum(*this); }
Array Array::mean() const { return jnp::mean(*this); }
Array Array::max() const { return jnp::max(*this); }
Array Array::min() const { return jnp::min(*this); }

Array operator+(const Array& a, const Array& b) { return jnp::add(a, b); }
Array operator-(const Array& a, const Array& b) { return jnp::subtract(a, b); }
Array operator*(const Array& a, const Array& b) { return jnp::multiply(a, b); }
Array operator/(const Array& a, const Array& b) { return jnp::true_divide(a, b); }
Array operator%(const Array& a, const Array& b) { return jnp::remainder(a, b); }
Array operator-(const Array& a) { return jnp::negative(a); }
Array operator+(const Array& a) { return jnp::positive(a); }
Array operator==(const Array& a, const Array& b) { return jnp::equal(a, b); }
Array operator!=(const Array& a, const Array& b) { return jnp::not_equal(a, b); }
Array operator<(const Array& a, const Array& b) { return jnp::less(a, b); }
Array operator<=(const Array& a, const Array& b) { return jnp::less_equal(a, b); }
Array operator>(const Array& a, const Array& b) { return jnp::greater(a, b); }
Array operator>=(const Array& a, const Array& b) { return jnp::greater_equal(a, b); }
Array operator&(const Array& a, const Array& b) { return jnp::bitwise_and(a, b); }
Array operator|(const Array& a, const Array& b) { return jnp::bitwise_or(a, b); }
Array operator^(const Array& a, const Array& b) { return jnp::bitwise_xor(a, b); }
Array operator~(const Array& a) { return jnp::invert(a); }
Array operator!(const Array& a) { return jnp::logical_not(a); }
// Arrays are values: a += b rebinds a to a + b (the promoted result, as in JAX).
Array& operator+=(Array& a, const Array& b) { return a = jnp::add(a, b); }
Array& operator-=(Array& a, const Array& b) { return a = jnp::subtract(a, b); }
Array& operator*=(Array& a, const Array& b) { return a = jnp::multiply(a, b); }
Array& operator/=(Array& a, const Array& b) { return a = jnp::true_divide(a, b); }

}  // namespace jx
