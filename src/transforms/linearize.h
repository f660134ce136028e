// Reverse mode = linearize + transpose. linearize runs the function under a jvp trace
// whose tangents are staged by a partial-evaluation trace: the primal computation runs
// now, the tangent computation (linear in the input tangents) is recorded as a program.
// transpose walks that program backwards with each linear primitive's transpose rule.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "jx/jaxpr.h"
#include "jx/transforms.h"

namespace jx::detail {

// The linear map from input tangents to output tangents of a linearized function.
struct LinearFunction {
  ClosedJaxpr jaxpr;              // one invar per input; one outvar per nonzero output
  std::vector<Aval> in_avals, out_avals;
  std::vector<bool> out_nonzero;  // false: that output's tangent is identically zero
  std::string name;               // the transformation that made it (grad, vjp, jacrev...), for errors
};

// Runs the linear program backwards: given output cotangents (invalid = zero), the
// cotangent of each input (invalid = zero). Equations whose outputs got no cotangent
// are skipped, so unused paths cost nothing.
std::vector<Array> backward_pass(const Jaxpr& jaxpr, std::span<const Array> consts, std::span<const Array> cts,
                                 std::string_view transformation);

}  // namespace jx::detail
