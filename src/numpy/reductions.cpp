// jx::numpy reductions and statistics, built on lax.reduce_*, argmax, cumsum and sort.
#include "jx/numpy/reductions.h"

#include <cmath>

#include "core/array_internal.h"
#include "jx/numpy/creation.h"
#include "jx/numpy/manipulation.h"
#include "jx/numpy/math.h"
#include "jx/transforms.h"
#include "numpy/core_util.h"

namespace jx::numpy {

using util::full_like_value;

namespace {

using LaxReduce = Array (*)(const Array&, const std::vector<int64_t>&);

Array reduce(const Array& x, const std::vector<int64_t>& axes, LaxReduce fn) {
  return axes.empty() ? x : fn(x, axes);
}

int64_t reduced_count(const Shape& shape, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t a : axes) n *= shape[static_cast<size_t>(a)];
  return n;
}

// float16/bfloat16 accumulate in float32, then round once (as JAX's _upcast_f16).
DType computation_dtype(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 ? DType::Float32 : d;
}

Array select(const Array& pred, const Array& on_true, const Array& on_false) {
  return lax::select_n(pred, {on_false, on_true});
}

// x with the reduced axes moved last and merged into one: (..., n).
Array merge_axes_last(const Array& x, const std::vector<int64_t>& axes) {
  std::vector<int64_t> perm;
  Shape kept;
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) {
      perm.push_back(d);
      kept.push_back(x.shape()[static_cast<size_t>(d)]);
    }
  for (int64_t a : axes) perm.push_back(a);
  kept.push_back(reduced_count(x.shape(), axes));
  return lax::reshape(lax::transpose(x, perm), kept);
}

Array sum_like(std::string_view op, const Array& x, const Axes& axis, bool keepdims, std::optional<DType> dtype,
               LaxReduce fn) {
  auto axes = util::reduction_axes(op, axis, x.shape());
  DType d = dtype.value_or(util::sum_dtype(x.dtype()));
  Array y = util::convert(x, computation_dtype(d));
  if (y.dtype() == DType::Bool) y = util::convert(y, kDefaultInt);
  Array r = util::convert(reduce(y, axes, fn), d);
  return util::maybe_keepdims(r, x.shape(), axes, keepdims);
}

Array extremum(std::string_view op, const Array& x, const Axes& axis, bool keepdims,
               const std::optional<Array>& initial, bool is_max) {
  auto axes = util::reduction_axes(op, axis, x.shape());
  if (!initial && util::reduces_empty(x.shape(), axes))
    detail::fail(op, "zero-size array to reduction operation ", op, " which has no identity; shape ",
                 detail::shape_str(x.shape()));
  Array r;
  if (x.dtype() == DType::Bool) r = reduce(x, axes, is_max ? lax::reduce_or : lax::reduce_and);
  else r = reduce(x, axes, is_max ? lax::reduce_max : lax::reduce_min);
  r = util::maybe_keepdims(r, x.shape(), axes, keepdims);
  if (initial) {
    Array init = util::convert(*initial, x.dtype(), x.weak_type());
    r = is_max ? maximum(r, init) : minimum(r, init);
  }
  return util::set_weak(r, x.weak_type());
}

Array arg_extremum(std::string_view op, const Array& x, std::optional<int64_t> axis, bool keepdims, bool is_max) {
  Array y = x.dtype() == DType::Bool ? util::convert(x, kDefaultInt) : x;
  int64_t ax = 0;
  if (!axis) y = lax::reshape(y, {y.size()});
  else ax = util::normalize_axis(op, *axis, x.ndim(), x.shape());
  if (y.shape()[static_cast<size_t>(ax)] == 0)
    detail::fail(op, "attempt to get ", op, " of an empty sequence; shape ", detail::shape_str(x.shape()));
  Array r = is_max ? lax::argmax(y, ax, DType::Int32) : lax::argmin(y, ax, DType::Int32);
  if (!keepdims) return r;
  if (!axis) return lax::reshape(r, Shape(static_cast<size_t>(x.ndim()), 1));
  return lax::expand_dims(r, {ax});
}

// Flattens for axis=None, else normalizes the axis.
std::pair<Array, int64_t> scan_operand(std::string_view op, const Array& x, std::optional<int64_t> axis) {
  if (!axis) return {lax::reshape(x, {x.size()}), 0};
  if (x.ndim() == 0) detail::fail(op, "axis ", *axis, " is out of bounds for array of shape ()");
  return {x, util::normalize_axis(op, *axis, x.ndim(), x.shape())};
}

using LaxScan = Array (*)(const Array&, int64_t, bool);

Array scan(std::string_view op, const Array& x, std::optional<int64_t> axis, std::optional<DType> dtype,
           LaxScan fn) {
  auto [y, ax] = scan_operand(op, x, axis);
  DType d = dtype.value_or(x.dtype() == DType::Bool ? kDefaultInt : x.dtype());
  Array c = util::convert(y, computation_dtype(d));
  if (c.dtype() == DType::Bool) c = util::convert(c, kDefaultInt);
  return util::convert(fn(c, ax, false), d);
}

}  // namespace

Array sum(const Array& x, const Axes& axis, bool keepdims, std::optional<DType> dtype) {
  return sum_like("sum", x, axis, keepdims, dtype, lax::reduce_sum);
}

Array prod(const Array& x, const Axes& axis, bool keepdims, std::optional<DType> dtype) {
  return sum_like("prod", x, axis, keepdims, dtype, lax::reduce_prod);
}

Array mean(const Array& x, const Axes& axis, bool keepdims, std::optional<DType> dtype) {
  auto axes = util::reduction_axes("mean", axis, x.shape());
  DType d = dtype.value_or(util::to_inexact(x.dtype()));
  Array y = util::convert(x, computation_dtype(util::to_inexact(d)));
  Array s = reduce(y, axes, lax::reduce_sum);
  Array r = lax::div(s, full_like_value(s, static_cast<double>(reduced_count(x.shape(), axes))));
  return util::maybe_keepdims(util::convert(r, d), x.shape(), axes, keepdims);
}

Array var(const Array& x, const Axes& axis, int64_t ddof, bool keepdims, std::optional<DType> dtype) {
  auto axes = util::reduction_axes("var", axis, x.shape());
  DType d = dtype.value_or(util::to_inexact(x.dtype()));
  DType comp = computation_dtype(util::to_inexact(d));
  Array y = util::convert(x, comp);
  Array s = reduce(y, axes, lax::reduce_sum);
  int64_t n = reduced_count(x.shape(), axes);
  Array m = lax::div(s, full_like_value(s, static_cast<double>(n)));
  Array centered = lax::sub(y, broadcast_to(util::maybe_keepdims(m, x.shape(), axes, true), x.shape()));
  Array sq = is_complex(comp) ? lax::real(lax::mul(centered, lax::conj(centered))) : lax::mul(centered, centered);
  Array ss = reduce(sq, axes, lax::reduce_sum);
  double divisor = static_cast<double>(std::max<int64_t>(n - ddof, 0));
  Array r = lax::div(ss, full_like_value(ss, divisor));
  return util::maybe_keepdims(util::convert(r, real_dtype(d)), x.shape(), axes, keepdims);
}

Array std(const Array& x, const Axes& axis, int64_t ddof, bool keepdims, std::optional<DType> dtype) {
  Array v = var(x, axis, ddof, keepdims, dtype);
  if (v.dtype() == DType::Float16 || v.dtype() == DType::BFloat16)
    return util::convert(lax::sqrt(util::convert(v, DType::Float32)), v.dtype());
  return lax::sqrt(v);
}

Array max(const Array& x, const Axes& axis, bool keepdims, const std::optional<Array>& initial) {
  return extremum("max", x, axis, keepdims, initial, true);
}
Array min(const Array& x, const Axes& axis, bool keepdims, const std::optional<Array>& initial) {
  return extremum("min", x, axis, keepdims, initial, false);
}
Array amax(const Array& x, const Axes& axis, bool keepdims, const std::optional<Array>& initial) {
  return extremum("amax", x, axis, keepdims, initial, true);
}
Array amin(const Array& x, const Axes& axis, bool keepdims, const std::optional<Array>& initial) {
  return extremum("amin", x, axis, keepdims, initial, false);
}

Array ptp(const Array& x, const Axes& axis, bool keepdims) {
  Array hi = extremum("ptp", x, axis, keepdims, std::nullopt, true);
  Array lo = extremum("ptp", x, axis, keepdims, std::nullopt, false);
  return subtract(hi, lo);
}

Array argmax(const Array& x, std::optional<int64_t> axis, bool keepdims) {
  return arg_extremum("argmax", x, axis, keepdims, true);
}
Array argmin(const Array& x, std::optional<int64_t> axis, bool keepdims) {
  return arg_extremum("argmin", x, axis, keepdims, false);
}

Array all(const Array& x, const Axes& axis, bool keepdims) {
  auto axes = util::reduction_axes("all", axis, x.shape());
  Array r = reduce(util::convert(x, DType::Bool), axes, lax::reduce_and);
  return util::maybe_keepdims(r, x.shape(), axes, keepdims);
}
Array any(const Array& x, const Axes& axis, bool keepdims) {
  auto axes = util::reduction_axes("any", axis, x.shape());
  Array r = reduce(util::convert(x, DType::Bool), axes, lax::reduce_or);
  return util::maybe_keepdims(r, x.shape(), axes, keepdims);
}

Array cumsum(const Array& x, std::optional<int64_t> axis, std::optional<DType> dtype) {
  return scan("cumsum", x, axis, dtype, lax::cumsum);
}
Array cumprod(const Array& x, std::optional<int64_t> axis, std::optional<DType> dtype) {
  return scan("cumprod", x, axis, dtype, lax::cumprod);
}
Array cummax(const Array& x, std::optional<int64_t> axis) {
  return scan("cummax", x, axis, std::nullopt, lax::cummax);
}
Array cummin(const Array& x, std::optional<int64_t> axis) {
  return scan("cummin", x, axis, std::nullopt, lax::cummin);
}

Array quantile(const Array& x, const Array& q, const Axes& axis, bool keepdims, const std::string& method) {
  if (method != "linear")
    detail::fail("quantile", "only method 'linear' is supported, got '", method, "'");
  if (q.ndim() > 1) detail::fail("quantile", "q must be a scalar or 1-d, got shape ", detail::shape_str(q.shape()));
  if (is_complex(x.dtype())) detail::fail("quantile", "complex inputs are not supported, got ", x.dtype());
  auto axes = util::reduction_axes("quantile", axis, x.shape());
  int64_t n = reduced_count(x.shape(), axes);
  if (n == 0) detail::fail("quantile", "cannot take a quantile of an empty slice; shape ", detail::shape_str(x.shape()));
  DType d = util::to_inexact(x.dtype());
  if (!q.weak_type() && is_inexact(q.dtype())) d = jx::promote_types(d, q.dtype());
  if (q.is_concrete()) {
    for (double v : q.to_vector<double>())
      if (!(v >= 0.0 && v <= 1.0)) detail::fail("quantile", "quantiles must be in the range [0, 1], got ", v);
  }
  Array y = merge_axes_last(util::convert(x, d), axes);  // (..., n)
  Array has_nan = lax::reduce_or(lax::ne(y, y), {y.ndim() - 1});
  Array sorted = lax::sort(y, -1);
  Shape batch(y.shape().begin(), y.shape().end() - 1);
  std::vector<int64_t> batch_dims;
  for (size_t i = 0; i < batch.size(); ++i) batch_dims.push_back(static_cast<int64_t>(i));
  Array qs = lax::reshape(util::convert(q, d), {q.size()});
  std::vector<Array> results;
  Array zero_index = util::scalar(DType::Int32, 0);
  for (int64_t i = 0; i < q.size(); ++i) {
    Array qi = lax::reshape(lax::slice(qs, {i}, {i + 1}), {});
    Array pos = lax::mul(qi, full_like_value(qi, static_cast<double>(n - 1)));
    Array lo_f = lax::floor(pos);
    Array hi_f = lax::ceil(pos);
    Array t = lax::sub(pos, lo_f);
    std::vector<Array> lo_start(batch.size(), zero_index), hi_start(batch.size(), zero_index);
    lo_start.push_back(util::convert(lo_f, DType::Int32));
    hi_start.push_back(util::convert(hi_f, DType::Int32));
    Shape sizes = batch;
    sizes.push_back(1);
    Array a = lax::reshape(lax::dynamic_slice(sorted, lo_start, sizes), batch);
    Array b = lax::reshape(lax::dynamic_slice(sorted, hi_start, sizes), batch);
    // NumPy's lerp: exact at both ends and monotone.
    Array diff = lax::sub(b, a);
    Array tb = broadcast_to(t, batch);
    Array up = lax::sub(b, lax::mul(diff, lax::sub(full_like_value(tb, 1), tb)));
    Array down = lax::add(a, lax::mul(diff, tb));
    Array v = select(lax::ge(tb, full_like_value(tb, 0.5)), up, down);
    v = select(has_nan, full_like_value(v, std::nan("")), v);
    if (keepdims) v = lax::reshape(v, util::keepdims_shape(x.shape(), axes));
    results.push_back(v);
  }
  if (q.ndim() == 0) return results[0];
  std::vector<Array> expanded;
  for (const Array& r : results) expanded.push_back(lax::expand_dims(r, {0}));
  return lax::concatenate(expanded, 0);
}

Array percentile(const Array& x, const Array& q, const Axes& axis, bool keepdims, const std::string& method) {
  if (q.is_concrete())
    for (double v : q.to_vector<double>())
      if (!(v >= 0.0 && v <= 100.0)) detail::fail("percentile", "percentiles must be in the range [0, 100], got ", v);
  return quantile(x, true_divide(q, 100), axis, keepdims, method);
}

Array median(const Array& x, const Axes& axis, bool keepdims) { return quantile(x, 0.5, axis, keepdims); }

Array average(const Array& x, const Axes& axis, const std::optional<Array>& weights, bool keepdims) {
  if (!weights) return mean(x, axis, keepdims);
  auto axes = util::reduction_axes("average", axis, x.shape());
  Array w = *weights;
  if (w.shape() != x.shape()) {
    if (axis.is_all())
      detail::fail("average", "axis must be specified when shapes of a ", detail::shape_str(x.shape()),
                   " and weights ", detail::shape_str(w.shape()), " differ");
    if (w.ndim() != 1 || axes.size() != 1)
      detail::fail("average", "1-d weights and one axis expected when shapes of a ", detail::shape_str(x.shape()),
                   " and weights ", detail::shape_str(w.shape()), " differ");
    if (w.shape()[0] != x.shape()[static_cast<size_t>(axes[0])])
      detail::fail("average", "length of weights ", w.shape()[0], " not compatible with axis ", axes[0],
                   " of shape ", detail::shape_str(x.shape()));
    w = lax::broadcast_in_dim(w, x.shape(), {axes[0]});
  }
  auto [xa, wa] = util::promote2_inexact(x, w, "average");
  Array num = sum(lax::mul(xa, wa), axis, keepdims);
  Array den = sum(wa, axis, keepdims);
  return lax::div(num, den);
}

Array count_nonzero(const Array& x, const Axes& axis, bool keepdims) {
  Array nz = lax::ne(x, full_like_value(x, 0));
  return sum(nz, axis, keepdims, kDefaultInt);
}

Array logsumexp(const Array& x, const Axes& axis, const std::optional<Array>& b, bool keepdims) {
  Array a = util::as_inexact(x);
  Array bb;
  if (b) std::tie(a, bb) = util::promote2_inexact(x, *b, "logsumexp");
  if (is_complex(a.dtype())) detail::fail("logsumexp", "complex inputs are not supported, got ", a.dtype());
  // An entry weighted by b = 0 is left out (as JAX does), so an inf there is not inf·0 = NaN.
  if (b) {
    const Shape shape = broadcast_shapes({a.shape(), bb.shape()}, "logsumexp");
    a = broadcast_to(a, shape);
    bb = broadcast_to(bb, shape);
    a = select(lax::ne(bb, full_like_value(bb, 0)), a, full_like_value(a, -INFINITY));
  }
  auto axes = util::reduction_axes("logsumexp", axis, a.shape());
  Array amax = reduce(a, axes, lax::reduce_max);
  // Shift by the max only where it is finite: all -inf (or an inf) must not become NaN. The
  // shift cancels in the value, so it carries no derivative (JAX stops it too).
  amax = stop_gradient(select(lax::is_finite(amax), amax, full_like_value(amax, 0)));
  Array shift = broadcast_to(util::maybe_keepdims(amax, a.shape(), axes, true), a.shape());
  Array e = lax::exp(lax::sub(a, shift));
  if (b) e = lax::mul(e, bb);
  Array s = reduce(e, axes, lax::reduce_sum);
  Array out;
  if (b) {
    Array negative = lax::lt(s, full_like_value(s, 0));
    out = lax::add(lax::log(lax::abs(s)), amax);
    out = select(negative, full_like_value(out, std::nan("")), out);
  } else {
    out = lax::add(lax::log(s), amax);
  }
  return util::maybe_keepdims(out, a.shape(), axes, keepdims);
}

Array nansum(const Array& x, const Axes& axis, bool keepdims, std::optional<DType> dtype) {
  if (!is_inexact(x.dtype())) return sum(x, axis, keepdims, dtype);
  return sum(select(isnan(x), full_like_value(x, 0), x), axis, keepdims, dtype);
}
Array nanprod(const Array& x, const Axes& axis, bool keepdims, std::optional<DType> dtype) {
  if (!is_inexact(x.dtype())) return prod(x, axis, keepdims, dtype);
  return prod(select(isnan(x), full_like_value(x, 1), x), axis, keepdims, dtype);
}
Array nanmean(const Array& x, const Axes& axis, bool keepdims) {
  if (!is_inexact(x.dtype())) return mean(x, axis, keepdims);
  Array nan = isnan(x);
  Array s = sum(select(nan, full_like_value(x, 0), x), axis, keepdims);
  Array n = sum(lax::bitwise_not(nan), axis, keepdims);
  return lax::div(s, util::convert(n, s.dtype(), s.weak_type()));
}

namespace {
Array nan_extremum(std::string_view op, const Array& x, const Axes& axis, bool keepdims, bool is_max) {
  if (!is_inexact(x.dtype())) return extremum(op, x, axis, keepdims, std::nullopt, is_max);
  Array nan = isnan(x);
  Array filled = select(nan, full_like_value(x, is_max ? -INFINITY : INFINITY), x);
  Array r = extremum(op, filled, axis, keepdims, std::nullopt, is_max);
  Array all_nan = all(nan, axis, keepdims);
  return select(all_nan, full_like_value(r, std::nan("")), r);
}
}  // namespace

Array nanmax(const Array& x, const Axes& axis, bool keepdims) { return nan_extremum("nanmax", x, axis, keepdims, true); }
Array nanmin(const Array& x, const Axes& axis, bool keepdims) { return nan_extremum("nanmin", x, axis, keepdims, false); }

}  // namespace jx::numpy
