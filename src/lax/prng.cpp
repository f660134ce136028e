// threefry2x32: the Threefry-2x32 block cipher (Salmon et al., "Parallel random numbers:
// as easy as 1, 2, 3", 20 rounds), the one primitive jx::random is built on, exactly as
// JAX defines it: key words (k0, k1), counter words (x0, x1) -> two uint32 words.
#include <array>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "lax/batch_rules.h"
#include "lax/rules.h"

namespace jx::lax {
namespace {

constexpr uint32_t kParity = 0x1BD11BDA;  // Threefry's key-schedule constant
constexpr std::array<std::array<int, 4>, 2> kRotations = {{{13, 15, 26, 6}, {17, 29, 16, 24}}};

inline uint32_t rotl(uint32_t v, int d) { return (v << d) | (v >> (32 - d)); }

inline void threefry_block(uint32_t k0, uint32_t k1, uint32_t& x0, uint32_t& x1) {
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ kParity};
  x0 += ks[0];
  x1 += ks[1];
  // Five groups of four rounds, each followed by a key injection.
  for (uint32_t group = 0; group < 5; ++group) {
    for (int rot : kRotations[group % 2]) {
      x0 += x1;
      x1 = rotl(x1, rot);
      x1 ^= x0;
    }
    x0 += ks[(group + 1) % 3];
    x1 += ks[(group + 2) % 3] + group + 1;
  }
}

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

std::vector<Array> threefry_impl(std::span<const Array> in, const Params&, std::span<const Aval> out) {
  // Twenty rounds per element dwarf the cost of making the operands contiguous.
  Array k0 = detail::contiguous(in[0]), k1 = detail::contiguous(in[1]);
  Array x0 = detail::contiguous(in[2]), x1 = detail::contiguous(in[3]);
  Array y0 = detail::alloc_array(out[0]), y1 = detail::alloc_array(out[1]);
  const uint32_t *pk0 = detail::data<uint32_t>(k0), *pk1 = detail::data<uint32_t>(k1);
  const uint32_t *px0 = detail::data<uint32_t>(x0), *px1 = detail::data<uint32_t>(x1);
  uint32_t *py0 = detail::mutable_data<uint32_t>(y0), *py1 = detail::mutable_data<uint32_t>(y1);
  const int64_t n = out[0].size();
  for (int64_t i = 0; i < n; ++i) {
    uint32_t a = px0[i], b = px1[i];
    threefry_block(pk0[i], pk1[i], a, b);
    py0[i] = a;
    py1[i] = b;
  }
  return {y0, y1};
}

}  // namespace

// Not differentiable (integer bits); batching is elementwise, operands of one shape.
extern const Primitive threefry2x32_p;
const Primitive threefry2x32_p("threefry2x32", {.traits = kElementwise | kNotDifferentiable,
                                                .num_outputs = 2,
                                                .abstract_eval = threefry_rule,
                                                .impl = threefry_impl,
                                                .jvp = {},
                                                .transpose = {},
                                                .batch = batch_rules::elementwise(threefry2x32_p)});

std::pair<Array, Array> threefry2x32(const Array& key0, const Array& key1, const Array& x0, const Array& x1) {
  std::array<Array, 4> in = {key0, key1, x0, x1};
  auto out = jx::bind(threefry2x32_p, in);
  return {out[0], out[1]};
}

}  // namespace jx::lax
