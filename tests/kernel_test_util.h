// Running one compiled kernel directly, for the codegen tests (jit_codegen_test,
// jit_hardening_test).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "jit/codegen/kernel.h"
#include "jx/jaxpr.h"

namespace jx::testing {

// Runs `kernel` (compiled from `j`) on contiguous copies of `args`. Outputs sit between
// guard bytes the kernel must not touch; a write outside them fails the test.
inline std::vector<Array> run_kernel(const compiler::Kernel& kernel, const Jaxpr& j, const std::vector<Array>& args) {
  std::vector<std::vector<char>> in_buffers, out_buffers;
  std::vector<const void*> ins;
  std::vector<void*> outs;
  for (const Array& a : args) {
    in_buffers.emplace_back(static_cast<size_t>(std::max<int64_t>(a.nbytes(), 1)));
    a.copy_to(in_buffers.back().data(), a.dtype());
    ins.push_back(in_buffers.back().data());
  }
  constexpr size_t kGuard = 64;
  std::vector<Aval> out_avals = j.out_avals();
  for (const Aval& o : out_avals) {
    out_buffers.emplace_back(static_cast<size_t>(o.size() * itemsize(o.dtype)) + 2 * kGuard, char(0x5a));
    outs.push_back(out_buffers.back().data() + kGuard);
  }
  kernel.run(ins.data(), outs.data());
  std::vector<Array> results;
  for (size_t i = 0; i < out_avals.size(); ++i) {
    const std::vector<char>& buf = out_buffers[i];
    for (size_t g = 0; g < kGuard; ++g) {
      EXPECT_EQ(buf[g], char(0x5a)) << "output " << i << " written before its start";
      EXPECT_EQ(buf[buf.size() - 1 - g], char(0x5a)) << "output " << i << " written past its end";
    }
    results.emplace_back(buf.data() + kGuard, out_avals[i].shape, out_avals[i].dtype);
  }
  return results;
}

}  // namespace jx::testing
