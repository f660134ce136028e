// Shape helpers shared by the linear-algebra primitives' rules (src/lax/linalg.cpp) and
// their CPU kernels (src/backend/cpu/kernels/linalg.cpp).
#pragma once

#include "jx/array.h"

namespace jx::lax::linalg_params {

// The leading (batch) dims of a batch of matrices (..., m, n).
inline Shape batch_shape(const Aval& a) { return Shape(a.shape.begin(), a.shape.end() - 2); }

}  // namespace jx::lax::linalg_params
