// conv_general_dilated's geometry, read and checked from its parameters and operand
// shapes: shared by its rules (src/lax/conv.cpp, which defines read_geometry) and its
// CPU kernel (src/backend/cpu/kernels/conv.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "jx/primitive.h"

namespace jx::lax::conv_params {

// Everything the kernel needs, read from the parameters and operand shapes.
struct ConvGeometry {
  std::vector<int64_t> lhs_spec, rhs_spec, out_spec;
  std::vector<int64_t> strides, pad_lo, pad_hi, lhs_dilation, rhs_dilation;
  int64_t feature_groups = 1, batch_groups = 1;
  int64_t batch = 0, in_features = 0, out_features = 0, kernel_in_features = 0;
  Shape in_spatial, kernel_spatial, out_spatial;
  int64_t num_spatial() const { return static_cast<int64_t>(in_spatial.size()); }
};

// Raises "[conv_general_dilated] ..." for inconsistent parameters or operand shapes.
ConvGeometry read_geometry(const Aval& lhs, const Aval& rhs, const Params& p);

}  // namespace jx::lax::conv_params
