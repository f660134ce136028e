// Call inlining: call equations (kCall) are replaced by their bodies' equations
// (fresh variables, the body's inputs bound to the call's operands), nested calls too, so
// the later passes and fusion see one flat program.
#pragma once

#include <span>
#include <vector>

#include "jit/passes/pass.h"

namespace jx::compiler {

bool inline_calls(ClosedJaxpr& program, PassContext& ctx);
extern const Pass kInlineCallsPass;  // "inline_calls"

// Splices `body` applied to `operands` into `out`, as inlining a call of it would: every
// variable it defines gets a fresh id, its constvars become program's, nested calls are
// inlined too, and an operand or result whose type differs from the body's only in
// weak_type is converted. Returns the atoms holding the body's outputs, typed exactly as
// `result_avals`. Passes that replace an equation by lax code traced with
// make_jaxpr_flat splice it with this.
std::vector<Atom> splice_body(const ClosedJaxpr& body, const std::vector<Atom>& operands,
                              std::span<const Aval> result_avals, ClosedJaxpr& program, PassContext& ctx,
                              std::vector<Equation>& out);

}  // namespace jx::compiler
