// jx::numpy core: broadcasting, type promotion and the shared helpers of core_util.h.
#include <algorithm>
#include <sstream>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "jx/primitive.h"
#include "numpy/core_util.h"

namespace jx::numpy {

namespace {
std::string shapes_list(const std::vector<Shape>& shapes) {
  std::ostringstream os;
  for (size_t i = 0; i < shapes.size(); ++i) os << (i ? " " : "") << detail::shape_str(shapes[i]);
  return os.str();
}
}  // namespace

Shape broadcast_shapes(const std::vector<Shape>& shapes, std::string_view op) {
  size_t nd = 0;
  for (const Shape& s : shapes) nd = std::max(nd, s.size());
  Shape out(nd, 1);
  for (const Shape& s : shapes) {
    size_t lead = nd - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t d = s[i], &o = out[lead + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      detail::fail(op, "operands could not be broadcast together with shapes ", shapes_list(shapes));
    }
  }
  return out;
}

Array broadcast_to(const Array& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const Shape& in = x.shape();
  bool ok = in.size() <= shape.size();
  size_t lead = shape.size() - std::min(in.size(), shape.size());
  std::vector<int64_t> dims;
  for (size_t i = 0; ok && i < in.size(); ++i) {
    ok = in[i] == 1 || in[i] == shape[lead + i];
    dims.push_back(static_cast<int64_t>(lead + i));
  }
  for (int64_t d : shape)
    if (d < 0) ok = false;
  if (!ok)
    detail::fail("broadcast_to", "cannot broadcast an array of shape ", detail::shape_str(in), " to shape ",
                 detail::shape_str(shape));
  return lax::broadcast_in_dim(x, shape, dims);
}

std::vector<Array> broadcast_arrays(const std::vector<Array>& xs) {
  std::vector<Shape> shapes;
  for (const Array& x : xs) shapes.push_back(x.shape());
  Shape common = broadcast_shapes(shapes, "broadcast_arrays");
  std::vector<Array> out;
  for (const Array& x : xs) out.push_back(broadcast_to(x, common));
  return out;
}

jx::TypedDType result_typed(const std::vector<Array>& xs) {
  if (xs.empty()) detail::fail("result_type", "at least one array or dtype is required");
  jx::TypedDType t{xs[0].dtype(), xs[0].weak_type()};
  for (size_t i = 1; i < xs.size(); ++i) t = jx::promote_types(t, {xs[i].dtype(), xs[i].weak_type()});
  return t;
}

DType result_type(const std::vector<Array>& xs) { return result_typed(xs).dtype; }

DType promote_types(DType a, DType b) { return jx::promote_types(a, b); }

std::vector<Array> promote_dtypes(const std::vector<Array>& xs) {
  jx::TypedDType t = result_typed(xs);
  std::vector<Array> out;
  out.reserve(xs.size());
  for (const Array& x : xs) out.push_back(util::convert(x, t.dtype, t.weak));
  return out;
}

std::vector<Array> promote_and_broadcast(const std::vector<Array>& xs, std::string_view op) {
  std::vector<Shape> shapes;
  for (const Array& x : xs) shapes.push_back(x.shape());
  Shape common = broadcast_shapes(shapes, op);
  std::vector<Array> out = promote_dtypes(xs);
  for (Array& x : out) x = broadcast_to(x, common);
  return out;
}

Array asarray(const Array& x, std::optional<DType> dtype) {
  if (dtype) return util::convert(x, *dtype, false);
  if (!x.weak_type()) return x;
  DType canonical = x.dtype();
  switch (dtype_info(x.dtype()).kind) {
    case DTypeKind::Bool: break;
    case DTypeKind::SignedInt:
    case DTypeKind::UnsignedInt: canonical = kDefaultInt; break;
    case DTypeKind::Float: canonical = kDefaultFloat; break;
    case DTypeKind::Complex: canonical = kDefaultComplex; break;
  }
  return util::convert(x, canonical, true);
}

Array astype(const Array& x, DType dtype) { return util::convert(x, dtype, false); }

// ---- shared helpers ----

namespace util {

// 64-bit integers need float64 to keep their precision (JAX with x64); narrower integers
// and bool take the default float.
DType to_inexact(DType d) {
  if (is_inexact(d)) return d;
  return is_integer(d) && itemsize(d) == 8 ? DType::Float64 : kDefaultFloat;
}

DType sum_dtype(DType d) {
  if (d == DType::Bool) return kDefaultInt;
  if (is_integer(d) && itemsize(d) < itemsize(kDefaultInt)) return is_unsigned(d) ? DType::UInt32 : kDefaultInt;
  return d;
}

DType canonical_result_type(const std::vector<Array>& xs) {
  jx::TypedDType t = result_typed(xs);
  if (!t.weak) return t.dtype;
  switch (dtype_info(t.dtype).kind) {
    case DTypeKind::Bool: return DType::Bool;
    case DTypeKind::SignedInt:
    case DTypeKind::UnsignedInt: return kDefaultInt;
    case DTypeKind::Float: return kDefaultFloat;
    case DTypeKind::Complex: return kDefaultComplex;
  }
  return t.dtype;
}

Array set_weak(const Array& x, bool weak) { return convert(x, x.dtype(), weak); }

Array convert(const Array& x, DType dtype, bool weak) {
  return lax::convert_element_type(x, dtype, weak);
}

Array as_inexact(const Array& x) { return convert(x, to_inexact(x.dtype()), x.weak_type()); }

Array scalar(DType dtype, double v) { return detail::scalar_of(dtype, v); }

Array full_like_value(const Array& x, double v) {
  Array s = set_weak(detail::scalar_of(x.dtype(), v), x.weak_type());
  return x.ndim() == 0 ? s : lax::broadcast_in_dim(s, x.shape(), {});
}

std::pair<Array, Array> promote2(const Array& a, const Array& b, std::string_view op) {
  // The common case (x + y of one dtype and shape) needs neither promotion nor
  // broadcasting: skipping the general path's vectors halves an eager add's cost.
  if (a.valid() && b.valid() && a.dtype() == b.dtype() && a.weak_type() == b.weak_type() && a.shape() == b.shape())
    return {a, b};
  std::vector<Array> v = promote_and_broadcast({a, b}, op);
  return {v[0], v[1]};
}

std::pair<Array, Array> promote2_inexact(const Array& a, const Array& b, std::string_view op) {
  auto [x, y] = promote2(a, b, op);
  return {as_inexact(x), as_inexact(y)};
}

int64_t normalize_axis(std::string_view op, int64_t axis, int64_t ndim, const Shape& shape) {
  if (axis < -ndim || axis >= ndim)
    detail::fail(op, "axis ", axis, " is out of bounds for array of shape ", detail::shape_str(shape));
  return axis < 0 ? axis + ndim : axis;
}

std::vector<int64_t> reduction_axes(std::string_view op, const Axes& axes, const Shape& shape) {
  int64_t nd = static_cast<int64_t>(shape.size());
  std::vector<int64_t> out;
  if (axes.is_all()) {
    for (int64_t i = 0; i < nd; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : *axes.axes) {
    int64_t c = normalize_axis(op, a, nd, shape);
    if (std::find(out.begin(), out.end(), c) != out.end())
      detail::fail(op, "repeated axis ", a, " for array of shape ", detail::shape_str(shape));
    out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Shape keepdims_shape(const Shape& shape, const std::vector<int64_t>& axes) {
  Shape out = shape;
  for (int64_t a : axes) out[static_cast<size_t>(a)] = 1;
  return out;
}

Array maybe_keepdims(const Array& reduced, const Shape& in_shape, const std::vector<int64_t>& axes,
                     bool keepdims) {
  if (!keepdims || axes.empty()) return reduced;
  return lax::expand_dims(reduced, axes);
}

bool reduces_empty(const Shape& shape, const std::vector<int64_t>& axes) {
  for (int64_t a : axes)
    if (shape[static_cast<size_t>(a)] == 0) return true;
  return false;
}

std::vector<int64_t> concrete_ints(const Array& x, std::string_view op) {
  detail::concrete_impl(x, op);
  return x.to_vector<int64_t>();
}

Array take_1d(const Array& x, const Array& indices, int64_t axis) {
  // Output dims: x's dims with `axis` replaced by the index count; the index batch dim
  // sits at `axis`, every other output dim is an offset (window) dim.
  int64_t nd = x.ndim();
  lax::GatherDimensionNumbers dn;
  for (int64_t d = 0; d < nd; ++d)
    if (d != axis) dn.offset_dims.push_back(d);
  dn.collapsed_slice_dims = {axis};
  dn.start_index_map = {axis};
  Shape slice_sizes = x.shape();
  slice_sizes[static_cast<size_t>(axis)] = 1;
  Array idx = lax::reshape(convert(indices, DType::Int32), {indices.size(), 1});
  return lax::gather(x, idx, dn, slice_sizes, lax::GatherScatterMode::PromiseInBounds);
}

}  // namespace util
}  // namespace jx::numpy
