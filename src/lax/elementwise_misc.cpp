// select_n, the type-changing primitives convert_element_type and bitcast_convert_type,
// and stop_gradient: their rules. Their CPU kernels: src/backend/cpu/kernels/elementwise_misc.cpp.
#include "jx/lax.h"
#include "jx/transforms.h"
#include "lax/ad_rules.h"
#include "lax/batch_rules.h"
#include "lax/elemental.h"
#include "lax/rules.h"
#include "transforms/ad_util.h"

namespace jx::lax {
namespace {

// ---- select_n ----

// select_n(which, *cases): which is bool (at most two cases) or an integer, and is a
// scalar or has the cases' shape; the cases share one shape and dtype.
std::vector<Aval> select_n_rule(std::span<const Aval> in, const Params&) {
  if (in.size() < 2)
    detail::fail("select_n", "expected a predicate and at least one case, got ", in.size(), " operands");
  const Aval& which = in[0];
  std::span<const Aval> cases = in.subspan(1);
  if (!is_bool(which.dtype) && !is_integer(which.dtype))
    detail::fail("select_n", "which must be bool or an integer dtype, got ", which.str());
  if (is_bool(which.dtype) && cases.size() > 2)
    detail::fail("select_n", "a bool predicate selects between at most 2 cases, got ", cases.size());
  for (const Aval& c : cases) {
    if (c.shape != cases[0].shape || c.dtype != cases[0].dtype)
      detail::fail("select_n", "cases must have the same shape and dtype, got ", rules::avals_str(cases));
  }
  if (which.ndim() != 0 && which.shape != cases[0].shape)
    detail::fail("select_n", "which must be a scalar or have the cases' shape ", detail::shape_str(cases[0].shape),
                 ", got ", which.str());
  return {Aval{cases[0].shape, cases[0].dtype, rules::all_weak(cases)}};
}

// ---- convert_element_type ----

std::vector<Aval> convert_element_type_rule(std::span<const Aval> in, const Params& params) {
  rules::check_arity("convert_element_type", in, 1);
  bool weak = params.has("weak_type") && params.get_bool("weak_type");
  return {Aval{in[0].shape, params.get_dtype("new_dtype"), weak}};
}

// ---- bitcast_convert_type ----

// Same width: same shape. A narrower target adds a trailing axis of the width ratio; a
// wider one consumes a trailing axis of that size (XLA's rule).
std::vector<Aval> bitcast_convert_type_rule(std::span<const Aval> in, const Params& params) {
  rules::check_arity("bitcast_convert_type", in, 1);
  const Aval& x = in[0];
  DType to = params.get_dtype("new_dtype");
  if (to == x.dtype) return {Aval{x.shape, to, false}};
  for (DType d : {x.dtype, to}) {
    if (is_bool(d) || is_complex(d))
      detail::fail("bitcast_convert_type", "does not support bool or complex dtypes unless they are unchanged; got ",
                   x.str(), " to ", dtype_name(to));
  }
  int64_t from_size = itemsize(x.dtype), to_size = itemsize(to);
  Shape shape = x.shape;
  if (from_size > to_size) {
    shape.push_back(from_size / to_size);
  } else if (from_size < to_size) {
    int64_t ratio = to_size / from_size;
    if (shape.empty() || shape.back() != ratio)
      detail::fail("bitcast_convert_type", "converting ", x.str(), " to the wider ", dtype_name(to),
                   " needs a last axis of size ", ratio, ", got shape ", detail::shape_str(x.shape));
    shape.pop_back();
  }
  return {Aval{std::move(shape), to, false}};
}

// ---- differentiation and batching rules ----

// select_n is linear in its cases: the tangent selects among the cases' tangents.
JvpRule select_n_jvp(const Primitive& p) {
  return [&p](std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
    std::vector<Array> out = jx::bind(p, primals, params);
    Aval tangent_aval{out[0].shape(), out[0].dtype(), false};
    std::vector<Array> ts{primals[0]};  // the predicate itself, not its (absent) tangent
    for (size_t i = 1; i < primals.size(); ++i) ts.push_back(ad::instantiate(tangents[i], tangent_aval));
    return JvpResult{out, jx::bind(p, ts, params)};
  };
}

// The cotangent goes to the selected case, zeros to the others; the predicate is never
// linear (it is bool or integer).
std::vector<Array> select_n_transpose(const Primitive& p, std::span<const Array> cts,
                                      std::span<const TransposeOperand> operands, const Params& params) {
  if (operands[0].is_linear())
    detail::fail("select_n", "is not linear in its predicate ", operands[0].aval.str());
  std::vector<Array> out(operands.size());
  if (!cts[0].valid()) return out;
  const Array& ct = cts[0];
  const size_t num_cases = operands.size() - 1;
  Array zeros = ad::zeros(Aval{ct.shape(), ct.dtype(), false});
  for (size_t i = 0; i < num_cases; ++i) {
    if (!operands[i + 1].is_linear()) continue;
    std::vector<Array> in{operands[0].value};
    for (size_t j = 0; j < num_cases; ++j) in.push_back(j == i ? ct : zeros);
    out[i + 1] = jx::bind(p, in, params)[0];
  }
  return out;
}

// A 0-d predicate that is not mapped stays 0-d (one case wins for the whole batch); every
// other combination is elementwise batching, which broadcasts a mapped 0-d predicate.
BatchRule select_n_batch(const Primitive& p) {
  BatchRule elementwise = batch_rules::elementwise(p);
  return [&p, elementwise](std::span<const Array> args, std::span<const int64_t> dims, const Params& params,
                           const BatchAxis& axis) {
    if (dims[0] != kNotMapped || args[0].ndim() != 0) return elementwise(args, dims, params, axis);
    int64_t target = kNotMapped;
    for (size_t i = 1; i < args.size() && target == kNotMapped; ++i) target = dims[i];
    std::vector<Array> in{args[0]};
    for (size_t i = 1; i < args.size(); ++i) {
      if (dims[i] != kNotMapped) {
        in.push_back(batch_rules::move_axis(args[i], dims[i], target));
      } else {
        Shape full = args[i].shape();
        full.insert(full.begin() + target, axis.size);
        std::vector<int64_t> bdims;
        for (int64_t k = 0; k < args[i].ndim(); ++k) bdims.push_back(k < target ? k : k + 1);
        in.push_back(broadcast_in_dim(args[i], full, bdims));
      }
    }
    return BatchResult{jx::bind(p, in, params), {target}};
  };
}

// Converting to an inexact dtype carries the tangent along; to an integer or bool it
// has none.
JvpRule convert_element_type_jvp(const Primitive& p) {
  return [&p](std::span<const Array> primals, std::span<const Array> tangents, const Params& params) {
    std::vector<Array> out = jx::bind(p, primals, params);
    DType to = params.get_dtype("new_dtype");
    if (!is_inexact(to)) return JvpResult{out, {Array()}};
    return JvpResult{out, {convert_element_type(tangents[0], to)}};
  };
}

// The cotangent converts back to the operand's dtype (none for an integer operand).
std::vector<Array> convert_element_type_transpose(std::span<const Array> cts,
                                                  std::span<const TransposeOperand> operands, const Params&) {
  std::vector<Array> out(1);
  if (cts[0].valid() && is_inexact(operands[0].aval.dtype))
    out[0] = convert_element_type(cts[0], operands[0].aval.dtype);
  return out;
}

// A narrower target appends an axis and a wider one consumes the last axis: the batch
// axis stays put unless it is that last axis, which then moves to the front.
BatchRule bitcast_convert_type_batch(const Primitive& p) {
  return [&p](std::span<const Array> args, std::span<const int64_t> dims, const Params& params, const BatchAxis&) {
    Array x = args[0];
    int64_t d = dims[0];
    bool widens = itemsize(params.get_dtype("new_dtype")) > itemsize(x.dtype());
    if (widens && d == x.ndim() - 1) {
      x = batch_rules::move_axis(x, d, 0);
      d = 0;
    }
    return BatchResult{jx::bind(p, std::span<const Array>(&x, 1), params), {d}};
  };
}

// ---- stop_gradient ----

std::vector<Aval> stop_gradient_rule(std::span<const Aval> in, const Params&) {
  rules::check_arity("stop_gradient", in, 1);
  return {in[0]};
}

}  // namespace

using elemental::ElementalArgs;
using elemental::ScalarBuilder;

extern const Primitive select_n_p, convert_element_type_p, bitcast_convert_type_p, stop_gradient_p;

// The predicate may be 0-d, so operands need not share one shape: not kElementwise.
// Linear in the cases (JAX transposes it into the selected case).
const Primitive select_n_p("select_n", {.traits = kLinear, .num_outputs = 1,
                                        .abstract_eval = select_n_rule,
                                        .jvp = select_n_jvp(select_n_p),
                                        .transpose = [](std::span<const Array> cts,
                                                        std::span<const TransposeOperand> ops, const Params& params) {
                                          return select_n_transpose(select_n_p, cts, ops, params);
                                        },
                                        .batch = select_n_batch(select_n_p),
                                        .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                          return elemental::select_n(b, x[0], x.dtypes[0], x.x.subspan(1));
                                        }}});
const Primitive convert_element_type_p("convert_element_type",
                                       {.traits = kElementwise | kLinear,
                                        .abstract_eval = convert_element_type_rule,
                                        .jvp = convert_element_type_jvp(convert_element_type_p),
                                        .transpose = convert_element_type_transpose,
                                        .batch = batch_rules::elementwise(convert_element_type_p),
                                        .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                          return b.convert(x[0], x.in(), x.out);
                                        }, .cost = 0}});
// Native kernels compute the same-width case (one element to one element; the fusion
// pass takes only equations whose operands have the result's shape); the others, which
// add or consume an axis, run as runtime calls.
const Primitive bitcast_convert_type_p("bitcast_convert_type",
                                       {.traits = kNotDifferentiable,
                                        .abstract_eval = bitcast_convert_type_rule,
                                        .batch = bitcast_convert_type_batch(bitcast_convert_type_p),
                                        .lowering = {.elemental = [](ScalarBuilder& b, const ElementalArgs& x) {
                                          return b.bitcast(x[0], x.out);
                                        }, .cost = 0}});
// The identity with derivative zero. Its jvp and batching rules bind it again on the
// trace below, so outer transformations (grad of grad, grad of vmap) still see it.
const Primitive stop_gradient_p("stop_gradient",
                                {.traits = kElementwise,
                                 .abstract_eval = stop_gradient_rule,
                                 // The identity, on every platform (no kernel).
                                 .impl = [](std::span<const Array> in, const Params&,
                                            std::span<const Aval>) { return std::vector<Array>{in[0]}; },
                                 .jvp = [](std::span<const Array> primals, std::span<const Array>,
                                           const Params& params) {
                                   return JvpResult{jx::bind(stop_gradient_p, primals, params), {Array()}};
                                 },
                                 .batch = batch_rules::elementwise(stop_gradient_p),
                                 .lowering = {.elemental = [](ScalarBuilder&, const ElementalArgs& x) {
                                   return x[0];
                                 }}});

Array select_n(const Array& which, const std::vector<Array>& cases) {
  std::vector<Array> operands;
  operands.reserve(cases.size() + 1);
  operands.push_back(which);
  operands.insert(operands.end(), cases.begin(), cases.end());
  return jx::bind(select_n_p, operands)[0];
}

Array convert_element_type(const Array& x, DType dtype, bool weak_type) {
  if (x.dtype() == dtype && x.weak_type() == weak_type) return x;  // nothing to do (JAX binds nothing either)
  return bind1(convert_element_type_p, {x}, {{"new_dtype", dtype}, {"weak_type", weak_type}});
}

Array bitcast_convert_type(const Array& x, DType dtype) {
  return bind1(bitcast_convert_type_p, {x}, {{"new_dtype", dtype}});
}

}  // namespace jx::lax

namespace jx {

Array stop_gradient(const Array& x) {
  if (!is_inexact(x.dtype())) return x;  // integers and bools carry no tangent anyway
  return bind1(lax::stop_gradient_p, {x});
}

}  // namespace jx
