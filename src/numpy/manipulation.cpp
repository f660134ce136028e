// jx::numpy shape manipulation on lax's data-movement primitives (reshape, transpose,
// broadcast_in_dim, slice, concatenate, rev, pad, gather).
#include "jx/numpy/manipulation.h"

#include <algorithm>
#include <numeric>

#include "core/array_internal.h"
#include "jx/numpy/creation.h"
#include "jx/numpy/math.h"
#include "jx/numpy/reductions.h"
#include "numpy/core_util.h"

namespace jx::numpy {

namespace {

// lax.slice along one axis.
Array slice_axis(const Array& x, int64_t axis, int64_t start, int64_t stop, int64_t stride = 1) {
  std::vector<int64_t> lo(static_cast<size_t>(x.ndim()), 0), hi = x.shape(),
      st(static_cast<size_t>(x.ndim()), 1);
  lo[static_cast<size_t>(axis)] = start;
  hi[static_cast<size_t>(axis)] = stop;
  st[static_cast<size_t>(axis)] = stride;
  return lax::slice(x, lo, hi, st);
}

std::vector<int64_t> normalize_axes_list(std::string_view op, const std::vector<int64_t>& axes, int64_t ndim,
                                         const Shape& shape) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    int64_t c = util::normalize_axis(op, a, ndim, shape);
    if (std::find(out.begin(), out.end(), c) != out.end())
      detail::fail(op, "repeated axis ", a, " for array of shape ", detail::shape_str(shape));
    out.push_back(c);
  }
  return out;
}

}  // namespace

Array reshape(const Array& x, const Shape& shape) {
  Shape out = shape;
  int64_t known = 1, unknown = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (unknown >= 0) detail::fail("reshape", "can only specify one unknown dimension, got ", detail::shape_str(shape));
      unknown = static_cast<int64_t>(i);
    } else if (out[i] < 0) {
      detail::fail("reshape", "negative dimension in shape ", detail::shape_str(shape));
    } else {
      known = detail::checked_mul(known, out[i], "reshape", " in the size of shape ", detail::shape_str(shape));
    }
  }
  if (unknown >= 0) {
    if (known == 0 || x.size() % known != 0)
      detail::fail("reshape", "cannot reshape array of shape ", detail::shape_str(x.shape()), " (size ", x.size(),
                   ") into shape ", detail::shape_str(shape));
    out[static_cast<size_t>(unknown)] = x.size() / known;
  } else if (known != x.size()) {
    detail::fail("reshape", "cannot reshape array of shape ", detail::shape_str(x.shape()), " (size ", x.size(),
                 ") into shape ", detail::shape_str(shape));
  }
  if (out == x.shape()) return x;
  return lax::reshape(x, out);
}

Array ravel(const Array& x) { return reshape(x, {x.size()}); }
Array flatten(const Array& x) { return ravel(x); }

Array transpose(const Array& x, const std::optional<std::vector<int64_t>>& axes) {
  int64_t nd = x.ndim();
  std::vector<int64_t> perm;
  if (!axes) {
    for (int64_t i = nd - 1; i >= 0; --i) perm.push_back(i);
  } else {
    if (static_cast<int64_t>(axes->size()) != nd)
      detail::fail("transpose", "axes don't match array: got ", axes->size(), " axes for array of shape ",
                   detail::shape_str(x.shape()));
    perm = normalize_axes_list("transpose", *axes, nd, x.shape());
  }
  bool identity = true;
  for (int64_t i = 0; i < nd; ++i) identity = identity && perm[static_cast<size_t>(i)] == i;
  return identity ? x : lax::transpose(x, perm);
}

Array matrix_transpose(const Array& x) {
  if (x.ndim() < 2)
    detail::fail("matrix_transpose", "input must be at least 2-d, got shape ", detail::shape_str(x.shape()));
  return swapaxes(x, -1, -2);
}

Array moveaxis(const Array& x, const std::vector<int64_t>& source, const std::vector<int64_t>& destination) {
  if (source.size() != destination.size())
    detail::fail("moveaxis", "source and destination must have the same number of elements, got ", source.size(),
                 " and ", destination.size());
  int64_t nd = x.ndim();
  auto src = normalize_axes_list("moveaxis", source, nd, x.shape());
  auto dst = normalize_axes_list("moveaxis", destination, nd, x.shape());
  std::vector<int64_t> order;
  for (int64_t i = 0; i < nd; ++i)
    if (std::find(src.begin(), src.end(), i) == src.end()) order.push_back(i);
  std::vector<size_t> by_dst(src.size());
  std::iota(by_dst.begin(), by_dst.end(), 0);
  std::sort(by_dst.begin(), by_dst.end(), [&](size_t a, size_t b) { return dst[a] < dst[b]; });
  for (size_t j : by_dst) order.insert(order.begin() + dst[j], src[j]);
  return transpose(x, order);
}

Array moveaxis(const Array& x, int64_t source, int64_t destination) {
  return moveaxis(x, std::vector<int64_t>{source}, std::vector<int64_t>{destination});
}

Array swapaxes(const Array& x, int64_t axis1, int64_t axis2) {
  int64_t nd = x.ndim();
  int64_t a = util::normalize_axis("swapaxes", axis1, nd, x.shape());
  int64_t b = util::normalize_axis("swapaxes", axis2, nd, x.shape());
  std::vector<int64_t> perm(static_cast<size_t>(nd));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[static_cast<size_t>(a)], perm[static_cast<size_t>(b)]);
  return transpose(x, perm);
}

Array squeeze(const Array& x, const Axes& axis) {
  std::vector<int64_t> dims;
  if (axis.is_all()) {
    for (int64_t i = 0; i < x.ndim(); ++i)
      if (x.shape()[static_cast<size_t>(i)] == 1) dims.push_back(i);
  } else {
    dims = util::reduction_axes("squeeze", axis, x.shape());
    for (int64_t d : dims)
      if (x.shape()[static_cast<size_t>(d)] != 1)
        detail::fail("squeeze", "cannot select an axis to squeeze out which has size not equal to one: axis ", d,
                     " of shape ", detail::shape_str(x.shape()));
  }
  return dims.empty() ? x : lax::squeeze(x, dims);
}

Array expand_dims(const Array& x, const Axes& axis) {
  if (axis.is_all()) detail::fail("expand_dims", "an axis is required");
  int64_t out_nd = x.ndim() + static_cast<int64_t>(axis.axes->size());
  // Axes index the result, but errors show the input's shape.
  auto dims = normalize_axes_list("expand_dims", *axis.axes, out_nd, x.shape());
  std::sort(dims.begin(), dims.end());
  return dims.empty() ? x : lax::expand_dims(x, dims);
}

Array atleast_1d(const Array& x) { return x.ndim() >= 1 ? x : lax::reshape(x, {1}); }
Array atleast_2d(const Array& x) {
  if (x.ndim() >= 2) return x;
  return lax::reshape(x, {1, x.size()});
}
Array atleast_3d(const Array& x) {
  if (x.ndim() >= 3) return x;
  if (x.ndim() == 0) return lax::reshape(x, {1, 1, 1});
  if (x.ndim() == 1) return lax::reshape(x, {1, x.size(), 1});
  return lax::reshape(x, {x.shape(0), x.shape(1), 1});
}

// ---- joining ----

Array concatenate(const std::vector<Array>& xs, std::optional<int64_t> axis) {
  if (xs.empty()) detail::fail("concatenate", "need at least one array to concatenate");
  if (!axis) {
    std::vector<Array> flat;
    for (const Array& x : xs) flat.push_back(ravel(x));
    return concatenate(flat, 0);
  }
  int64_t nd = xs[0].ndim();
  if (nd == 0) detail::fail("concatenate", "zero-dimensional arrays cannot be concatenated");
  int64_t ax = util::normalize_axis("concatenate", *axis, nd, xs[0].shape());
  for (size_t i = 1; i < xs.size(); ++i) {
    if (xs[i].ndim() != nd)
      detail::fail("concatenate", "all the input arrays must have the same number of dimensions, but the array at "
                   "index 0 has ", nd, " dimension(s) and the array at index ", i, " has ", xs[i].ndim(),
                   " dimension(s)");
    for (int64_t d = 0; d < nd; ++d)
      if (d != ax && xs[i].shape(static_cast<int>(d)) != xs[0].shape(static_cast<int>(d)))
        detail::fail("concatenate", "all the input array dimensions except for the concatenation axis must match "
                     "exactly, but along dimension ", d, ", the array at index 0 has size ",
                     xs[0].shape(static_cast<int>(d)), " and the array at index ", i, " has size ",
                     xs[i].shape(static_cast<int>(d)));
  }
  std::vector<Array> promoted = promote_dtypes(xs);
  if (promoted.size() == 1) return promoted[0];
  return lax::concatenate(promoted, ax);
}

Array stack(const std::vector<Array>& xs, int64_t axis) {
  if (xs.empty()) detail::fail("stack", "need at least one array to stack");
  for (size_t i = 1; i < xs.size(); ++i)
    if (xs[i].shape() != xs[0].shape())
      detail::fail("stack", "all input arrays must have the same shape, got ", detail::shape_str(xs[0].shape()),
                   " and ", detail::shape_str(xs[i].shape()));
  int64_t nd = xs[0].ndim() + 1;
  Shape out_shape = xs[0].shape();
  out_shape.push_back(static_cast<int64_t>(xs.size()));
  int64_t ax = util::normalize_axis("stack", axis, nd, out_shape);
  std::vector<Array> expanded;
  for (const Array& x : xs) expanded.push_back(lax::expand_dims(x, {ax}));
  return concatenate(expanded, ax);
}

Array hstack(const std::vector<Array>& xs) {
  std::vector<Array> v;
  for (const Array& x : xs) v.push_back(atleast_1d(x));
  if (v.empty()) detail::fail("hstack", "need at least one array to concatenate");
  return concatenate(v, v[0].ndim() == 1 ? 0 : 1);
}
Array vstack(const std::vector<Array>& xs) {
  std::vector<Array> v;
  for (const Array& x : xs) v.push_back(atleast_2d(x));
  return concatenate(v, 0);
}
Array dstack(const std::vector<Array>& xs) {
  std::vector<Array> v;
  for (const Array& x : xs) v.push_back(atleast_3d(x));
  return concatenate(v, 2);
}
Array column_stack(const std::vector<Array>& xs) {
  std::vector<Array> v;
  for (const Array& x : xs) v.push_back(x.ndim() < 2 ? lax::reshape(x, {x.size(), 1}) : x);
  return concatenate(v, 1);
}

// ---- splitting ----

namespace {
std::vector<Array> split_at(std::string_view op, const Array& x, const std::vector<int64_t>& indices, int64_t axis) {
  if (x.ndim() == 0) detail::fail(op, "cannot split a 0-d array");
  int64_t ax = util::normalize_axis(op, axis, x.ndim(), x.shape());
  int64_t n = x.shape(static_cast<int>(ax));
  auto clip = [n](int64_t i) { return std::clamp(i < 0 ? i + n : i, int64_t{0}, n); };
  std::vector<Array> out;
  int64_t start = 0;
  for (size_t i = 0; i <= indices.size(); ++i) {
    int64_t stop = i < indices.size() ? clip(indices[i]) : n;
    out.push_back(slice_axis(x, ax, start, std::max(start, stop)));
    start = stop;  // NumPy slices x[prev:idx] even when the indices decrease
  }
  return out;
}

std::vector<int64_t> section_bounds(std::string_view op, int64_t n, int64_t sections, bool even) {
  if (sections <= 0) detail::fail(op, "number of sections must be larger than 0, got ", sections);
  if (even && n % sections != 0)
    detail::fail(op, "array split does not result in an equal division: ", n, " into ", sections, " sections");
  std::vector<int64_t> bounds;
  int64_t base = n / sections, extra = n % sections, pos = 0;
  for (int64_t i = 0; i + 1 < sections; ++i) {
    pos += base + (i < extra ? 1 : 0);
    bounds.push_back(pos);
  }
  return bounds;
}
}  // namespace

std::vector<Array> split(const Array& x, int64_t sections, int64_t axis) {
  if (x.ndim() == 0) detail::fail("split", "cannot split a 0-d array");
  int64_t n = x.shape(static_cast<int>(util::normalize_axis("split", axis, x.ndim(), x.shape())));
  return split_at("split", x, section_bounds("split", n, sections, true), axis);
}
std::vector<Array> split(const Array& x, const std::vector<int64_t>& indices, int64_t axis) {
  return split_at("split", x, indices, axis);
}
std::vector<Array> array_split(const Array& x, int64_t sections, int64_t axis) {
  if (x.ndim() == 0) detail::fail("array_split", "cannot split a 0-d array");
  int64_t n = x.shape(static_cast<int>(util::normalize_axis("array_split", axis, x.ndim(), x.shape())));
  return split_at("array_split", x, section_bounds("array_split", n, sections, false), axis);
}
std::vector<Array> array_split(const Array& x, const std::vector<int64_t>& indices, int64_t axis) {
  return split_at("array_split", x, indices, axis);
}
std::vector<Array> hsplit(const Array& x, int64_t sections) { return split(x, sections, x.ndim() == 1 ? 0 : 1); }
std::vector<Array> vsplit(const Array& x, int64_t sections) {
  if (x.ndim() < 2) detail::fail("vsplit", "input must be at least 2-d, got shape ", detail::shape_str(x.shape()));
  return split(x, sections, 0);
}

// ---- tiling and repeating ----

Array tile(const Array& x, const std::vector<int64_t>& reps) {
  for (int64_t r : reps)
    if (r < 0) detail::fail("tile", "negative repetition count ", r);
  size_t nd = std::max(reps.size(), static_cast<size_t>(x.ndim()));
  std::vector<int64_t> r(nd - reps.size(), 1);
  r.insert(r.end(), reps.begin(), reps.end());
  Shape s(nd - static_cast<size_t>(x.ndim()), 1);
  s.insert(s.end(), x.shape().begin(), x.shape().end());
  Array y = lax::reshape(x, s);
  // (s0, s1, ...) -> (r0, s0, r1, s1, ...) -> (r0*s0, r1*s1, ...).
  Shape wide, out;
  std::vector<int64_t> dims;
  for (size_t i = 0; i < nd; ++i) {
    wide.push_back(r[i]);
    wide.push_back(s[i]);
    dims.push_back(static_cast<int64_t>(2 * i + 1));
    out.push_back(detail::checked_mul(r[i], s[i], "tile", " tiling shape ", detail::shape_str(x.shape()),
                                      " by reps ", detail::shape_str(reps)));
  }
  detail::check_allocatable(out, x.dtype(), "tile");  // the reshape of the broadcast copies
  return lax::reshape(lax::broadcast_in_dim(y, wide, dims), out);
}

Array repeat(const Array& x, int64_t repeats, std::optional<int64_t> axis) {
  if (repeats < 0) detail::fail("repeat", "repeats may not contain negative values, got ", repeats);
  Array y = axis ? x : ravel(x);
  if (y.ndim() == 0) y = lax::reshape(y, {1});
  int64_t ax = axis ? util::normalize_axis("repeat", *axis, y.ndim(), y.shape()) : 0;
  Shape wide;
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < y.ndim(); ++d) {
    dims.push_back(static_cast<int64_t>(wide.size()));
    wide.push_back(y.shape(static_cast<int>(d)));
    if (d == ax) wide.push_back(repeats);
  }
  Shape out = y.shape();
  out[static_cast<size_t>(ax)] = detail::checked_mul(out[static_cast<size_t>(ax)], repeats, "repeat", " repeating ",
                                                     repeats, " times along axis ", ax, " of shape ",
                                                     detail::shape_str(y.shape()));
  detail::check_allocatable(out, y.dtype(), "repeat");  // the reshape of the broadcast copies
  return lax::reshape(lax::broadcast_in_dim(y, wide, dims), out);
}

namespace {
Array repeat_by_indices(const Array& y, int64_t ax, const std::vector<int32_t>& idx) {
  if (idx.empty()) return slice_axis(y, ax, 0, 0);
  return util::take_1d(y, Array(idx), ax);
}
}  // namespace

Array repeat(const Array& x, const std::vector<int64_t>& repeats, std::optional<int64_t> axis) {
  Array y = axis ? x : ravel(x);
  if (y.ndim() == 0) y = lax::reshape(y, {1});
  int64_t ax = axis ? util::normalize_axis("repeat", *axis, y.ndim(), y.shape()) : 0;
  int64_t n = y.shape(static_cast<int>(ax));
  if (repeats.size() == 1) return repeat(x, repeats[0], axis);
  if (static_cast<int64_t>(repeats.size()) != n)
    detail::fail("repeat", "operands could not be broadcast together with shape (", n, ",) and repeats of length ",
                 repeats.size());
  Shape out = y.shape();
  out[static_cast<size_t>(ax)] = 0;
  for (int64_t r : repeats) {
    if (r < 0) detail::fail("repeat", "repeats may not contain negative values, got ", r);
    out[static_cast<size_t>(ax)] = detail::checked_add(out[static_cast<size_t>(ax)], r, "repeat",
                                                       " summing repeats along axis ", ax, " of shape ",
                                                       detail::shape_str(y.shape()));
  }
  // Before building the index vector, which has one entry per output row.
  detail::check_allocatable(out, y.dtype(), "repeat");
  detail::check_allocatable({out[static_cast<size_t>(ax)]}, DType::Int32, "repeat");
  std::vector<int32_t> idx;
  for (int64_t i = 0; i < n; ++i) {
    idx.insert(idx.end(), static_cast<size_t>(repeats[static_cast<size_t>(i)]), static_cast<int32_t>(i));
  }
  return repeat_by_indices(y, ax, idx);
}

Array repeat(const Array& x, const Array& repeats, std::optional<int64_t> axis,
             std::optional<int64_t> total_repeat_length) {
  if (!is_integer(repeats.dtype()))
    detail::fail("repeat", "repeats must be integers, got ", repeats.dtype());
  if (repeats.ndim() > 1) detail::fail("repeat", "repeats must be 0-d or 1-d, got shape ", detail::shape_str(repeats.shape()));
  if (!total_repeat_length) {
    if (!repeats.is_concrete())
      detail::fail("repeat", "repeats must be concrete unless total_repeat_length is given (the output shape is "
                   "static)");
    return repeat(x, repeats.to_vector<int64_t>(), axis);
  }
  Array y = axis ? x : ravel(x);
  if (y.ndim() == 0) y = lax::reshape(y, {1});
  int64_t ax = axis ? util::normalize_axis("repeat", *axis, y.ndim(), y.shape()) : 0;
  int64_t n = y.shape(static_cast<int>(ax)), total = *total_repeat_length;
  if (total < 0) detail::fail("repeat", "total_repeat_length must be non-negative, got ", total);
  if (total == 0 || n == 0) return slice_axis(y, ax, 0, 0);
  Shape out = y.shape();
  out[static_cast<size_t>(ax)] = total;
  detail::check_allocatable(out, y.dtype(), "repeat");
  detail::check_allocatable({total, n}, DType::Int32, "repeat");  // the comparison grid below
  Array r = broadcast_to(util::convert(repeats, DType::Int32), {n});
  // Output j takes the element whose cumulative end is the first beyond j; surplus
  // positions take the last element, as JAX does.
  Array ends = lax::cumsum(r, 0);
  Shape grid{total, n};
  Array j = lax::broadcasted_iota(DType::Int32, grid, 0);
  Array passed = lax::le(lax::broadcast_in_dim(ends, grid, {1}), j);
  Array idx = lax::reduce_sum(util::convert(passed, DType::Int32), {1});
  idx = lax::min(idx, util::full_like_value(idx, static_cast<double>(n - 1)));
  return util::take_1d(y, idx, ax);
}

// ---- flips and rolls ----

Array flip(const Array& x, const Axes& axis) {
  auto axes = util::reduction_axes("flip", axis, x.shape());
  return axes.empty() ? x : lax::rev(x, axes);
}
Array fliplr(const Array& x) {
  if (x.ndim() < 2) detail::fail("fliplr", "input must be at least 2-d, got shape ", detail::shape_str(x.shape()));
  return lax::rev(x, {1});
}
Array flipud(const Array& x) {
  if (x.ndim() < 1) detail::fail("flipud", "input must be at least 1-d, got shape ()");
  return lax::rev(x, {0});
}

Array roll(const Array& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& axes) {
  if (shifts.size() != axes.size() && shifts.size() != 1 && axes.size() != 1)
    detail::fail("roll", "shift and axis must have the same length, got ", shifts.size(), " and ", axes.size());
  size_t count = std::max(shifts.size(), axes.size());
  Array out = x;
  for (size_t i = 0; i < count; ++i) {
    int64_t s = shifts[shifts.size() == 1 ? 0 : i];
    int64_t a = util::normalize_axis("roll", axes[axes.size() == 1 ? 0 : i], x.ndim(), x.shape());
    int64_t n = x.shape(static_cast<int>(a));
    if (n == 0) continue;
    s = ((s % n) + n) % n;
    if (s == 0) continue;
    out = lax::concatenate({slice_axis(out, a, n - s, n), slice_axis(out, a, 0, n - s)}, a);
  }
  return out;
}

Array roll(const Array& x, int64_t shift, std::optional<int64_t> axis) {
  if (!axis) return reshape(roll(ravel(x), std::vector<int64_t>{shift}, std::vector<int64_t>{0}), x.shape());
  return roll(x, std::vector<int64_t>{shift}, std::vector<int64_t>{*axis});
}

Array rot90(const Array& x, int64_t k, std::pair<int64_t, int64_t> axes) {
  if (x.ndim() < 2) detail::fail("rot90", "input must be at least 2-d, got shape ", detail::shape_str(x.shape()));
  int64_t a = util::normalize_axis("rot90", axes.first, x.ndim(), x.shape());
  int64_t b = util::normalize_axis("rot90", axes.second, x.ndim(), x.shape());
  if (a == b) detail::fail("rot90", "axes must be different, got (", axes.first, ", ", axes.second, ")");
  k = ((k % 4) + 4) % 4;
  if (k == 0) return x;
  if (k == 2) return lax::rev(x, {std::min(a, b), std::max(a, b)});
  if (k == 1) return swapaxes(lax::rev(x, {b}), a, b);
  return lax::rev(swapaxes(x, a, b), {b});
}

// ---- padding ----

namespace {

// Reflect/symmetric padding of one side, as NumPy: chunks of at most the original length
// (less one for reflect) mirrored from the growing array.
Array mirror_pad(const Array& x, int64_t axis, int64_t before, int64_t after, bool reflect) {
  int64_t n = x.shape(static_cast<int>(axis));
  int64_t offset = reflect && n > 1 ? 1 : 0;
  int64_t chunk_max = n - offset;
  Array out = x;
  for (int64_t left = before; left > 0;) {
    int64_t c = std::min(left, chunk_max);
    left -= c;
    out = lax::concatenate({lax::rev(slice_axis(out, axis, offset, offset + c), {axis}), out}, axis);
  }
  for (int64_t left = after; left > 0;) {
    int64_t c = std::min(left, chunk_max);
    left -= c;
    int64_t m = out.shape(static_cast<int>(axis));
    out = lax::concatenate({out, lax::rev(slice_axis(out, axis, m - c - offset, m - offset), {axis})}, axis);
  }
  return out;
}

Array wrap_pad(const Array& x, int64_t axis, int64_t before, int64_t after) {
  int64_t n = x.shape(static_cast<int>(axis));
  int64_t copies_before = (before + n - 1) / n, copies_after = (after + n - 1) / n;
  std::vector<Array> parts(static_cast<size_t>(copies_before + 1 + copies_after), x);
  Array tiled = lax::concatenate(parts, axis);
  int64_t start = copies_before * n - before;
  return slice_axis(tiled, axis, start, start + before + n + after);
}

Array edge_pad(const Array& x, int64_t axis, int64_t before, int64_t after) {
  int64_t n = x.shape(static_cast<int>(axis));
  std::vector<Array> parts;
  auto edge = [&](int64_t at, int64_t count) {
    Shape s = x.shape();
    s[static_cast<size_t>(axis)] = count;
    return broadcast_to(slice_axis(x, axis, at, at + 1), s);
  };
  if (before > 0) parts.push_back(edge(0, before));
  parts.push_back(x);
  if (after > 0) parts.push_back(edge(n - 1, after));
  return parts.size() == 1 ? x : lax::concatenate(parts, axis);
}

}  // namespace

Array pad(const Array& x, const PadWidth& pad_width, const std::string& mode, const Array& constant_values) {
  size_t nd = static_cast<size_t>(x.ndim());
  std::vector<std::pair<int64_t, int64_t>> w = pad_width.widths;
  if (w.size() == 1 && nd != 1) w.assign(nd, w[0]);
  if (w.size() != nd)
    detail::fail("pad", "pad_width has ", pad_width.widths.size(), " entries for an array of shape ",
                 detail::shape_str(x.shape()));
  for (auto [lo, hi] : w)
    if (lo < 0 || hi < 0) detail::fail("pad", "index can't contain negative values, got (", lo, ", ", hi, ")");
  // The result's shape, checked before any mode builds pieces of it.
  Shape out_shape = x.shape();
  for (size_t a = 0; a < nd; ++a)
    out_shape[a] = detail::checked_add(detail::checked_add(out_shape[a], w[a].first, "pad", " padding axis ", a,
                                                           " of shape ", detail::shape_str(x.shape())),
                                       w[a].second, "pad", " padding axis ", a, " of shape ",
                                       detail::shape_str(x.shape()));
  detail::check_allocatable(out_shape, x.dtype(), "pad");
  if (mode == "constant" || mode == "empty") {
    if (constant_values.ndim() != 0)
      detail::fail("pad", "constant_values must be a scalar, got shape ", detail::shape_str(constant_values.shape()));
    Array v = util::convert(mode == "empty" ? Array(0) : constant_values, x.dtype(), x.weak_type());
    std::vector<lax::PadDim> config;
    for (auto [lo, hi] : w) config.push_back({lo, hi, 0});
    return lax::pad(x, v, config);
  }
  if (mode != "edge" && mode != "reflect" && mode != "symmetric" && mode != "wrap")
    detail::fail("pad", "unimplemented padding mode '", mode, "'; supported: constant, edge, reflect, symmetric, "
                 "wrap, empty");
  Array out = x;
  for (size_t a = 0; a < nd; ++a) {
    auto [lo, hi] = w[a];
    if (lo == 0 && hi == 0) continue;
    if (x.shape()[a] == 0)
      detail::fail("pad", "can't extend empty axis ", a, " using modes other than 'constant' or 'empty'");
    int64_t ax = static_cast<int64_t>(a);
    if (mode == "edge") out = edge_pad(out, ax, lo, hi);
    else if (mode == "wrap") out = wrap_pad(out, ax, lo, hi);
    else out = mirror_pad(out, ax, lo, hi, mode == "reflect");
  }
  return out;
}

// ---- diagonals ----

Array diagonal(const Array& x, int64_t offset, int64_t axis1, int64_t axis2) {
  if (x.ndim() < 2) detail::fail("diagonal", "input must be at least 2-d, got shape ", detail::shape_str(x.shape()));
  int64_t a = util::normalize_axis("diagonal", axis1, x.ndim(), x.shape());
  int64_t b = util::normalize_axis("diagonal", axis2, x.ndim(), x.shape());
  if (a == b) detail::fail("diagonal", "axis1 and axis2 cannot be the same, got ", axis1, " and ", axis2);
  // Move the plane last and flatten it: diagonal k is then a strided slice.
  Array y = moveaxis(x, std::vector<int64_t>{a, b}, std::vector<int64_t>{-2, -1});
  int64_t n = y.shape(-2), m = y.shape(-1);
  int64_t len = offset >= 0 ? std::min(n, m - offset) : std::min(n + offset, m);
  len = std::max<int64_t>(len, 0);
  Shape batch(y.shape().begin(), y.shape().end() - 2);
  Shape flat_shape = batch;
  flat_shape.push_back(n * m);
  Array flat = lax::reshape(y, flat_shape);
  int64_t last = static_cast<int64_t>(batch.size());
  if (len == 0) return slice_axis(flat, last, 0, 0);
  int64_t start = offset >= 0 ? offset : -offset * m;
  return slice_axis(flat, last, start, start + (len - 1) * (m + 1) + 1, m + 1);
}

Array diag(const Array& v, int64_t k) {
  if (v.ndim() == 2) return diagonal(v, k);
  if (v.ndim() != 1) detail::fail("diag", "input must be 1-d or 2-d, got shape ", detail::shape_str(v.shape()));
  // |k| and n checked: n x n is formed below.
  const int64_t n = detail::checked_add(v.size(), k >= 0 ? k : detail::checked_sub(0, k, "diag", " negating k"), "diag",
                                        " for k=", k, " and input shape ", detail::shape_str(v.shape()));
  detail::check_allocatable({n, n}, v.dtype(), "diag");
  Array padded = lax::pad(v, util::convert(Array(0), v.dtype()), {{0, n - v.size(), 0}});
  // Row i holds v[i] at column i + k for k >= 0; column j holds v[j] at row j - k otherwise.
  Array spread = lax::broadcast_in_dim(padded, {n, n}, {k >= 0 ? 0 : 1});
  Array mask = util::convert(eye(n, n, k), DType::Bool);
  return lax::select_n(mask, {zeros_like(spread), spread});
}

Array diagflat(const Array& v, int64_t k) { return diag(ravel(v), k); }

Array trace(const Array& x, int64_t offset, int64_t axis1, int64_t axis2, std::optional<DType> dtype) {
  return sum(diagonal(x, offset, axis1, axis2), -1, false, dtype);
}

Array copy(const Array& x) { return x; }

Array ravel_multi_index(const std::vector<Array>& multi_index, const Shape& dims) {
  if (multi_index.size() != dims.size())
    detail::fail("ravel_multi_index", "parameter multi_index must be a sequence of length ", dims.size(), ", got ",
                 multi_index.size());
  if (dims.empty()) detail::fail("ravel_multi_index", "dims must not be empty");
  std::vector<Array> idx = promote_and_broadcast(multi_index, "ravel_multi_index");
  for (size_t i = 0; i < idx.size(); ++i) {
    if (!is_integer(idx[i].dtype()))
      detail::fail("ravel_multi_index", "only integer indices are supported, got ", idx[i].dtype());
    if (idx[i].is_concrete())
      for (int64_t v : idx[i].to_vector<int64_t>())
        if (v < 0 || v >= dims[i]) detail::fail("ravel_multi_index", "invalid entry ", v, " for dimension ", i,
                                                " of size ", dims[i]);
  }
  Array out = util::convert(idx[0], DType::Int32);
  for (size_t i = 1; i < idx.size(); ++i)
    out = lax::add(lax::mul(out, util::full_like_value(out, static_cast<double>(dims[i]))),
                   util::convert(idx[i], DType::Int32));
  return out;
}

}  // namespace jx::numpy
