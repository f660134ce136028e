// Helpers shared by the jx::numpy core files (creation, math, reductions, manipulation).
// Everything here is built from jx::lax, so transformations see primitives.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

#include "jx/lax.h"
#include "jx/numpy/core.h"

namespace jx::numpy::util {

// The dtype a float-valued function computes in: inexact dtypes stay, int64 becomes
// float64 and the other integers and bool float32 (as JAX with x64 enabled).
DType to_inexact(DType d);
// The accumulator dtype of sum/prod: bool and narrow integers widen to the default int
// (unsigned ones to uint32), as JAX does.
DType sum_dtype(DType d);

// result_type with a weak result replaced by its kind's default dtype (weak 2.0 -> float32).
DType canonical_result_type(const std::vector<Array>& xs);
// Replaces the weak flag (a convert_element_type to the same dtype, as JAX binds it).
Array set_weak(const Array& x, bool weak);
// lax.convert_element_type with JAX's weak-type rule: the result is weak only if asked.
Array convert(const Array& x, DType dtype, bool weak = false);
// x converted to its inexact dtype (to_inexact), keeping a weak flag.
Array as_inexact(const Array& x);

// A 0-d strong constant of `dtype`.
Array scalar(DType dtype, double v);
// A constant with x's shape, dtype and weak flag (for combining with x in lax ops).
Array full_like_value(const Array& x, double v);

// Two operands promoted to one dtype and broadcast to one shape.
std::pair<Array, Array> promote2(const Array& a, const Array& b, std::string_view op);
// As promote2, then both made inexact (true_divide, arctan2, hypot ...).
std::pair<Array, Array> promote2_inexact(const Array& a, const Array& b, std::string_view op);

// Normalized, sorted, distinct axes of an `axis` argument for an array of `shape`.
std::vector<int64_t> reduction_axes(std::string_view op, const Axes& axes, const Shape& shape);
int64_t normalize_axis(std::string_view op, int64_t axis, int64_t ndim, const Shape& shape);
// The shape after reducing `axes` with keepdims (reduced dims become 1).
Shape keepdims_shape(const Shape& shape, const std::vector<int64_t>& axes);
// Puts back the reduced dims of size 1 when keepdims.
Array maybe_keepdims(const Array& reduced, const Shape& in_shape, const std::vector<int64_t>& axes,
                     bool keepdims);

// True when `axes` covers a dimension of size 0.
bool reduces_empty(const Shape& shape, const std::vector<int64_t>& axes);

// The concrete int64 values of an integer array, or a jx::Error naming `op` if traced.
std::vector<int64_t> concrete_ints(const Array& x, std::string_view op);

// x.take(indices, axis) through lax.gather, for the few core functions that need a gather
// (repeat with per-element counts). `indices` is a 1-d int32 array of in-range indices.
Array take_1d(const Array& x, const Array& indices, int64_t axis);

}  // namespace jx::numpy::util
