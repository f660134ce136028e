// Small helpers shared by the autodiff interpreters and the primitives' jvp/transpose
// rules: symbolic zeros (invalid Arrays) and their materialization.
#pragma once

#include "jx/array.h"

namespace jx::ad {

// A zero array of `aval`'s shape and dtype (a stride-0 broadcast, no allocation per element).
Array zeros(const Aval& aval);
// A 0-d constant v of x's dtype.
Array scalar_like(const Array& x, double v);
// A constant v of x's shape and dtype (a stride-0 broadcast of one scalar): the
// constants derivative rules multiply by, since lax operands must agree in shape.
Array full_like(const Array& x, double v);
Array zeros_like(const Array& x);
// t itself, or zeros of `aval` when t is a symbolic zero.
Array instantiate(const Array& t, const Aval& aval);
// a + b where either may be a symbolic zero.
Array add_tangents(const Array& a, const Array& b);
// -t, keeping symbolic zeros symbolic.
Array neg_tangent(const Array& t);

}  // namespace jx::ad
