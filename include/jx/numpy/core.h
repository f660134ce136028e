// jx::numpy core: dtypes, broadcasting and type promotion that every jnp function uses.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "jx/array.h"
#include "jx/dtype.h"

namespace jx::numpy {

using jx::Array;
using jx::DType;
using jx::Shape;
using jx::bool_;
using jx::int8;
using jx::int16;
using jx::int32;
using jx::int64;
using jx::uint8;
using jx::uint32;
using jx::float16;
using jx::bfloat16;
using jx::float32;
using jx::float64;
using jx::complex64;
using jx::complex128;
using jx::Slice;
using jx::ellipsis;
using jx::newaxis;

// NumPy's `axis` argument: none (every axis, the default), one axis, or several.
//   jnp::sum(x)  jnp::sum(x, 0)  jnp::sum(x, {0, 2})  jnp::sum(x, std::nullopt)
struct Axes {
  std::optional<std::vector<int64_t>> axes;  // nullopt: all axes
  Axes() = default;
  Axes(std::nullopt_t) {}                                              // NOLINT: None
  Axes(int axis) : axes(std::vector<int64_t>{axis}) {}                 // NOLINT
  Axes(long axis) : axes(std::vector<int64_t>{axis}) {}                // NOLINT
  Axes(long long axis) : axes(std::vector<int64_t>{axis}) {}           // NOLINT
  Axes(std::initializer_list<int64_t> a) : axes(std::vector<int64_t>(a)) {}  // NOLINT
  Axes(std::vector<int64_t> a) : axes(std::move(a)) {}                 // NOLINT
  bool is_all() const { return !axes.has_value(); }
};

// NumPy broadcasting of shapes; raises jx::Error naming `op` and the shapes.
Shape broadcast_shapes(const std::vector<Shape>& shapes, std::string_view op = "broadcast_shapes");
// Broadcasts x to `shape` (lax.broadcast_in_dim); raises when the shapes are incompatible.
Array broadcast_to(const Array& x, const Shape& shape);
// Broadcasts all arrays to their common shape.
std::vector<Array> broadcast_arrays(const std::vector<Array>& xs);

// JAX's promotion over several arrays (weak C++ scalars yield to strong dtypes).
DType result_type(const std::vector<Array>& xs);
// As result_type, also telling whether the result is weakly typed (only when JAX's is).
jx::TypedDType result_typed(const std::vector<Array>& xs);
// JAX's promotion of two strong dtypes (uint32 + int32 -> int64, float16 + int64 -> float16).
DType promote_types(DType a, DType b);
// Converts all to their common dtype and broadcasts them to a common shape: what every
// elementwise jnp function does to its operands before binding the lax primitive.
std::vector<Array> promote_and_broadcast(const std::vector<Array>& xs, std::string_view op);
// Converts all to their common dtype only.
std::vector<Array> promote_dtypes(const std::vector<Array>& xs);

// asarray(x, dtype): x itself when it already has that dtype, else a converted copy.
// Without a dtype a weak C++ scalar takes JAX's default dtype of its kind (2.0 -> float32)
// and stays weak, as jnp.asarray(2.0) does.
Array asarray(const Array& x, std::optional<DType> dtype = std::nullopt);
// x converted to `dtype` (lax.convert_element_type); the result is strongly typed.
Array astype(const Array& x, DType dtype);

// Shape queries.
inline int ndim(const Array& x) { return x.ndim(); }
inline Shape shape(const Array& x) { return x.shape(); }
inline int64_t size(const Array& x) { return x.size(); }

// dtype predicates, NumPy's np.issubdtype(d, np.floating) and friends.
inline bool issubdtype_floating(DType d) { return jx::is_floating(d); }
inline bool issubdtype_integer(DType d) { return jx::is_integer(d); }
inline bool issubdtype_inexact(DType d) { return jx::is_inexact(d); }
inline bool iscomplexobj(const Array& x) { return jx::is_complex(x.dtype()); }

}  // namespace jx::numpy
