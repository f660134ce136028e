// Call inlining: call equations (kCall) are replaced by their bodies' equations
// (fresh variables, the body's inputs bound to the call's operands), nested calls too, so
// the later passes and fusion see one flat program.
#pragma once

#include "jit/passes/pass.h"

namespace jx::compiler {

bool inline_calls(ClosedJaxpr& program, PassContext& ctx);
extern const Pass kInlineCallsPass;  // "inline_calls"

}  // namespace jx::compiler
