// Call inlining: call equations (kCall) are replaced by their bodies' equations
// (fresh variables, the body's inputs bound to the call's operands), nested calls too, so
// the later passes and fusion see one flat program.
#pragma once

#include <optional>
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

// A body to put in place of one equation, applied to atoms of the program as it was when
// the replacement was decided.
struct Replacement {
  ClosedJaxpr body;
  std::vector<Atom> operands;
};
// Replaces each equation i of `program` that has replacements[i] by its body (splice_body;
// the equation's one result renamed to the body's wherever it is read) and keeps the
// others. The replacements are decided on the program first (a matcher points into its
// equations), then applied at once. Returns whether any was.
bool splice_replacements(ClosedJaxpr& program, std::vector<std::optional<Replacement>> replacements,
                         PassContext& ctx);

}  // namespace jx::compiler
