// The `fusion` primitive: one equation standing for a fused group of equations, made
// by the fusion pass and compiled to one native kernel (codegen/kernel.h). Params:
//   jaxpr  the fused sub-program (no constvars; its invars are the kernel's inputs)
//   kind   "loop" | "reduction" | "rows" | "dot" | "scalar_loop" (see codegen/kernel.h)
//   name   "fusion.3", unique within its program (kernel symbols and dumps)
// Evaluated eagerly (eval_jaxpr of the body), which lets tests run an optimized
// program without codegen and compare it with the original.
#pragma once

#include <string>

#include "jx/jaxpr.h"

namespace jx::compiler {

extern const Primitive& fusion_primitive();

// Builds a fusion equation around `body` applied to `inputs`, producing `outputs`.
Equation make_fusion(std::shared_ptr<const ClosedJaxpr> body, std::vector<Atom> inputs, std::vector<Var> outputs,
                     std::string kind, std::string name);

}  // namespace jx::compiler
