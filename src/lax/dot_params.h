// dot_general's dimension numbers, read from its parameters: shared by its rules
// (src/lax/dot.cpp) and its CPU kernel (src/backend/cpu/kernels/dot.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "jx/primitive.h"

namespace jx::lax::dot_params {

struct DotDims {
  std::vector<int64_t> lhs_contract, rhs_contract, lhs_batch, rhs_batch;
};

inline DotDims read_dims(const Params& p) {
  return {p.get_ints("lhs_contracting_dimensions"), p.get_ints("rhs_contracting_dimensions"),
          p.get_ints("lhs_batch_dimensions"), p.get_ints("rhs_batch_dimensions")};
}

// Dimensions of an operand that are neither batch nor contracting, in order.
inline std::vector<int64_t> free_dims(int64_t ndim, const std::vector<int64_t>& batch,
                                      const std::vector<int64_t>& contract) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < ndim; ++d)
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contract.begin(), contract.end(), d) == contract.end())
      out.push_back(d);
  return out;
}

}  // namespace jx::lax::dot_params
