// What a native loop kernel can compute: the contract between the fusion pass (which
// only puts supported equations into a fusion) and codegen (which must compile every
// equation these accept, for every dtype they accept). Anything refused runs as a runtime
// call of the primitive's eager implementation, so refusing is always safe.
#pragma once

#include <string>

#include "jx/jaxpr.h"

namespace jx::compiler {

// The dtypes native kernels compute in: bool, int8/16/32/64, uint8, uint32, float32,
// float64 (complex and half types run as runtime calls) (src/jit/codegen/scalar_ops.cpp).
bool native_kernel_dtype(DType dtype);

// An equation computed on scalars inside a loop: its primitive's lowering has an elemental
// emitter (jx/lowering.h), and its dtypes are native (src/jit/codegen/scalar_ops.cpp).
bool scalar_op_supported(const Equation& eqn, std::string* why_not);

// A data-movement equation a loop reads through as an index map instead of copying: its
// primitive's lowering has an index map (broadcast_in_dim, transpose, slice, rev,
// squeeze, expand_dims, iota; reshape, whose map is affine only for splits, reads
// kernel inputs in row-major order) (src/jit/codegen/loop_kernel.cpp).
bool index_op_supported(const Equation& eqn, std::string* why_not);

// A reduction a loop kernel can end in: its lowering has a reducer (reduce_sum, _prod,
// _max, _min, _and, _or) for the operand's dtype (src/jit/codegen/loop_kernel.cpp).
bool reduction_supported(const Equation& eqn, std::string* why_not);

// A while loop or scan that compiles to one native loop (a "scalar_loop" kernel): every
// operand and carry is a scalar of a native dtype (a scan's xs and ys may be 1-d, one
// element per step), and its predicate and body are scalar ops (scalar_op_supported), or
// conds and while loops of such bodies, on such scalars
// (src/jit/codegen/scalar_loop_kernel.cpp).
bool scalar_loop_supported(const Equation& eqn, std::string* why_not);

// Whether a sub-program of row reductions and the elementwise work around them compiles
// as one "rows" kernel (codegen/kernel.h): its reductions share the operand shape and
// axes, their results are read back only through broadcasts along the reduced axes, and
// every output has the operand's shape or the row's, with or without the reduced axes
// kept as 1s (src/jit/codegen/loop_kernel.cpp).
bool rows_fusion_supported(const Jaxpr& fused, std::string* why_not);

}  // namespace jx::compiler
