// Rules shared by the primitives that call a sub-program held in their `jaxpr` param
// (closed_call, fusion, linear_jit): the transformation applied to the body, inline.
#pragma once

#include <span>

#include "jx/jaxpr.h"
#include "jx/primitive.h"

namespace jx::detail {

// The body evaluated under jvp: its primal outputs and (materialized) output tangents.
JvpResult jvp_of_call(const JaxprRef& body, std::span<const Array> primals, std::span<const Array> tangents);
// The body evaluated under vmap; every output gets its batch axis at 0.
BatchResult batch_of_call(const JaxprRef& body, std::span<const Array> args, std::span<const int64_t> dims,
                          const BatchAxis& axis);

}  // namespace jx::detail
