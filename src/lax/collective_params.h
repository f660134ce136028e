// The params every collective primitive holds (src/lax/collectives.cpp): `axes`, the
// axis names joined by ',', and `axis_sizes`. Shared by the primitives' rules, their
// kernels and the SPMD runtime.
#pragma once

#include <string>
#include <vector>

#include "jx/primitive.h"

namespace jx::lax::collective {

std::vector<std::string> axis_names(const Params& params);
// The product of axis_sizes: the members a collective over all its axes spans.
int64_t total_size(const Params& params);
Params axes_params(const std::vector<std::string>& names, const std::vector<int64_t>& sizes);

}  // namespace jx::lax::collective
