// The flat entry points of jvp, make_jaxpr and the jacobian helpers; linearize/transpose
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

}  // namespace jx::detail
