// CPU kernel of threefry2x32 (the primitive's rules: src/lax/prng.cpp): the Threefry-2x32
// block cipher (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", 20 rounds),
// exactly as JAX computes it.
#include <array>

#include "backend/cpu/kernels/kernels.h"
#include "core/array_internal.h"

namespace jx::cpu {
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

void add_prng_kernels(detail::KernelTable& table) { table.add("threefry2x32", threefry_impl); }

}  // namespace jx::cpu
