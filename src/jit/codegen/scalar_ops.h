// Scalar emitters: one elementwise equation (or one reduction step) as LLVM IR on scalar
// values, with eager jx's semantics to the bit for integer and bool ops and for the
// exactly rounded float ops, and libm / libmvec's functions for the transcendentals.
// The loop emitter (loop_kernel.cpp) calls these inside its loops; LLVM's loop
// vectorizer then widens the math calls through vector_math_library().
//
// Values: bool is i1, integers iN (signedness lives in the DType, not the LLVM type),
// float32/float64 are float/double. In memory bool is one byte (i8, 0 or 1).
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/IRBuilder.h>

#include "jx/jaxpr.h"

namespace jx::compiler::codegen {

// bool: i1, ints: iN, f32: float, f64: double. Raises jx::Error for other dtypes.
llvm::Type* value_type(llvm::LLVMContext& ctx, DType dtype);
// The type an element has in memory: value_type, except bool, stored as i8.
llvm::Type* storage_type(llvm::LLVMContext& ctx, DType dtype);
// Loads one element (bool: a nonzero byte is true) as value_type.
llvm::Value* load_element(llvm::IRBuilder<>& b, llvm::Value* element_ptr, DType dtype);
// Stores a value_type value (bool as the byte 0 or 1).
void store_element(llvm::IRBuilder<>& b, llvm::Value* value, llvm::Value* element_ptr, DType dtype);
// A 0-d array's value as a constant of its dtype's value_type (bit-exact, NaN payloads too).
llvm::Value* emit_literal(llvm::IRBuilder<>& b, const Array& scalar);
// convert_element_type on one value: floats saturate into integer ranges and NaN becomes
// 0, anything to bool is `!= 0` (NaN is true), bool is 0 or 1, unsigned sources
// zero-extend, integer narrowing wraps (src/core/convert.h).
llvm::Value* emit_convert(llvm::IRBuilder<>& b, llvm::Value* value, DType from, DType to);

// One elementwise equation on scalar values (one per equation input, each of its input's
// value_type); the result has the value_type of the output's dtype. Only equations
// scalar_op_supported accepts (kernel_support.h); anything else raises jx::Error.
llvm::Value* emit_scalar_op(llvm::IRBuilder<>& b, const Equation& eqn, std::span<llvm::Value* const> operands);

// Reductions (reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and, reduce_or):
// the accumulator's start value and one step acc' = combine(acc, x). Float max/min
// propagate NaN (llvm.maximum/minimum); float sum/prod carry only the `reassoc` flag, so
// the loop vectorizer may reorder them as eager's pairwise sums do.
llvm::Value* reduction_identity(llvm::IRBuilder<>& b, const Primitive& reduction, DType dtype);
llvm::Value* emit_reduce_combine(llvm::IRBuilder<>& b, const Primitive& reduction, llvm::Value* acc, llvm::Value* x,
                                 DType dtype);

// The libmvec vector variants of the math functions the emitters call (libm names such
// as "sinf" and the llvm.* intrinsics), for TargetLibraryInfoImpl::addVectorizableFunctions.
// Only variants this CPU runs, following cpu::vector_isa() (JX_VECTOR_ISA), the ISA eager's
// libmvec dispatch uses: SSE (b) and AVX2 (d) for avx2, those and AVX-512 (e) for avx512,
// none for scalar (kernels then call scalar libm, as eager does, and agree with it to the
// bit). Read when a module is optimized; the names live in static storage.
std::vector<llvm::VecDesc> vector_math_library();

// The runtime helpers emitted code calls by name (jx_rt_erf_inv_f64, ...) with their
// addresses, for a JIT that does not search the process's symbols.
std::vector<std::pair<std::string, void*>> runtime_math_symbols();

}  // namespace jx::compiler::codegen
