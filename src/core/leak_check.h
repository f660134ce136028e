// The leaked-tracer test, shared by eager evaluation (concrete_impl) and the staging
// trace's capture of constants (make_jaxpr, jit), so both decide alike and say the same.
#pragma once

#include <string_view>

#include "jx/array.h"

namespace jx::detail {

// Whether x may stand for itself as a constant of another computation: raises the
// leaked-tracer error naming `op` when x is a tracer whose transformation has already
// returned; concrete arrays and tracers of running transformations pass.
void check_not_leaked(const Array& x, std::string_view op);

}  // namespace jx::detail
