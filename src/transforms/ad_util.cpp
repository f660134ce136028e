#include "transforms/ad_util.h"

#include "core/array_internal.h"
#include "jx/lax.h"

namespace jx::ad {

Array zeros(const Aval& aval) {
  Array z = detail::scalar_of(aval.dtype, 0.0);
  if (aval.weak_type) z = detail::with_weak_type(z, true);
  if (aval.ndim() == 0) return z;
  return lax::broadcast_in_dim(z, aval.shape, {});
}

Array zeros_like(const Array& x) { return zeros(x.aval()); }

Array scalar_like(const Array& x, double v) { return detail::scalar_of(x.dtype(), v); }

Array full_like(const Array& x, double v) {
  Array s = scalar_like(x, v);
  if (x.ndim() == 0) return s;
  return lax::broadcast_in_dim(s, x.shape(), {});
}

Array instantiate(const Array& t, const Aval& aval) { return t.valid() ? t : zeros(aval); }

Array add_tangents(const Array& a, const Array& b) {
  if (!a.valid()) return b;
  if (!b.valid()) return a;
  return lax::add(a, b);
}

Array neg_tangent(const Array& t) { return t.valid() ? lax::neg(t) : t; }

}  // namespace jx::ad
