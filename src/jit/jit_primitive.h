// The primitives a jitted call becomes under a transformation (or inside another jit),
// and the helpers jit.cpp shares with them.
//
//   jit[jaxpr name]                    a call of a staged program (constants are leading
//                                      operands); compiled when it runs eagerly
//   linear_jit[jaxpr name num_residuals]  the same, linear in its operands after the
//                                      first num_residuals: the tangent half of a jitted
//                                      function, which reverse mode transposes
//
// Differentiating jit keeps the work compiled (JAX's partial evaluation of pjit): the
// jvp program of the body is split into a known half (primal outputs and the residuals
// the tangents need: one compiled `jit`) and a linear half (`linear_jit`). Under grad the
// known half runs now, natively; the linear half is recorded, and its transpose is
// itself staged and compiled. Splits and transposes are cached per body.
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
