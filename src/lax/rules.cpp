#include "lax/rules.h"

#include <algorithm>
#include <sstream>

namespace jx::lax::rules {

bool dtype_in(DType d, uint32_t set) {
  switch (dtype_info(d).kind) {
    case DTypeKind::Bool: return set & kBoolTypes;
    case DTypeKind::SignedInt: return set & kSignedTypes;
    case DTypeKind::UnsignedInt: return set & kUnsignedTypes;
    case DTypeKind::Float: return set & kFloatTypes;
    case DTypeKind::Complex: return set & kComplexTypes;
  }
  return false;
}

std::string describe(uint32_t set) {
  std::vector<std::string> parts;
  if (set & kBoolTypes) parts.push_back("bool");
  if ((set & kIntTypes) == kIntTypes) parts.push_back("integer");
  else if (set & kSignedTypes) parts.push_back("signed integer");
  else if (set & kUnsignedTypes) parts.push_back("unsigned integer");
  if (set & kFloatTypes) parts.push_back("floating");
  if (set & kComplexTypes) parts.push_back("complex");
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? "" : (i + 1 == parts.size() ? " or " : ", ")) + parts[i];
  return out;
}

std::string avals_str(std::span<const Aval> in) {
  std::ostringstream os;
  for (size_t i = 0; i < in.size(); ++i) os << (i ? ", " : "") << in[i].str();
  return os.str();
}

void check_arity(std::string_view op, std::span<const Aval> in, size_t n) {
  if (in.size() != n) detail::fail(op, "expected ", n, " operands, got ", in.size());
}

void check_same_shape_dtype(std::string_view op, std::span<const Aval> in) {
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].shape != in[0].shape)
      detail::fail(op, "operands must have the same shape, got ", avals_str(in));
    if (in[i].dtype != in[0].dtype)
      detail::fail(op, "operands must have the same dtype, got ", avals_str(in));
  }
}

void check_dtype(std::string_view op, const Aval& a, uint32_t set, std::string_view what) {
  if (!dtype_in(a.dtype, set))
    detail::fail(op, what, " must be ", describe(set), ", got ", a.str());
}

int64_t canonical_axis(std::string_view op, int64_t axis, int64_t ndim, const Shape& shape) {
  if (axis < -ndim || axis >= ndim)
    detail::fail(op, "axis ", axis, " is out of bounds for array of shape ", detail::shape_str(shape));
  return axis < 0 ? axis + ndim : axis;
}

std::vector<int64_t> canonical_axes(std::string_view op, const std::vector<int64_t>& axes, const Shape& shape) {
  std::vector<int64_t> out;
  int64_t nd = static_cast<int64_t>(shape.size());
  for (int64_t a : axes) {
    int64_t c = canonical_axis(op, a, nd, shape);
    if (std::find(out.begin(), out.end(), c) != out.end())
      detail::fail(op, "repeated axis ", a, " for array of shape ", detail::shape_str(shape));
    out.push_back(c);
  }
  return out;
}

bool all_weak(std::span<const Aval> in) {
  return std::all_of(in.begin(), in.end(), [](const Aval& a) { return a.weak_type; });
}

AbstractEvalRule unary(std::string_view op, uint32_t dtypes) {
  return [op = std::string(op), dtypes](std::span<const Aval> in, const Params&) {
    check_arity(op, in, 1);
    check_dtype(op, in[0], dtypes);
    return jx::detail::single(in[0]);
  };
}

AbstractEvalRule unary_to(std::string_view op, uint32_t dtypes, DType out_dtype) {
  return [op = std::string(op), dtypes, out_dtype](std::span<const Aval> in, const Params&) {
    check_arity(op, in, 1);
    check_dtype(op, in[0], dtypes);
    return jx::detail::single(Aval{in[0].shape, out_dtype, false});
  };
}

AbstractEvalRule unary_to_real(std::string_view op, uint32_t dtypes) {
  return [op = std::string(op), dtypes](std::span<const Aval> in, const Params&) {
    check_arity(op, in, 1);
    check_dtype(op, in[0], dtypes);
    return jx::detail::single(Aval{in[0].shape, real_dtype(in[0].dtype), in[0].weak_type});
  };
}

AbstractEvalRule binary(std::string_view op, uint32_t dtypes) {
  return [op = std::string(op), dtypes](std::span<const Aval> in, const Params&) {
    check_arity(op, in, 2);
    check_same_shape_dtype(op, in);
    check_dtype(op, in[0], dtypes, "operands");
    return jx::detail::single(Aval{in[0].shape, in[0].dtype, all_weak(in)});
  };
}

AbstractEvalRule binary_to(std::string_view op, uint32_t dtypes, DType out_dtype) {
  return [op = std::string(op), dtypes, out_dtype](std::span<const Aval> in, const Params&) {
    check_arity(op, in, 2);
    check_same_shape_dtype(op, in);
    check_dtype(op, in[0], dtypes, "operands");
    return jx::detail::single(Aval{in[0].shape, out_dtype, false});
  };
}

}  // namespace jx::lax::rules
