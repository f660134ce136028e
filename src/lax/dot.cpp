// dot_general: tensor contraction with batch dimensions (XLA's DotGeneral): its rules.
// Its CPU kernel (BLAS gemm or a blocked loop): src/backend/cpu/kernels/dot.cpp.
#include <algorithm>
#include <numeric>
#include <optional>

#include "jx/lax.h"
#include "lax/ad_rules.h"
#include "lax/batch_rules.h"
#include "lax/dot_params.h"
#include "lax/rules.h"

namespace jx::lax {
extern const Primitive dot_general_p;
namespace {

using dot_params::DotDims;
using dot_params::free_dims;
using dot_params::read_dims;

constexpr const char* kDot = "dot_general";

void check_dims(const char* side, const Aval& a, const std::vector<int64_t>& batch,
                const std::vector<int64_t>& contract) {
  std::vector<int64_t> seen;
  for (const auto* dims : {&batch, &contract}) {
    for (int64_t d : *dims) {
      if (d < 0 || d >= a.ndim())
        detail::fail(kDot, side, " dimension ", d, " is out of bounds for ", side, " of shape ",
                     detail::shape_str(a.shape));
      if (std::find(seen.begin(), seen.end(), d) != seen.end())
        detail::fail(kDot, side, " dimension ", d, " is repeated in the batch and contracting dimensions (",
                     side, "_batch_dimensions=", detail::shape_str(batch), ", ", side,
                     "_contracting_dimensions=", detail::shape_str(contract), ")");
      seen.push_back(d);
    }
  }
}

// JAX's compatible (input, preferred_element_type) kinds.
bool preferred_type_ok(DType in, DType preferred) {
  const bool in_int = is_integer(in) || is_bool(in);
  if (in_int) return is_integer(preferred) || is_bool(preferred) || is_floating(preferred);
  if (is_floating(in)) return is_floating(preferred);
  return is_complex(preferred);
}

std::vector<Aval> dot_general_abstract_eval(std::span<const Aval> in, const Params& p) {
  rules::check_arity(kDot, in, 2);
  const Aval& lhs = in[0];
  const Aval& rhs = in[1];
  const DotDims d = read_dims(p);
  if (d.lhs_contract.size() != d.rhs_contract.size())
    detail::fail(kDot, "lhs_contracting_dimensions ", detail::shape_str(d.lhs_contract),
                 " and rhs_contracting_dimensions ", detail::shape_str(d.rhs_contract),
                 " must have the same length");
  if (d.lhs_batch.size() != d.rhs_batch.size())
    detail::fail(kDot, "lhs_batch_dimensions ", detail::shape_str(d.lhs_batch), " and rhs_batch_dimensions ",
                 detail::shape_str(d.rhs_batch), " must have the same length");
  check_dims("lhs", lhs, d.lhs_batch, d.lhs_contract);
  check_dims("rhs", rhs, d.rhs_batch, d.rhs_contract);
  for (size_t i = 0; i < d.lhs_batch.size(); ++i)
    if (lhs.shape[d.lhs_batch[i]] != rhs.shape[d.rhs_batch[i]])
      detail::fail(kDot, "batch dimensions must have equal sizes: lhs_batch_dimensions=",
                   detail::shape_str(d.lhs_batch), ", rhs_batch_dimensions=", detail::shape_str(d.rhs_batch),
                   " for shapes ", detail::shape_str(lhs.shape), " and ", detail::shape_str(rhs.shape));
  for (size_t i = 0; i < d.lhs_contract.size(); ++i)
    if (lhs.shape[d.lhs_contract[i]] != rhs.shape[d.rhs_contract[i]])
      detail::fail(kDot, "contracting dimensions must have equal sizes: lhs_contracting_dimensions=",
                   detail::shape_str(d.lhs_contract), ", rhs_contracting_dimensions=",
                   detail::shape_str(d.rhs_contract), " for shapes ", detail::shape_str(lhs.shape), " and ",
                   detail::shape_str(rhs.shape));
  if (lhs.dtype != rhs.dtype)
    detail::fail(kDot, "operands must have the same dtype, got ", lhs.str(), " and ", rhs.str());
  DType out_dtype = lhs.dtype;
  bool weak = lhs.weak_type && rhs.weak_type;
  if (p.has("preferred_element_type")) {
    DType preferred = p.get_dtype("preferred_element_type");
    if (!preferred_type_ok(lhs.dtype, preferred))
      detail::fail(kDot, "preferred_element_type ", dtype_name(preferred), " is incompatible with ",
                   dtype_name(lhs.dtype),
                   " operands; compatible kinds are (integer, integer), (integer, floating), "
                   "(floating, floating) and (complex, complex)");
    out_dtype = preferred;
    weak = false;
  }
  Shape out;
  for (int64_t b : d.lhs_batch) out.push_back(lhs.shape[b]);
  for (int64_t f : free_dims(lhs.ndim(), d.lhs_batch, d.lhs_contract)) out.push_back(lhs.shape[f]);
  for (int64_t f : free_dims(rhs.ndim(), d.rhs_batch, d.rhs_contract)) out.push_back(rhs.shape[f]);
  return {Aval{std::move(out), out_dtype, weak}};
}

// ---- transformation rules ----

Params with_dims(const Params& p, const DotDims& d) {
  Params q = p;
  q.set("lhs_contracting_dimensions", d.lhs_contract);
  q.set("rhs_contracting_dimensions", d.rhs_contract);
  q.set("lhs_batch_dimensions", d.lhs_batch);
  q.set("rhs_batch_dimensions", d.rhs_batch);
  return q;
}

std::vector<int64_t> argsort(const std::vector<int64_t>& v) {
  std::vector<int64_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return v[a] < v[b]; });
  return idx;
}

// Cotangent of lhs (x) given the other operand y (JAX's _dot_general_transpose_lhs):
// contract ct with y over y's free dims, then permute into x's dim order. With
// swap_ans the roles are mirrored (the rhs case: y's free dims come first in ct).
Array transpose_lhs(const Array& ct_in, const Aval& x, const Array& y, const DotDims& d, bool swap_ans) {
  const auto x_kept = free_dims(x.ndim(), d.lhs_batch, d.lhs_contract);
  const auto y_kept = free_dims(y.ndim(), d.rhs_batch, d.rhs_contract);
  const int64_t nb = static_cast<int64_t>(d.lhs_batch.size());
  const int64_t nx = static_cast<int64_t>(x_kept.size()), ny = static_cast<int64_t>(y_kept.size());
  std::vector<int64_t> ans_batch(static_cast<size_t>(nb)), ans_y(static_cast<size_t>(ny));
  std::iota(ans_batch.begin(), ans_batch.end(), 0);
  std::iota(ans_y.begin(), ans_y.end(), swap_ans ? nb : nb + nx);
  // The ct has the operands' dtype (a preferred_element_type only widened the output).
  Array ct = ct_in.dtype() == y.dtype() ? ct_in : convert_element_type(ct_in, y.dtype());
  Array prod = dot_general(ct, y, DotDimensionNumbers{ans_y, y_kept, ans_batch, d.rhs_batch});
  // prod's dims: x's batch, x's kept, x's contracting dims ordered as y's contracting.
  std::vector<int64_t> order = d.lhs_batch;
  order.insert(order.end(), x_kept.begin(), x_kept.end());
  for (int64_t i : argsort(d.rhs_contract)) order.push_back(d.lhs_contract[i]);
  Array out = transpose(prod, argsort(order));
  return out.dtype() == x.dtype ? out : convert_element_type(out, x.dtype);
}

DotDims swapped(const DotDims& d) { return {d.rhs_contract, d.lhs_contract, d.rhs_batch, d.lhs_batch}; }

std::vector<Array> dot_general_transpose(std::span<const Array> cts, std::span<const TransposeOperand> ops,
                                         const Params& p) {
  if (ops[0].is_linear() && ops[1].is_linear())
    detail::fail(kDot, "is not linear in both operands at once (", ops[0].aval.str(), " . ", ops[1].aval.str(), ")");
  std::vector<Array> out(2);
  if (!cts[0].valid()) return out;
  const DotDims d = read_dims(p);
  if (ops[0].is_linear()) out[0] = transpose_lhs(cts[0], ops[0].aval, ops[1].value, d, false);
  else out[1] = transpose_lhs(cts[0], ops[1].aval, ops[0].value, swapped(d), true);
  return out;
}

JvpResult dot_general_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& p) {
  std::vector<Array> out = jx::bind(dot_general_p, primals, p);
  Array t;
  if (tangents[0].valid()) t = jx::bind(dot_general_p, std::vector<Array>{tangents[0], primals[1]}, p)[0];
  if (tangents[1].valid())
    t = ad::add_tangents(t, jx::bind(dot_general_p, std::vector<Array>{primals[0], tangents[1]}, p)[0]);
  return {out, {t}};
}

// Renumbers an operand's dims around a batch axis inserted at `b`.
std::vector<int64_t> around(std::vector<int64_t> dims, int64_t b) {
  for (int64_t& x : dims)
    if (x >= b) ++x;
  return dims;
}

// vmap: the batch axes stay where they are. Both mapped: they become a new leading
// batch dimension of the product. One mapped: it is a free dim of that operand, and the
// output batch axis is wherever that free dim lands.
BatchResult dot_general_batch(std::span<const Array> args, std::span<const int64_t> dims, const Params& p,
                              const BatchAxis&) {
  const DotDims d = read_dims(p);
  const int64_t lb = dims[0], rb = dims[1];
  DotDims n = d;
  if (lb != kNotMapped) {
    n.lhs_contract = around(d.lhs_contract, lb);
    n.lhs_batch = around(d.lhs_batch, lb);
  }
  if (rb != kNotMapped) {
    n.rhs_contract = around(d.rhs_contract, rb);
    n.rhs_batch = around(d.rhs_batch, rb);
  }
  int64_t out_dim = 0;
  if (lb != kNotMapped && rb != kNotMapped) {
    n.lhs_batch.insert(n.lhs_batch.begin(), lb);
    n.rhs_batch.insert(n.rhs_batch.begin(), rb);
  } else if (lb != kNotMapped) {
    auto kept = free_dims(args[0].ndim(), n.lhs_batch, n.lhs_contract);
    out_dim = static_cast<int64_t>(n.lhs_batch.size() + (std::find(kept.begin(), kept.end(), lb) - kept.begin()));
  } else {
    auto lhs_kept = free_dims(args[0].ndim(), n.lhs_batch, n.lhs_contract);
    auto kept = free_dims(args[1].ndim(), n.rhs_batch, n.rhs_contract);
    out_dim = static_cast<int64_t>(n.lhs_batch.size() + lhs_kept.size() +
                                   (std::find(kept.begin(), kept.end(), rb) - kept.begin()));
  }
  std::vector<Array> in(args.begin(), args.end());
  return {jx::bind(dot_general_p, in, with_dims(p, n)), {out_dim}};
}

}  // namespace

const Primitive dot_general_p("dot_general", {.traits = kLinear,
                                              .abstract_eval = dot_general_abstract_eval,
                                              .jvp = dot_general_jvp,
                                              .transpose = dot_general_transpose,
                                              .batch = dot_general_batch});

Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dnums,
                  std::optional<DType> preferred_element_type) {
  Params p{{"lhs_contracting_dimensions", dnums.lhs_contracting},
           {"rhs_contracting_dimensions", dnums.rhs_contracting},
           {"lhs_batch_dimensions", dnums.lhs_batch},
           {"rhs_batch_dimensions", dnums.rhs_batch}};
  if (preferred_element_type) p.set("preferred_element_type", *preferred_element_type);
  return bind1(dot_general_p, {lhs, rhs}, p);
}

Array dot(const Array& lhs, const Array& rhs) {
  const int lr = lhs.ndim(), rr = rhs.ndim();
  if (lr < 1 || lr > 2 || rr < 1 || rr > 2)
    detail::fail("dot", "expects operands of rank 1 or 2, got ", lhs.aval().str(), " and ", rhs.aval().str());
  return dot_general(lhs, rhs, DotDimensionNumbers{{lr - 1}, {0}, {}, {}});
}

}  // namespace jx::lax
