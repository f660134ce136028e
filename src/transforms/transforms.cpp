// The flat entry points of jvp, make_jaxpr and the jacobians (jacfwd, jacrev); linearize/transpose
// live in linearize.cpp, vmap in batching.cpp.
#include "jx/transforms.h"

#include "core/array_internal.h"
#include "jx/lax.h"
#include "transforms/ad_util.h"
#include "transforms/jvp.h"
#include "transforms/staging.h"

namespace jx::detail {

std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const FlatFn& f, std::span<const Array> primals,
                                                           std::span<const Array> tangents, std::string_view name) {
  if (primals.size() != tangents.size())
    fail(name, "got ", tangents.size(), " tangents for ", primals.size(), " primals");
  JvpTrace trace{std::string(name)};
  std::vector<Array> in;
  in.reserve(primals.size());
  for (size_t i = 0; i < primals.size(); ++i) {
    const Array& p = primals[i];
    const Array& t = tangents[i];
    if (t.valid() && (t.shape() != p.shape() || (has_tangent_space(p.dtype()) && t.dtype() != p.dtype())))
      fail(name, "tangent ", i, " has type ", t.aval().str(), " but its primal is ", p.aval().str(),
           "; a tangent must have the primal's shape and dtype");
    in.push_back(trace.pack(p, t));
  }
  std::vector<Array> outs;
  {
    TraceScope scope(&trace);
    outs = f(in);
  }
  trace.kill();
  std::vector<Array> primals_out, tangents_out;
  for (const Array& o : outs) {
    auto [p, t] = trace.unpack(o);
    Aval ta{p.shape(), p.dtype(), false};
    tangents_out.push_back(ad::instantiate(t, ta));
    primals_out.push_back(std::move(p));
  }
  return {std::move(primals_out), std::move(tangents_out)};
}

ClosedJaxpr make_jaxpr_flat(const FlatFn& f, std::span<const Aval> in_avals) {
  return stage_flat(f, in_avals, "make_jaxpr");
}

void check_differentiable(std::string_view op, std::span<const Array> leaves) {
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].valid()) fail(op, "argument leaf ", i, " is a null jx::Array");
    if (!is_inexact(leaves[i].dtype()))
      fail(op, "input leaf ", i, " has type ", leaves[i].aval().str(),
           "; differentiation needs floating or complex inputs (convert with astype, or leave the argument out "
           "of argnums)");
  }
}

void check_scalar_output(std::string_view op, const Array& out) {
  if (out.ndim() != 0)
    fail(op, "requires a scalar (0-d) output, but the function returned ", out.aval().str(),
         ". Reduce it (jnp::sum), or use jx::vjp / jx::jacrev for non-scalar outputs");
  if (!is_floating(out.dtype()))
    fail(op, "requires a real floating-point output, but the function returned ", out.aval().str(),
         is_complex(out.dtype()) ? ". For complex outputs use jx::vjp" : "");
}

Array ones_like_scalar(const Array& x) { return scalar_of(x.dtype(), 1.0); }

Array standard_basis(const Aval& aval) {
  int64_t n = aval.size();
  Shape shape{n};
  shape.insert(shape.end(), aval.shape.begin(), aval.shape.end());
  // eye(n) as (iota == iota^T), converted, then reshaped to (n, *shape).
  Array rows = lax::broadcasted_iota(DType::Int32, {n, n}, 0);
  Array cols = lax::broadcasted_iota(DType::Int32, {n, n}, 1);
  Array eye = lax::convert_element_type(lax::eq(rows, cols), aval.dtype);
  return lax::reshape(eye, shape);
}

Array jacobian_from_rows(const Array& rows, const Shape& out_shape, const Shape& in_shape) {
  // rows: (size(out), *in_shape) -> out_shape + in_shape.
  Shape shape = out_shape;
  shape.insert(shape.end(), in_shape.begin(), in_shape.end());
  return lax::reshape(rows, shape);
}

Array jacobian_from_cols(const Array& cols, const Shape& out_shape, const Shape& in_shape) {
  // cols: (size(in), *out_shape) -> out_shape + in_shape: move the leading axis last.
  std::vector<int64_t> perm;
  for (int64_t i = 1; i < cols.ndim(); ++i) perm.push_back(i);
  perm.push_back(0);
  Array moved = lax::transpose(cols, perm);
  Shape shape = out_shape;
  shape.insert(shape.end(), in_shape.begin(), in_shape.end());
  return lax::reshape(moved, shape);
}

namespace {

// Zeros of shape out_shape + in_shape: a jacobian block no basis vector reaches (an empty
// input or output).
Array zero_block(DType dtype, const Shape& out_shape, const Shape& in_shape) {
  Shape shape = out_shape;
  shape.insert(shape.end(), in_shape.begin(), in_shape.end());
  return lax::broadcast_in_dim(scalar_of(dtype, 0.0), shape, {});
}

// Rows [offset, offset + n) of x along axis 0.
Array rows_of(const Array& x, int64_t offset, int64_t n) {
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), limit(x.shape().begin(), x.shape().end());
  start[0] = offset;
  limit[0] = offset + n;
  return lax::slice(x, start, limit);
}

}  // namespace

FlatJacobian jacfwd_flat(const FlatFn& f, std::span<const Array> primals, const std::function<size_t()>& num_main,
                         std::string_view name) {
  // The joint standard basis of all inputs (JAX's _std_basis): leaf j gets the columns
  // [offset_j, offset_j + n_j) of a (total, total) identity, shaped (total, *shape_j), so one
  // vmap over `total` pushes every basis vector through a single trace of f.
  std::vector<int64_t> offsets;
  int64_t total = 0;
  for (const Array& p : primals) {
    offsets.push_back(total);
    total += p.size();
  }
  FlatJacobian jac;
  size_t m = 0;
  if (total == 0) {  // no basis vector: f runs once, every block is empty
    auto [outs, touts] = jvp_flat(f, primals, std::vector<Array>(primals.size()), name);
    m = num_main();
    for (size_t o = 0; o < m; ++o)
      for (const Array& p : primals) jac.blocks.push_back(zero_block(touts[o].dtype(), touts[o].shape(), p.shape()));
    jac.rest.assign(outs.begin() + static_cast<std::ptrdiff_t>(m), outs.end());
    return jac;
  }
  std::vector<Array> basis;
  for (size_t j = 0; j < primals.size(); ++j) {
    int64_t n = primals[j].size();
    Array rows = lax::broadcasted_iota(DType::Int64, {total, n}, 0);
    Array cols = lax::add(lax::broadcasted_iota(DType::Int64, {total, n}, 1),
                          lax::broadcast_in_dim(scalar<int64_t>(offsets[j]), {total, n}, {}));
    Shape shape{total};
    shape.insert(shape.end(), primals[j].shape().begin(), primals[j].shape().end());
    basis.push_back(lax::reshape(lax::convert_element_type(lax::eq(rows, cols), primals[j].dtype()), shape));
  }
  // The differentiated outputs' tangents, then the other outputs' values (unbatched, so
  // vmap broadcasts them; row 0 is the value).
  FlatFn pushforward = [&](std::span<const Array> t) {
    auto [outs, touts] = jvp_flat(f, primals, t, name);
    m = num_main();
    std::vector<Array> r(touts.begin(), touts.begin() + static_cast<std::ptrdiff_t>(m));
    r.insert(r.end(), outs.begin() + static_cast<std::ptrdiff_t>(m), outs.end());
    return r;
  };
  std::vector<std::optional<int64_t>> in_dims(primals.size(), 0), out_dims{0};
  std::vector<Array> stacks = vmap_flat(pushforward, basis, in_dims, out_dims, {});
  for (size_t o = 0; o < m; ++o) {
    Shape out_shape(stacks[o].shape().begin() + 1, stacks[o].shape().end());
    for (size_t j = 0; j < primals.size(); ++j)
      jac.blocks.push_back(
          jacobian_from_cols(rows_of(stacks[o], offsets[j], primals[j].size()), out_shape, primals[j].shape()));
  }
  for (size_t k = m; k < stacks.size(); ++k) {
    Shape shape(stacks[k].shape().begin() + 1, stacks[k].shape().end());
    jac.rest.push_back(lax::reshape(rows_of(stacks[k], 0, 1), shape));
  }
  return jac;
}

FlatJacobian jacrev_flat(const FlatFn& f, std::span<const Array> primals, const std::function<size_t()>& num_main,
                         std::string_view name) {
  Linearized lin = linearize_flat(f, primals, name);
  size_t m = num_main();
  FlatJacobian jac;
  for (size_t o = 0; o < m; ++o) {
    const Aval& out_aval = lin.primals_out[o].aval();
    if (out_aval.size() == 0) {  // no basis vector to pull back
      for (const Array& p : primals) jac.blocks.push_back(zero_block(p.dtype(), out_aval.shape, p.shape()));
      continue;
    }
    // One pullback per element of output o, batched: the cotangent stack is its basis.
    Array basis = standard_basis(out_aval);
    FlatFn pullback = [&](std::span<const Array> ct) {
      std::vector<Array> cts(lin.primals_out.size());
      cts[o] = ct[0];
      return transpose_linear(*lin.linear, cts);
    };
    std::vector<std::optional<int64_t>> zero{0};
    std::vector<Array> rows = vmap_flat(pullback, std::span<const Array>(&basis, 1), zero, zero, {});
    for (size_t j = 0; j < primals.size(); ++j)
      jac.blocks.push_back(jacobian_from_rows(rows[j], out_aval.shape, primals[j].shape()));
  }
  jac.rest.assign(lin.primals_out.begin() + static_cast<std::ptrdiff_t>(m), lin.primals_out.end());
  return jac;
}

}  // namespace jx::detail
