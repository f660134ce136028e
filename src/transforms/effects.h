// Whether an equation has effects: its primitive has kSideEffects, or it holds a
// sub-program (a loop body, a branch, a call) with such an equation somewhere inside.
// DCE, CSE and constant folding ask this, so a print inside a scan whose results are
// unused still runs, and two equal loops that print are not merged.
#pragma once

#include "jx/jaxpr.h"

namespace jx::detail {

bool has_effects(const Equation& e);
// Whether any equation of j (or of its sub-programs) has effects; memoized per
// sub-program, so a pass asking for each equation stays linear in the program's size.
bool has_effects(const Jaxpr& j);

}  // namespace jx::detail
