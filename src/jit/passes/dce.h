// Dead code elimination: equations none of whose outputs is used (and which have no side
// effects) are removed, and so are constvars nothing reads, with their values.
#pragma once

#include "jit/passes/pass.h"

namespace jx::compiler {

bool eliminate_dead_code(ClosedJaxpr& program, PassContext& ctx);
extern const Pass kDcePass;  // "dce"

}  // namespace jx::compiler
