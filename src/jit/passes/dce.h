// Dead code elimination: equations none of whose outputs is used (and which have no side
// effects) are removed, and so are constvars nothing reads, with their values. Calls
// prune their bodies (their dce rule): a call's unused outputs and the work only they
// needed go too. The program's inputs and outputs stay as they are.
#pragma once

#include "jit/passes/pass.h"

namespace jx::compiler {

bool eliminate_dead_code(ClosedJaxpr& program, PassContext& ctx);
extern const Pass kDcePass;  // "dce"

}  // namespace jx::compiler
