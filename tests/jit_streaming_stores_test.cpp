// Streaming stores (src/jit/codegen/streaming_stores.h): the output of at least
// kStreamedOutputBytes of a rows kernel or of an elementwise kernel of plain arithmetic
// is written with non-temporal vector stores where the address is aligned and plain ones
// where it is not, then fenced; smaller outputs and elementwise kernels with
// transcendentals keep plain stores. Checked: the assembly (movnt*, sfence, or neither),
// and the values: a softmax and a 2x + y of 16 MiB written at several alignments a
// 4-byte float can have within a 64-byte line equal eager's results, bit for bit the same
// at every offset, with the bytes around the output untouched.
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

// 2x + y over 4096 x 1024 floats: plain arithmetic, streamed.
const std::string kAxpy = R"({ lambda ; a:f32[4096,1024] b:f32[4096,1024]. let
    c:f32[4096,1024] = add a a
    d:f32[4096,1024] = add c b
  in (d) })";

TEST(StreamingStores, LargeElementwiseOutputOfPlainArithmeticIsStreamed) {
  if (!has_vectors()) GTEST_SKIP() << "no vector ISA";
  const std::string s = assembly(kAxpy, "loop");
  EXPECT_NE(s.find("vmovntp"), std::string::npos) << "no non-temporal store";
  EXPECT_NE(s.find("sfence"), std::string::npos);
}

TEST(StreamingStores, SmallOutputsAndTranscendentalKernelsKeepPlainStores) {
  if (!has_vectors()) GTEST_SKIP() << "no vector ISA";
  const std::string small = assembly(jx::testing::softmax_text("f32", kRows / 2, kCols), "rows");
  EXPECT_EQ(small.find("movnt"), std::string::npos);
  EXPECT_EQ(small.find("sfence"), std::string::npos);
  const std::string compute_bound = assembly(R"({ lambda ; a:f32[4096,2048]. let
    b:f32[4096,2048] = exp a
  in (b) })",
                                             "loop");
  EXPECT_EQ(compute_bound.find("movnt"), std::string::npos);
}

// Outputs whose rows are not whole registers keep plain stores however large: a row's
// streamed stores would share lines with its plain ones (loop_emitter.cpp, streamed()).
// A softmax over 419431 rows of 10 floats (16 MiB; rows of 8-23 points run across rows,
// each point stored alone) and 41944 rows of 100, and x * 2 + b over 4096 x 1025.
TEST(StreamingStores, OutputsOfPartRegisterRowsKeepPlainStores) {
  if (!has_vectors()) GTEST_SKIP() << "no vector ISA";
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{419431, 10}, {41944, 100}}) {
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
    ASSERT_GE(rows * cols * 4, codegen::kStreamedOutputBytes);
    const std::string s = assembly(jx::testing::softmax_text("f32", rows, cols), "rows");
    EXPECT_EQ(s.find("movnt"), std::string::npos);
    EXPECT_EQ(s.find("sfence"), std::string::npos);
  }
  // The same sum with rows of whole registers (1024 floats) is streamed: the test above.
  const std::string broadcast = assembly(R"({ lambda ; a:f32[4096,1025] b:f32[1025]. let
    c:f32[4096,1025] = add a a
    d:f32[4096,1025] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4096, 1025)] b
    e:f32[4096,1025] = add c d
  in (e) })",
                                         "loop");
  EXPECT_EQ(broadcast.find("movnt"), std::string::npos);
}

// Runs `text` as a kernel of `kind` on `args` with its one output at several offsets from
// a 64-byte line: each result equals eager's, and all are the same bits.
void check_every_alignment(const std::string& text, const std::string& kind, const std::vector<Array>& args) {
  const Jaxpr j = parse_jaxpr(text);
  KernelOptions o;
  o.name = "streaming_values";
  o.disk_cache = false;
  auto kernel = compile_kernel(j, kind, o);
  const Array expected = eval_jaxpr(j, {}, args)[0];
  std::vector<std::vector<float>> inputs;
  std::vector<const void*> ins;
  for (const Array& a : args) {
    inputs.push_back(a.to_vector<float>());
    ins.push_back(inputs.back().data());
  }
  const size_t bytes = static_cast<size_t>(expected.size()) * sizeof(float);
  constexpr size_t kGuard = 64;
  std::vector<char> first;
  for (size_t offset : {size_t{0}, size_t{4}, size_t{16}, size_t{28}, size_t{32}}) {
    SCOPED_TRACE("output at 64-byte line + " + std::to_string(offset));
    std::unique_ptr<char, decltype(&std::free)> buffer(
        static_cast<char*>(std::aligned_alloc(64, bytes + 2 * kGuard + 64)), &std::free);
    ASSERT_NE(buffer, nullptr);
    std::memset(buffer.get(), 0x5a, bytes + 2 * kGuard + 64);
    char* out = buffer.get() + kGuard + offset;
    void* outs[] = {out};
    kernel->run(ins.data(), outs);
    for (size_t g = 0; g < kGuard; ++g) {
      ASSERT_EQ(out[-1 - static_cast<ptrdiff_t>(g)], char(0x5a)) << "written before the output";
      ASSERT_EQ(out[bytes + g], char(0x5a)) << "written past the output";
    }
    const Array actual(out, expected.shape(), DType::Float32);
    EXPECT_ALLCLOSE(actual, expected, 1e-5, 1e-9);
    if (first.empty()) first.assign(out, out + bytes);
    else EXPECT_EQ(std::memcmp(first.data(), out, bytes), 0) << "the result depends on the output's alignment";
  }
}

std::vector<float> values(size_t n, size_t seed) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<int64_t>((i * 7919 + seed) % 1000) - 500) / 97.0f;
  return x;
}

TEST(StreamingStores, EveryAlignmentGivesEagersSoftmax) {
  const size_t n = static_cast<size_t>(kRows * kCols);
  check_every_alignment(jx::testing::softmax_text("f32", kRows, kCols), "rows", {Array(values(n, 0), {kRows, kCols})});
}

TEST(StreamingStores, EveryAlignmentGivesEagersElementwiseResult) {
  const size_t n = static_cast<size_t>(kRows * kCols);
  check_every_alignment(kAxpy, "loop", {Array(values(n, 0), {kRows, kCols}), Array(values(n, 3), {kRows, kCols})});
}

}  // namespace
}  // namespace jx::compiler
