// The primitives a jitted call becomes under a transformation (or inside another jit),
// and the helpers jit.cpp shares with them.
//
//   jit[jaxpr name]                    a call of a staged program (constants are leading
//                                      operands); compiled when it runs eagerly
//   linear_jit[jaxpr name num_residuals]  the same, linear in its operands after the
//                                      first num_residuals: the tangent half of a jitted
//                                      function, which reverse mode transposes
//
// Every rule of both is the jaxpr transformation layer (src/transforms/jaxpr_transforms.h)
// applied to the body, memoized per body (src/transforms/call_rules.h): jvp is a jit of
// jvp_jaxpr(body); partial evaluation (under linearize) splits that call with
// partial_eval_jaxpr into a known `jit` (primal outputs and residuals, run now, natively)
// and a `linear_jit`; the transpose of linear_jit is a jit of transpose_jaxpr(body); vmap
// is a call of batch_jaxpr(body); dce prunes the body with dce_jaxpr. So grad(jit(f))
// stays compiled end to end.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "jx/jaxpr.h"
#include "jx/transforms.h"

namespace jx::compiler {
class Executable;
}

namespace jx::detail {

const Primitive& jit_primitive();

// f staged over `avals` into a sub-program with its constants lifted to leading inputs
// (returned in consts_out): the body of a `jit` equation. `name` names the trace in
// concretization errors.
JaxprRef stage_body(const FlatFn& f, std::span<const Aval> avals, std::vector<Array>* consts_out);

// The executable of a body, compiled once per body (process-wide cache keyed on its identity).
std::shared_ptr<const compiler::Executable> body_executable(const JaxprRef& body, const std::string& name);

}  // namespace jx::detail
