// A test hook: when set, bind() with no current trace hands each operation to it instead
// of evaluating eagerly. jit installs one under JX_JIT_EVERY_OP=1 that runs every
// operation as a compiled one-equation program, so the whole test suite doubles as a
// differential test of the compiler against its NumPy-checked expectations.
#pragma once

#include <span>
#include <vector>

#include "jx/primitive.h"

namespace jx::detail {

using EagerHook = std::vector<Array> (*)(const Primitive& p, std::span<const Array> in, const Params& params);
void set_eager_hook(EagerHook hook);

}  // namespace jx::detail
