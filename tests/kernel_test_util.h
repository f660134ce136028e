// Running one compiled kernel directly, for the codegen tests (jit_codegen_test,
// jit_codegen_dumps_test, jit_columns_kernel_test, jit_hardening_test, jit_rows_totals_test).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "jit/codegen/kernel.h"
#include "jx/jaxpr.h"
#include "test_util.h"

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

// Uniform values in [-2, 2] (integers in [-50, 50], booleans half true) for `aval`.
inline Array random_array(const Aval& aval, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto n = static_cast<size_t>(aval.size());
  switch (aval.dtype) {
    case DType::Float32: {
      std::uniform_real_distribution<float> u(-2.f, 2.f);
      std::vector<float> v(n);
      for (auto& x : v) x = u(rng);
      return Array(v, aval.shape);
    }
    case DType::Float64: {
      std::uniform_real_distribution<double> u(-2., 2.);
      std::vector<double> v(n);
      for (auto& x : v) x = u(rng);
      return Array(v, aval.shape);
    }
    case DType::Bool: {
      std::vector<uint8_t> v(n);
      for (auto& x : v) x = rng() & 1;
      return Array(v.data(), aval.shape, DType::Bool);
    }
    default: {
      std::uniform_int_distribution<int64_t> u(-50, 50);
      std::vector<int64_t> v(n);
      for (auto& x : v) x = u(rng);
      return Array(v, aval.shape).astype(aval.dtype);
    }
  }
}

inline compiler::KernelOptions no_cache(std::string name = "test") {
  compiler::KernelOptions o;
  o.name = std::move(name);
  o.disk_cache = false;
  return o;
}

// Compiles `text` as a kernel of `kind`, runs it and eager on the same random inputs.
inline void check(const std::string& text, const std::string& kind, double rtol = 1e-6, double atol = 1e-6,
           std::vector<Array> args = {}) {
  SCOPED_TRACE(text);
  Jaxpr j = parse_jaxpr(text);
  if (args.empty())
    for (size_t i = 0; i < j.invars.size(); ++i) args.push_back(random_array(j.invars[i].aval, 17 + 31 * i));
  std::vector<Array> expected = eval_jaxpr(j, {}, args);
  auto kernel = compiler::compile_kernel(j, kind, no_cache());
  std::vector<Array> actual = run_kernel(*kernel, j, args);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_ALLCLOSE(actual[i], expected[i], rtol, atol) << "output " << i;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One dump of `text` compiled as a kernel of `kind` (dumped to a fresh directory, read,
// and removed): `extension` ".ll" its optimized LLVM IR, ".s" its assembly, ".remarks"
// the loop vectorizer's remarks.
inline std::string kernel_dump(const std::string& text, const std::string& kind, const std::string& extension) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("jx_codegen_dump_ir_" + std::to_string(::getpid()));
  compiler::KernelOptions o;
  o.name = "kernel";
  o.dump_dir = dir.string();
  o.disk_cache = false;
  compiler::compile_kernel(parse_jaxpr(text), kind, o);
  const std::string dump = read_file(dir / ("kernel" + extension));
  fs::remove_all(dir);
  return dump;
}

inline std::string kernel_ir(const std::string& text, const std::string& kind) { return kernel_dump(text, kind, ".ll"); }

}  // namespace jx::testing
