// Algebraic simplification: local rewrites that are exact in IEEE arithmetic
// (x * 1 -> x, neg(neg(x)) -> x, reshape(reshape(x)) -> reshape(x), ...). Each rule is a
// small function in simplify.cpp; the list there says which rules exist and why each is
// exact. Equations a rule bypasses are left for dce.
#pragma once

#include "jit/passes/pass.h"

namespace jx::compiler {

bool simplify(ClosedJaxpr& program, PassContext& ctx);
extern const Pass kSimplifyPass;  // "simplify"

}  // namespace jx::compiler
