// NumPy indexing on jx::lax: basic indices become slice/rev/squeeze/expand_dims (views),
// advanced ones and every x.at(...) update become one gather or scatter, as JAX's
// _index_to_gather does. Also take, nonzero and the other index helpers.
#include "jx/numpy/indexing.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>
#include <limits>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "numpy/core_util.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;
using detail::fail;
using detail::shape_str;

// ---- small builders ----

Array full(const Shape& shape, DType dtype, double v) {
  Array s = detail::scalar_of(dtype, v);
  return shape.empty() ? s : lax::broadcast_in_dim(s, shape, {});
}

Array ravel(const Array& x) { return x.ndim() == 1 ? x : lax::reshape(x, {x.size()}); }

// int32 unless a size or an index array needs 64 bits.
DType index_dtype(int64_t max_size, const std::vector<Array>& arrays = {}) {
  bool wide = max_size > std::numeric_limits<int32_t>::max();
  for (const Array& a : arrays) wide = wide || a.dtype() == DType::Int64 || a.dtype() == DType::UInt32;
  return wide ? DType::Int64 : DType::Int32;
}

// Negative indices count from the end once (JAX's _normalize_index).
Array normalize_index(const Array& idx, int64_t n) {
  if (is_unsigned(idx.dtype()) || is_bool(idx.dtype())) return idx;
  Array zero = full(idx.shape(), idx.dtype(), 0);
  Array size = full(idx.shape(), idx.dtype(), static_cast<double>(n));
  return lax::select_n(lax::lt(idx, zero), {idx, lax::add(idx, size)});
}

// JAX's out-of-bounds fill for gathers: NaN, the int minimum, the uint maximum, true.
Array fill_scalar(DType dtype, const Array& user_fill, std::string_view op) {
  if (user_fill.valid()) {
    if (user_fill.size() != 1)
      fail(op, "fill_value must be a scalar, got shape ", shape_str(user_fill.shape()));
    return jnp::util::convert(lax::reshape(user_fill, {}), dtype);
  }
  double v = 0;
  switch (dtype_info(dtype).kind) {
    case DTypeKind::Bool: v = 1; break;
    case DTypeKind::SignedInt: v = -std::ldexp(1.0, itemsize(dtype) * 8 - 1); break;
    case DTypeKind::UnsignedInt: v = std::ldexp(1.0, itemsize(dtype) * 8) - 1; break;
    case DTypeKind::Float:
    case DTypeKind::Complex: v = std::numeric_limits<double>::quiet_NaN(); break;
  }
  return detail::scalar_of(dtype, v);
}

void check_integer_indices(const Array& idx, std::string_view op) {
  if (!is_integer(idx.dtype()))
    fail(op, "indices must be integers, got ", idx.aval().str());
}

// ---- parsing an index expression ----

struct SliceSpec {
  int64_t start = 0, step = 1, count = 0;
};

// Python's slice.indices(n) and the element count.
SliceSpec normalize_slice(const Slice& s, int64_t n) {
  int64_t step = s.step.value_or(1);
  if (step == 0) fail("index", "slice step cannot be zero");
  // A step longer than the axis picks at most one element; clamping it avoids overflow.
  int64_t limit = std::max<int64_t>(n, 1);
  step = std::clamp(step, -limit, limit);
  SliceSpec out;
  out.step = step;
  if (step > 0) {
    auto clampv = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + n : v, 0, n); };
    out.start = s.start ? clampv(*s.start) : 0;
    int64_t stop = s.stop ? clampv(*s.stop) : n;
    out.count = stop > out.start ? (stop - out.start + step - 1) / step : 0;
  } else {
    auto clampv = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + n : v, -1, n - 1); };
    out.start = s.start ? clampv(*s.start) : n - 1;
    int64_t stop = s.stop ? clampv(*s.stop) : -1;
    out.count = out.start > stop ? (out.start - stop - step - 1) / -step : 0;
  }
  return out;
}

enum class EntryKind { Integer, Slice, NewAxis, Advanced };
struct Entry {
  EntryKind kind = EntryKind::Slice;
  int64_t dim = -1;  // operand dim consumed (all kinds but NewAxis)
  int64_t integer = 0;
  SliceSpec slice;
  Array index;  // Advanced: an integer array
};

Entry make_entry(EntryKind kind, int64_t dim) {
  Entry e;
  e.kind = kind;
  e.dim = dim;
  return e;
}

// Expands the ellipsis, checks integers, turns boolean masks into integer arrays and
// appends full slices for the dims not indexed.
std::vector<Entry> parse_index(const Shape& shape, const std::vector<IndexItem>& items) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  int64_t consumed = 0, ellipses = 0;
  for (const IndexItem& it : items) {
    switch (it.kind()) {
      case IndexItem::Kind::Ellipsis: ++ellipses; break;
      case IndexItem::Kind::NewAxis: break;
      case IndexItem::Kind::Array:
        consumed += is_bool(it.array().dtype()) ? it.array().ndim() : 1;
        break;
      default: ++consumed;
    }
  }
  if (ellipses > 1) fail("index", "an index can only have a single ellipsis ('...')");
  if (consumed > nd)
    fail("index", "too many indices for array: array is ", nd, "-dimensional, but ", consumed,
         " were indexed");
  std::vector<Entry> out;
  int64_t dim = 0;
  auto full_slice = [&](int64_t d) {
    Entry e = make_entry(EntryKind::Slice, d);
    e.slice = {0, 1, shape[static_cast<size_t>(d)]};
    out.push_back(e);
  };
  for (const IndexItem& it : items) {
    switch (it.kind()) {
      case IndexItem::Kind::Ellipsis:
        for (int64_t k = 0; k < nd - consumed; ++k) full_slice(dim++);
        break;
      case IndexItem::Kind::NewAxis: out.push_back(make_entry(EntryKind::NewAxis, -1)); break;
      case IndexItem::Kind::Integer: {
        int64_t n = shape[static_cast<size_t>(dim)], i = it.integer();
        if (i < -n || i >= n)
          fail("index", "index ", i, " is out of bounds for axis ", dim, " with size ", n);
        Entry e = make_entry(EntryKind::Integer, dim++);
        e.integer = i < 0 ? i + n : i;
        out.push_back(e);
        break;
      }
      case IndexItem::Kind::Slice: {
        Entry e = make_entry(EntryKind::Slice, dim);
        e.slice = normalize_slice(it.slice(), shape[static_cast<size_t>(dim++)]);
        out.push_back(e);
        break;
      }
      case IndexItem::Kind::Array: {
        const Array& a = it.array();
        if (!is_bool(a.dtype())) {
          if (!is_integer(a.dtype()))
            fail("index", "array indices must be integers or booleans, got ", a.aval().str());
          Entry e = make_entry(EntryKind::Advanced, dim++);
          e.index = a;
          out.push_back(e);
          break;
        }
        if (a.ndim() == 0)
          fail("index", "a 0-d boolean index is not supported; use jx::newaxis and an integer index");
        for (int64_t k = 0; k < a.ndim(); ++k) {
          int64_t n = shape[static_cast<size_t>(dim + k)], m = a.shape()[static_cast<size_t>(k)];
          if (n != m)
            fail("index", "boolean index did not match indexed array along axis ", dim + k,
                 "; size of axis is ", n, " but size of corresponding boolean axis is ", m);
        }
        if (!a.is_concrete())
          fail("index", "a boolean mask index of shape ", shape_str(a.shape()),
               " needs a concrete mask: the result shape would depend on traced values "
               "(JAX's NonConcreteBooleanIndexError). Use jnp::where(mask, x, fill) or "
               "jnp::nonzero(mask, size=...) instead");
        for (const Array& idx : jnp::nonzero(a)) {
          Entry e = make_entry(EntryKind::Advanced, dim++);
          e.index = idx;
          out.push_back(e);
        }
        break;
      }
    }
  }
  while (dim < nd) full_slice(dim++);
  return out;
}

bool has_advanced(const std::vector<Entry>& entries) {
  return std::any_of(entries.begin(), entries.end(),
                     [](const Entry& e) { return e.kind == EntryKind::Advanced; });
}

// ---- basic indexing: views ----

Array basic_index(const Array& x, const std::vector<Entry>& entries) {
  const size_t nd = static_cast<size_t>(x.ndim());
  std::vector<int64_t> start(nd, 0), limit = x.shape(), stride(nd, 1), reversed, squeezed, new_axes;
  bool sliced = false;
  int64_t out_dim = 0;
  for (const Entry& e : entries) {
    size_t d = static_cast<size_t>(e.dim);
    switch (e.kind) {
      case EntryKind::Integer:
        start[d] = e.integer;
        limit[d] = e.integer + 1;
        squeezed.push_back(e.dim);
        sliced = sliced || x.shape()[d] != 1;
        break;
      case EntryKind::Slice: {
        const SliceSpec& s = e.slice;
        int64_t n = x.shape()[d], first = s.start, step = s.step;
        if (step < 0) {  // walk the reversed axis forward
          reversed.push_back(e.dim);
          first = n - 1 - s.start;
          step = -step;
        }
        if (s.count == 0) first = 0;
        start[d] = first;
        limit[d] = s.count == 0 ? 0 : first + (s.count - 1) * step + 1;
        stride[d] = s.count <= 1 ? 1 : step;
        sliced = sliced || start[d] != 0 || limit[d] != n || stride[d] != 1;
        ++out_dim;
        break;
      }
      case EntryKind::NewAxis: new_axes.push_back(out_dim++); break;
      case EntryKind::Advanced: break;
    }
  }
  Array y = x;
  if (!reversed.empty()) y = lax::rev(y, reversed);
  if (sliced) y = lax::slice(y, start, limit, stride);
  if (!squeezed.empty()) y = lax::squeeze(y, squeezed);
  if (!new_axes.empty()) y = lax::expand_dims(y, new_axes);
  return y;
}

// ---- advanced indexing and updates: one gather / scatter ----

struct GatherPlan {
  bool trivial = false;  // 0-d operand, nothing to index: the update is elementwise
  Array indices;         // batch dims..., index vector
  lax::GatherDimensionNumbers dnums;
  Shape slice_sizes;
  Shape gathered_shape;  // the gather's output
  Shape indexed_shape;   // with the new axes
  std::vector<int64_t> new_axes;  // positions in indexed_shape
  bool empty_axis_indexed = false;  // an advanced index into a size-0 axis
  int64_t batch_size = 1;
};

// Integers join the advanced indices (0-d arrays), as NumPy treats them next to arrays;
// with no array they broadcast to () and add no dims, so placement cannot matter.
GatherPlan plan_gather(const Shape& shape, const std::vector<Entry>& entries, std::string_view op) {
  GatherPlan plan;
  const int64_t nd = static_cast<int64_t>(shape.size());
  std::vector<Array> arrays;
  std::vector<Shape> array_shapes;
  std::vector<size_t> advanced_pos;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].kind == EntryKind::Advanced) {
      arrays.push_back(entries[i].index);
      array_shapes.push_back(entries[i].index.shape());
    }
    if (entries[i].kind == EntryKind::Advanced || entries[i].kind == EntryKind::Integer) advanced_pos.push_back(i);
  }
  Shape block;  // the broadcast shape of the advanced indices
  {
    size_t r = 0;
    for (const Shape& s : array_shapes) r = std::max(r, s.size());
    block.assign(r, 1);
    for (const Shape& s : array_shapes) {
      for (size_t k = 0; k < s.size(); ++k) {
        int64_t& b = block[r - s.size() + k];
        if (s[k] == b || s[k] == 1) continue;
        if (b != 1) {
          std::string all;
          for (const Shape& t : array_shapes) all += shape_str(t) + " ";
          all.pop_back();
          fail(op, "shape mismatch: indexing arrays could not be broadcast together with shapes ", all);
        }
        b = s[k];
      }
    }
  }
  bool contiguous = true;
  for (size_t i = 1; i < advanced_pos.size(); ++i) contiguous = contiguous && advanced_pos[i] == advanced_pos[i - 1] + 1;

  int64_t max_size = 0;
  for (int64_t d : shape) max_size = std::max(max_size, d);
  DType idx_dtype = index_dtype(max_size, arrays);

  // Output layout: the advanced block at its first index (NumPy's rule when the advanced
  // indices are adjacent), else in front; a strided slice is a batch dim of its own.
  Shape batch_shape;
  int64_t block_batch_start = -1;
  std::vector<int64_t> strided_batch_pos(static_cast<size_t>(nd), -1);
  bool block_emitted = advanced_pos.empty();
  auto emit_block = [&] {
    block_batch_start = static_cast<int64_t>(batch_shape.size());
    for (int64_t b : block) {
      batch_shape.push_back(b);
      plan.gathered_shape.push_back(b);
      plan.indexed_shape.push_back(b);
    }
    block_emitted = true;
  };
  if (!contiguous) emit_block();
  for (const Entry& e : entries) {
    switch (e.kind) {
      case EntryKind::Integer:
      case EntryKind::Advanced:
        if (!block_emitted) emit_block();
        break;
      case EntryKind::NewAxis:
        plan.new_axes.push_back(static_cast<int64_t>(plan.indexed_shape.size()));
        plan.indexed_shape.push_back(1);
        break;
      case EntryKind::Slice:
        if (e.slice.step != 1) {
          strided_batch_pos[static_cast<size_t>(e.dim)] = static_cast<int64_t>(batch_shape.size());
          batch_shape.push_back(e.slice.count);
        } else {
          plan.dnums.offset_dims.push_back(static_cast<int64_t>(plan.gathered_shape.size()));
        }
        plan.gathered_shape.push_back(e.slice.count);
        plan.indexed_shape.push_back(e.slice.count);
        break;
    }
  }
  plan.batch_size = shape_size(batch_shape);

  // One index-vector component per operand dim that is not a full window.
  Shape comp_shape = batch_shape;
  comp_shape.push_back(1);
  std::vector<Array> components;
  auto add_component = [&](int64_t d, const Array& c, std::vector<int64_t> dims) {
    Array ci = jnp::util::convert(c, idx_dtype);
    components.push_back(lax::broadcast_in_dim(ci, comp_shape, dims));
    plan.dnums.start_index_map.push_back(d);
  };
  plan.slice_sizes.assign(static_cast<size_t>(nd), 1);
  for (const Entry& e : entries) {
    if (e.kind == EntryKind::NewAxis) continue;
    const size_t d = static_cast<size_t>(e.dim);
    const int64_t n = shape[d];
    switch (e.kind) {
      case EntryKind::Integer:
        add_component(e.dim, detail::scalar_of(idx_dtype, static_cast<double>(e.integer)), {});
        plan.dnums.collapsed_slice_dims.push_back(e.dim);
        break;
      case EntryKind::Advanced: {
        if (n == 0) plan.empty_axis_indexed = true;
        std::vector<int64_t> dims;
        int64_t r = e.index.ndim(), lead = block_batch_start + static_cast<int64_t>(block.size()) - r;
        for (int64_t k = 0; k < r; ++k) dims.push_back(lead + k);
        add_component(e.dim, normalize_index(e.index, n), dims);
        plan.dnums.collapsed_slice_dims.push_back(e.dim);
        break;
      }
      case EntryKind::Slice:
        if (e.slice.step != 1) {
          Array iota = lax::iota(idx_dtype, e.slice.count);
          Array pos = lax::add(lax::mul(iota, full({e.slice.count}, idx_dtype, static_cast<double>(e.slice.step))),
                               full({e.slice.count}, idx_dtype, static_cast<double>(e.slice.start)));
          add_component(e.dim, pos, {strided_batch_pos[d]});
          plan.dnums.collapsed_slice_dims.push_back(e.dim);
        } else {
          plan.slice_sizes[d] = e.slice.count;
          if (e.slice.start != 0)
            add_component(e.dim, detail::scalar_of(idx_dtype, static_cast<double>(e.slice.start)), {});
        }
        break;
      case EntryKind::NewAxis: break;
    }
  }
  if (components.empty()) {
    if (nd == 0) {
      plan.trivial = true;
      return plan;
    }
    add_component(0, detail::scalar_of(idx_dtype, 0.0), {});  // a start of 0: the gather needs an index
  }
  plan.indices = components.size() == 1
                     ? components[0]
                     : lax::concatenate(components, static_cast<int64_t>(comp_shape.size()) - 1);
  return plan;
}

Array advanced_index(const Array& x, const std::vector<Entry>& entries) {
  GatherPlan plan = plan_gather(x.shape(), entries, "index");
  Array y;
  if (plan.empty_axis_indexed) {
    if (plan.batch_size != 0) fail("index", "index is out of bounds for an axis of size 0 in array of shape ", shape_str(x.shape()));
    y = full(plan.gathered_shape, x.dtype(), 0);
  } else {
    y = lax::gather(x, plan.indices, plan.dnums, plan.slice_sizes, lax::GatherScatterMode::Clip);
  }
  if (!plan.new_axes.empty()) y = lax::expand_dims(y, plan.new_axes);
  return y;
}

enum class UpdateKind { Set, Add, Mul, Min, Max };

Array update(const Array& x, const std::vector<IndexItem>& items, const Array& v, UpdateKind kind) {
  std::vector<Entry> entries = parse_index(x.shape(), items);
  GatherPlan plan = plan_gather(x.shape(), entries, "at");
  if (!v.valid()) fail("at", "update value is a null jx::Array");
  Array upd = jnp::util::convert(v, x.dtype(), x.weak_type());
  // NumPy: the value broadcasts to the indexing result.
  {
    const Shape &vs = upd.shape(), &ts = plan.indexed_shape;
    bool ok = vs.size() <= ts.size();
    for (size_t k = 0; ok && k < vs.size(); ++k) ok = vs[k] == 1 || vs[k] == ts[ts.size() - vs.size() + k];
    if (!ok)
      fail("at", "shape mismatch: value array of shape ", shape_str(vs),
           " could not be broadcast to indexing result of shape ", shape_str(ts));
    upd = jnp::broadcast_to(upd, ts);
    if (!plan.new_axes.empty()) upd = lax::reshape(upd, plan.gathered_shape);
  }
  if (plan.trivial) {
    switch (kind) {
      case UpdateKind::Set: return upd;
      case UpdateKind::Add: return lax::add(x, upd);
      case UpdateKind::Mul: return lax::mul(x, upd);
      case UpdateKind::Min: return lax::min(x, upd);
      case UpdateKind::Max: return lax::max(x, upd);
    }
  }
  if (plan.empty_axis_indexed) return x;  // every update is out of bounds: dropped
  lax::ScatterDimensionNumbers dn{plan.dnums.offset_dims, plan.dnums.collapsed_slice_dims,
                                  plan.dnums.start_index_map};
  switch (kind) {
    case UpdateKind::Set: return lax::scatter(x, plan.indices, upd, dn);
    case UpdateKind::Add: return lax::scatter_add(x, plan.indices, upd, dn);
    case UpdateKind::Mul: return lax::scatter_mul(x, plan.indices, upd, dn);
    case UpdateKind::Min: return lax::scatter_min(x, plan.indices, upd, dn);
    case UpdateKind::Max: return lax::scatter_max(x, plan.indices, upd, dn);
  }
  return x;
}

// A single-element gather of a 1-d array at `pos` (any shape), clamped.
Array gather_1d(const Array& a, const Array& pos) {
  Shape s = pos.shape();
  s.push_back(1);
  lax::GatherDimensionNumbers dn{{}, {0}, {0}};
  return lax::gather(a, lax::reshape(pos, s), dn, {1}, lax::GatherScatterMode::Clip);
}

// Total order with NaNs last (NumPy's sort order), as a bool array.
Array sort_less(const Array& x, const Array& y) {
  if (is_complex(x.dtype())) {
    Array xr = lax::real(x), yr = lax::real(y);
    return lax::bitwise_or(lax::lt(xr, yr), lax::bitwise_and(lax::eq(xr, yr), lax::lt(lax::imag(x), lax::imag(y))));
  }
  if (!is_floating(x.dtype())) return lax::lt(x, y);
  Array x_nan = lax::ne(x, x), y_nan = lax::ne(y, y);
  return lax::bitwise_or(lax::lt(x, y), lax::bitwise_and(y_nan, lax::bitwise_not(x_nan)));
}

int64_t checked_axis(std::string_view op, int64_t axis, const Array& a) {
  return jnp::util::normalize_axis(op, axis, a.ndim(), a.shape());
}

}  // namespace

// ---- Array members ----

Array Array::index(const std::vector<IndexItem>& items) const {
  if (items.empty()) return *this;
  std::vector<Entry> entries = parse_index(shape(), items);
  return has_advanced(entries) ? advanced_index(*this, entries) : basic_index(*this, entries);
}

Array Array::operator[](int64_t i) const { return index({IndexItem(static_cast<long long>(i))}); }

Array AtRef::get() const { return x_.index(items_); }
Array AtRef::set(const Array& v) const { return update(x_, items_, v, UpdateKind::Set); }
Array AtRef::add(const Array& v) const { return update(x_, items_, v, UpdateKind::Add); }
Array AtRef::mul(const Array& v) const { return update(x_, items_, v, UpdateKind::Mul); }
Array AtRef::min(const Array& v) const { return update(x_, items_, v, UpdateKind::Min); }
Array AtRef::max(const Array& v) const { return update(x_, items_, v, UpdateKind::Max); }

namespace numpy {

Array take(const Array& a, const Array& indices, std::optional<int64_t> axis, std::string_view mode,
           const Array& fill_value) {
  check_integer_indices(indices, "take");
  Array x = axis ? a : ravel(a);
  int64_t ax = axis ? checked_axis("take", *axis, a) : 0;
  if (mode == "raise")
    fail("take", "mode 'raise' is not supported: JAX cannot raise on traced indices; use 'fill', 'clip' or 'wrap'");
  if (mode != "fill" && mode != "clip" && mode != "wrap")
    fail("take", "invalid mode '", mode, "'; expected 'fill', 'clip' or 'wrap'");
  const int64_t n = x.shape()[static_cast<size_t>(ax)];
  Shape out_shape(x.shape().begin(), x.shape().begin() + ax);
  out_shape.insert(out_shape.end(), indices.shape().begin(), indices.shape().end());
  out_shape.insert(out_shape.end(), x.shape().begin() + ax + 1, x.shape().end());
  Array fill = mode == "fill" ? fill_scalar(x.dtype(), fill_value, "take") : Array();
  if (n == 0) {
    if (indices.size() == 0) return full(out_shape, x.dtype(), 0);
    if (mode != "fill") fail("take", "cannot do a non-empty take from an empty axis");
    return lax::broadcast_in_dim(fill, out_shape, {});
  }
  DType idt = index_dtype(n, {indices});
  Array idx = jnp::util::convert(indices, idt);
  if (mode == "wrap") {
    Array nn = full(idx.shape(), idt, static_cast<double>(n));
    Array r = lax::rem(idx, nn);
    idx = lax::select_n(lax::lt(r, full(idx.shape(), idt, 0)), {r, lax::add(r, nn)});
  } else if (mode == "fill") {
    idx = normalize_index(idx, n);  // NumPy's clip mode sends negatives to 0 instead
  }
  lax::GatherDimensionNumbers dn;
  const int64_t ni = indices.ndim();
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (d != ax) dn.offset_dims.push_back(d < ax ? d : d + ni - 1);
  dn.collapsed_slice_dims = {ax};
  dn.start_index_map = {ax};
  Shape slice_sizes = x.shape();
  slice_sizes[static_cast<size_t>(ax)] = 1;
  Shape is = idx.shape();
  is.push_back(1);
  idx = lax::reshape(idx, is);
  if (mode == "fill")
    return lax::gather(x, idx, dn, slice_sizes, lax::GatherScatterMode::FillOrDrop, fill);
  return lax::gather(x, idx, dn, slice_sizes, lax::GatherScatterMode::Clip);
}

Array take_along_axis(const Array& arr, const Array& indices, std::optional<int64_t> axis, std::string_view mode,
                      const Array& fill_value) {
  check_integer_indices(indices, "take_along_axis");
  if (mode != "fill" && mode != "clip")
    fail("take_along_axis", "invalid mode '", mode, "'; expected 'fill' or 'clip'");
  Array x = axis ? arr : ravel(arr);
  Array idx = axis ? indices : ravel(indices);
  if (idx.ndim() != x.ndim())
    fail("take_along_axis", "indices and arr must have the same number of dimensions; got indices shape ",
         shape_str(indices.shape()), " and arr shape ", shape_str(arr.shape()));
  const int64_t ax = axis ? checked_axis("take_along_axis", *axis, x) : 0;
  const int64_t nd = x.ndim();
  Shape out_shape(static_cast<size_t>(nd)), arr_shape(static_cast<size_t>(nd));
  for (int64_t d = 0; d < nd; ++d) {
    size_t k = static_cast<size_t>(d);
    int64_t xs = x.shape()[k], is = idx.shape()[k];
    if (d == ax) {
      out_shape[k] = is;
      arr_shape[k] = xs;
      continue;
    }
    if (xs != is && xs != 1 && is != 1)
      fail("take_along_axis", "indices of shape ", shape_str(indices.shape()),
           " do not broadcast against arr of shape ", shape_str(arr.shape()), " outside axis ", ax);
    out_shape[k] = arr_shape[k] = xs == 1 ? is : xs;
  }
  Array fill = mode == "fill" ? fill_scalar(x.dtype(), fill_value, "take_along_axis") : Array();
  const int64_t n = x.shape()[static_cast<size_t>(ax)];
  if (shape_size(out_shape) == 0) return full(out_shape, x.dtype(), 0);
  if (n == 0) {
    if (mode != "fill") fail("take_along_axis", "cannot do a non-empty take from an empty axis");
    return lax::broadcast_in_dim(fill, out_shape, {});
  }
  x = jnp::broadcast_to(x, arr_shape);
  DType idt = index_dtype(std::max(n, shape_size(out_shape)), {idx});
  Array ib = normalize_index(jnp::util::convert(jnp::broadcast_to(idx, out_shape), idt), n);
  Shape comp_shape = out_shape;
  comp_shape.push_back(1);
  std::vector<Array> comps;
  lax::GatherDimensionNumbers dn;
  for (int64_t d = 0; d < nd; ++d) {
    comps.push_back(d == ax ? lax::reshape(ib, comp_shape)
                            : lax::broadcasted_iota(idt, comp_shape, static_cast<int>(d)));
    dn.collapsed_slice_dims.push_back(d);
    dn.start_index_map.push_back(d);
  }
  Array all_idx = comps.size() == 1 ? comps[0] : lax::concatenate(comps, nd);
  Shape ones(static_cast<size_t>(nd), 1);
  if (mode == "fill") return lax::gather(x, all_idx, dn, ones, lax::GatherScatterMode::FillOrDrop, fill);
  return lax::gather(x, all_idx, dn, ones, lax::GatherScatterMode::Clip);
}

std::vector<Array> nonzero(const Array& a, std::optional<int64_t> size, const Array& fill_value) {
  if (a.ndim() == 0)
    fail("nonzero", "calling nonzero on 0-d arrays is not allowed; use jnp::atleast_1d(x) first");
  const int64_t n = a.size(), nd = a.ndim();
  if (size && *size < 0) fail("nonzero", "size must be non-negative, got ", *size);
  if (!size && !a.is_concrete())
    fail("nonzero", "the number of nonzero elements of a traced array is not static; pass a static "
                    "size (and fill_value), as JAX requires under jit");
  Array mask = is_bool(a.dtype()) ? a : lax::ne(a, full(a.shape(), a.dtype(), 0));
  Array flat = ravel(mask);
  DType idt = index_dtype(std::max(n, size.value_or(0)));
  Array flat_int = lax::convert_element_type(flat, idt);
  if (!size) {
    size = n == 0 ? 0 : lax::reduce_sum(flat_int, {0}).item<int64_t>();
  }
  Array fills;  // (nd,): the fill of each dimension's output
  if (fill_value.valid()) {
    if (fill_value.size() != 1 && !(fill_value.ndim() == 1 && fill_value.size() == nd))
      fail("nonzero", "fill_value must be a scalar or have one value per dimension (", nd, "), got shape ",
           shape_str(fill_value.shape()));
    Array f = jnp::util::convert(fill_value, idt);
    fills = f.ndim() == 1 && f.size() == nd ? f : lax::broadcast_in_dim(lax::reshape(f, {}), {nd}, {});
  } else {
    fills = full({nd}, idt, 0);
  }
  const int64_t k = *size;
  // Each nonzero goes to the slot of its rank; zeros (and ranks past `size`) fall out of
  // bounds and the scatter drops them.
  Array rank = lax::sub(lax::cumsum(flat_int, 0), full({n}, idt, 1));
  Array slot = lax::reshape(lax::select_n(flat, {full({n}, idt, static_cast<double>(k)), rank}), {n, 1});
  lax::ScatterDimensionNumbers dn{{}, {0}, {0}};
  std::vector<Array> out;
  for (int64_t d = 0; d < nd; ++d) {
    Array f = lax::reshape(lax::slice(fills, {d}, {d + 1}), {});
    Array base = lax::broadcast_in_dim(f, {k}, {});
    if (n == 0 || k == 0) {
      out.push_back(base);
      continue;
    }
    Array coord = ravel(lax::broadcasted_iota(idt, a.shape(), static_cast<int>(d)));
    out.push_back(lax::scatter(base, slot, coord, dn));
  }
  return out;
}

Array argwhere(const Array& a, std::optional<int64_t> size, const Array& fill_value) {
  if (a.ndim() == 0) {
    Array idx = nonzero(lax::reshape(a, {1}), size, fill_value)[0];
    return full({idx.shape()[0], 0}, idx.dtype(), 0);
  }
  std::vector<Array> cols;
  for (const Array& c : nonzero(a, size, fill_value)) cols.push_back(lax::reshape(c, {c.size(), 1}));
  return cols.size() == 1 ? cols[0] : lax::concatenate(cols, 1);
}

Array flatnonzero(const Array& a, std::optional<int64_t> size, const Array& fill_value) {
  return nonzero(ravel(a), size, fill_value)[0];
}

std::vector<Array> where(const Array& condition) { return nonzero(condition); }

Array compress(const Array& condition, const Array& a, std::optional<int64_t> axis, std::optional<int64_t> size,
               const Array& fill_value) {
  if (condition.ndim() != 1)
    fail("compress", "condition must be 1-dimensional, got shape ", shape_str(condition.shape()));
  Array x = axis ? a : ravel(a);
  int64_t ax = axis ? checked_axis("compress", *axis, a) : 0;
  const int64_t n = x.shape()[static_cast<size_t>(ax)];
  Array cond = condition;
  if (cond.size() > n) {
    if (cond.is_concrete()) {
      auto extra = lax::slice(cond, {n}, {cond.size()}).to_vector<uint8_t>();
      for (size_t i = 0; i < extra.size(); ++i)
        if (extra[i]) fail("compress", "condition has a true value at index ", n + static_cast<int64_t>(i),
                           ", beyond axis ", ax, " of size ", n);
    }
    cond = lax::slice(cond, {0}, {n});
  }
  // Padding slots point past the axis, so take's fill mode writes fill_value (default 0) there.
  Array idx = nonzero(cond, size, detail::scalar_of(DType::Int64, static_cast<double>(n)))[0];
  Array fill = fill_value.valid() ? fill_value : detail::scalar_of(x.dtype(), 0);
  return take(x, idx, ax, "fill", fill);
}

namespace {
std::vector<Array> index_pair(const std::vector<int32_t>& rows, const std::vector<int32_t>& cols) {
  return {Array(rows), Array(cols)};
}
void check_size(std::string_view op, std::string_view what, int64_t v) {
  if (v < 0) fail(op, what, " must be non-negative, got ", v);
}
std::vector<Array> triangle_indices(std::string_view op, int64_t n, int64_t k, std::optional<int64_t> m, bool lower) {
  check_size(op, "n", n);
  int64_t cols = m.value_or(n);
  check_size(op, "m", cols);
  std::vector<int32_t> r, c;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < cols; ++j)
      if (lower ? j <= i + k : j >= i + k) {
        r.push_back(static_cast<int32_t>(i));
        c.push_back(static_cast<int32_t>(j));
      }
  return index_pair(r, c);
}
void check_square(std::string_view op, const Array& a, int64_t min_ndim) {
  if (a.ndim() < min_ndim)
    fail(op, "input array must be at least ", min_ndim, "-d, got shape ", shape_str(a.shape()));
}
}  // namespace

std::vector<Array> diag_indices(int64_t n, int64_t ndim) {
  check_size("diag_indices", "n", n);
  check_size("diag_indices", "ndim", ndim);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  return std::vector<Array>(static_cast<size_t>(ndim), Array(v));
}

std::vector<Array> diag_indices_from(const Array& a) {
  check_square("diag_indices_from", a, 2);
  for (int64_t d : a.shape())
    if (d != a.shape()[0])
      fail("diag_indices_from", "all dimensions of input must be of equal length, got shape ", shape_str(a.shape()));
  return diag_indices(a.shape()[0], a.ndim());
}

std::vector<Array> tril_indices(int64_t n, int64_t k, std::optional<int64_t> m) {
  return triangle_indices("tril_indices", n, k, m, true);
}
std::vector<Array> triu_indices(int64_t n, int64_t k, std::optional<int64_t> m) {
  return triangle_indices("triu_indices", n, k, m, false);
}
std::vector<Array> tril_indices_from(const Array& a, int64_t k) {
  if (a.ndim() != 2) fail("tril_indices_from", "input array must be 2-d, got shape ", shape_str(a.shape()));
  return triangle_indices("tril_indices_from", a.shape()[0], k, a.shape()[1], true);
}
std::vector<Array> triu_indices_from(const Array& a, int64_t k) {
  if (a.ndim() != 2) fail("triu_indices_from", "input array must be 2-d, got shape ", shape_str(a.shape()));
  return triangle_indices("triu_indices_from", a.shape()[0], k, a.shape()[1], false);
}

Array indices(const Shape& dimensions, DType dtype) {
  if (!is_integer(dtype)) fail("indices", "dtype must be an integer type, got ", dtype_name(dtype));
  for (int64_t d : dimensions) check_size("indices", "dimension", d);
  const int64_t nd = static_cast<int64_t>(dimensions.size());
  Shape out_shape{nd};
  out_shape.insert(out_shape.end(), dimensions.begin(), dimensions.end());
  if (nd == 0) return full(out_shape, dtype, 0);
  Shape one = out_shape;
  one[0] = 1;
  std::vector<Array> grids;
  for (int64_t d = 0; d < nd; ++d) grids.push_back(lax::broadcasted_iota(dtype, one, static_cast<int>(d + 1)));
  return grids.size() == 1 ? grids[0] : lax::concatenate(grids, 0);
}

Array searchsorted(const Array& a, const Array& v, std::string_view side, const Array& sorter) {
  if (a.ndim() != 1) fail("searchsorted", "a must be 1-dimensional, got shape ", shape_str(a.shape()));
  if (side != "left" && side != "right")
    fail("searchsorted", "side must be 'left' or 'right', got '", side, "'");
  Array sorted = a;
  if (sorter.valid()) {
    if (sorter.shape() != a.shape())
      fail("searchsorted", "sorter must have the shape of a ", shape_str(a.shape()), ", got ",
           shape_str(sorter.shape()));
    sorted = take(a, sorter, 0, "clip");
  }
  auto [sa, sv] = [&] {
    std::vector<Array> p = promote_dtypes({sorted, v});
    return std::pair{p[0], p[1]};
  }();
  const int64_t n = a.size();
  DType idt = index_dtype(n);
  if (n == 0) return full(v.shape(), idt, 0);
  // Binary search, all queries at once: bit_width(n) halvings close every [lo, hi).
  Array lo = full(v.shape(), idt, 0), hi = full(v.shape(), idt, static_cast<double>(n));
  Array one = full(v.shape(), idt, 1), two = full(v.shape(), idt, 2);
  for (int it = std::bit_width(static_cast<uint64_t>(n)); it > 0; --it) {
    Array mid = lax::div(lax::add(lo, hi), two);
    Array at_mid = gather_1d(sa, mid);
    Array go_right = side == "left" ? sort_less(at_mid, sv) : lax::bitwise_not(sort_less(sv, at_mid));
    Array active = lax::lt(lo, hi);
    lo = lax::select_n(lax::bitwise_and(active, go_right), {lo, lax::add(mid, one)});
    hi = lax::select_n(lax::bitwise_and(active, lax::bitwise_not(go_right)), {hi, mid});
  }
  return lo;
}

Array digitize(const Array& x, const Array& bins, bool right) {
  if (bins.ndim() != 1) fail("digitize", "bins must be 1-dimensional, got shape ", shape_str(bins.shape()));
  const int64_t n = bins.size();
  if (n == 0) return full(x.shape(), DType::Int32, 0);
  std::string_view side = right ? "left" : "right";
  Array inc = searchsorted(bins, x, side);
  Array dec = lax::sub(full(x.shape(), inc.dtype(), static_cast<double>(n)),
                       searchsorted(lax::rev(bins, {0}), x, side));
  Array increasing = lax::ge(lax::reshape(lax::slice(bins, {n - 1}, {n}), {}), lax::reshape(lax::slice(bins, {0}, {1}), {}));
  return lax::select_n(lax::broadcast_in_dim(increasing, x.shape(), {}), {dec, inc});
}

}  // namespace numpy
}  // namespace jx
