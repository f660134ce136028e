// JAX's custom_jvp for jx's own composite functions: a function whose value comes from
// its composition but whose derivative is a rule written beside it (logaddexp's weights
// at ties, det's adjugate at singular matrices), where the derivative that falls out of
// the composition differs from the one JAX defines.
//
// Eagerly (no transformation active) the function simply runs. Under any transformation
// it is staged, with its rule, into one `custom_jvp_call` equation: jvp applies the rule,
// vmap batches the function and the rule together (so grad(vmap(f)) still uses the rule),
// staging records the equation, and its eager evaluation runs the function's program.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "jx/jaxpr.h"
#include "jx/transforms.h"

namespace jx::detail {

// The rule: (primal outputs, tangent outputs) from the primals and one tangent per primal
// (materialized: zeros where the caller's tangent is a symbolic zero). Written with lax
// calls; the tangent outputs must be linear in the tangents, and the primal outputs must
// not depend on them.
using CustomJvpRule = std::function<std::pair<std::vector<Array>, std::vector<Array>>(
    std::span<const Array> primals, std::span<const Array> tangents)>;

// f(args), differentiated by `jvp`. `name` names the function in programs and errors.
// f and jvp must not close over values being transformed (pass them as arguments): such
// a value's tangent would bypass the rule, so it raises instead.
std::vector<Array> custom_jvp_call(const std::string& name, const FlatFn& f, const CustomJvpRule& jvp,
                                   std::span<const Array> args);

// Inserts unused inputs of the types of `xs` at position `at` of body's inputs: the
// custom_* call primitives (custom_jvp.cpp, custom_vjp.cpp) make each of their programs
// take every program's lifted constants.
void insert_unused_inputs(ClosedJaxpr& body, size_t at, std::span<const Array> xs);

}  // namespace jx::detail
