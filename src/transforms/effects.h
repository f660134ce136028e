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
// Whether an equation communicates (a kCollective primitive, or one inside a
// sub-program): its value depends on the device it runs on.
bool has_collectives(const Equation& e);
// Whether constant folding may run the equation when the program is compiled: neither
// effects nor collectives (which need the devices of a running pmap).
bool compile_time_evaluable(const Equation& e);

}  // namespace jx::detail
