// Streaming stores (src/jit/codegen/streaming_stores.h): a rows kernel's output of at
// least kStreamedOutputBytes is written with non-temporal vector stores where the address
// is aligned and plain ones where it is not, then fenced; smaller outputs and elementwise
// kernels keep plain stores. Checked: the assembly (movnt*, sfence, or neither), and the
// values: a softmax of 16 MiB written at every alignment a 4-byte float can have within
// a 64-byte line equals eager's result, bit for bit the same at every offset, with the
// bytes around the output untouched.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/vector_math.h"
#include "jit/codegen/kernel.h"
#include "jit/codegen/streaming_stores.h"
#include "jx/jaxpr.h"
#include "row_programs.h"
#include "test_util.h"

namespace jx::compiler {
namespace {

namespace fs = std::filesystem;

// The assembly of `text` compiled as a kernel of `kind` (the dump's .s files, joined).
std::string assembly(const std::string& text, const std::string& kind) {
  const fs::path dir = fs::temp_directory_path() / ("jx_streaming_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  KernelOptions o;
  o.name = "streaming";
  o.disk_cache = false;
  o.dump_dir = dir.string();
  (void)compile_kernel(parse_jaxpr(text), kind, o);
  std::string all;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.path().extension() == ".s") {
      std::ifstream in(entry.path());
      std::stringstream ss;
      ss << in.rdbuf();
      all += ss.str();
    }
  fs::remove_all(dir);
  return all;
}

bool has_vectors() { return cpu::vector_isa() != cpu::VectorIsa::Scalar; }

// 4096 x 1024 floats: 16 MiB, the threshold.
constexpr int64_t kRows = 4096, kCols = 1024;
static_assert(kRows * kCols * 4 == codegen::kStreamedOutputBytes);

TEST(StreamingStores, LargeRowsOutputIsStreamedAndFenced) {
  if (!has_vectors()) GTEST_SKIP() << "no vector ISA: no whole-register stores";
  const std::string s = assembly(jx::testing::softmax_text("f32", kRows, kCols), "rows");
  EXPECT_NE(s.find("vmovntp"), std::string::npos) << "no non-temporal store";
  EXPECT_NE(s.find("sfence"), std::string::npos) << "non-temporal stores without a fence";
}

TEST(StreamingStores, SmallRowsOutputAndElementwiseKernelsKeepPlainStores) {
  if (!has_vectors()) GTEST_SKIP() << "no vector ISA";
  const std::string small = assembly(jx::testing::softmax_text("f32", kRows / 2, kCols), "rows");
  EXPECT_EQ(small.find("movnt"), std::string::npos);
  EXPECT_EQ(small.find("sfence"), std::string::npos);
  const std::string elementwise = assembly(R"({ lambda ; a:f32[4096,2048]. let
    b:f32[4096,2048] = exp a
  in (b) })",
                                           "loop");
  EXPECT_EQ(elementwise.find("movnt"), std::string::npos);
}

TEST(StreamingStores, EveryAlignmentGivesEagersSoftmax) {
  const Jaxpr j = parse_jaxpr(jx::testing::softmax_text("f32", kRows, kCols));
  KernelOptions o;
  o.name = "streaming_values";
  o.disk_cache = false;
  auto kernel = compile_kernel(j, "rows", o);
  std::vector<float> x(static_cast<size_t>(kRows * kCols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int64_t>((i * 7919) % 1000) - 500) / 97.0f;
  const std::vector<Array> args = {Array(x, {kRows, kCols})};
  const Array expected = eval_jaxpr(j, {}, args)[0];
  const size_t bytes = x.size() * sizeof(float);
  constexpr size_t kGuard = 64;
  std::vector<char> first;
  for (size_t offset : {size_t{0}, size_t{4}, size_t{16}, size_t{28}, size_t{32}}) {
    SCOPED_TRACE("output at 64-byte line + " + std::to_string(offset));
    std::unique_ptr<char, decltype(&std::free)> buffer(
        static_cast<char*>(std::aligned_alloc(64, bytes + 2 * kGuard + 64)), &std::free);
    ASSERT_NE(buffer, nullptr);
    std::memset(buffer.get(), 0x5a, bytes + 2 * kGuard + 64);
    char* out = buffer.get() + kGuard + offset;
    const void* ins[] = {x.data()};
    void* outs[] = {out};
    kernel->run(ins, outs);
    for (size_t g = 0; g < kGuard; ++g) {
      ASSERT_EQ(out[-1 - static_cast<ptrdiff_t>(g)], char(0x5a)) << "written before the output";
      ASSERT_EQ(out[bytes + g], char(0x5a)) << "written past the output";
    }
    const Array actual(out, {kRows, kCols}, DType::Float32);
    EXPECT_ALLCLOSE(actual, expected, 1e-5, 1e-9);
    if (first.empty()) first.assign(out, out + bytes);
    else EXPECT_EQ(std::memcmp(first.data(), out, bytes), 0) << "the result depends on the output's alignment";
  }
}

}  // namespace
}  // namespace jx::compiler
