// matmul, dot, tensordot and friends on lax.dot_general.
#include "jx/numpy/products.h"

#include <algorithm>
#include <numeric>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "numpy/core_util.h"

namespace jx::numpy {
namespace {

using detail::fail;
using detail::shape_str;

std::pair<Array, Array> promote_pair(const Array& a, const Array& b) {
  std::vector<Array> p = promote_dtypes({a, b});
  return {p[0], p[1]};
}

Array ravel(const Array& x) { return x.ndim() == 1 ? x : lax::reshape(x, {x.size()}); }

[[noreturn]] void not_aligned(std::string_view op, const Array& a, const Array& b, int64_t da, int64_t db) {
  fail(op, "shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()), " are not aligned: ",
       a.shape()[static_cast<size_t>(da)], " (dim ", da, ") != ", b.shape()[static_cast<size_t>(db)], " (dim ", db,
       ")");
}

// a * b with broadcasting and promotion (the scalar cases of dot and inner).
Array multiply(const Array& a, const Array& b, std::string_view op) {
  auto [x, y] = util::promote2(a, b, op);
  return lax::mul(x, y);
}

}  // namespace

Array matmul(const Array& a, const Array& b) {
  for (int k = 0; k < 2; ++k) {
    const Array& x = k ? b : a;
    if (x.ndim() == 0)
      fail("matmul", "input operand ", k, " has shape () but needs at least 1 dimension; use jnp::multiply for scalars");
  }
  const bool a_vec = a.ndim() == 1, b_vec = b.ndim() == 1;
  const int64_t a_k = a.ndim() - 1, b_k = b_vec ? 0 : b.ndim() - 2;
  if (a.shape()[static_cast<size_t>(a_k)] != b.shape()[static_cast<size_t>(b_k)]) not_aligned("matmul", a, b, a_k, b_k);
  auto [x, y] = promote_pair(a, b);
  // A vector with a vector or a matrix: one dot_general contracting the vector (as JAX
  // does), which the compiler fuses with its epilogue, rather than a product of
  // reshaped operands.
  if ((a_vec || b_vec) && a.ndim() <= 2 && b.ndim() <= 2) {
    lax::DotDimensionNumbers dn;
    dn.lhs_contracting = {a_k};
    dn.rhs_contracting = {b_k};
    return lax::dot_general(x, y, dn);
  }
  if (a_vec) x = lax::expand_dims(x, {0});
  if (b_vec) y = lax::expand_dims(y, {1});
  const int64_t xb = x.ndim() - 2, yb = y.ndim() - 2, nb = std::max(xb, yb);

  // Each broadcast batch position is a dot_general batch dim (both sides larger than 1),
  // a free dim of one side (the other has 1 or nothing), or a unit dim put back at the end.
  enum class Role { Batch, XFree, YFree, Unit };
  std::vector<Role> role(static_cast<size_t>(nb));
  std::vector<int64_t> x_squeeze, y_squeeze;
  Shape out_shape;
  for (int64_t i = 0; i < nb; ++i) {
    int64_t xi = i - (nb - xb), yi = i - (nb - yb);
    int64_t xs = xi >= 0 ? x.shape()[static_cast<size_t>(xi)] : -1;
    int64_t ys = yi >= 0 ? y.shape()[static_cast<size_t>(yi)] : -1;
    bool x_big = xs >= 0 && xs != 1, y_big = ys >= 0 && ys != 1;
    if (x_big && y_big && xs != ys)
      fail("matmul", "batch dimensions of shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
           " cannot be broadcast: ", xs, " != ", ys);
    Role r = x_big && y_big ? Role::Batch : x_big ? Role::XFree : y_big ? Role::YFree : Role::Unit;
    role[static_cast<size_t>(i)] = r;
    out_shape.push_back(x_big ? xs : y_big ? ys : 1);
    if (xs == 1 && r != Role::Batch) x_squeeze.push_back(xi);
    if (ys == 1 && r != Role::Batch) y_squeeze.push_back(yi);
  }
  if (!x_squeeze.empty()) x = lax::squeeze(x, x_squeeze);
  if (!y_squeeze.empty()) y = lax::squeeze(y, y_squeeze);

  // Positions of the remaining batch dims in the squeezed operands.
  lax::DotDimensionNumbers dn;
  std::vector<int64_t> batch_pos, x_free_pos, y_free_pos;  // broadcast positions, by role
  int64_t xp = 0, yp = 0;
  for (int64_t i = 0; i < nb; ++i) {
    int64_t xi = i - (nb - xb), yi = i - (nb - yb);
    Role r = role[static_cast<size_t>(i)];
    bool x_has = xi >= 0 && (r == Role::Batch || r == Role::XFree);
    bool y_has = yi >= 0 && (r == Role::Batch || r == Role::YFree);
    if (r == Role::Batch) {
      dn.lhs_batch.push_back(xp);
      dn.rhs_batch.push_back(yp);
      batch_pos.push_back(i);
    } else if (r == Role::XFree) {
      x_free_pos.push_back(i);
    } else if (r == Role::YFree) {
      y_free_pos.push_back(i);
    }
    xp += x_has;
    yp += y_has;
  }
  dn.lhs_contracting = {x.ndim() - 1};
  dn.rhs_contracting = {y.ndim() - 2};
  Array out = lax::dot_general(x, y, dn);

  // dot_general gives (batch, x free, M, y free, N); put the batch dims back in place.
  std::vector<int64_t> order;  // output dim -> dot_general dim
  const int64_t nbatch = static_cast<int64_t>(batch_pos.size()), nxf = static_cast<int64_t>(x_free_pos.size());
  const int64_t m_dim = nbatch + nxf, n_dim = m_dim + 1 + static_cast<int64_t>(y_free_pos.size());
  for (int64_t i = 0; i < nb; ++i) {
    auto find = [&](const std::vector<int64_t>& v) {
      return static_cast<int64_t>(std::find(v.begin(), v.end(), i) - v.begin());
    };
    switch (role[static_cast<size_t>(i)]) {
      case Role::Batch: order.push_back(find(batch_pos)); break;
      case Role::XFree: order.push_back(nbatch + find(x_free_pos)); break;
      case Role::YFree: order.push_back(m_dim + 1 + find(y_free_pos)); break;
      case Role::Unit: break;
    }
  }
  order.push_back(m_dim);
  order.push_back(n_dim);
  std::vector<int64_t> identity(order.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (order != identity) out = lax::transpose(out, order);
  if (!a_vec) out_shape.push_back(x.shape()[static_cast<size_t>(x.ndim() - 2)]);
  if (!b_vec) out_shape.push_back(y.shape()[static_cast<size_t>(y.ndim() - 1)]);
  if (out.shape() != out_shape) out = lax::reshape(out, out_shape);
  return out;
}

Array dot(const Array& a, const Array& b) {
  if (a.ndim() == 0 || b.ndim() == 0) return multiply(a, b, "dot");
  const int64_t a_k = a.ndim() - 1, b_k = b.ndim() == 1 ? 0 : b.ndim() - 2;
  if (a.shape()[static_cast<size_t>(a_k)] != b.shape()[static_cast<size_t>(b_k)]) not_aligned("dot", a, b, a_k, b_k);
  auto [x, y] = promote_pair(a, b);
  return lax::dot_general(x, y, {{a_k}, {b_k}, {}, {}});
}

Array vdot(const Array& a, const Array& b) {
  if (a.size() != b.size())
    fail("vdot", "arrays must have the same number of elements, got shapes ", shape_str(a.shape()), " and ",
         shape_str(b.shape()));
  auto [x, y] = promote_pair(ravel(a), ravel(b));
  if (is_complex(x.dtype())) x = lax::conj(x);
  return lax::dot_general(x, y, {{0}, {0}, {}, {}});
}

Array inner(const Array& a, const Array& b) {
  if (a.ndim() == 0 || b.ndim() == 0) return multiply(a, b, "inner");
  const int64_t a_k = a.ndim() - 1, b_k = b.ndim() - 1;
  if (a.shape()[static_cast<size_t>(a_k)] != b.shape()[static_cast<size_t>(b_k)]) not_aligned("inner", a, b, a_k, b_k);
  auto [x, y] = promote_pair(a, b);
  return lax::dot_general(x, y, {{a_k}, {b_k}, {}, {}});
}

Array outer(const Array& a, const Array& b) {
  auto [x, y] = promote_pair(ravel(a), ravel(b));
  Shape s{x.size(), y.size()};
  return lax::mul(lax::broadcast_in_dim(x, s, {0}), lax::broadcast_in_dim(y, s, {1}));
}

Array tensordot(const Array& a, const Array& b, int64_t axes) {
  if (axes < 0) fail("tensordot", "axes must be non-negative, got ", axes);
  if (axes > a.ndim() || axes > b.ndim())
    fail("tensordot", "axes=", axes, " is larger than the rank of shapes ", shape_str(a.shape()), " and ",
         shape_str(b.shape()));
  std::vector<int64_t> ax, bx;
  for (int64_t i = 0; i < axes; ++i) {
    ax.push_back(a.ndim() - axes + i);
    bx.push_back(i);
  }
  return tensordot(a, b, {ax, bx});
}

Array tensordot(const Array& a, const Array& b, const std::pair<std::vector<int64_t>, std::vector<int64_t>>& axes) {
  const auto& [a_axes, b_axes] = axes;
  if (a_axes.size() != b_axes.size())
    fail("tensordot", "the axes lists must have the same length, got ", a_axes.size(), " and ", b_axes.size());
  std::vector<int64_t> ac, bc;
  for (size_t i = 0; i < a_axes.size(); ++i) {
    int64_t da = util::normalize_axis("tensordot", a_axes[i], a.ndim(), a.shape());
    int64_t db = util::normalize_axis("tensordot", b_axes[i], b.ndim(), b.shape());
    if (std::find(ac.begin(), ac.end(), da) != ac.end() || std::find(bc.begin(), bc.end(), db) != bc.end())
      fail("tensordot", "repeated axis in axes for shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()));
    if (a.shape()[static_cast<size_t>(da)] != b.shape()[static_cast<size_t>(db)])
      fail("tensordot", "shape mismatch for sum: a has size ", a.shape()[static_cast<size_t>(da)], " on axis ", da,
           " but b has size ", b.shape()[static_cast<size_t>(db)], " on axis ", db);
    ac.push_back(da);
    bc.push_back(db);
  }
  auto [x, y] = promote_pair(a, b);
  return lax::dot_general(x, y, {ac, bc, {}, {}});
}

Array kron(const Array& a, const Array& b) {
  auto [x, y] = promote_pair(a, b);
  const int64_t nd = std::max(x.ndim(), y.ndim());
  Shape xs(static_cast<size_t>(nd - x.ndim()), 1), ys(static_cast<size_t>(nd - y.ndim()), 1);
  xs.insert(xs.end(), x.shape().begin(), x.shape().end());
  ys.insert(ys.end(), y.shape().begin(), y.shape().end());
  // Interleave: x's dims at even positions, y's at odd, then merge each pair.
  Shape inter, out;
  std::vector<int64_t> x_dims, y_dims;
  for (int64_t i = 0; i < nd; ++i) {
    size_t k = static_cast<size_t>(i);
    inter.push_back(xs[k]);
    inter.push_back(ys[k]);
    x_dims.push_back(2 * i);
    y_dims.push_back(2 * i + 1);
    out.push_back(xs[k] * ys[k]);
  }
  Array prod = lax::mul(lax::broadcast_in_dim(lax::reshape(x, xs), inter, x_dims),
                        lax::broadcast_in_dim(lax::reshape(y, ys), inter, y_dims));
  return lax::reshape(prod, out);
}

Array cross(const Array& a, const Array& b, int64_t axisa, int64_t axisb, int64_t axisc, std::optional<int64_t> axis) {
  if (axis) axisa = axisb = axisc = *axis;
  auto components = [](const Array& v, int64_t ax, std::string_view which) {
    if (v.ndim() == 0) fail("cross", "operand ", which, " must have at least one dimension, got shape ()");
    int64_t d = util::normalize_axis("cross", ax, v.ndim(), v.shape());
    int64_t n = v.shape()[static_cast<size_t>(d)];
    if (n != 2 && n != 3)
      fail("cross", "incompatible dimensions for cross product (dimension must be 2 or 3), got shape ",
           shape_str(v.shape()), " along axis ", d);
    std::vector<Array> c;
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> start(static_cast<size_t>(v.ndim()), 0);
      Shape limit = v.shape();
      start[static_cast<size_t>(d)] = i;
      limit[static_cast<size_t>(d)] = i + 1;
      c.push_back(lax::squeeze(lax::slice(v, start, limit), {d}));
    }
    return c;
  };
  std::vector<Array> ca = components(a, axisa, "a"), cb = components(b, axisb, "b");
  bool planar = ca.size() == 2 && cb.size() == 2;
  std::vector<Array> all = ca;
  all.insert(all.end(), cb.begin(), cb.end());
  all = promote_and_broadcast(all, "cross");
  Array zero = util::full_like_value(all[0], 0);
  Array a0 = all[0], a1 = all[1], a2 = ca.size() == 3 ? all[2] : zero;
  size_t ob = ca.size();
  Array b0 = all[ob], b1 = all[ob + 1], b2 = cb.size() == 3 ? all[ob + 2] : zero;
  Array z = lax::sub(lax::mul(a0, b1), lax::mul(a1, b0));
  if (planar) return z;
  Array x = lax::sub(lax::mul(a1, b2), lax::mul(a2, b1));
  Array y = lax::sub(lax::mul(a2, b0), lax::mul(a0, b2));
  int64_t out_nd = z.ndim() + 1;
  int64_t c = util::normalize_axis("cross", axisc, out_nd, Shape{});
  std::vector<Array> parts;
  for (const Array& p : {x, y, z}) parts.push_back(lax::expand_dims(p, {c}));
  return lax::concatenate(parts, c);
}

}  // namespace jx::numpy
