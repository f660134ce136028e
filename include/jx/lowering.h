// How a primitive lowers into native (fused) kernels, written once in its registration
// block and read by every backend: no LLVM (or any other code generator) here.
//
//   elemental  the primitive on scalars, against the abstract ScalarBuilder below (XLA's
//              elemental emitters, with the IR builder behind an interface). The CPU
//              backend (src/jit/codegen/scalar_ops.cpp) implements it on LLVM; a GPU
//              backend implements the same interface, and every emitter works there.
//   index_map  for data movement: which operand element an output element reads, as an
//              affine map, so loops read through the op instead of materializing it.
//   cost       relative per-element cost: what decides recompute vs materialize, and the
//              threading grain.
//   reducer    for reductions: the monoid (its identity comes from the eager kernels'
//              definition, src/lax/reduction_ops.h) and its combine step on scalars.
// A primitive without a lowering still runs under jit, as a runtime call of its impl.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "jx/array.h"

namespace jx {

class Params;  // jx/primitive.h

namespace lowering {

// A backend's scalar value (an llvm::Value* on the CPU). Only the builder that made it
// looks inside.
class Value;

enum class Cmp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };

// The scalar instruction set elemental emitters are written in. A value has its jx
// dtype's scalar type (bool is a truth value); the dtype arguments say how to read the
// bits (float or integer, signed or unsigned). Integer arithmetic wraps. What a target
// may leave undefined (integer division by zero or INT_MIN / -1, shifts by the width or
// more) is undefined here too: emitters guard those cases with eager's results.
class ScalarBuilder {
 public:
  virtual ~ScalarBuilder() = default;

  // ---- constants ----
  virtual Value* float_constant(DType dtype, double v) = 0;
  // v wrapped to the dtype's width (bool: the low bit).
  virtual Value* int_constant(DType dtype, int64_t v) = 0;
  // A 0-d array's value, bit for bit (NaN payloads too).
  virtual Value* literal(const Array& scalar) = 0;

  // ---- arithmetic: IEEE (no fast-math) for floats, wrapping for integers ----
  virtual Value* neg(DType dtype, Value* a) = 0;
  // `reassociate`: a float sum or product whose order the backend may change (reductions).
  virtual Value* add(DType dtype, Value* a, Value* b, bool reassociate = false) = 0;
  virtual Value* sub(DType dtype, Value* a, Value* b) = 0;
  virtual Value* mul(DType dtype, Value* a, Value* b, bool reassociate = false) = 0;
  // Integers round toward zero (undefined for b = 0 and INT_MIN / -1).
  virtual Value* div(DType dtype, Value* a, Value* b) = 0;
  // C's fmod for floats (exact); integers take the dividend's sign (undefined for b = 0).
  virtual Value* rem(DType dtype, Value* a, Value* b) = 0;
  // |a|; integer abs(INT_MIN) wraps to INT_MIN.
  virtual Value* abs(DType dtype, Value* a) = 0;
  // Integer max/min (signed or unsigned by dtype).
  virtual Value* int_max(DType dtype, Value* a, Value* b) = 0;
  virtual Value* int_min(DType dtype, Value* a, Value* b) = 0;
  // IEEE-754 2019 maximum/minimum: NaN if either is NaN, +0 > -0.
  virtual Value* float_maximum(Value* a, Value* b) = 0;
  virtual Value* float_minimum(Value* a, Value* b) = 0;
  virtual Value* floor(Value* a) = 0;
  virtual Value* ceil(Value* a) = 0;
  // Half away from zero (std::round), or half to even (nearbyint).
  virtual Value* round(Value* a, bool half_to_even) = 0;
  virtual Value* sqrt(Value* a) = 0;

  // ---- comparisons (bool results) ----
  // Floats: ordered (false with a NaN), except kNe, which is true with a NaN. Integers
  // signed or unsigned by dtype; bool orders false < true.
  virtual Value* compare(Cmp cmp, DType dtype, Value* a, Value* b) = 0;
  // The integers' bits read as unsigned, whatever the dtype.
  virtual Value* compare_unsigned(Cmp cmp, Value* a, Value* b) = 0;
  // Either float operand is NaN (is_nan(a) is unordered(a, a)).
  virtual Value* unordered(Value* a, Value* b) = 0;
  virtual Value* select(Value* condition, Value* if_true, Value* if_false) = 0;

  // ---- bits: logical on bool, bitwise on integers ----
  virtual Value* bit_and(Value* a, Value* b) = 0;
  virtual Value* bit_or(Value* a, Value* b) = 0;
  virtual Value* bit_xor(Value* a, Value* b) = 0;
  virtual Value* bit_not(Value* a) = 0;
  // Shift amounts below the width.
  virtual Value* shift_left(Value* a, Value* n) = 0;
  virtual Value* shift_right_logical(Value* a, Value* n) = 0;
  virtual Value* shift_right_arithmetic(Value* a, Value* n) = 0;

  // ---- types ----
  // convert_element_type's semantics (src/core/convert.h): floats saturate into integer
  // ranges and NaN becomes 0, anything to bool is `!= 0`, integer narrowing wraps.
  virtual Value* convert(Value* a, DType from, DType to) = 0;
  // The same bits as another dtype of the same width (float32 <-> int32 ...).
  virtual Value* bitcast(Value* a, DType to) = 0;

  // ---- named math functions ----
  // fn(args) in `dtype` (float32 or float64), computed as eager computes it. The backend
  // maps each name to its math library: the CPU backend to inline polynomials (exp,
  // tanh and erf f32), libmvec's variants (sin, log, pow, ...), or the runtime functions
  // of the scalar math library (src/math/scalar_functions.h: erf_inv, digamma, polygamma,
  // zeta, ...); "powi" takes an int64 exponent. An unknown name raises jx::Error.
  virtual Value* math(std::string_view fn, DType dtype, std::span<Value* const> args) = 0;
};

// One elementwise equation's operands, as an emitter sees them.
struct ElementalArgs {
  std::span<Value* const> x;      // operand values
  std::span<const DType> dtypes;  // operand dtypes
  DType out;                      // result dtype
  const Params& params;
  Value* operator[](size_t i) const { return x[i]; }
  DType in() const { return dtypes[0]; }
};
// Must handle every native dtype (bool, int8..int64, uint8, uint32, float32, float64) the
// primitive's shape rule accepts: support is a question of primitive and dtypes alone.
using ElementalEmitter = std::function<Value*(ScalarBuilder& b, const ElementalArgs& args)>;

// operand index = coef * output index + offset: coef[k][j] is operand dim k's factor of
// output dim j. For an index-generating op (iota), one row: the value itself.
struct AffineMap {
  std::vector<std::vector<int64_t>> coef;
  std::vector<int64_t> offset;
};
// The map of an equation with these operand and result avals, or a refusal (`why_not`
// set) when it is not affine (a reshape merging dims of a computed value).
struct IndexMapResult {
  AffineMap map;
  std::string why_not;
};
using IndexMapRule =
    std::function<IndexMapResult(std::span<const Aval> in, const Aval& out, const Params& params)>;

enum class Monoid : uint8_t { kSum, kProd, kMax, kMin, kAnd, kOr };
struct Reducer {
  Monoid monoid = Monoid::kSum;
  // The operand dtypes native kernels reduce (others run as runtime calls).
  std::function<bool(DType dtype)> native;
  // float32 accumulates in float64 in native kernels (sums: the rounding error of long
  // rows), converted back when stored.
  bool widen_float32 = false;
  // The start value, of `dtype` (the eager kernels' Op<T>::identity()).
  std::function<Array(DType dtype)> identity;
  // acc' = combine(acc, x) in `dtype`.
  std::function<Value*(ScalarBuilder& b, DType dtype, Value* acc, Value* x)> combine;
  explicit operator bool() const { return static_cast<bool>(combine); }
};

struct Lowering {
  ElementalEmitter elemental;
  IndexMapRule index_map;
  // The index map reads the operand in row-major order whatever the shapes (reshape):
  // exact when the operand is contiguous (a kernel input), where index_map may refuse.
  bool row_major_read = false;
  // The op generates its value from the mapped index (iota) instead of reading operand 0.
  bool index_is_value = false;
  Reducer reducer;
  // Relative cost of one element in a loop: 0 free to recompute in every consumer (neg,
  // not, conversions), 1 a plain op, 2 division and roots, 8 transcendentals.
  int cost = 1;
};

}  // namespace lowering
}  // namespace jx
