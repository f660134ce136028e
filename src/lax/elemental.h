// Elemental emitter families (jx/lowering.h): the scalar forms of the elementwise
// primitives, with eager's semantics, written against the backend-neutral ScalarBuilder
// and used by the primitives' registration blocks (`.lowering = {...}`). Integer ops
// guard every case a target leaves undefined with eager's defined result.
#pragma once

#include <string_view>
#include <vector>

#include "jx/lowering.h"
#include "jx/primitive.h"

namespace jx::lax::elemental {

using lowering::ElementalArgs;
using lowering::ElementalEmitter;
using lowering::ScalarBuilder;
using lowering::Value;

// Eager's max/min functors: `(a > b || isnan(a)) ? a : b` for floats (NaN propagates,
// ties keep b, so max(+0, -0) is -0), integer max/min, or/and on bool.
Value* max(ScalarBuilder& b, DType d, Value* a, Value* c);
Value* min(ScalarBuilder& b, DType d, Value* a, Value* c);

// The float form (IEEE) or the integer form (wrapping) of the four operations.
ElementalEmitter neg();
ElementalEmitter add();
ElementalEmitter sub();
ElementalEmitter mul();
// Floats IEEE; integers round toward zero, x / 0 = -1 (all bits set), INT_MIN / -1 = INT_MIN.
ElementalEmitter div();
// Floats fmod; integers the dividend's sign, x % 0 = x, INT_MIN % -1 = 0.
ElementalEmitter rem();

enum class Shift { kLeft, kRightLogical, kRightArithmetic };
// Shift amounts read as unsigned; the width or more gives 0 or the sign.
ElementalEmitter shift(Shift kind);

// Lowering::cost of a math-library function (exp, sin, tanh, ...): what the kernel
// planner weighs a transcendental at (jit/codegen/kernel_plan.cpp, large_body).
inline constexpr int kTranscendentalCost = 8;

// fn(x) / fn(x, y) of the backend's math library (b.math), in the operand's dtype.
ElementalEmitter math_unary(std::string_view fn);
ElementalEmitter math_binary(std::string_view fn);

// A comparison -> bool (floats ordered, ne unordered: NaN != NaN).
ElementalEmitter compare(lowering::Cmp cmp);

// x^y for a constant y by binary exponentiation in eager's multiplication order;
// y < 0 (floats) is 1 / x^|y|.
Value* integer_pow(ScalarBuilder& b, DType d, Value* x, int64_t y);
// select_n: which is bool (cases[which]) or an integer clamped into [0, n).
Value* select_n(ScalarBuilder& b, Value* which, DType which_dtype, std::span<Value* const> cases);
// nextafter on the bit pattern, as glibc's (so loops with it still vectorize).
Value* nextafter(ScalarBuilder& b, DType d, Value* x, Value* y);

// ---- index maps (Lowering::index_map) ----

// An operand_rank x out_rank map of zeros (every operand index 0).
lowering::AffineMap zero_map(size_t operand_rank, size_t out_rank);
// dims with negative entries counted from ndim, sorted.
std::vector<int64_t> sorted_dims(const std::vector<int64_t>& dims, int64_t ndim);

}  // namespace jx::lax::elemental
