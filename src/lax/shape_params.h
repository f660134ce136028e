// Helpers shared by the shape primitives' rules (src/lax/shape_ops.cpp, which defines
// them) and their CPU kernels (src/backend/cpu/kernels/shape.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "jx/array.h"

namespace jx::lax::shape {

// The result dims that are new, normalized against the result's rank.
std::vector<int64_t> expand_dims_positions(const std::vector<int64_t>& dimensions, const Shape& shape);
// Interleaves the operand's dims (shape or strides) with `fill` at the new positions.
std::vector<int64_t> insert_at(const std::vector<int64_t>& v, const std::vector<int64_t>& positions, int64_t fill);

}  // namespace jx::lax::shape
