// Rule families for batching (vmap), shared by the primitive definitions. Batch dims
// are non-negative positions, or kNotMapped.
#pragma once

#include <span>
#include <vector>

#include "jx/lax.h"
#include "jx/primitive.h"

namespace jx::lax::batch_rules {

// Moves axis `from` of x to position `to` (a transpose; x itself when equal).
Array move_axis(const Array& x, int64_t from, int64_t to);
// x with its batch axis at position 0: moved there, or broadcast there (a stride-0 view)
// when x is not mapped.
Array batch_to_front(const Array& x, int64_t dim, int64_t size);

// Operands of one shape (elementwise primitives, clamp, select_n with a full predicate):
// mapped operands are brought to a common batch position, unmapped ones broadcast to it.
// Operands of rank 0 while others are not (clamp's bounds, select_n's scalar predicate)
// are broadcast to full shape first.
BatchRule elementwise(const Primitive& p);

// A primitive whose every operand gets a leading batch axis and whose params are fixed
// up by `adjust(params)` (e.g. axes shifted by one); outputs are batched at 0.
using ParamsAdjust = std::function<Params(const Params& params, std::span<const Aval> unbatched_in)>;
BatchRule leading_batch(const Primitive& p, ParamsAdjust adjust);

// Reductions over the `axes` parameter: the batch axis stays where it is (the reduced
// axes are renumbered around it), so no data moves.
BatchRule reduction(const Primitive& p);

// Shifts every entry of an integer-tuple parameter up by one (axes after a new leading axis).
Params shift_axes(const Params& params, std::string_view name);

}  // namespace jx::lax::batch_rules
