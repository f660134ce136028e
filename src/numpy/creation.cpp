// jx::numpy array creation, built from lax.iota, broadcast_in_dim and elementwise lax ops.
#include "jx/numpy/creation.h"

#include <algorithm>
#include <cmath>

#include "core/array_internal.h"
#include "jx/numpy/manipulation.h"
#include "jx/numpy/math.h"
#include "jx/numpy/reductions.h"
#include "numpy/core_util.h"

namespace jx::numpy {

namespace {

// A shape of `dtype` must be representable (element and byte counts in int64); the
// constants below are broadcast views, so it need not fit in memory.
void check_shape(std::string_view op, const Shape& shape, DType dtype) {
  for (int64_t d : shape)
    if (d < 0) detail::fail(op, "negative dimensions are not allowed, got shape ", detail::shape_str(shape));
  detail::checked_nbytes(shape, dtype, op);
}

// A constant of `shape`: a broadcast 0-d value, as lax.full does.
Array filled(std::string_view op, const Shape& shape, const Array& value0d) {
  check_shape(op, shape, value0d.dtype());
  if (shape.empty()) return value0d;
  return lax::broadcast_in_dim(value0d, shape, {});
}

double concrete_double(const Array& x, std::string_view op, std::string_view what) {
  detail::concrete_impl(x, op);
  if (x.size() != 1) detail::fail(op, what, " must be a scalar, got shape ", detail::shape_str(x.shape()));
  return x.item<double>();
}

}  // namespace

Array array(const Array& x, std::optional<DType> dtype) { return asarray(x, dtype); }

Array zeros(const Shape& shape, DType dtype) { return filled("zeros", shape, util::scalar(dtype, 0)); }
Array ones(const Shape& shape, DType dtype) { return filled("ones", shape, util::scalar(dtype, 1)); }
Array empty(const Shape& shape, DType dtype) { return filled("empty", shape, util::scalar(dtype, 0)); }

Array full(const Shape& shape, const Array& fill_value, std::optional<DType> dtype) {
  Array v = asarray(fill_value, dtype);
  check_shape("full", shape, v.dtype());
  return broadcast_to(v, shape);
}

Array full_like(const Array& x, const Array& fill_value, std::optional<DType> dtype, std::optional<Shape> shape) {
  DType d = dtype.value_or(x.dtype());
  bool weak = !dtype && x.weak_type();
  Array v = util::convert(fill_value, d, weak);
  if (v.ndim() != 0)
    return broadcast_to(v, shape.value_or(x.shape()));
  return filled("full_like", shape.value_or(x.shape()), v);
}

Array zeros_like(const Array& x, std::optional<DType> dtype, std::optional<Shape> shape) {
  return full_like(x, util::scalar(dtype.value_or(x.dtype()), 0), dtype, shape);
}
Array ones_like(const Array& x, std::optional<DType> dtype, std::optional<Shape> shape) {
  return full_like(x, util::scalar(dtype.value_or(x.dtype()), 1), dtype, shape);
}
Array empty_like(const Array& x, std::optional<DType> dtype, std::optional<Shape> shape) {
  return zeros_like(x, dtype, shape);
}

Array arange(const Array& stop, std::optional<DType> dtype) { return arange(Array(0), stop, Array(1), dtype); }

Array arange(const Array& start, const Array& stop, const Array& step, std::optional<DType> dtype) {
  DType d = dtype.value_or(is_inexact(result_type({start, stop, step})) ? kDefaultFloat : kDefaultInt);
  if (is_complex(d)) detail::fail("arange", "complex dtypes are not supported, got ", d);
  double a = concrete_double(start, "arange", "start");
  double b = concrete_double(stop, "arange", "stop");
  double s = concrete_double(step, "arange", "step");
  if (s == 0) detail::fail("arange", "step must be nonzero");
  if (!std::isfinite(a) || !std::isfinite(b) || !std::isfinite(s))
    detail::fail("arange", "arguments must be finite, got start=", a, " stop=", b, " step=", s);
  const double len = std::ceil((b - a) / s);
  // 2^63 is exact in double; anything at or past it (or inf) has no int64 count.
  if (!(len < 9223372036854775808.0))
    detail::fail("arange", "the range start=", a, " stop=", b, " step=", s, " has ", len,
                 " elements, more than 2^63 - 1");
  const int64_t n = len > 0 ? static_cast<int64_t>(len) : 0;
  detail::check_allocatable({n}, d, "arange");
  if (is_integer(d) || d == DType::Bool) {
    // Integer ramps are exact in int64: start + i * step.
    Array i = lax::iota(DType::Int64, n);
    Array r = lax::add(lax::mul(i, util::full_like_value(i, s)), util::full_like_value(i, a));
    return util::convert(r, d);
  }
  // NumPy computes float ramps in double, then rounds once to the target dtype.
  Array i = lax::iota(DType::Float64, n);
  Array r = lax::add(lax::mul(i, util::full_like_value(i, s)), util::full_like_value(i, a));
  return util::convert(r, d);
}

std::pair<Array, Array> linspace_retstep(const Array& start, const Array& stop, int64_t num, bool endpoint,
                                         std::optional<DType> dtype, int64_t axis) {
  if (num < 0) detail::fail("linspace", "number of samples, ", num, ", must be non-negative");
  DType out_dtype = dtype.value_or(util::to_inexact(util::canonical_result_type({start, stop})));
  // Compute in the widest inexact type so float32 results round once, as NumPy's do.
  DType work = is_complex(out_dtype) ? DType::Complex128 : DType::Float64;
  Shape bshape = broadcast_shapes({start.shape(), stop.shape()}, "linspace");
  Array a = broadcast_to(util::convert(start, work), bshape);
  Array b = broadcast_to(util::convert(stop, work), bshape);
  int64_t nd = static_cast<int64_t>(bshape.size()) + 1;
  int64_t ax = util::normalize_axis("linspace", axis, nd, bshape);
  Shape out_shape = bshape;
  out_shape.insert(out_shape.begin() + ax, num);
  detail::check_allocatable(out_shape, work, "linspace");  // computed there, then converted
  std::vector<int64_t> operand_dims;
  for (int64_t d = 0; d < nd; ++d)
    if (d != ax) operand_dims.push_back(d);
  int64_t div = endpoint ? num - 1 : num;
  Array delta = lax::sub(b, a);
  Array step = div > 0 ? lax::div(delta, util::full_like_value(delta, static_cast<double>(div)))
                       : util::full_like_value(delta, std::nan(""));
  Array out;
  if (num == 0) {
    out = zeros(out_shape, work);
  } else {
    Array iota = lax::broadcasted_iota(work, out_shape, static_cast<int>(ax));
    Array A = lax::broadcast_in_dim(a, out_shape, operand_dims);
    Array S = lax::broadcast_in_dim(div > 0 ? step : lax::sub(a, a), out_shape, operand_dims);
    out = lax::add(A, lax::mul(iota, S));
    if (endpoint && num > 1) {
      // The last sample is exactly `stop`, as NumPy guarantees.
      Array last = lax::broadcast_in_dim(b, out_shape, operand_dims);
      Array is_last = lax::eq(lax::broadcasted_iota(DType::Int32, out_shape, static_cast<int>(ax)),
                              util::full_like_value(lax::broadcasted_iota(DType::Int32, out_shape, static_cast<int>(ax)),
                                                    static_cast<double>(num - 1)));
      out = lax::select_n(is_last, {out, last});
    }
  }
  if (is_integer(out_dtype)) out = lax::floor(out);
  return {util::convert(out, out_dtype), util::convert(step, is_integer(out_dtype) ? DType::Float64 : out_dtype)};
}

Array linspace(const Array& start, const Array& stop, int64_t num, bool endpoint, std::optional<DType> dtype,
               int64_t axis) {
  return linspace_retstep(start, stop, num, endpoint, dtype, axis).first;
}

Array logspace(const Array& start, const Array& stop, int64_t num, bool endpoint, double base,
               std::optional<DType> dtype, int64_t axis) {
  DType out_dtype = dtype.value_or(util::to_inexact(util::canonical_result_type({start, stop})));
  Array lin = linspace(start, stop, num, endpoint, DType::Float64, axis);
  Array out = lax::pow(util::full_like_value(lin, base), lin);
  if (is_integer(out_dtype)) out = lax::floor(out);
  return util::convert(out, out_dtype);
}

Array geomspace(const Array& start, const Array& stop, int64_t num, bool endpoint, std::optional<DType> dtype,
                int64_t axis) {
  DType out_dtype = dtype.value_or(util::to_inexact(util::canonical_result_type({start, stop})));
  Array a = util::convert(start, DType::Float64), b = util::convert(stop, DType::Float64);
  Array zero = util::full_like_value(a, 0);
  if (a.is_concrete() && b.is_concrete() &&
      (any(lax::eq(a, zero)).item<bool>() || any(lax::eq(b, util::full_like_value(b, 0))).item<bool>()))
    detail::fail("geomspace", "geometric sequence cannot include zero");
  // Signs carry through; the magnitudes are spaced logarithmically.
  Array sign = lax::sign(a);
  Array lo = log10(lax::abs(a));
  Array hi = log10(lax::abs(b));
  Array out = logspace(lo, hi, num, endpoint, 10.0, DType::Float64, axis);
  out = multiply(out, expand_dims(sign, axis));
  if (is_integer(out_dtype)) out = lax::floor(out);
  return util::convert(out, out_dtype);
}

namespace {
// Where column - row == k (or <= k, `upto`) over an N x M grid. Only the bool result is
// materialized: the row and column iotas are 1-d, broadcast to the grid. k is clamped to
// [-N, M], beyond which the mask no longer changes, so column - k cannot overflow.
Array offset_mask(std::string_view op, int64_t N, int64_t M, int64_t k, bool upto) {
  detail::check_allocatable({N, M}, DType::Bool, op);
  k = std::clamp(k, -N, M);
  const Shape s{N, M};
  Array rows = lax::broadcast_in_dim(lax::iota(DType::Int64, N), s, {0});
  Array cols = lax::iota(DType::Int64, M);
  cols = lax::sub(cols, lax::broadcast_in_dim(detail::scalar<int64_t>(k), {M}, {}));
  cols = lax::broadcast_in_dim(cols, s, {1});
  return upto ? lax::le(cols, rows) : lax::eq(cols, rows);
}
}  // namespace

Array eye(int64_t N, std::optional<int64_t> M, int64_t k, DType dtype) {
  int64_t m = M.value_or(N);
  if (N < 0 || m < 0) detail::fail("eye", "negative dimensions are not allowed, got N=", N, " M=", m);
  detail::check_allocatable({N, m}, dtype, "eye");
  return util::convert(offset_mask("eye", N, m, k, false), dtype);
}

Array identity(int64_t n, DType dtype) { return eye(n, n, 0, dtype); }

namespace {
Array triangle(std::string_view op, const Array& m, int64_t k, bool lower) {
  if (m.ndim() < 2)
    detail::fail(op, "input must be at least 2-d, got shape ", detail::shape_str(m.shape()));
  int64_t N = m.shape(-2), M = m.shape(-1);
  k = std::clamp(k, -N, M);  // the same mask, and k - 1 below cannot overflow
  Array mask = lower ? offset_mask(op, N, M, k, true) : lax::bitwise_not(offset_mask(op, N, M, k - 1, true));
  mask = broadcast_to(mask, m.shape());
  return lax::select_n(mask, {zeros_like(m), m});
}
}  // namespace

Array tri(int64_t N, std::optional<int64_t> M, int64_t k, DType dtype) {
  int64_t m = M.value_or(N);
  if (N < 0 || m < 0) detail::fail("tri", "negative dimensions are not allowed, got N=", N, " M=", m);
  detail::check_allocatable({N, m}, dtype, "tri");
  return util::convert(offset_mask("tri", N, m, k, true), dtype);
}

Array tril(const Array& m, int64_t k) { return triangle("tril", m, k, true); }
Array triu(const Array& m, int64_t k) { return triangle("triu", m, k, false); }

std::vector<Array> meshgrid(const std::vector<Array>& xs, const std::string& indexing) {
  if (indexing != "xy" && indexing != "ij")
    detail::fail("meshgrid", "valid values for indexing are 'xy' and 'ij', got '", indexing, "'");
  std::vector<Array> flat;
  for (const Array& x : xs) flat.push_back(lax::reshape(x, {x.size()}));
  Shape shape;
  for (const Array& x : flat) shape.push_back(x.size());
  bool swap = indexing == "xy" && flat.size() >= 2;
  if (swap) std::swap(shape[0], shape[1]);
  std::vector<Array> out;
  for (size_t i = 0; i < flat.size(); ++i) {
    int64_t dim = static_cast<int64_t>(i);
    if (swap && i < 2) dim = 1 - dim;
    out.push_back(lax::broadcast_in_dim(flat[i], shape, {dim}));
  }
  return out;
}

}  // namespace jx::numpy
