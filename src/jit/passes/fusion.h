// Fusion: groups the equations native kernels can compute into `fusion` equations
// (fusion_primitive.h), XLA style, each one kernel of a kind codegen knows
// (codegen/kernel.h):
//   loop       elementwise DAGs and the index maps feeding them, all outputs one shape
//   reduction  reductions over the same axes of same-shaped operands, with the loop
//              producing their operands fused in (sum(x + 2*y) reads x and y once)
//   dot        a dot_general followed by its elementwise epilogue (gelu(a @ b + bias))
// Siblings (fusions reading the same input over the same iteration space) become one
// multi-output fusion. Every decision, merged or refused, goes into ctx.note() with its
// reason (the JX_DUMP fusion.txt).
#pragma once

#include "jit/passes/pass.h"

namespace jx::compiler {

struct FusionOptions {
  bool merge = true;  // false: every supported equation its own fusion, nothing merges
  bool rows = true;   // false: no "rows" fusions (reductions end their kernels)
};

// Rewrites `program` in place; true when it made any fusion.
bool fuse(ClosedJaxpr& program, PassContext& ctx, const FusionOptions& options);

extern const Pass kFusionPass;  // "fusion", default options

}  // namespace jx::compiler
