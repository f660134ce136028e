// Sorting and unique on lax.sort, lax.gather and lax.scatter.
#include "jx/numpy/sorting.h"

#include <algorithm>
#include <limits>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "jx/numpy/indexing.h"
#include "numpy/core_util.h"

namespace jx::numpy {
namespace {

using detail::fail;
using detail::shape_str;

Array full(const Shape& shape, DType dtype, double v) {
  Array s = detail::scalar_of(dtype, v);
  return shape.empty() ? s : lax::broadcast_in_dim(s, shape, {});
}

Array ravel(const Array& x) { return x.ndim() == 1 ? x : lax::reshape(x, {x.size()}); }

DType index_dtype(int64_t n) {
  return n > std::numeric_limits<int32_t>::max() ? DType::Int64 : DType::Int32;
}

// The array to sort and the normalized axis: axis None flattens.
std::pair<Array, int64_t> sort_operand(std::string_view op, const Array& a, std::optional<int64_t> axis) {
  if (!axis) return {ravel(a), 0};
  return {a, util::normalize_axis(op, *axis, a.ndim(), a.shape())};
}

Array move_to_front(const Array& x, int64_t axis) {
  if (axis == 0) return x;
  std::vector<int64_t> perm{axis};
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (d != axis) perm.push_back(d);
  return lax::transpose(x, perm);
}

Array move_from_front(const Array& x, int64_t axis) {
  if (axis == 0) return x;
  std::vector<int64_t> perm;
  for (int64_t d = 1; d <= axis; ++d) perm.push_back(d);
  perm.push_back(0);
  for (int64_t d = axis + 1; d < x.ndim(); ++d) perm.push_back(d);
  return lax::transpose(x, perm);
}

void check_kth(std::string_view op, const Array& a, int64_t kth, int64_t axis) {
  int64_t ax = util::normalize_axis(op, axis, a.ndim(), a.shape());
  int64_t n = a.shape()[static_cast<size_t>(ax)];
  if (kth < -n || kth >= n) fail(op, "kth(=", kth, ") out of bounds (", n, ")");
}

// NaN-aware "differs from": with equal_nan, two NaNs are the same value.
Array differs(const Array& x, const Array& y, bool equal_nan) {
  Array ne = lax::ne(x, y);
  if (!equal_nan || !is_inexact(x.dtype())) return ne;
  Array both_nan = lax::bitwise_and(lax::ne(x, x), lax::ne(y, y));
  return lax::bitwise_and(ne, lax::bitwise_not(both_nan));
}

struct UniqueOptions {
  std::optional<int64_t> axis;
  bool equal_nan = true;
  std::optional<int64_t> size;
  Array fill_value;
};

struct UniqueWants {
  bool indices = false, inverse = false, counts = false;
};

UniqueResult unique_impl(const Array& ar, const UniqueOptions& o, UniqueWants want) {
  constexpr std::string_view op = "unique";
  if (o.size && *o.size < 0) fail(op, "size must be non-negative, got ", *o.size);
  if (!o.size && !ar.is_concrete())
    fail(op, "the number of unique elements of a traced array is not static; pass a static size "
             "(and fill_value), as JAX requires under jit");
  if (o.fill_value.valid() && o.fill_value.size() != 1)
    fail(op, "fill_value must be a scalar, got shape ", shape_str(o.fill_value.shape()));
  int64_t ax = 0;
  Array x;
  if (o.axis) {
    if (ar.ndim() == 0) fail(op, "axis ", *o.axis, " is out of bounds for array of dimension 0");
    ax = util::normalize_axis(op, *o.axis, ar.ndim(), ar.shape());
    x = move_to_front(ar, ax);
  } else {
    x = ravel(ar);
  }
  const int64_t n = x.shape()[0];
  Shape rest(x.shape().begin() + 1, x.shape().end());
  const int64_t m = shape_size(rest);
  Shape inverse_shape = o.axis ? Shape{n} : ar.shape();
  const DType idt = index_dtype(std::max(n, o.size.value_or(0)));
  UniqueResult r;

  if (n == 0) {
    if (o.size && *o.size > 0 && !o.fill_value.valid())
      fail(op, "for zero-sized input with nonzero size argument, fill_value must be specified");
    int64_t k = o.size.value_or(0);
    Shape vs{k};
    vs.insert(vs.end(), rest.begin(), rest.end());
    r.values = k == 0 ? full(vs, x.dtype(), 0)
                      : lax::broadcast_in_dim(util::convert(lax::reshape(o.fill_value, {}), x.dtype()), vs, {});
    r.values = move_from_front(r.values, ax);
    r.indices = full({k}, idt, 0);
    r.inverse = full(inverse_shape, idt, 0);
    r.counts = full({k}, idt, 0);
    return r;
  }

  // Sort the rows (elements when flat) lexicographically, stably: equal rows keep their
  // original order, so the first of each run is its first occurrence.
  Array rows = lax::reshape(x, {n, m});
  Array iota = lax::iota(idt, n);
  Array perm;
  if (m == 0) {
    perm = iota;
  } else {
    std::vector<Array> operands;
    for (int64_t j = 0; j < m; ++j) operands.push_back(lax::reshape(lax::slice(rows, {0, j}, {n, j + 1}), {n}));
    operands.push_back(iota);
    perm = lax::sort(operands, 0, true, static_cast<int>(m)).back();
  }
  Array sorted = take(rows, perm, 0, "clip");
  // mask[i]: sorted row i starts a new unique value.
  Array mask;
  if (n == 1 || m == 0) {
    mask = lax::concatenate({full({1}, DType::Bool, 1), full({n - 1}, DType::Bool, 0)}, 0);
  } else {
    Array later = lax::slice(sorted, {1, 0}, {n, m}), earlier = lax::slice(sorted, {0, 0}, {n - 1, m});
    Array new_value = lax::reduce_or(differs(later, earlier, o.equal_nan), {1});
    mask = lax::concatenate({full({1}, DType::Bool, 1), new_value}, 0);
  }
  Array mask_int = lax::convert_element_type(mask, idt);
  Array group = lax::sub(lax::cumsum(mask_int, 0), full({n}, idt, 1));  // unique id of each sorted row
  int64_t k;
  if (o.size) {
    k = *o.size;
  } else {
    k = lax::reduce_sum(mask_int, {0}).item<int64_t>();
  }
  // Start of each unique run in sorted order (padding points at row 0, as JAX).
  Array starts = nonzero(mask, k)[0];
  Shape vs{k};
  vs.insert(vs.end(), rest.begin(), rest.end());
  Array values = lax::reshape(take(sorted, starts, 0, "clip"), vs);
  if (o.size && o.fill_value.valid() && k > 0) {
    Array count = lax::reduce_sum(mask_int, {0});
    Array valid = lax::lt(lax::iota(idt, k), lax::broadcast_in_dim(count, {k}, {}));
    Array fill = lax::broadcast_in_dim(util::convert(lax::reshape(o.fill_value, {}), x.dtype()), vs, {});
    values = lax::select_n(lax::broadcast_in_dim(valid, vs, {0}), {fill, values});
  }
  r.values = move_from_front(values, ax);
  if (want.indices) r.indices = take(perm, starts, 0, "clip");
  if (want.inverse) {
    lax::ScatterDimensionNumbers dn{{}, {0}, {0}};
    Array inv = lax::scatter(full({n}, idt, 0), lax::reshape(perm, {n, 1}), group, dn);
    r.inverse = lax::reshape(inv, inverse_shape);
  }
  if (want.counts) {
    lax::ScatterDimensionNumbers dn{{}, {0}, {0}};
    r.counts = k == 0 ? full({0}, idt, 0)
                      : lax::scatter_add(full({k}, idt, 0), lax::reshape(group, {n, 1}), full({n}, idt, 1), dn);
  }
  return r;
}

}  // namespace

Array sort(const Array& a, std::optional<int64_t> axis, bool stable, bool descending) {
  auto [x, ax] = sort_operand("sort", a, axis);
  Array s = lax::sort(x, ax, stable);
  return descending ? lax::rev(s, {ax}) : s;
}

Array argsort(const Array& a, std::optional<int64_t> axis, bool stable, bool descending) {
  auto [x, ax] = sort_operand("argsort", a, axis);
  const int64_t n = x.shape()[static_cast<size_t>(ax)];
  DType idt = index_dtype(n);
  Array iota = lax::broadcasted_iota(idt, x.shape(), static_cast<int>(ax));
  if (!descending) return lax::sort({x, iota}, ax, stable, 1)[1];
  // Sorting the reversed array and reversing back keeps ties in original order.
  Array idx = lax::rev(lax::sort({lax::rev(x, {ax}), iota}, ax, stable, 1)[1], {ax});
  return lax::sub(full(x.shape(), idt, static_cast<double>(n - 1)), idx);
}

Array lexsort(const std::vector<Array>& keys, int64_t axis) {
  if (keys.empty()) fail("lexsort", "need at least one key");
  const Shape& shape = keys[0].shape();
  for (const Array& k : keys)
    if (k.shape() != shape)
      fail("lexsort", "all keys need to be the same shape, got ", shape_str(shape), " and ", shape_str(k.shape()));
  if (keys[0].ndim() == 0) fail("lexsort", "keys must be at least 1-dimensional");
  int64_t ax = util::normalize_axis("lexsort", axis, keys[0].ndim(), shape);
  std::vector<Array> operands(keys.rbegin(), keys.rend());
  operands.push_back(lax::broadcasted_iota(index_dtype(shape[static_cast<size_t>(ax)]), shape, static_cast<int>(ax)));
  return lax::sort(operands, ax, true, static_cast<int>(keys.size())).back();
}

Array lexsort(const Array& keys, int64_t axis) {
  if (keys.ndim() == 0) fail("lexsort", "keys must be at least 1-dimensional");
  if (keys.ndim() == 1) return lexsort(std::vector<Array>{keys}, axis);
  std::vector<Array> rows;
  Shape limit = keys.shape();
  std::vector<int64_t> start(static_cast<size_t>(keys.ndim()), 0);
  for (int64_t i = 0; i < keys.shape()[0]; ++i) {
    start[0] = i;
    limit[0] = i + 1;
    rows.push_back(lax::squeeze(lax::slice(keys, start, limit), {0}));
  }
  return lexsort(rows, axis);
}

Array partition(const Array& a, int64_t kth, int64_t axis) {
  check_kth("partition", a, kth, axis);
  return sort(a, axis);
}

Array argpartition(const Array& a, int64_t kth, int64_t axis) {
  check_kth("argpartition", a, kth, axis);
  return argsort(a, axis);
}

Array unique(const Array& ar, std::optional<int64_t> axis, std::optional<int64_t> size, const Array& fill_value,
             bool equal_nan) {
  return unique_impl(ar, {axis, equal_nan, size, fill_value}, {}).values;
}

UniqueResult unique_all(const Array& ar, std::optional<int64_t> axis, std::optional<int64_t> size,
                        const Array& fill_value, bool equal_nan) {
  return unique_impl(ar, {axis, equal_nan, size, fill_value}, {true, true, true});
}

}  // namespace jx::numpy
