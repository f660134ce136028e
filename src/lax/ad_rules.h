// Rule families for differentiation, shared by the primitive definitions (as rules.h is
// for shape rules): a primitive's block names its jvp and transpose rules from here and
// writes by hand only what is special. Symbolic zeros are invalid Arrays (see
// jx/primitive.h); jvp rules compute tangents with lax calls so they compose.
#pragma once

#include <functional>

#include "jx/lax.h"
#include "jx/primitive.h"
#include "transforms/ad_util.h"

namespace jx::lax::ad_rules {

// Elementwise unary f: the tangent is d(x, y, t) where y = f(x) (e.g. exp: t * y).
using UnaryDerivative = std::function<Array(const Array& x, const Array& y, const Array& t)>;
JvpRule unary(const Primitive& p, UnaryDerivative d);

// Elementwise binary f(x, y): partial tangents dx(x, y, out, tx) and dy(x, y, out, ty),
// each called only for a nonzero tangent and summed. Either may be null when that
// operand's tangent is always zero.
using PartialDerivative = std::function<Array(const Array& x, const Array& y, const Array& out, const Array& t)>;
JvpRule binary(const Primitive& p, PartialDerivative dx, PartialDerivative dy);

// A primitive linear in all its operands: tangent = p(tangents...) with zeros
// instantiated; outputs whose every tangent is zero stay zero.
JvpRule linear(const Primitive& p);
// A primitive linear in operand 0 only, whose other operands (indices, sizes) are
// passed through as given: tangent = p(t0, others...).
JvpRule linear_in_first(const Primitive& p);

// Transpose of a unary linear primitive: ct_x = g(ct, operand aval, params).
using UnaryTranspose = std::function<Array(const Array& ct, const Aval& x, const Params& params)>;
TransposeRule unary_transpose(UnaryTranspose g);

}  // namespace jx::lax::ad_rules
