// The primitive objects that passes pattern-match by identity (simplify's algebraic
// rewrites, fusion's dot kernels): `e.primitive == &lax::mul_p`, never a name. Anything
// a pass asks of primitives in general is a trait or a rule (jx/primitive.h).
#pragma once

#include "jx/primitive.h"

namespace jx::lax {

extern const Primitive add_p, sub_p, mul_p, div_p, neg_p;
extern const Primitive reshape_p, squeeze_p, expand_dims_p, broadcast_in_dim_p, transpose_p, slice_p;
extern const Primitive convert_element_type_p, select_n_p, dot_general_p;
extern const Primitive iota_p, concatenate_p, gather_p, scatter_add_p, lt_p, eq_p, reduce_sum_p;
// Identities that passes must not see through: the barrier keeps a recomputation
// (jx::checkpoint) apart from the forward pass, so CSE and constant folding skip it.
extern const Primitive optimization_barrier_p, checkpoint_name_p;

}  // namespace jx::lax
