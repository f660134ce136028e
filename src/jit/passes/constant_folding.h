// Constant folding: an equation whose operands are all known (literals, constvars with
// values) is evaluated now; a 0-d result becomes a literal, a larger one a new constvar.
#pragma once

#include <cstdint>

#include "jit/passes/pass.h"

namespace jx::compiler {

// Results with more elements than this are not folded: the constant would bloat the
// program (and its memory) for a computation that is cheap to redo at run time.
inline constexpr int64_t kMaxFoldedElements = 1'000'000;

bool fold_constants(ClosedJaxpr& program, PassContext& ctx);
extern const Pass kConstantFoldingPass;  // "constant_folding"

}  // namespace jx::compiler
