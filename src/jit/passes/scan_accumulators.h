// Accumulated outer products leave the loop: a scan carry that only sums outer products
// of per-step vectors,
//
//   body: c' = c + outer(a_t, b_t)     (or its transpose; c read nowhere else)
//
// becomes stacked outputs a_t and b_t of the body (a factor that is a row of the scan's xs
// is read from xs itself, and a value is stacked once) and one product after the loop,
// c_T = c_0 + A^T B, contracting the steps. This is what reverse mode makes of every weight
// in a scanned recurrence (the cotangent of W in h W accumulates outer(h_t, g_t) over the
// steps): per step, writing m + n values instead of reading and writing the m x n sum, and
// one matrix product running at BLAS speed after the loop. Applied when the product is at
// least 4x the size of its two factors and the stacks stay under 256 MiB; the sum's
// rounding changes (one BLAS product instead of a running sum), as XLA's reassociation does.
#pragma once

#include "jit/passes/pass.h"

namespace jx::compiler {

bool hoist_scan_accumulators(ClosedJaxpr& program, PassContext& ctx);
extern const Pass kScanAccumulatorsPass;  // "scan_accumulators"

}  // namespace jx::compiler
