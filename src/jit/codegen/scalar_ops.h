// The CPU backend of the primitives' lowerings (jx/lowering.h): one elementwise equation
// (or one reduction step) as LLVM IR on scalar values, by running the primitive's own
// elemental emitter (or reducer) on an LLVM implementation of lowering::ScalarBuilder,
// whose math() is the CPU math library (inline polynomials, eager's libmvec variants,
// runtime functions). Eager jx's semantics to the bit for integer and bool ops and for
// the exactly rounded float ops. The loop emitter (loop_kernel.cpp) calls these inside
// its loops; LLVM's loop vectorizer then widens the math calls through
// vector_math_library().
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
// value_type): its primitive's `rules().lowering.elemental`; the result has the
// value_type of the output's dtype. Only equations scalar_op_supported accepts
// (kernel_support.h); anything else raises jx::Error.
llvm::Value* emit_scalar_op(llvm::IRBuilder<>& b, const Equation& eqn, std::span<llvm::Value* const> operands);

// Reductions with a reducer in their lowering (reduce_sum, _prod, _max, _min, _and, _or):
// the accumulator's start value (the eager kernels' identity) and one step
// acc' = combine(acc, x). Float max/min propagate NaN (llvm.maximum/minimum); float
// sum/prod carry only the `reassoc` flag, so the loop vectorizer may reorder them as
// eager's pairwise sums do.
llvm::Value* reduction_identity(llvm::IRBuilder<>& b, const Primitive& reduction, DType dtype);
llvm::Value* emit_reduce_combine(llvm::IRBuilder<>& b, const Primitive& reduction, llvm::Value* acc, llvm::Value* x,
                                 DType dtype);

// The vector variants of the math functions the emitters call, for
// TargetLibraryInfoImpl::addVectorizableFunctions. Transcendentals are emitted as calls to
// jx_vm_<fn>_<f32|f64>_<isa> (runtime_math.cpp), isa = the module's (module_target.h,
// from KernelOptions::vector_isa); the table maps each avx2/avx512 name to exactly the libmvec
// variant eager runs for that ISA (_ZGVdN8v_<fn>f, _ZGVeN16v_<fn>f, ...), so vectorized
// loops call it, and the scalar function computes a single element with that same variant:
// eager's bits at every position. The _scalar names (no vector form) are plain libm, as
// eager's scalar path. Only ISAs this CPU runs; the names live in static storage.
std::vector<llvm::VecDesc> vector_math_library();

// The rare path of an inline function (fast_math.h, math::rare_condition: sin, cos and
// tan beyond their reduction's range, log, log1p and expm1 outside their ordinary
// domain; exp beyond its single scaling's range) for one element x whose fast result is
// `usual`: a call of jx_rare.<fn>.<f32|f64>.<isa>(x, usual), which the loop vectorizer
// widens to jx_rare.<fn>.<dtype>.<isa>.v<lanes> (the lanes of eager's libmvec variant for
// that ISA; for exp every width up to the host's registers). Both are declared here and
// given bodies by define_rare_math_variants once the optimizer has run: test the rare
// condition, return `usual` when no element meets it, else eager's result (jx_vm_*, or
// its libmvec variant for a vector) where it is met (for exp, fast_math.h's full-range
// code). Inlined, a vector of ordinary inputs pays a compare, a mask test and a branch
// not taken.
// fast_math.h's exp as the `base` of its rare path (not a math::FastFunction).
inline constexpr std::string_view kExpRarePath = "exp";
llvm::Value* emit_rare_math_call(llvm::IRBuilderBase& b, std::string_view base, DType dtype, llvm::Value* x,
                                 llvm::Value* usual);
// Whether `callee` is a rare-path function emit_rare_math_call declares (scalar or vector).
bool is_rare_path(const llvm::Function& callee);
// Gives the rare-path functions the module calls their bodies (always-inline, for the
// inliner compile_module runs after the pipeline), after merging the tests of calls side
// by side (a vectorized loop's interleaved parts) into one branch. Returns whether it
// defined any.
bool define_rare_math_variants(llvm::Module& module);

// Inline math outlined. A module marked module_outlines_math (a long fused body) calls
// the inline functions above (exp, float32 tanh and erf, inline_fast_function's table)
// as jx_outline.<fn>.<f32|f64>.<isa>, which the loop vectorizer widens to
// jx_outline.<...>.v<lanes> (every width up to the host's registers), instead of
// emitting their code at each use: code generation, whose cost grows with the
// instructions it selects, then sees one call per transcendental. Those functions are
// defined on demand (llvm_session.cpp's generator) by define_outlined_math, with the
// very code they replace, so results keep their bits.
bool is_outlined_math_symbol(std::string_view symbol);
// Defines `symbol` in `module` (and sets the module's vector ISA from the name).
// Raises jx::InternalError for a name no module calls.
void define_outlined_math(llvm::Module& module, std::string_view symbol);
// Removes the outlined variants the optimizer left uncalled (declared for the vectorizer
// and kept in llvm.compiler.used until it ran), so objects name only what they call;
// returns the names of those the module still calls.
std::vector<std::string> drop_uncalled_outlined_math(llvm::Module& module);

// The runtime helpers emitted code calls by name (jx_rt_erf_inv_f64, ...) with their
// addresses, for a JIT that does not search the process's symbols.
std::vector<std::pair<std::string, void*>> runtime_math_symbols();
// The jx_vm_* part of runtime_math_symbols() (runtime_math.cpp).
std::vector<std::pair<std::string, void*>> vector_math_runtime_symbols();

}  // namespace jx::compiler::codegen
