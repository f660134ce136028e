// threefry2x32: the Threefry-2x32 block cipher, the one primitive jx::random is built on,
// exactly as JAX defines it: key words (k0, k1), counter words (x0, x1) -> two uint32
// words. Its CPU kernel: src/backend/cpu/kernels/prng.cpp.
#include <array>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "lax/batch_rules.h"
#include "lax/rules.h"

namespace jx::lax {
namespace {

std::vector<Aval> threefry_rule(std::span<const Aval> in, const Params&) {
  rules::check_arity("threefry2x32", in, 4);
  for (const Aval& a : in) {
    if (a.dtype != DType::UInt32)
      detail::fail("threefry2x32", "operands must be uint32, got ", rules::avals_str(in));
    if (a.shape != in[0].shape)
      detail::fail("threefry2x32", "operands must have one shape, got ", rules::avals_str(in));
  }
  Aval out{in[0].shape, DType::UInt32, false};
  return {out, out};
}

}  // namespace

// Not differentiable (integer bits); batching is elementwise, operands of one shape.
extern const Primitive threefry2x32_p;
const Primitive threefry2x32_p("threefry2x32", {.traits = kElementwise | kNotDifferentiable,
                                                .num_outputs = 2,
                                                .abstract_eval = threefry_rule,
                                                .jvp = {},
                                                .transpose = {},
                                                .batch = batch_rules::elementwise(threefry2x32_p)});

std::pair<Array, Array> threefry2x32(const Array& key0, const Array& key1, const Array& x0, const Array& x1) {
  std::array<Array, 4> in = {key0, key1, x0, x1};
  auto out = jx::bind(threefry2x32_p, in);
  return {out[0], out[1]};
}

}  // namespace jx::lax
