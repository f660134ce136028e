// jx::random, following jax/_src/random (core.py, threefry2x32.py) step for step so the
// bits agree: random bits come from threefry2x32 over a 64-bit iota split in two words
// (the jax_threefry_partitionable=True scheme, JAX's default since 0.5), floats from
// the mantissa trick, normals from erf_inv. Only lax/jnp ops are used, so all of it traces.
// jx has no uint64/uint16: JAX's uint64 arithmetic runs on int64 bit patterns and
// its uint16 on the low half of uint32.
#include "jx/random.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "jx/numpy.h"

namespace jx::random {
namespace {

namespace jnp = jx::numpy;

// ---- constants and small helpers ----

Array full(const Shape& shape, DType dtype, double v) {
  return lax::broadcast_in_dim(detail::scalar_of(dtype, v), shape, {});
}
template <class T>
Array full_of(const Shape& shape, T v) {
  return lax::broadcast_in_dim(detail::scalar<T>(v), shape, {});
}

// NumPy's finfo fields for jx's float dtypes.
struct FloatInfo {
  int bits, nmant;
  double tiny;  // smallest normal
};
FloatInfo finfo(DType d) {
  switch (d) {
    case DType::Float16: return {16, 10, std::ldexp(1.0, -14)};
    case DType::BFloat16: return {16, 7, std::ldexp(1.0, -126)};
    case DType::Float32: return {32, 23, std::ldexp(1.0, -126)};
    default: return {64, 52, std::ldexp(1.0, -1022)};
  }
}
double eps(DType d) { return std::ldexp(1.0, -finfo(d).nmant); }
double epsneg(DType d) { return std::ldexp(1.0, -finfo(d).nmant - 1); }

void check_key(std::string_view op, const Array& key) {
  if (!key.valid()) detail::fail(op, "got a null jx::Array as key");
  if (key.dtype() != DType::UInt32 || key.shape() != Shape{2}) {
    std::string hint = key.dtype() == DType::UInt32 && key.ndim() > 1
                           ? "; for a batch of keys, index one key or use vmap"
                           : "; make one with jx::random::key(seed)";
    detail::fail(op, "expected a PRNG key (a uint32 array of shape (2,)), got ", key.aval().str(), hint);
  }
}

void check_float_dtype(std::string_view op, DType dtype) {
  if (!is_floating(dtype)) detail::fail(op, "dtype must be a float dtype, got ", dtype);
}

void check_shape(std::string_view op, const Shape& shape) {
  for (int64_t d : shape)
    if (d < 0) detail::fail(op, "shape ", detail::shape_str(shape), " has a negative dimension");
  shape_size(shape, op);  // an element count past 2^63 - 1 raises here, naming op
}

// JAX's _check_shape: parameter shapes must broadcast to exactly `shape`.
void check_param_shapes(std::string_view op, const Shape& shape, const std::vector<Shape>& params) {
  std::vector<Shape> all = {shape};
  all.insert(all.end(), params.begin(), params.end());
  Shape b = jnp::broadcast_shapes(all, op);
  if (b != shape) {
    std::string ps;
    for (const Shape& p : params) ps += (ps.empty() ? "" : ", ") + detail::shape_str(p);
    detail::fail(op, "parameter shapes ", ps, " must broadcast to the shape argument ", detail::shape_str(shape),
                 ", but broadcasting gives ", detail::shape_str(b));
  }
}

// The key's two words as 0-d arrays.
std::pair<Array, Array> key_words(const Array& key) {
  return {lax::reshape(lax::slice(key, {0}, {1}), {}), lax::reshape(lax::slice(key, {1}, {2}), {})};
}

// threefry2x32 over iota_2x32_shape(shape): the flat index as (hi, lo) counter words.
std::pair<Array, Array> threefry_bits(std::string_view op, const Array& key, const Shape& shape) {
  int64_t n = shape_size(shape, op);
  if (n > static_cast<int64_t>(std::numeric_limits<uint32_t>::max()))
    detail::fail(op, "cannot draw more than 2^32 - 1 values at once, got shape ", detail::shape_str(shape));
  auto [k0, k1] = key_words(key);
  Array hi = full_of<uint32_t>(shape, 0u);  // n < 2^32, so the high word of the iota is 0
  Array lo = lax::reshape(lax::iota(DType::UInt32, n), shape);
  return lax::threefry2x32(lax::broadcast_in_dim(k0, shape, {}), lax::broadcast_in_dim(k1, shape, {}), hi, lo);
}

Array bits32(std::string_view op, const Array& key, const Shape& shape) {
  auto [b0, b1] = threefry_bits(op, key, shape);
  return lax::bitwise_xor(b0, b1);
}

Array split_shape(std::string_view op, const Array& key, const Shape& shape) {
  check_key(op, key);
  check_shape(op, shape);
  auto [b0, b1] = threefry_bits(op, key, shape);
  auto nd = static_cast<int64_t>(shape.size());
  return lax::concatenate({lax::expand_dims(b0, {nd}), lax::expand_dims(b1, {nd})}, nd);
}

std::pair<Array, Array> split2(const Array& key) {
  Array keys = split_shape("random.split", key, {2});
  return {lax::reshape(lax::slice(keys, {0, 0}, {1, 2}), {2}), lax::reshape(lax::slice(keys, {1, 0}, {2, 2}), {2})};
}

// Broadcasts a bound to `shape` in `dtype`, naming the parameter when it does not fit.
Array bound(std::string_view op, const char* name, const Array& v, DType dtype, const Shape& shape) {
  if (!v.valid()) detail::fail(op, name, " is a null jx::Array");
  Array c = lax::convert_element_type(v, dtype);
  if (c.weak_type()) c = detail::with_weak_type(c, false);
  bool fits = v.ndim() <= static_cast<int>(shape.size());
  for (int i = 1; fits && i <= v.ndim(); ++i) {
    int64_t d = v.shape()[v.shape().size() - static_cast<size_t>(i)];
    fits = d == 1 || d == shape[shape.size() - static_cast<size_t>(i)];
  }
  if (!fits)
    detail::fail(op, name, " of shape ", detail::shape_str(v.shape()), " does not broadcast to shape ",
                 detail::shape_str(shape));
  return jnp::broadcast_to(c, shape);
}

// Floats in [1, 2) from random bits, minus 1: JAX's mantissa trick, per float width.
Array unit_floats(std::string_view op, const Array& key, const Shape& shape, DType dtype) {
  FloatInfo fi = finfo(dtype);
  Array float_bits;
  if (fi.bits == 64) {
    auto [b0, b1] = threefry_bits(op, key, shape);
    Array hi = lax::convert_element_type(b0, DType::Int64), lo = lax::convert_element_type(b1, DType::Int64);
    Array u64 = lax::bitwise_or(lax::shift_left(hi, full_of<int64_t>(shape, 32)), lo);
    Array mant = lax::shift_right_logical(u64, full_of<int64_t>(shape, 64 - fi.nmant));
    float_bits = lax::bitwise_or(mant, full_of<int64_t>(shape, int64_t{0x3FF0000000000000}));
  } else if (fi.bits == 32) {
    Array mant = lax::shift_right_logical(bits32(op, key, shape), full_of<uint32_t>(shape, 32u - fi.nmant));
    float_bits = lax::bitwise_or(mant, full_of<uint32_t>(shape, 0x3F800000u));
  } else {
    // 16-bit floats: JAX draws 16 bits (8 when the mantissa is under 8 bits: bfloat16)
    // and widens them to uint16; here they live in the low bits of a uint32.
    int rng_bits = fi.nmant < 8 ? 8 : 16;
    Array b = lax::bitwise_and(bits32(op, key, shape), full_of<uint32_t>(shape, (1u << rng_bits) - 1));
    Array mant = lax::shift_right_logical(b, full_of<uint32_t>(shape, static_cast<uint32_t>(rng_bits - fi.nmant)));
    uint32_t one = dtype == DType::Float16 ? 0x3C00u : 0x3F80u;
    float_bits = lax::convert_element_type(lax::bitwise_or(mant, full_of<uint32_t>(shape, one)), DType::Int16);
  }
  return lax::sub(lax::bitcast_convert_type(float_bits, dtype), full(shape, dtype, 1.0));
}

// x * y + z rounded once, as XLA's fused multiply-add computes JAX's
// `floats * (maxval - minval) + minval`. Narrow floats: the product is exact in float64,
// so one float64 add and the narrowing round agree with a true FMA (barring a double-
// rounding tie). float64: Dekker's exact product and Knuth's two-sum carry the errors.
Array fused_multiply_add(const Array& x, const Array& y, const Array& z) {
  DType dtype = x.dtype();
  if (dtype != DType::Float64) {
    auto wide = [](const Array& a) { return lax::convert_element_type(a, DType::Float64); };
    return lax::convert_element_type(lax::add(lax::mul(wide(x), wide(y)), wide(z)), dtype);
  }
  const Shape& shape = x.shape();
  auto split = [&](const Array& a) {  // Veltkamp: a = hi + lo with 26-bit halves
    Array c = lax::mul(full(shape, dtype, 134217729.0), a);
    Array hi = lax::sub(c, lax::sub(c, a));
    return std::pair<Array, Array>{hi, lax::sub(a, hi)};
  };
  Array p = lax::mul(x, y);
  auto [xh, xl] = split(x);
  auto [yh, yl] = split(y);
  Array p_err = lax::add(
      lax::add(lax::add(lax::sub(lax::mul(xh, yh), p), lax::mul(xh, yl)), lax::mul(xl, yh)), lax::mul(xl, yl));
  Array s = lax::add(p, z);
  Array bv = lax::sub(s, p);
  Array s_err = lax::add(lax::sub(p, lax::sub(s, bv)), lax::sub(z, bv));
  return lax::add(s, lax::add(s_err, p_err));
}

Array uniform_impl(std::string_view op, const Array& key, const Shape& shape, DType dtype, const Array& minval,
                   const Array& maxval) {
  check_key(op, key);
  check_shape(op, shape);
  check_float_dtype(op, dtype);
  Array lo = bound(op, "minval", minval, dtype, shape), hi = bound(op, "maxval", maxval, dtype, shape);
  Array floats = unit_floats(op, key, shape, dtype);
  return lax::max(lo, fused_multiply_add(floats, lax::sub(hi, lo), lo));
}

// XLA's float32 erf_inv (M. Giles' polynomial, Horner steps fused as XLA's CPU and GPU
// code fuses them), so normals agree with JAX's to an ulp or two rather than differing
// by the few ulp of that approximation. float64 uses lax::erf_inv.
Array erf_inv_like_xla(const Array& x) {
  if (x.dtype() == DType::Float64) return lax::erf_inv(x);
  static constexpr float kSmall[] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                                     -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                                     -0.00417768164f,  0.246640727f,    1.50140941f};
  static constexpr float kLarge[] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                                     -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                                     0.00943887047f,   1.00167406f,     2.83297682f};
  DType narrow = x.dtype();
  Array xf = lax::convert_element_type(x, DType::Float32);
  const Shape& shape = x.shape();
  Array w = lax::neg(lax::log1p(lax::neg(lax::mul(xf, xf))));
  Array small = lax::lt(w, full(shape, DType::Float32, 5.0));
  auto coefficient = [&](int i) {
    return lax::select_n(small, {full(shape, DType::Float32, kLarge[i]), full(shape, DType::Float32, kSmall[i])});
  };
  w = lax::select_n(small, {lax::sub(lax::sqrt(w), full(shape, DType::Float32, 3.0)),
                            lax::sub(w, full(shape, DType::Float32, 2.5))});
  Array p = coefficient(0);
  for (int i = 1; i < 9; ++i) p = fused_multiply_add(p, w, coefficient(i));
  Array result = lax::mul(p, xf);
  Array at_one = lax::eq(lax::abs(xf), full(shape, DType::Float32, 1.0));
  result = lax::select_n(at_one, {result, lax::mul(xf, full(shape, DType::Float32, std::numeric_limits<float>::max()))});
  return narrow == DType::Float32 ? result : lax::convert_element_type(result, narrow);
}

Array normal_real(std::string_view op, const Array& key, const Shape& shape, DType dtype) {
  // nextafter(-1, 0): the open lower end keeps erf_inv finite.
  Array u = uniform_impl(op, key, shape, dtype, detail::scalar_of(dtype, -(1.0 - epsneg(dtype))),
                         detail::scalar_of(dtype, 1.0));
  return lax::mul(full(shape, dtype, std::numbers::sqrt2), erf_inv_like_xla(u));
}

Array gumbel_impl(std::string_view op, const Array& key, const Shape& shape, DType dtype) {
  Array u = uniform_impl(op, key, shape, dtype, detail::scalar_of(dtype, finfo(dtype).tiny),
                         detail::scalar_of(dtype, 1.0));
  return lax::neg(lax::log(lax::neg(lax::log(u))));
}

// Indices of the k largest along the last axis, largest first, ties by lower index
// (lax.top_k's order), by a stable sort of the negated values.
Array top_k_indices(const Array& x, int64_t k) {
  int64_t last = x.ndim() - 1;
  Shape shape = x.shape();
  Array idx = lax::broadcasted_iota(DType::Int32, shape, static_cast<int>(last));
  Array sorted = lax::sort({lax::neg(x), idx}, last, true, 1)[1];
  std::vector<int64_t> start(shape.size(), 0), limit = shape;
  limit[static_cast<size_t>(last)] = k;
  return lax::slice(sorted, start, limit);
}

Array shuffle(Array key, Array x, int64_t axis) {
  // JAX sorts by fresh random keys, enough rounds to make collisions negligible.
  int rounds = static_cast<int>(
      std::ceil(3 * std::log(static_cast<double>(std::max<int64_t>(1, x.size()))) / std::log(4294967295.0)));
  for (int r = 0; r < rounds; ++r) {
    auto [next, sub] = split2(key);
    key = next;
    x = lax::sort({bits32("random.permutation", sub, x.shape()), x}, axis, true, 1)[1];
  }
  return x;
}

int64_t normalize_axis(std::string_view op, int64_t axis, int64_t ndim, const Shape& shape) {
  if (axis < -ndim || axis >= ndim)
    detail::fail(op, "axis ", axis, " is out of bounds for shape ", detail::shape_str(shape));
  return axis < 0 ? axis + ndim : axis;
}

std::pair<int64_t, int64_t> int_limits(DType d) {
  return dispatch_dtype(d, [&]<class T>() -> std::pair<int64_t, int64_t> {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      return {static_cast<int64_t>(std::numeric_limits<T>::min()), static_cast<int64_t>(std::numeric_limits<T>::max())};
    else
      return {0, 1};
  });
}

// Clips an integer array into dtype's range and converts (JAX's _convert_and_clip_integer).
Array convert_and_clip(const Array& v, DType dtype) {
  auto [dlo, dhi] = int_limits(dtype);
  auto [vlo, vhi] = int_limits(v.dtype());
  auto in_v = [&](int64_t x) { return lax::convert_element_type(detail::scalar<int64_t>(x), v.dtype()); };
  return lax::convert_element_type(jnp::clip(v, in_v(std::max(dlo, vlo)), in_v(std::min(dhi, vhi))), dtype);
}

Array as_int(const Array& v) {
  Array c = is_integer(v.dtype()) ? v : lax::convert_element_type(v, DType::Int32);
  return c.weak_type() ? detail::with_weak_type(c, false) : c;
}

// x % s for int64 arrays holding uint64 bit patterns (JAX's uint64 lax.rem), from signed
// ops: s >= 2^63 needs at most one subtraction; otherwise the top bit of x is reduced as
// 2^63 mod s. s == 0 gives x, as XLA's remainder by zero does.
Array urem64(const Array& x, const Array& s) {
  const Shape& shape = x.shape();
  auto c = [&](int64_t v) { return full_of<int64_t>(shape, v); };
  const int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  Array zero = c(0);
  Array s_pos = lax::select_n(lax::le(s, zero), {s, c(1)});  // a safe divisor on every lane
  // s >= 2^63 (negative as int64): x < 2s, so subtract once when x >= s unsigned.
  Array x_ge_s = lax::ge(lax::bitwise_xor(x, c(kMin)), lax::bitwise_xor(s, c(kMin)));
  Array big = lax::select_n(x_ge_s, {x, lax::sub(x, s)});
  // s < 2^63: (x mod 2^63) mod s plus 2^63 mod s, folded back below s without overflow.
  Array r1 = lax::rem(lax::bitwise_and(x, c(kMax)), s_pos);
  Array r2 = lax::rem(lax::add(lax::rem(c(kMax), s_pos), c(1)), s_pos);
  Array gap = lax::sub(s_pos, r2);
  Array top = lax::select_n(lax::ge(r1, gap), {lax::add(r1, r2), lax::sub(r1, gap)});
  Array small = lax::select_n(lax::lt(x, zero), {lax::rem(x, s_pos), top});
  Array out = lax::select_n(lax::lt(s, zero), {small, big});
  return lax::select_n(lax::eq(s, zero), {out, x});
}

// JAX's _randint: 2 * nbits random bits per value reduced modulo the span (biased only
// when the span is not a power of two, negligibly for small spans). 32-bit dtypes work
// in uint32; int64 in uint64 bit patterns held as int64.
Array randint_impl(const Array& key, const Shape& shape, const Array& minval, const Array& maxval, DType dtype) {
  const char* op = "random.randint";
  check_param_shapes(op, shape, {minval.shape(), maxval.shape()});
  const bool wide = dtype == DType::Int64;
  const DType udtype = wide ? DType::Int64 : DType::UInt32;
  Array dtype_max = detail::scalar<int64_t>(int_limits(dtype).second);
  Array out_of_range = jnp::broadcast_to(jnp::greater(maxval, convert_and_clip(dtype_max, maxval.dtype())), shape);
  Array mn = jnp::broadcast_to(convert_and_clip(minval, dtype), shape);
  Array mx = jnp::broadcast_to(convert_and_clip(maxval, dtype), shape);
  auto [k1, k2] = split2(key);
  auto random_bits = [&](const Array& k) {
    if (!wide) return bits32(op, k, shape);
    auto [b0, b1] = threefry_bits(op, k, shape);
    Array hi = lax::convert_element_type(b0, DType::Int64), lo = lax::convert_element_type(b1, DType::Int64);
    return lax::bitwise_or(lax::shift_left(hi, full_of<int64_t>(shape, 32)), lo);
  };
  auto urem = [&](const Array& x, const Array& s) { return wide ? urem64(x, s) : lax::rem(x, s); };
  Array higher = random_bits(k1), lower = random_bits(k2);
  Array span = lax::convert_element_type(lax::sub(mx, mn), udtype);
  Array one = full(shape, udtype, 1.0);
  span = lax::select_n(lax::le(mx, mn), {span, one});
  span = lax::select_n(lax::bitwise_and(out_of_range, lax::gt(mx, mn)), {span, lax::add(span, one)});
  Array multiplier = urem(full(shape, udtype, wide ? 4294967296.0 : 65536.0), span);
  multiplier = urem(lax::mul(multiplier, multiplier), span);
  Array offset = lax::add(lax::mul(urem(higher, span), multiplier), urem(lower, span));
  offset = urem(offset, span);
  return lax::add(mn, lax::convert_element_type(offset, dtype));
}

}  // namespace

// ---- keys ----

Array key(int64_t seed) {
  auto u = static_cast<uint64_t>(seed);
  uint32_t words[2] = {static_cast<uint32_t>(u >> 32), static_cast<uint32_t>(u & 0xffffffffu)};
  return Array(words, Shape{2});
}

Array PRNGKey(int64_t seed) { return key(seed); }

Array split(const Array& key, int64_t num) {
  if (num < 0) detail::fail("random.split", "num must be non-negative, got ", num);
  return split_shape("random.split", key, {num});
}

Array split(const Array& key, const Shape& shape) { return split_shape("random.split", key, shape); }

Array fold_in(const Array& key, const Array& data) {
  const char* op = "random.fold_in";
  check_key(op, key);
  if (!data.valid()) detail::fail(op, "data is a null jx::Array");
  if (data.ndim() != 0 || !(is_integer(data.dtype()) || is_bool(data.dtype())))
    detail::fail(op, "data must be a 0-d integer array (one scalar), got ", data.aval().str(),
                 data.ndim() != 0 ? "; for many values, vmap over them" : "");
  // JAX hashes the counter pair (0, uint32(data)), the seed-style encoding of a uint32
  // (threefry_seed); all lax ops, so data may be traced (vmap, jit, grad).
  auto [k0, k1] = key_words(key);
  Shape one = {1};
  Array lo = lax::reshape(lax::convert_element_type(data, DType::UInt32), one);
  auto [y0, y1] = lax::threefry2x32(lax::broadcast_in_dim(k0, one, {}), lax::broadcast_in_dim(k1, one, {}),
                                    full_of<uint32_t>(one, 0u), lo);
  return lax::concatenate({y0, y1}, 0);
}

Array fold_in(const Array& key, int64_t data) {
  return fold_in(key, detail::scalar<uint32_t>(static_cast<uint32_t>(data)));  // modulo 2^32
}

// ---- samplers ----

Array bits(const Array& key, const Shape& shape, DType dtype) {
  const char* op = "random.bits";
  check_key(op, key);
  check_shape(op, shape);
  if (dtype != DType::UInt32 && dtype != DType::UInt8)
    detail::fail(op, "dtype must be an unsigned integer dtype (uint32 or uint8), got ", dtype);
  Array b = bits32(op, key, shape);
  return dtype == DType::UInt32 ? b : lax::convert_element_type(b, dtype);
}

Array uniform(const Array& key, const Shape& shape, DType dtype, const Array& minval, const Array& maxval) {
  return uniform_impl("random.uniform", key, shape, dtype, minval, maxval);
}

Array normal(const Array& key, const Shape& shape, DType dtype) {
  const char* op = "random.normal";
  check_key(op, key);
  check_shape(op, shape);
  if (!is_inexact(dtype)) detail::fail(op, "dtype must be a float or complex dtype, got ", dtype);
  if (!is_complex(dtype)) return normal_real(op, key, shape, dtype);
  // Complex: independent real and imaginary parts, each of variance 1/2.
  auto [key_re, key_im] = split2(key);
  DType real = real_dtype(dtype);
  Array re = lax::convert_element_type(normal_real(op, key_re, shape, real), dtype);
  Array im = lax::convert_element_type(normal_real(op, key_im, shape, real), dtype);
  Array j = lax::broadcast_in_dim(dtype == DType::Complex64 ? detail::scalar<complex64_t>({0, 1})
                                                            : detail::scalar<complex128_t>({0, 1}),
                                  shape, {});
  return lax::div(lax::add(re, lax::mul(j, im)), full(shape, dtype, std::numbers::sqrt2));
}

Array bernoulli(const Array& key, const Array& p, std::optional<Shape> shape) {
  const char* op = "random.bernoulli";
  check_key(op, key);
  if (!p.valid()) detail::fail(op, "p is a null jx::Array");
  if (!is_floating(p.dtype()))
    detail::fail(op, "probability p must have a floating dtype, got ", p.dtype());
  // A C++ double is weakly typed, as a Python float: it samples in the default float32.
  DType dtype = p.weak_type() ? kDefaultFloat : p.dtype();
  Shape s = shape.value_or(p.shape());
  check_shape(op, s);
  check_param_shapes(op, s, {p.shape()});
  Array pp = bound(op, "p", p, dtype, s);
  return lax::lt(uniform_impl(op, key, s, dtype, 0.0, 1.0), pp);
}

Array randint(const Array& key, const Shape& shape, const Array& minval, const Array& maxval, DType dtype) {
  const char* op = "random.randint";
  check_key(op, key);
  check_shape(op, shape);
  if (!minval.valid() || !maxval.valid()) detail::fail(op, "minval and maxval must be arrays");
  if (!is_integer(dtype)) detail::fail(op, "dtype must be an integer dtype, got ", dtype);
  Array mn = as_int(minval), mx = as_int(maxval);
  if (itemsize(dtype) < 4) {
    // As JAX: sample narrow types in int32 to avoid bias, with bounds clipped to the type.
    auto [lo, hi] = int_limits(dtype);
    mn = jnp::clip(lax::convert_element_type(mn, DType::Int32), detail::scalar<int32_t>(static_cast<int32_t>(lo)),
                   detail::scalar<int32_t>(static_cast<int32_t>(hi)));
    mx = jnp::clip(lax::convert_element_type(mx, DType::Int32), detail::scalar<int32_t>(static_cast<int32_t>(lo)),
                   detail::scalar<int32_t>(static_cast<int32_t>(hi + 1)));
    return lax::convert_element_type(randint_impl(key, shape, mn, mx, DType::Int32), dtype);
  }
  return randint_impl(key, shape, mn, mx, dtype);
}

Array permutation(const Array& key, int64_t n) {
  check_key("random.permutation", key);
  if (n < 0) detail::fail("random.permutation", "n must be non-negative, got ", n);
  return shuffle(key, lax::iota(DType::Int32, n), 0);
}

Array permutation(const Array& key, const Array& x, int64_t axis, bool independent) {
  const char* op = "random.permutation";
  check_key(op, key);
  if (!x.valid()) detail::fail(op, "x is a null jx::Array");
  if (x.ndim() == 0) {
    if (!is_integer(x.dtype())) detail::fail(op, "x must be an integer or at least 1-dimensional, got ", x.aval().str());
    detail::concrete_impl(x, op);
    return permutation(key, x.item<int64_t>());
  }
  axis = normalize_axis(op, axis, x.ndim(), x.shape());
  if (independent || x.ndim() == 1) return shuffle(key, x, axis);
  Array ind = shuffle(key, lax::iota(DType::Int32, x.shape(static_cast<int>(axis))), 0);
  return jnp::take(x, ind, axis);
}

Array choice(const Array& key, int64_t n, const Shape& shape, bool replace, const std::optional<Array>& p) {
  return choice(key, detail::scalar<int32_t>(static_cast<int32_t>(n)), shape, replace, p, 0);
}

Array choice(const Array& key, const Array& a, const Shape& shape, bool replace, const std::optional<Array>& p,
             int64_t axis) {
  const char* op = "random.choice";
  check_key(op, key);
  check_shape(op, shape);
  if (!a.valid()) detail::fail(op, "a is a null jx::Array");
  int64_t n_inputs;
  Array arr = a.weak_type() ? detail::with_weak_type(a, false) : a;
  if (arr.ndim() == 0) {
    if (!is_integer(arr.dtype())) detail::fail(op, "a must be an integer or an array, got ", arr.aval().str());
    detail::concrete_impl(arr, op);
    n_inputs = arr.item<int64_t>();
    arr = lax::convert_element_type(arr, DType::Int32);
  } else {
    axis = normalize_axis(op, axis, arr.ndim(), arr.shape());
    n_inputs = arr.shape(static_cast<int>(axis));
  }
  Shape out_shape = shape;
  if (arr.ndim() > 0) {
    out_shape = Shape(arr.shape().begin(), arr.shape().begin() + axis);
    out_shape.insert(out_shape.end(), shape.begin(), shape.end());
    out_shape.insert(out_shape.end(), arr.shape().begin() + axis + 1, arr.shape().end());
  }
  int64_t n_draws = shape_size(shape);
  if (n_draws == 0) return jnp::zeros(out_shape, arr.dtype());
  if (n_inputs <= 0) detail::fail(op, "a must be greater than 0 unless no samples are taken, got ", n_inputs);
  if (!replace && n_draws > n_inputs)
    detail::fail(op, "cannot take a larger sample (size ", n_draws, ") than population (size ", n_inputs,
                 ") when replace=false");
  Array ind;
  if (!p) {
    if (replace) {
      ind = randint(key, shape, detail::scalar<int32_t>(0), detail::scalar<int64_t>(n_inputs), DType::Int32);
    } else {
      Array perm = arr.ndim() == 0 ? permutation(key, n_inputs) : permutation(key, arr, axis);
      std::vector<int64_t> start(static_cast<size_t>(perm.ndim()), 0), limit = perm.shape();
      limit[static_cast<size_t>(arr.ndim() == 0 ? 0 : axis)] = n_draws;
      return lax::reshape(lax::slice(perm, start, limit), out_shape);
    }
  } else {
    const Array& pv = *p;
    if (!pv.valid()) detail::fail(op, "p is a null jx::Array");
    if (pv.shape() != Shape{n_inputs})
      detail::fail(op, "p must be None or a 1-d vector with the same size as a.shape[axis]; p has shape ",
                   detail::shape_str(pv.shape()), " and a.shape[axis] is ", n_inputs);
    DType pd = is_inexact(pv.dtype()) && !pv.weak_type() ? pv.dtype() : kDefaultFloat;
    Array pa = lax::convert_element_type(pv, pd);
    if (pa.weak_type()) pa = detail::with_weak_type(pa, false);
    if (replace) {
      Array cum = jnp::cumsum(pa);
      Array total = lax::reshape(lax::slice(cum, {n_inputs - 1}, {n_inputs}), {});
      Array u = uniform_impl(op, key, shape, pd, 0.0, 1.0);
      Array r = lax::mul(lax::broadcast_in_dim(total, shape, {}), lax::sub(full(shape, pd, 1.0), u));
      ind = lax::convert_element_type(jnp::searchsorted(cum, r), DType::Int32);
    } else {
      // The Gumbel top-k trick.
      Array g = lax::add(gumbel_impl(op, key, {n_inputs}, pd), lax::log(pa));
      ind = top_k_indices(g, n_draws);
    }
  }
  Array result = arr.ndim() == 0 ? ind : jnp::take(arr, ind, axis);
  return lax::reshape(result, out_shape);
}

Array categorical(const Array& key, const Array& logits, int64_t axis, std::optional<Shape> shape, bool replace) {
  const char* op = "random.categorical";
  check_key(op, key);
  if (!logits.valid()) detail::fail(op, "logits is a null jx::Array");
  if (!is_floating(logits.dtype())) detail::fail(op, "logits must have a float dtype, got ", logits.dtype());
  if (logits.ndim() == 0) detail::fail(op, "logits must have at least one dimension");
  int64_t nd = logits.ndim();
  axis = normalize_axis(op, axis, nd, logits.shape());
  Array lg = logits.weak_type() ? detail::with_weak_type(logits, false) : logits;
  Shape batch = lg.shape();
  batch.erase(batch.begin() + axis);
  Shape s = shape.value_or(batch);
  check_shape(op, s);
  check_param_shapes(op, s, {batch});
  Shape prefix(s.begin(), s.end() - static_cast<int64_t>(batch.size()));
  auto nprefix = static_cast<int64_t>(prefix.size());
  DType dtype = lg.dtype();
  if (replace) {
    Shape gshape = prefix;
    gshape.insert(gshape.end(), s.end() - static_cast<int64_t>(batch.size()), s.end());
    gshape.insert(gshape.begin() + nprefix + axis, lg.shape(static_cast<int>(axis)));
    std::vector<int64_t> lead(static_cast<size_t>(nprefix));
    for (int64_t i = 0; i < nprefix; ++i) lead[static_cast<size_t>(i)] = i;
    Array expanded = nprefix ? lax::expand_dims(lg, lead) : lg;
    Array scores = jnp::add(gumbel_impl(op, key, gshape, dtype), expanded);
    return lax::argmax(scores, nprefix + axis, DType::Int32);
  }
  int64_t k = shape_size(prefix);
  int64_t n = lg.shape(static_cast<int>(axis));
  if (k > n)
    detail::fail(op, "number of samples without replacement (", k, ") cannot exceed number of categories (", n, ")");
  if (s.size() != prefix.size() + batch.size() || Shape(s.begin() + nprefix, s.end()) != batch)
    detail::fail(op, "without replacement the shape must end with the batch shape ", detail::shape_str(batch));
  Array scores = lax::add(lg, gumbel_impl(op, key, lg.shape(), dtype));
  Array top = top_k_indices(jnp::moveaxis(scores, axis, -1), k);  // batch + (k,)
  // (batch..., k) -> (k, batch...) -> prefix + batch
  std::vector<int64_t> perm = {top.ndim() - 1};
  for (int64_t i = 0; i + 1 < top.ndim(); ++i) perm.push_back(i);
  return lax::reshape(lax::transpose(top, perm), s);
}

Array truncated_normal(const Array& key, const Array& lower, const Array& upper, std::optional<Shape> shape,
                       DType dtype) {
  const char* op = "random.truncated_normal";
  check_key(op, key);
  check_float_dtype(op, dtype);
  if (!lower.valid() || !upper.valid()) detail::fail(op, "lower and upper must be arrays");
  Shape s = shape ? *shape : jnp::broadcast_shapes({lower.shape(), upper.shape()}, op);
  check_shape(op, s);
  check_param_shapes(op, s, {lower.shape(), upper.shape()});
  Array lo = bound(op, "lower", lower, dtype, s), hi = bound(op, "upper", upper, dtype, s);
  Array sqrt2 = full(s, dtype, std::numbers::sqrt2);
  Array a = lax::erf(lax::div(lo, sqrt2)), b = lax::erf(lax::div(hi, sqrt2));
  Array u = uniform_impl(op, key, s, dtype, a, b);
  Array out = lax::mul(sqrt2, erf_inv_like_xla(u));
  Array inf = full(s, dtype, std::numeric_limits<double>::infinity());
  return lax::min(lax::max(out, lax::nextafter(lo, inf)), lax::nextafter(hi, lax::neg(inf)));
}

Array gumbel(const Array& key, const Shape& shape, DType dtype) {
  check_key("random.gumbel", key);
  return gumbel_impl("random.gumbel", key, shape, dtype);
}

Array exponential(const Array& key, const Shape& shape, DType dtype) {
  Array u = uniform_impl("random.exponential", key, shape, dtype, 0.0, 1.0);
  return lax::neg(lax::log1p(lax::neg(u)));
}

Array laplace(const Array& key, const Shape& shape, DType dtype) {
  check_float_dtype("random.laplace", dtype);
  Array u = uniform_impl("random.laplace", key, shape, dtype, -1.0 + epsneg(dtype), 1.0);
  return lax::mul(lax::sign(u), lax::log1p(lax::neg(lax::abs(u))));
}

Array logistic(const Array& key, const Shape& shape, DType dtype) {
  check_float_dtype("random.logistic", dtype);
  Array x = uniform_impl("random.logistic", key, shape, dtype, finfo(dtype).tiny, 1.0);
  return lax::sub(lax::log(x), lax::log1p(lax::neg(x)));
}

Array cauchy(const Array& key, const Shape& shape, DType dtype) {
  check_float_dtype("random.cauchy", dtype);
  Array u = uniform_impl("random.cauchy", key, shape, dtype, eps(dtype), 1.0);
  return lax::tan(lax::mul(full(shape, dtype, std::numbers::pi), lax::sub(u, full(shape, dtype, 0.5))));
}

Array rademacher(const Array& key, const Shape& shape, DType dtype) {
  const char* op = "random.rademacher";
  if (!is_integer(dtype) && !is_floating(dtype)) detail::fail(op, "dtype must be an integer or float dtype, got ", dtype);
  Array b = lax::convert_element_type(bernoulli(key, 0.5, shape), dtype);
  return lax::sub(lax::mul(full(shape, dtype, 2.0), b), full(shape, dtype, 1.0));
}

}  // namespace jx::random
