// take_along_axis as selects: a gather picking one element per row along an axis, and
// the scatter_add that is its transpose, become elementwise selects against an iota and
// (for the gather) a reduction over the row, which fusion puts in the kernel that
// computes the row:
//
//   gather x at (iota_0, .., idx, .., iota_n)      -> sum over the axis of
//     (one element per row along `axis`)              select(iota_axis == idx, 0, x)
//   scatter_add base at the same indices, u         -> select(iota_axis == idx, base, base + u)
//
// The index is recognized by its form: a concatenate of one component per operand axis,
// each the position along an axis of the result (an iota, seen through broadcasts,
// unit-dim reshapes, conversions and the normalization of negative indices) except the
// one for `axis`, the positions in the operand's order and sizes, one element per row:
// jnp::take_along_axis(x, idx[:, None], 1) and NumPy's x[arange(n), idx] both. A softmax cross-entropy (log_softmax, then take_along_axis of the
// labels) then runs as one rows kernel that never writes the log-probabilities, and its
// gradient writes one array instead of zero-filling one and scattering into it.
//
// Exact, for every value: the pick sums the row with every other element zeroed, as
// integers (a float's bits, bitcast to the integer of its width: a float sum would turn
// -0.0 into +0.0 and a max would need its NaN and signed-zero checks), bools with or; the
// scatter adds only where it selects (base + 0 would turn -0.0 into +0.0). Modes keep
// their meaning: a filling gather selects its fill where the index is out of bounds, a
// clamping one clamps the index first; a scatter drops out-of-bounds updates (no iota
// value equals them) unless it clamps (mode clip). Complex operands, and a filling
// integer gather without an explicit fill value, are left as they are.
//
// The pick moves inside add, sub, mul and div with a value constant along the row
// (pick(u - bcast(v)) = pick(u) - v, the same operation on the same values): a
// cross-entropy then picks from the logits in its kernel's first pass, beside the row
// max, instead of in a pass of its own after the sum.
//
// A gather reads its row's one element where the select form reads the whole row, so it
// is rewritten only where that is free: its operand is computed by an elementwise
// equation (which fusion puts in the same kernel, where the row is in registers or
// cache) or its rows are at most a cache line.
#pragma once

#include "jit/passes/pass.h"

namespace jx::compiler {

bool take_along_selects(ClosedJaxpr& program, PassContext& ctx);
extern const Pass kTakeAlongSelectsPass;  // "take_along_selects"

}  // namespace jx::compiler
