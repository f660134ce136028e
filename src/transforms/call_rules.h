// Rules shared by the primitives that call a sub-program held in their `jaxpr` param
// (closed_call, jit, linear_jit, fusion, custom_jvp_call): the shape rule, and the
// jaxpr-level transformations (jaxpr_transforms.h) applied to a body, memoized per body
// so a transformed body keeps its identity (and its compiled executable) across calls.
// A call primitive's rules are then a few lines each: see closed_call.cpp.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "jx/jaxpr.h"
#include "jx/primitive.h"

namespace jx::detail {

// The `jaxpr` param of a call primitive `prim`; raises if it is null.
const JaxprRef& call_body(const Params& params, std::string_view prim);
// The shape rule every call primitive shares: the body has no constvars and takes
// operands of exactly these types; its outputs' types.
std::vector<Aval> call_out_avals(std::string_view prim, std::span<const Aval> in, const Params& params);

// ---- the layer applied to a body (each made once per body and flags) ----
// A transformed body with its constants lifted to leading inputs (values in `consts`).
struct TransformedBody {
  JaxprRef body;
  std::vector<Array> consts;
  std::vector<bool> out_flags;  // jvp: out_nonzero; batching: out_batched
};
// jvp_jaxpr(body): [consts..., primals..., nonzero tangents...] -> [outs..., nonzero tangent outs...];
// `instantiate` (per output, or empty: none) as jvp_jaxpr's.
std::shared_ptr<const TransformedBody> jvp_of_body(const JaxprRef& body, const std::vector<bool>& nonzero,
                                                   const std::vector<bool>& instantiate = {});
// The operands of a call of a jvp_of_body program: its consts, the primals, the nonzero tangents.
std::vector<Array> jvp_call_operands(const TransformedBody& jvp, std::span<const Array> primals,
                                     std::span<const Array> tangents);
// That call's outputs as primal outputs and tangents (invalid where out_flags is false).
JvpResult split_jvp_outputs(std::vector<Array> outs, const std::vector<bool>& out_flags);
// batch_jaxpr(body); batched outputs have their batch axis at 0. `instantiate`: per output
// (or empty: none), whether an unbatched output is broadcast to the batch anyway.
std::shared_ptr<const TransformedBody> batch_of_body(const JaxprRef& body, std::span<const int64_t> dims,
                                                     const BatchAxis& axis, const std::vector<bool>& instantiate);
std::shared_ptr<const TransformedBody> batch_of_body(const JaxprRef& body, std::span<const int64_t> dims,
                                                     const BatchAxis& axis, bool instantiate_all);
// transpose_jaxpr(body): [consts..., non-linear operands..., nonzero cts...] -> a ct per linear operand
std::shared_ptr<const TransformedBody> transpose_of_body(const JaxprRef& body, const std::vector<bool>& linear,
                                                         const std::vector<bool>& ct_nonzero);
// partial_eval_jaxpr(body), as two bodies with their constants leading.
struct SplitBody {
  JaxprRef known, unknown;
  std::vector<Array> known_consts, unknown_consts;
  std::vector<bool> out_unknowns;
  size_t num_residuals = 0;
};
// `instantiate` (per output, or empty: none) as partial_eval_jaxpr's.
std::shared_ptr<const SplitBody> partial_eval_of_body(const JaxprRef& body, const std::vector<bool>& unknowns,
                                                      const std::vector<bool>& instantiate = {});
// A partial_eval rule's answer for a call split by partial_eval_of_body: `known` and
// `unknown` called with the halves (their `jaxpr` param set; the rest of the params given).
PartialEvalSplit split_call(const SplitBody& split, const Primitive& known, Params known_params,
                            const Primitive& unknown, Params unknown_params);
// A partial_eval rule's answer when the application cannot split (cond's index or while's
// predicate is unknown): nothing runs now, the whole application is staged (JAX's
// default_process_primitive), every output unknown.
PartialEvalSplit stage_whole(const Primitive& p, const Params& params, size_t num_operands, size_t num_outputs);
// The dce rule of a call: dce_jaxpr(body) keeping the used outputs; the equation drops
// the outputs and operands the pruned body no longer has (and num_residuals follows).
DceEquationResult dce_of_call(const std::vector<bool>& used_outputs, Equation& eqn);
// A dce rule's last step: the equation keeps only the inputs and outputs flagged used.
void drop_unused_inputs_and_outputs(Equation& eqn, const std::vector<bool>& used_inputs,
                                    const std::vector<bool>& used_outputs);

// The body evaluated under jvp, inline: its primal outputs and (materialized) output tangents.
JvpResult jvp_of_call(const JaxprRef& body, std::span<const Array> primals, std::span<const Array> tangents);
// The body evaluated under vmap, inline; every output gets its batch axis at 0.
BatchResult batch_of_call(const JaxprRef& body, std::span<const Array> args, std::span<const int64_t> dims,
                          const BatchAxis& axis);

}  // namespace jx::detail
