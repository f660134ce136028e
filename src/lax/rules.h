// Rule families shared by primitive definitions: most primitives take their shape rule
// from here and write by hand only what is special about them.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "core/array_internal.h"
#include "jx/error.h"
#include "jx/primitive.h"

namespace jx::lax::rules {

// Which dtypes an elementwise primitive accepts.
enum DTypeSet : uint32_t {
  kBoolTypes = 1u << 0,
  kSignedTypes = 1u << 1,
  kUnsignedTypes = 1u << 2,
  kFloatTypes = 1u << 3,
  kComplexTypes = 1u << 4,
  kIntTypes = kSignedTypes | kUnsignedTypes,
  kRealTypes = kIntTypes | kFloatTypes,
  kNumberTypes = kRealTypes | kComplexTypes,
  kInexactTypes = kFloatTypes | kComplexTypes,
  kAnyTypes = kBoolTypes | kNumberTypes,
  kBitTypes = kBoolTypes | kIntTypes,
};
bool dtype_in(DType d, uint32_t set);
std::string describe(uint32_t set);  // "floating or complex"

// "f32[3,4], i32[4]" for error messages.
std::string avals_str(std::span<const Aval> in);
// Raises "[op] expected N operands, got M".
void check_arity(std::string_view op, std::span<const Aval> in, size_t n);
// Raises unless every operand has one shape and dtype (lax requires it; jnp promotes).
void check_same_shape_dtype(std::string_view op, std::span<const Aval> in);
void check_dtype(std::string_view op, const Aval& a, uint32_t set, std::string_view what = "operand");
// Normalizes an axis in [-ndim, ndim) to [0, ndim); raises naming op and shape.
int64_t canonical_axis(std::string_view op, int64_t axis, int64_t ndim, const Shape& shape);
// Validates distinct, in-range axes; returns them normalized (not sorted).
std::vector<int64_t> canonical_axes(std::string_view op, const std::vector<int64_t>& axes, const Shape& shape);

// Elementwise with one output of the operands' dtype (or `out_dtype` when set).
AbstractEvalRule unary(std::string_view op, uint32_t dtypes);
AbstractEvalRule unary_to(std::string_view op, uint32_t dtypes, DType out_dtype);
// complex -> real (abs, real, imag); identity on reals.
AbstractEvalRule unary_to_real(std::string_view op, uint32_t dtypes);
AbstractEvalRule binary(std::string_view op, uint32_t dtypes);
AbstractEvalRule binary_to(std::string_view op, uint32_t dtypes, DType out_dtype);

// Result weak only when every operand is weak (JAX's rule for lax ops).
bool all_weak(std::span<const Aval> in);

}  // namespace jx::lax::rules
