// Rules shared by the primitives that call a sub-program held in their `jaxpr` param
// (closed_call, fusion, linear_jit): the transformation applied to the body, inline.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "jx/jaxpr.h"
#include "jx/primitive.h"

namespace jx::detail {

// The `jaxpr` param of a call primitive `prim`; raises if it is null.
const JaxprRef& call_body(const Params& params, std::string_view prim);
// The shape rule every call primitive shares: the body has no constvars and takes
// operands of exactly these types; its outputs' types.
std::vector<Aval> call_out_avals(std::string_view prim, std::span<const Aval> in, const Params& params);

// The body evaluated under jvp: its primal outputs and (materialized) output tangents.
JvpResult jvp_of_call(const JaxprRef& body, std::span<const Array> primals, std::span<const Array> tangents);
// The body evaluated under vmap; every output gets its batch axis at 0.
BatchResult batch_of_call(const JaxprRef& body, std::span<const Array> args, std::span<const int64_t> dims,
                          const BatchAxis& axis);

}  // namespace jx::detail
