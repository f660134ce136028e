// One-hot sums: a sum along an axis of a row that is zero but at one position, picked
// by comparing the positions along the axis with an index constant along it, is that
// one value, or zero where the index is out of bounds: no reduction over the row.
//
//   reduce_sum_a(select_n(iota_a == idx, 0, v))  ->  select_n(0 <= idx < n_a, 0, v + 0)
//     (idx and v constant along axis a; n_a the axis's size)
//
// A cross-entropy's gradient has one: the cotangent of a take along the labels is such a
// row (take_along_selects' scatter as a select), and the cotangent of log_softmax's sum
// sums it along the row. Left there, it is a reduction beside the row max in the
// gradient kernel's first pass (a float sum widened to double, which also cost the max
// its fast loop: over rows of 100, that pass was 40% of the kernel).
//
// Exact for every value: the sum adds v to zeros, which gives v, but -0.0 + 0.0 = +0.0,
// hence v + 0 for floats (a float sum starts from +0.0); out of bounds, the zeros alone
// sum to +0.0. A neg between the select and the sum moves onto v (the negated zeros are
// still zeros). The other axes of the reduce_sum, if any, are summed after.
#pragma once

#include "jit/passes/pass.h"

namespace jx::compiler {

bool one_hot_sums(ClosedJaxpr& program, PassContext& ctx);

extern const Pass kOneHotSumsPass;

}  // namespace jx::compiler
