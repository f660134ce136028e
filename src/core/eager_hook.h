// A test hook: when set, bind() with no current trace hands each operation to it instead
// of evaluating eagerly. jit registers one that runs every
// operation as a compiled one-equation program, so the whole test suite doubles as a
// differential test of the compiler against its NumPy-checked expectations; the
// configuration (config.h: jit_every_op, JX_JIT_EVERY_OP) installs it.
#pragma once

#include <span>
#include <vector>

#include "jx/primitive.h"

namespace jx::detail {

using EagerHook = std::vector<Array> (*)(const Primitive& p, std::span<const Array> in, const Params& params);
void set_eager_hook(EagerHook hook);
// Registers jit's one-op runner, which config's jit_every_op turns on and off
// (src/core/config.cpp).
void set_jit_every_op_hook(EagerHook hook);

}  // namespace jx::detail
