// Common subexpression elimination: an equation computing what an earlier one already
// computed (same primitive, parameters and operands) is dropped and its outputs renamed
// to the earlier one's. Constvars holding the very same array are merged too.
#pragma once

#include "jit/passes/pass.h"

namespace jx::compiler {

bool eliminate_common_subexpressions(ClosedJaxpr& program, PassContext& ctx);
extern const Pass kCsePass;  // "cse"

}  // namespace jx::compiler
