// The op table: one row per primitive (and per meaningful parameter or dtype variant,
// e.g. round's two methods, integer_pow's exponents, pow with an integer exponent) that
// every table-driven test reads instead of keeping its own list:
//   - lax_elementwise_test: the NumPy fixtures of each row with a fixture key;
//   - unary_transforms_test / binary_transforms_test: derivatives in the row's smooth
//     domain (complex and second order where the row says so), vmap against a loop;
//   - jit_scalar_ops_test: native kernels against eager within the row's ULP tolerance;
//   - op_table_test: the coverage test (every registered primitive has a row, every row
//     names a registered primitive) and the generic checks over every row (eager == jit,
//     vmap == loop, check_grads), which the JX_JIT_EVERY_OP run repeats with every
//     operation compiled.
// A new primitive gets a row in tests/op_table.cpp; a row that a generic check cannot
// apply to says which checks it skips, why, and which test file covers it instead.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "jx/jx.h"

namespace jx::op_table {

// The generic checks of op_table_test, as bits of OpRow::skip.
enum GenericCheck : unsigned {
  kCheckJit = 1,   // eager result == jit of the same call
  kCheckVmap = 2,  // vmap over a batch of 3 == a loop over the members
  kCheckGrad = 4,  // check_grads in float64 (differentiable primitives only)
};

// Which float dtypes of a jit scalar-op row kernels compute inline (fast_math.h) instead
// of with eager's libmvec variant; ByChoice: src/math/fast_functions.h's functions,
// inline where codegen::inline_fast_function chose them for the dtype and this CPU (which
// also applies to a fast function's row marked Float32: tanh).
enum class Inline { None, Float32, Float32AndFloat64, ByChoice };

// [lo, hi): where the function is smooth, so finite differences and random operands
// drawn from it are meaningful.
struct Domain {
  double lo, hi;
};

using OpCall = std::function<std::vector<Array>(std::span<const Array>)>;
using OperandFn = std::function<std::vector<Array>(uint64_t seed)>;

struct OpRow {
  std::string primitive;
  // Distinguishes rows of one primitive ("" for the only row): part of test names.
  std::string variant = "";
  // Operands of `call` (what example operands supplies).
  int arity = 1;
  // The lax call (for a few primitives a short program around it, e.g. cholesky of a
  // symmetrized operand: the generic derivative check needs inputs the rules assume).
  OpCall call;
  // The primitive's parameters as `call` binds them: what jit_scalar_ops_test binds.
  Params params = {};
  // Operand dtypes of the generic operands (empty: float64 for each).
  std::vector<DType> dtypes = {};
  // Where the function is smooth: generic operands are drawn from it, derivative checks
  // sample it. nullopt: [-2, 2) for the generic operands, and the transforms tests do not
  // take finite differences of it (flat or not smooth).
  std::optional<Domain> smooth = std::nullopt;
  // The derivative checks of unary_transforms_test also run on complex128 operands.
  bool complex_derivatives = false;
  // Derivative checks go to second order.
  bool second_order = false;
  // Key in tests/fixtures/elementwise/{unary,binary}.npz (arity 1 / 2), "" if none.
  std::string fixture = "";
  // Float kernels call libmvec: the fixture test runs the row under each instruction set.
  bool calls_libmvec = false;
  // Scale of the fixture tolerance for complex dtypes (complex pow compounds exp and log).
  double fixture_complex_tol_scale = 1;
  // A jit scalar-op row: native kernel vs eager within this many ULP (0: bitwise).
  std::optional<uint64_t> jit_ulp = std::nullopt;
  Inline inline_dtypes = Inline::None;
  uint64_t inline_ulp = 0;  // jit_ulp for the inline dtypes
  // Operands for rows that are not plain elementwise (indices, SPD matrices, ...); each
  // seed gives another valid set (the vmap check stacks three).
  OperandFn example = nullptr;
  // Operands the generic derivative check holds fixed (bits by position): indices given
  // as floats, polygamma's order m, zeta's x.
  unsigned fixed_operands = 0;
  // Rounding differences jit may make (relative, float64), 0: bitwise equal to eager.
  double jit_rtol = 0;
  // Generic checks that do not apply to this row (GenericCheck bits), why, and the test
  // file that covers the primitive instead.
  unsigned skip = 0;
  std::string skip_reason = "";
  std::string covered_by = "";

  // "round.even", "exp": for test names and messages.
  std::string label() const { return variant.empty() ? primitive : primitive + "." + variant; }
  // The native-kernel tolerance for dtype d (inline dtypes get inline_ulp).
  uint64_t jit_ulp_for(DType d) const;
  // Operands for the generic checks: `example`, or uniform values of `dtypes` in the
  // smooth domain, shape (2, 3).
  std::vector<Array> operands(uint64_t seed) const;
  // One output (the first) of call.
  Array call1(std::span<const Array> xs) const { return call(xs)[0]; }
};

// Every row, in a fixed order.
const std::vector<OpRow>& rows();
// The rows of one primitive (empty if none).
std::vector<const OpRow*> rows_of(std::string_view primitive);
// The row with this fixture key, or nullptr.
const OpRow* row_with_fixture(std::string_view key);

// Uniform values in [lo, hi) of shape and dtype (integers: floor; bool: >= midpoint;
// complex: both parts), deterministic per seed. Shared with the table-driven tests.
Array uniform(const Shape& shape, double lo, double hi, DType dtype, uint64_t seed);

}  // namespace jx::op_table
