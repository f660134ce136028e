// The scalar math library: special functions computed in float64 (float32 callers widen
// and round once), one definition used both by eager kernels (src/lax) and by native
// kernels, which call them as runtime functions (ScalarBuilder::math; the CPU backend
// resolves the names here, src/jit/codegen/scalar_ops.cpp). A new function is one
// entry in scalar_functions.cpp.
#pragma once

#include <span>
#include <string_view>

namespace jx::math {

struct ScalarFunction {
  const char* name;                    // as primitives' emitters call it: b.math(name, ...)
  int arity;                           // 1 or 2
  double (*unary)(double);             // arity 1
  double (*binary)(double, double);    // arity 2
};

std::span<const ScalarFunction> scalar_functions();
// The entry named `name`, or nullptr.
const ScalarFunction* find_scalar_function(std::string_view name);

}  // namespace jx::math
