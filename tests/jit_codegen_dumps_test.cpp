// Disk cache, dumps and diagnostics of loop codegen (src/jit/codegen/): kernels compiled
// from jaxpr text with the disk cache on, off and corrupted; the optimized IR a kernel
// dumps, checked for the loops codegen means to emit (vector widths, interleaving,
// masks, gathers); and LLVM printing nothing while it compiles. The kernels' values are
// jit_codegen_test's.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "jit/codegen/kernel.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/codegen/llvm_session.h"
#include "jit/codegen/loop_kernel.h"
#include "jit/codegen/object_cache.h"
#include "jx/jaxpr.h"
#include "kernel_test_util.h"
#include "row_programs.h"
#include "test_util.h"

namespace jx::compiler {
namespace {

namespace fs = std::filesystem;

using jx::testing::kernel_dump;
using jx::testing::kernel_ir;
using jx::testing::no_cache;
using jx::testing::random_array;
using jx::testing::read_file;
using jx::testing::run_kernel;
using jx::testing::softmax_text;

// ---- disk cache ----

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::vector<fs::path> cache_files(const fs::path& dir) {
  std::vector<fs::path> files;
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  return files;
}

class DiskCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("jx_codegen_cache_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Compiles (a program no other test compiles), runs and checks it.
  void compile_and_check(bool disk_cache = true) {
    Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[300] b:f32[300]. let
    c:f32[300] = broadcast_in_dim[broadcast_dimensions=() shape=(300,)] 1.2345:f32[]
    d:f32[300] = mul a c
    e:f32[300] = atan2 d b
  in (e) })");
    std::vector<Array> args{random_array(j.invars[0].aval, 1), random_array(j.invars[1].aval, 2)};
    KernelOptions o;
    o.name = "cached";
    o.cache_dir = dir_.string();
    o.disk_cache = disk_cache;
    auto kernel = compile_kernel(j, "loop", o);
    EXPECT_ALLCLOSE(run_kernel(*kernel, j, args)[0], eval_jaxpr(j, {}, args)[0], 1e-5, 1e-6);
  }
  fs::path dir_;
};

TEST_F(DiskCache, SecondCompileIsAHit) {
  using codegen::object_cache_stats;
  const auto before = object_cache_stats();
  const int64_t compiles = codegen::llvm_compile_count();
  compile_and_check();  // the kernel is destroyed here, so the next compile cannot reuse it in memory
  EXPECT_EQ(object_cache_stats().misses, before.misses + 1);
  EXPECT_EQ(object_cache_stats().stores, before.stores + 1);
  EXPECT_EQ(codegen::llvm_compile_count(), compiles + 1);
  ASSERT_EQ(cache_files(dir_).size(), 1u);
  EXPECT_EQ(cache_files(dir_)[0].extension(), ".jxo");
  compile_and_check();
  EXPECT_EQ(object_cache_stats().hits, before.hits + 1);
  EXPECT_EQ(codegen::llvm_compile_count(), compiles + 1);  // LLVM did not run
}

TEST_F(DiskCache, CorruptEntriesAreRecompiledAndReplaced) {
  compile_and_check();
  ASSERT_EQ(cache_files(dir_).size(), 1u);
  const fs::path entry = cache_files(dir_)[0];
  const std::string good = read_file(entry);
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x40;
  const std::string name = entry.stem().string();
  const std::string key = name.substr(std::string("kernel-").size());
  for (const std::string& bad : {std::string(), good.substr(0, 10), good.substr(0, good.size() - 7), flipped,
                                 std::string(5000, 'x')}) {
    write_bytes(entry, bad);
    const auto before = codegen::object_cache_stats();
    const int64_t compiles = codegen::llvm_compile_count();
    compile_and_check();
    EXPECT_EQ(codegen::object_cache_stats().rejected, before.rejected + 1);
    EXPECT_EQ(codegen::llvm_compile_count(), compiles + 1);
    EXPECT_EQ(read_file(entry), good);  // rewritten
  }
  // A well-formed entry whose payload is not an object file: loading fails, and the
  // kernel is compiled instead.
  codegen::object_cache_store(dir_.string(), key, "not an object file");
  const int64_t compiles = codegen::llvm_compile_count();
  const auto before = codegen::object_cache_stats();
  compile_and_check();
  EXPECT_EQ(codegen::llvm_compile_count(), compiles + 1);
  EXPECT_EQ(codegen::object_cache_stats().rejected, before.rejected + 1);
  EXPECT_EQ(codegen::object_cache_stats().hits, before.hits);
  EXPECT_EQ(read_file(entry), good);
  // No temporary files are left behind.
  EXPECT_EQ(cache_files(dir_).size(), 1u);
}

TEST_F(DiskCache, Disabled) {
  compile_and_check(/*disk_cache=*/false);
  EXPECT_TRUE(cache_files(dir_).empty());
  // Without a directory there is no disk cache either.
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[3]. let
    b:f32[3] = logistic a
  in (b) })");
  KernelOptions o;
  o.disk_cache = true;
  compile_kernel(j, "loop", o);
  EXPECT_TRUE(cache_files(dir_).empty());
}

TEST(DiskCacheKey, IsAHexSha256OfTheText) {
  EXPECT_EQ(codegen::object_cache_key("abc").size(), 64u);
  EXPECT_NE(codegen::object_cache_key("abc"), codegen::object_cache_key("abd"));
}

TEST(InProcess, IdenticalKernelsShareOneCompile) {
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f64[11]. let
    b:f64[11] = cosh a
    c:f64[11] = sinh b
  in (c) })");
  auto first = compile_kernel(j, "loop", no_cache());
  const int64_t compiles = codegen::llvm_compile_count();
  auto second = compile_kernel(j, "loop", no_cache());
  EXPECT_EQ(codegen::llvm_compile_count(), compiles);
  std::vector<Array> args{random_array(j.invars[0].aval, 3)};
  EXPECT_ALLCLOSE(run_kernel(*second, j, args)[0], eval_jaxpr(j, {}, args)[0], 1e-12, 1e-12);
  first.reset();
  EXPECT_ALLCLOSE(run_kernel(*second, j, args)[0], eval_jaxpr(j, {}, args)[0], 1e-12, 1e-12);
}

// ---- dumps ----

TEST(Dumps, SinLoopIsVectorized) {
  const fs::path dir = fs::temp_directory_path() / ("jx_codegen_dump_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // 4100 elements, not a multiple of 16 lanes: the vector loop keeps a scalar remainder.
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[4100]. let
    b:f32[4100] = sin a
  in (b) })");
  KernelOptions o;
  o.name = "f.fusion1";
  o.dump_dir = dir.string();
  o.disk_cache = false;
  auto kernel = compile_kernel(j, "loop", o);
  const std::string ir = read_file(dir / "f.fusion1.ll"), assembly = read_file(dir / "f.fusion1.s");
  EXPECT_NE(ir.find("define void @jx_kernel_"), std::string::npos);  // named after the cache key
  EXPECT_NE(assembly.find("jx_kernel"), std::string::npos);
  EXPECT_NE(read_file(dir / "f.fusion1.plan").find("n1:float32 = sin"), std::string::npos);
  fs::remove_all(dir);
  if (codegen::host_target().features.find("+avx512f") == std::string::npos) GTEST_SKIP() << "no AVX-512 on this host";
  if (jx::config::get().vector_isa != "avx512") GTEST_SKIP() << "the configured vector ISA caps the vector math";
  EXPECT_NE(assembly.find("zmm"), std::string::npos);
  EXPECT_NE(assembly.find("_ZGVeN16v_sinf"), std::string::npos) << assembly.substr(0, 4000);
  // Anything left scalar calls the runtime function that runs that same variant on one
  // lane (never scalar libm's sinf, which rounds differently).
  EXPECT_NE(ir.find("@jx_vm_sin_f32_avx512(float"), std::string::npos);
  EXPECT_EQ(ir.find("@sinf("), std::string::npos);
}

TEST(Dumps, LongChainInterleavesFourVectorsSharingOneRareTest) {
  if (codegen::host_target().features.find("+avx2") == std::string::npos) GTEST_SKIP() << "no AVX2 on this host";
  const fs::path dir = fs::temp_directory_path() / ("jx_codegen_dump_chain_" + std::to_string(::getpid()));
  // tan(exp(a)) is long enough to interleave (KernelPlan, FlatLoopRunsInVectorBlocks): each
  // block of 32 floats is one iteration computing four independent vectors, so the loop
  // calls libmvec's 8-lane tanf four times (tan stays on libmvec with
  // every AVX2 CPU: cpu::runs_inline), with no scalar remainder beside it, and the
  // four inline exps test their rare path once (scalar_ops.cpp, share_rare_tests).
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[1024]. let
    b:f32[1024] = exp a
    c:f32[1024] = tan b
  in (c) })");
  KernelOptions o = no_cache("chain");
  o.dump_dir = dir.string();
  o.vector_isa = cpu::VectorIsa::Avx2;
  compile_kernel(j, "loop", o);
  const std::string assembly = read_file(dir / "chain.s"), plan = read_file(dir / "chain.plan");
  const std::string ir = read_file(dir / "chain.ll");
  fs::remove_all(dir);
  EXPECT_NE(plan.find("lanes 8 interleave 4"), std::string::npos) << plan;
  EXPECT_NE(ir.find("_ZGVdN8v_tanf"), std::string::npos);
  EXPECT_EQ(ir.find("call float @jx_vm_tan_f32_avx2("), std::string::npos);  // no scalar remainder
  size_t calls = 0;  // the kernel's calls, through a register holding the variant's address
  for (size_t at = assembly.find("\tcall"); at != std::string::npos; at = assembly.find("\tcall", at + 1)) ++calls;
  EXPECT_EQ(calls, 4u) << assembly.substr(0, 6000);
  size_t shared_tests = 0;  // blocks of the shared rare path: one, for the four exps
  for (size_t at = ir.find("\nrare.any"); at != std::string::npos; at = ir.find("\nrare.any", at + 1)) ++shared_tests;
  EXPECT_EQ(shared_tests, 1u) << ir;
}

// A rows kernel across rows computes a row's points one after another, each exp added to
// the row's sum as it comes: the ten exps of a logsumexp over rows of 10 floats share one
// rare-path test (scalar_ops.cpp, share_rare_tests, the sum's adds moved after it), where
// each had its own branch and was scheduled alone in its block (a cross-entropy over
// 160000 x 10: 912 -> 665 us).
TEST(Dumps, AcrossRowsExpsShareOneRareTest) {
  if (codegen::host_target().features.find("+avx2") == std::string::npos) GTEST_SKIP() << "no AVX2 on this host";
  const std::string ir = kernel_ir(jx::testing::logsumexp_text(1000, 10), "rows");
  size_t vector_tests = 0, shared = 0;  // a vector rare test is an or-reduction of its lanes' conditions
  for (size_t at = ir.find("call i1 @llvm.vector.reduce.or.v"); at != std::string::npos;
       at = ir.find("call i1 @llvm.vector.reduce.or.v", at + 1))
    ++vector_tests;
  for (size_t at = ir.find("\nrare.any"); at != std::string::npos; at = ir.find("\nrare.any", at + 1)) ++shared;
  EXPECT_EQ(shared, 1u) << ir;
  EXPECT_EQ(vector_tests, 1u) << ir;
}

// A large body (more than kLargeBodyOps ops) calls its inline math outlined, on vectors
// of kLargeBodyVectors registers (kernel_plan.cpp, vector_blocks): a chain of rounds
// mul/add/sin/sub/tanh over 1024 floats calls the 32-lane sin and tanh, one call per
// op and block, never the one-register variants (one chain a call). A large body that
// calls libmvec (tan stays on it with every AVX2 CPU) keeps one register: its 8-lane
// variant, never a call per lane.
TEST(Dumps, LargeBodyCallsOutlinedMathOnFourRegisters) {
  if (codegen::host_target().features.find("+avx2") == std::string::npos) GTEST_SKIP() << "no AVX2 on this host";
  const fs::path dir = fs::temp_directory_path() / ("jx_codegen_dump_large_" + std::to_string(::getpid()));
  for (const char* fn : {"sin", "tan"}) {
    SCOPED_TRACE(fn);
    std::string text = "{ lambda ; a:f32[1024] b:f32[1024]. let\n";
    std::string prev = "a";
    int64_t ops = 0;
    for (int round = 0; ops <= codegen::kLargeBodyOps; ++round, ops += 5) {
      const std::string r = std::to_string(round);
      text += "  m" + r + ":f32[1024] = mul " + prev + " b\n  p" + r + ":f32[1024] = add m" + r + " a\n  s" +
              r + ":f32[1024] = " + fn + " p" + r + "\n  d" + r + ":f32[1024] = sub s" + r + " b\n  t" + r +
              ":f32[1024] = tanh d" + r + "\n";
      prev = "t" + r;
    }
    Jaxpr j = parse_jaxpr(text + "in (" + prev + ") }");
    KernelOptions o = no_cache(std::string("large_") + fn);
    o.dump_dir = dir.string();
    o.vector_isa = cpu::VectorIsa::Avx2;
    auto kernel = compile_kernel(j, "loop", o);
    const std::string ir = read_file(dir / (o.name + ".ll")), remarks = read_file(dir / (o.name + ".remarks"));
    const std::string sin_calls = "call <32 x float> @jx_outline." + std::string(fn) + ".f32.avx2.v32(";
    if (std::string(fn) == "sin") {
      EXPECT_NE(remarks.find("vectorization width: 32, interleaved count: 1"), std::string::npos) << remarks;
      EXPECT_NE(ir.find(sin_calls), std::string::npos) << ir.substr(0, 4000);
      EXPECT_NE(ir.find("call <32 x float> @jx_outline.tanh.f32.avx2.v32("), std::string::npos);
      EXPECT_EQ(ir.find("call <8 x float> @jx_outline"), std::string::npos) << "a call on one register";
    } else {
      EXPECT_NE(remarks.find("vectorization width: 8, interleaved count: 1"), std::string::npos) << remarks;
      EXPECT_NE(ir.find("_ZGVdN8v_tanf"), std::string::npos);
      EXPECT_NE(ir.find("call <8 x float> @jx_outline.tanh.f32.avx2.v8("), std::string::npos);
    }
    EXPECT_EQ(ir.find("call float @jx_"), std::string::npos) << "a call per lane";
    // |b| <= 0.5: each round contracts, so rounding differences do not grow.
    std::vector<Array> args{random_array(j.invars[0].aval, 1), random_array(j.invars[1].aval, 2) * 0.25f};
    EXPECT_ALLCLOSE(run_kernel(*kernel, j, args)[0], eval_jaxpr(j, {}, args)[0], 1e-5, 1e-5);
  }
  fs::remove_all(dir);
}

// A short body chaining kLargeBodyChainedMath transcendentals (two rounds of
// mul/add/sin/sub/tanh: 10 ops) calls them outlined on four registers too; one round (two
// chained) keeps them inline, interleaved.
TEST(Dumps, ChainedMathCallsOutlinedMath) {
  if (codegen::host_target().features.find("+avx2") == std::string::npos) GTEST_SKIP() << "no AVX2 on this host";
  const fs::path dir = fs::temp_directory_path() / ("jx_codegen_dump_chained_" + std::to_string(::getpid()));
  for (int rounds : {1, 2}) {
    SCOPED_TRACE(rounds);
    std::string text = "{ lambda ; a:f32[1024] b:f32[1024]. let\n";
    std::string prev = "a";
    for (int round = 0; round < rounds; ++round) {
      const std::string r = std::to_string(round);
      text += "  m" + r + ":f32[1024] = mul " + prev + " b\n  p" + r + ":f32[1024] = add m" + r + " a\n  s" + r +
              ":f32[1024] = sin p" + r + "\n  d" + r + ":f32[1024] = sub s" + r + " b\n  t" + r +
              ":f32[1024] = tanh d" + r + "\n";
      prev = "t" + r;
    }
    Jaxpr j = parse_jaxpr(text + "in (" + prev + ") }");
    KernelOptions o = no_cache("chained_" + std::to_string(rounds));
    o.dump_dir = dir.string();
    o.vector_isa = cpu::VectorIsa::Avx2;
    auto kernel = compile_kernel(j, "loop", o);
    const std::string ir = read_file(dir / (o.name + ".ll"));
    const bool outlined = rounds * 2 >= codegen::kLargeBodyChainedMath;
    EXPECT_EQ(ir.find("call <32 x float> @jx_outline.tanh.f32.avx2.v32(") != std::string::npos, outlined)
        << ir.substr(0, 4000);
    EXPECT_EQ(ir.find("@jx_outline.") != std::string::npos, outlined);
    std::vector<Array> args{random_array(j.invars[0].aval, 1), random_array(j.invars[1].aval, 2) * 0.25f};
    EXPECT_ALLCLOSE(run_kernel(*kernel, j, args)[0], eval_jaxpr(j, {}, args)[0], 1e-5, 1e-5);
  }
  fs::remove_all(dir);
}

// A large body reduced along rows, or whole, over whole blocks of four registers runs
// them as one vector too (loop_emitter.cpp, annotate_loops): its chain's latency is
// overlapped four ways. Rows of 100 floats (not whole blocks) keep one register.
TEST(Dumps, LargeBodyReductionsRunFourRegisters) {
  if (codegen::host_target().features.find("+avx2") == std::string::npos) GTEST_SKIP() << "no AVX2 on this host";
  const fs::path dir = fs::temp_directory_path() / ("jx_codegen_dump_large_sum_" + std::to_string(::getpid()));
  struct Case {
    const char* shape;
    const char* axes;
    const char* out;
    int64_t width;
  };
  for (const Case& c : {Case{"64,256", "1", "f32[64]", 32}, Case{"64,256", "0, 1", "f32[]", 32},
                        Case{"64,100", "1", "f32[64]", 8}}) {
    SCOPED_TRACE(std::string(c.shape) + " over " + c.axes);
    const std::string t = std::string("f32[") + c.shape + "]";
    std::string text = "{ lambda ; a:" + t + " b:" + t + ". let\n";
    std::string prev = "a";
    for (int64_t i = 0; i <= codegen::kLargeBodyOps; ++i) {
      const std::string v = "v" + std::to_string(i);
      text += "  " + v + ":" + t + " = " + (i % 2 ? "mul " + prev + " b" : "add " + prev + " a") + "\n";
      prev = v;
    }
    text += "  s:" + std::string(c.out) + " = reduce_sum[axes=(" + c.axes + ",)] " + prev + "\nin (s) }";
    Jaxpr j = parse_jaxpr(text);
    KernelOptions o = no_cache("large_sum");
    o.dump_dir = dir.string();
    o.vector_isa = cpu::VectorIsa::Avx2;
    auto kernel = compile_kernel(j, "reduction", o);
    const std::string remarks = read_file(dir / (o.name + ".remarks"));
    EXPECT_NE(remarks.find("vectorization width: " + std::to_string(c.width) + ","), std::string::npos) << remarks;
    // |b| <= 0.5: the chain contracts, so rounding differences do not grow.
    std::vector<Array> args{random_array(j.invars[0].aval, 1), random_array(j.invars[1].aval, 2) * 0.25f};
    EXPECT_ALLCLOSE(run_kernel(*kernel, j, args)[0], eval_jaxpr(j, {}, args)[0], 1e-5, 1e-4);
  }
  fs::remove_all(dir);
}

// A kernel over fewer elements than a vector holds is left scalar (loop_emitter.cpp):
// no vector body would ever run. One more element than that and it is vectorized.
TEST(Dumps, KernelSmallerThanAVectorStaysScalar) {
  const fs::path dir = fs::temp_directory_path() / ("jx_codegen_dump_tiny_" + std::to_string(::getpid()));
  const int64_t lanes = codegen::host_vector_bytes() / 4;
  for (int64_t n : {lanes - 1, lanes}) {
    const std::string t = "f32[" + std::to_string(n) + "]";
    Jaxpr j = parse_jaxpr("{ lambda ; a:" + t + " b:" + t + ". let\n  c:" + t + " = mul a b\n  d:" + t +
                          " = sin c\nin (d) }");
    KernelOptions o = no_cache("tiny" + std::to_string(n));
    o.dump_dir = dir.string();
    auto kernel = compile_kernel(j, "loop", o);
    const std::string ir = read_file(dir / (o.name + ".ll"));
    EXPECT_EQ(ir.find("fmul <") != std::string::npos, n >= lanes) << n << " elements:\n" << ir;
    // ... and its machine code comes from LLVM's fast code generator (llvm_session.cpp).
    EXPECT_EQ(ir.find("jx.quick_codegen") != std::string::npos, n < lanes) << ir;
    std::vector<Array> args{random_array(j.invars[0].aval, 1), random_array(j.invars[1].aval, 2)};
    EXPECT_ALLCLOSE(run_kernel(*kernel, j, args)[0], eval_jaxpr(j, {}, args)[0], 1e-6, 1e-6);
  }
  fs::remove_all(dir);
}

TEST(Dumps, SumAccumulatesInVectorRegisters) {
  if (codegen::host_target().features.find("+avx512f") == std::string::npos) GTEST_SKIP() << "no AVX-512 on this host";
  const fs::path dir = fs::temp_directory_path() / ("jx_codegen_dump_sum_" + std::to_string(::getpid()));
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[100000] b:f32[100000]. let
    c:f32[100000] = mul a b
    d:f32[] = reduce_sum[axes=(0,)] c
  in (d) })");
  KernelOptions o;
  o.name = "sum";
  o.dump_dir = dir.string();  // created on demand
  o.disk_cache = false;
  compile_kernel(j, "reduction", o);
  const std::string ir = read_file(dir / "sum.ll"), assembly = read_file(dir / "sum.s");
  fs::remove_all(dir);
  // Float32 sums accumulate in float64 (loop_emitter.cpp): widened in vector registers.
  EXPECT_TRUE(std::regex_search(ir, std::regex("fpext <[0-9]+ x float>"))) << ir;
  EXPECT_TRUE(std::regex_search(ir, std::regex("fadd reassoc <[0-9]+ x double>"))) << ir;
  EXPECT_NE(assembly.find("vaddpd\t%zmm"), std::string::npos);
}

// A float32 row sum of exp runs the exp at a full register of floats (loop_emitter.cpp's
// width hint: LLVM, left alone, sized the vectors for a double accumulator and ran the exp
// at half width), and sums its terms in float32 vector partials per chunk, each widened
// to the double accumulator once (loop_emitter.cpp's sums_narrow).
TEST(Dumps, FloatMathReductionRunsAtFullFloatWidth) {
  const std::string& features = codegen::host_target().features;
  const bool avx512 = features.find("+avx512f") != std::string::npos;
  if (!avx512 && features.find("+avx2") == std::string::npos) GTEST_SKIP() << "no AVX2 on this host";
  const fs::path dir = fs::temp_directory_path() / ("jx_codegen_dump_lse_" + std::to_string(::getpid()));
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[64,4096]. let
    b:f32[64,4096] = exp a
    c:f32[64] = reduce_sum[axes=(1,)] b
  in (c) })");
  KernelOptions o;
  o.name = "sum_exp";
  o.dump_dir = dir.string();
  o.disk_cache = false;
  compile_kernel(j, "reduction", o);
  const std::string ir = read_file(dir / "sum_exp.ll");
  fs::remove_all(dir);
  const std::string width = avx512 ? "16" : "8";
  EXPECT_TRUE(std::regex_search(ir, std::regex("fadd reassoc <" + width + " x float> %vec.phi"))) << ir;
  EXPECT_TRUE(std::regex_search(ir, std::regex("fpext float %[0-9a-z.]+ to double"))) << ir;
  EXPECT_FALSE(std::regex_search(ir, std::regex("fpext <[0-9]+ x float>"))) << ir;
  EXPECT_TRUE(std::regex_search(ir, std::regex("fmul <" + width + " x float>"))) << ir;
}

// Sums of exp over short loops vectorize: a column sum (the kept axis innermost, a
// ColumnReduce kernel) over a block's columns, a row sum (RowReduce) over a row, whatever
// their count. With a width of 16 floats interleaved four times, a loop of fewer than 64
// points never ran a vector iteration and the exp ran scalar (100000 x 16 floats: 2.8
// ms over axis 0, now 0.45; 1.4 ms over axis 1, now 0.21). Loops of 8 or 24 points run
// vectors of 8 floats (24: three of them, where one of 16 left 8 points scalar); a last
// block of 36 columns (100) runs vectors too, one of 1 (65) stays in the remainder. The
// values are checked against eager elsewhere (the reduction kernel tests, the random
// programs).
TEST(Dumps, ReductionsOverShortLoopsVectorize) {
  if (codegen::host_target().features.find("+avx512f") == std::string::npos) GTEST_SKIP() << "no AVX-512 on this host";
  for (int axis : {0, 1})
    for (int64_t points : {8, 16, 24, 48, 65, 100}) {
      SCOPED_TRACE("axis " + std::to_string(axis) + ", " + std::to_string(points) + " points");
      const fs::path dir = fs::temp_directory_path() / ("jx_codegen_dump_shortsum_" + std::to_string(::getpid()));
      const std::string shape = "f32[1000," + std::to_string(points) + "]";
      const std::string result = axis == 0 ? "f32[" + std::to_string(points) + "]" : "f32[1000]";
      Jaxpr j = parse_jaxpr("{ lambda ; a:" + shape + ". let\n    b:" + shape + " = exp a\n    c:" + result +
                            " = reduce_sum[axes=(" + std::to_string(axis) + ",)] b\n  in (c) }");
      KernelOptions o;
      o.name = "shortsum";
      o.dump_dir = dir.string();
      o.disk_cache = false;
      compile_kernel(j, "reduction", o);
      const std::string ir = read_file(dir / "shortsum.ll"), plan = read_file(dir / "shortsum.plan");
      fs::remove_all(dir);
      ASSERT_NE(plan.find(axis == 0 ? "column_reduce" : "row_reduce"), std::string::npos) << plan;
      const std::string width = points == 8 || points == 24 ? "8" : "16";
      // The exp's polynomial computed in vectors of that width (not only declared).
      EXPECT_TRUE(std::regex_search(ir, std::regex("call <" + width + " x float> @llvm.fma.v" + width + "f32")))
          << ir.substr(0, 4000);
    }
}

// Rows of a few vectors stay loops that vectorize along the row: LLVM unrolled a row of
// 24 floats (its trip count known) and vectorized the loop over rows around it, a gather
// per point (softmax 66666 x 24: 1.2 ms, 0.45 now), and a row max computed its exact
// rerun for every row (0.48-0.62 ms over 100000 x 16, 0.14 now): the rerun's branch is
// marked unlikely, which LLVM keeps as a branch.
TEST(Dumps, ShortRowsVectorizeAlongTheRow) {
  if (codegen::host_target().features.find("+avx512f") == std::string::npos) GTEST_SKIP() << "no AVX-512 on this host";
  for (int64_t cols : {16, 20, 24, 28}) {
    SCOPED_TRACE(std::to_string(cols) + " a row");
    const std::string softmax = kernel_ir(softmax_text("f32", 1000, cols), "rows");
    EXPECT_EQ(softmax.find("masked.gather"), std::string::npos);
    EXPECT_TRUE(std::regex_search(softmax, std::regex("call <(4|8|16) x float> @llvm.fma.v(4|8|16)f32")));
    const std::string max = kernel_ir("{ lambda ; a:f32[1000," + std::to_string(cols) +
                                      "]. let\n    b:f32[1000] = reduce_max[axes=(1,)] a\n  in (b) }",
                                  "reduction");
    EXPECT_EQ(max.find("masked.gather"), std::string::npos);
    EXPECT_NE(max.find("branch_weights"), std::string::npos) << max.substr(0, 3000);
  }
  // A log_softmax's log of each row's sum, which its full-shape output reads, is computed
  // once per row in a loop over the block's rows that vectorizes across them
  // (hoist_row_values): left to LLVM it was a scalar call per row.
  for (int64_t cols : {10, 24, 100}) {
    SCOPED_TRACE(std::to_string(cols) + " a row");
    std::string text = jx::testing::logsumexp_text(1000, cols, /*with_log_softmax=*/true);
    text.replace(text.find("in (m, o) }"), std::string("in (m, o) }").size(), "in (o,) }");  // log_softmax alone
    const std::string ir = kernel_ir(text, "rows");
    EXPECT_TRUE(std::regex_search(ir, std::regex("call <16 x float> @[A-Za-z0-9_.]*log"))) << ir.substr(0, 3000);
    // So is a later pass's: a row sum of log_softmax (a cross-entropy's pick is one)
    // reads the log in the kernel's third pass.
    text.replace(text.find("  in (o,) }"), std::string("  in (o,) }").size(),
                 "    p:f32[1000] = reduce_sum[axes=(1,)] o\n  in (p,) }");
    const std::string summed = kernel_ir(text, "rows");
    EXPECT_TRUE(std::regex_search(summed, std::regex("call <16 x float> @[A-Za-z0-9_.]*log"))) << summed.substr(0, 3000);
  }
}

// A short row whose points cost an exp and whose length the vector does not divide into
// two or more whole vectors runs its whole vectors in an unmasked loop and the rest
// apart (points_loop): a logsumexp over rows of 100 floats loads 6 vectors of 16 unmasked
// and 4 floats as one vector of 4, over rows of 70 the last 6 as a masked vector of 8;
// its row max (cheap points) stays one loop, masked at its last vector. One masked loop
// computed the mask at every vector.
TEST(Dumps, CostlyShortRowsRunTheirWholeVectorsUnmasked) {
  if (codegen::host_target().features.find("+avx512f") == std::string::npos) GTEST_SKIP() << "no AVX-512 on this host";
  const std::string rows_of_100 = kernel_ir(jx::testing::logsumexp_text(1000, 100), "rows");
  EXPECT_TRUE(std::regex_search(rows_of_100, std::regex("= load <16 x float>, ptr"))) << rows_of_100.substr(0, 3000);
  EXPECT_TRUE(std::regex_search(rows_of_100, std::regex("= load <4 x float>, ptr"))) << rows_of_100.substr(0, 3000);
  const std::string rows_of_70 = kernel_ir(jx::testing::logsumexp_text(1000, 70), "rows");
  EXPECT_TRUE(std::regex_search(rows_of_70, std::regex("= load <16 x float>, ptr"))) << rows_of_70.substr(0, 3000);
  EXPECT_NE(rows_of_70.find("@llvm.masked.load.v8f32"), std::string::npos) << rows_of_70.substr(0, 3000);
}

// Rows of 8-11 floats reduce across rows (loop_emitter's `across`): the loop over a
// block's rows runs each row's points in sequence and vectorizes across the rows (its
// loads interleaved or gathered), so no row pays a horizontal reduction (LLVM's
// vector.reduce of a sum or max); rows of 12 stay along the row.
TEST(Dumps, RowsOfEightToElevenFloatsReduceAcrossRows) {
  if (codegen::host_target().features.find("+avx512f") == std::string::npos) GTEST_SKIP() << "no AVX-512 on this host";
  for (int64_t cols : {8, 10, 11, 12}) {
    SCOPED_TRACE(std::to_string(cols) + " a row");
    const std::string ir = kernel_ir(jx::testing::logsumexp_text(1000, cols), "rows");
    const bool horizontal = std::regex_search(ir, std::regex("llvm\\.vector\\.reduce\\.(fadd|fmax)"));
    EXPECT_EQ(horizontal, cols > 11) << ir.substr(0, 3000);
  }
}

// Every pass of such a row runs in one loop (across_passes): a logsumexp's two passes
// gather the row's points in one loop body (32-bit indices), where separate loops
// gathered them once per pass; a softmax's too (it stashes nothing: its outputs compute
// the exp again along the row, from the block's rows in cache), and it stores each row
// of 10 as one masked register of 16.
TEST(Dumps, AcrossRowsPassesShareTheirLoads) {
  if (codegen::host_target().features.find("+avx512f") == std::string::npos) GTEST_SKIP() << "no AVX-512 on this host";
  // The basic blocks (by label) whose code gathers floats.
  auto gathering_blocks = [](const std::string& ir) {
    std::set<std::string> blocks;
    std::string block = "entry";
    std::istringstream lines(ir);
    for (std::string line; std::getline(lines, line);) {
      std::smatch label;
      if (std::regex_search(line, label, std::regex("^([A-Za-z0-9_.]+):"))) block = label[1];
      else if (line.find("@llvm.masked.gather") != std::string::npos && line.find("call") != std::string::npos)
        blocks.insert(block);
    }
    return blocks;
  };
  for (int64_t cols : {9, 10, 11}) {  // rows of 8 load whole vectors and shuffle them
    SCOPED_TRACE(std::to_string(cols) + " a row");
    const std::string ir = kernel_ir(jx::testing::logsumexp_text(1000, cols), "rows");
    EXPECT_EQ(gathering_blocks(ir).size(), 1u) << ir.substr(0, 3000);
    // Their offsets are 32-bit row slots (load_ptr), 16 lanes a gather.
    EXPECT_TRUE(std::regex_search(ir, std::regex("sext <16 x i32> %[^ ]+ to <16 x i64>"))) << ir.substr(0, 3000);
  }
  const std::string softmax = kernel_ir(softmax_text("f32", 1000, 10), "rows");
  EXPECT_EQ(gathering_blocks(softmax).size(), 1u) << softmax.substr(0, 3000);
  EXPECT_NE(softmax.find("@llvm.masked.store.v16f32"), std::string::npos) << softmax.substr(0, 3000);
}

// Where masked stores are dear (AVX2 without AVX-512: vmaskmovps), a rows kernel's
// outputs store no masked vector: over rows of 8-11 floats whose outputs cost a
// transcendental a point (a softmax, a cross-entropy's gradient) or whose vectors a row
// does not fill, they are stored in the loop across rows after each row's passes, so
// that loop is the kernel's only vectorized one; a layer norm over rows of 8 (one whole
// vector a row, plain arithmetic) keeps its loop along each row; longer rows store their
// whole vectors and a narrower rest unmasked.
TEST(Dumps, RowsOutputsStoreNoMaskedVectorWhereMasksAreDear) {
  const std::string& features = codegen::host_target().features;
  if (features.find("+avx2") == std::string::npos) GTEST_SKIP() << "no AVX2 on this host";
  if (features.find("+avx512f") != std::string::npos) GTEST_SKIP() << "AVX-512 masks stores cheaply";
  auto vectorized_loops = [](const std::string& remarks) {
    int64_t n = 0;
    for (size_t at = remarks.find("vectorized loop"); at != std::string::npos; at = remarks.find("vectorized loop", at + 1)) ++n;
    return n;
  };
  for (int64_t cols : {9, 10, 11}) {
    SCOPED_TRACE(std::to_string(cols) + " a row");
    for (const std::string& text : {softmax_text("f32", 1000, cols), jx::testing::cross_entropy_grad_text(1000, cols)}) {
      EXPECT_EQ(vectorized_loops(kernel_dump(text, "rows", ".remarks")), 1) << kernel_dump(text, "rows", ".remarks");
      EXPECT_EQ(kernel_ir(text, "rows").find("llvm.masked.store"), std::string::npos);
    }
  }
  const std::string layer_norm = jx::testing::layer_norm_text("f32", 1000, 8);
  EXPECT_GT(vectorized_loops(kernel_dump(layer_norm, "rows", ".remarks")), 1) << kernel_dump(layer_norm, "rows", ".remarks");
  // 1000 rows of 21 floats run across rows (their loads staged); 24 + 6 points (8
  // lanes): whole vectors, then a rest; 200000 rows of 21 floats are outputs of 16 MiB,
  // stored along the row in the last pass's loop (pipelined: 16 + 5).
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1000, 21}, {1000, 30}, {200000, 21}}) {
    SCOPED_TRACE(std::to_string(rows) + " rows of " + std::to_string(cols));
    EXPECT_EQ(kernel_ir(softmax_text("f32", rows, cols), "rows").find("llvm.masked.store"), std::string::npos);
  }
}

// Across rows on AVX2 (no AVX-512) a block's rows are read and written as whole row
// vectors, transposed in registers into column buffers and back (rows_emitter.cpp,
// stage_block_in/out): no point is gathered by a scalar load and an insert
// (vinsertps), nor scattered by an extract (vextractps), as the vectorized loop across
// rows did reading and writing the rows in place; rows of 12-23 floats run across rows
// there too (14: one vectorized loop, no loop along a row).
TEST(Dumps, AcrossRowsStageWholeRowVectors) {
  const std::string& features = codegen::host_target().features;
  if (features.find("+avx2") == std::string::npos) GTEST_SKIP() << "no AVX2 on this host";
  if (features.find("+avx512f") != std::string::npos) GTEST_SKIP() << "AVX-512 reads and writes rows in place";
  for (int64_t cols : {8, 10, 11, 14, 21}) {
    SCOPED_TRACE(std::to_string(cols) + " a row");
    for (const std::string& text : {softmax_text("f32", 1000, cols), jx::testing::cross_entropy_grad_text(1000, cols),
                                    jx::testing::layer_norm_text("f32", 1000, cols)}) {
      const std::string assembly = kernel_dump(text, "rows", ".s");
      EXPECT_EQ(assembly.find("vinsertps"), std::string::npos) << assembly;
      EXPECT_EQ(assembly.find("vextractps"), std::string::npos) << assembly;
    }
  }
  const std::string remarks = kernel_dump(softmax_text("f32", 1000, 14), "rows", ".remarks");
  size_t vectorized = 0;
  for (size_t at = remarks.find("vectorized loop"); at != std::string::npos; at = remarks.find("vectorized loop", at + 1))
    ++vectorized;
  EXPECT_EQ(vectorized, 1u) << remarks;
}

// Where masks are dear (AVX2), a row reduction over rows a vector does not divide runs whole
// vectors and one overlapping last vector (loop_emitter.cpp, points_loop), not a loop
// masked at every vector by masks computed each time: in a softmax's, a logsumexp's and
// a layer norm's kernels over rows of 70, 100 and 130 floats every masked load has a
// constant mask (a sum of exp's last few points).
TEST(Dumps, RowReductionsLoadNoMaskedVectorWhereMasksAreDear) {
  const std::string& features = codegen::host_target().features;
  if (features.find("+avx2") == std::string::npos) GTEST_SKIP() << "no AVX2 on this host";
  if (features.find("+avx512f") != std::string::npos) GTEST_SKIP() << "AVX-512 masks loads cheaply";
  for (int64_t cols : {70, 100, 130}) {
    SCOPED_TRACE(std::to_string(cols) + " a row");
    for (const std::string& text : {softmax_text("f32", 1000, cols), jx::testing::logsumexp_text(1000, cols),
                                    jx::testing::layer_norm_text("f32", 1000, cols)}) {
      std::istringstream ir(kernel_ir(text, "rows"));
      for (std::string line; std::getline(ir, line);) {
        if (line.find("call") != std::string::npos && line.find("@llvm.masked.load") != std::string::npos) {
          EXPECT_TRUE(std::regex_search(line, std::regex("x i1> <i1 (true|false)"))) << line;
        }
      }
    }
  }
}

// A dump's remarks are the loop vectorizer's, each naming its kernel and loop: what it
// widened and by how much, and why it left a loop scalar.
TEST(Dumps, RemarksNameEachLoopTheVectorizerSaw) {
  const std::string remarks = kernel_dump(R"({ lambda ; a:f32[4096]. let
    b:f32[4096] = exp a
  in (b) })", "loop", ".remarks");
  EXPECT_TRUE(std::regex_search(remarks, std::regex("jx_kernel_[0-9a-f]+ [A-Za-z0-9_.]+: vectorized loop \\(vectorization width: [0-9]+"))) << remarks;
}

// LLVM's remarks and warnings stay out of the user's output: a rows kernel over rows of
// 24 floats, whose vectorization hint LLVM could not honour in one loop, printed
// "remark: <unknown>:0:0: loop not vectorized: Too many SCEV assumptions ..." to stderr
// before compile_module installed its diagnostic handler. Kernels no longer ask for
// what LLVM refuses there, so a module of its own asks: a loop told to vectorize whose
// every element depends on the one before (a[i + 1] = 2 a[i]).
TEST(Diagnostics, LlvmPrintsNothingWhileCompiling) {
  llvm::LLVMContext ctx;
  llvm::Module module("diagnostics", ctx);
  llvm::IRBuilder<> b(ctx);
  auto* ptr = llvm::PointerType::getUnqual(ctx);
  auto* i64 = b.getInt64Ty();
  auto* f = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr, i64}, false),
                                   llvm::GlobalValue::ExternalLinkage, "jx_dependent_loop", module);
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", f);
  auto* body = llvm::BasicBlock::Create(ctx, "body", f);
  auto* exit = llvm::BasicBlock::Create(ctx, "exit", f);
  b.SetInsertPoint(entry);
  b.CreateCondBr(b.CreateICmpSGT(f->getArg(1), b.getInt64(0)), body, exit);
  b.SetInsertPoint(body);
  llvm::PHINode* i = b.CreatePHI(i64, 2);
  i->addIncoming(b.getInt64(0), entry);
  llvm::Value* x = b.CreateLoad(b.getFloatTy(), b.CreateInBoundsGEP(b.getFloatTy(), f->getArg(0), i));
  llvm::Value* next = b.CreateAdd(i, b.getInt64(1), "", true, true);
  b.CreateStore(b.CreateFMul(x, llvm::ConstantFP::get(b.getFloatTy(), 2.0)),
                b.CreateInBoundsGEP(b.getFloatTy(), f->getArg(0), next));
  i->addIncoming(next, body);
  llvm::BranchInst* latch = b.CreateCondBr(b.CreateICmpSLT(next, f->getArg(1)), body, exit);
  llvm::Metadata* enable[] = {llvm::MDString::get(ctx, "llvm.loop.vectorize.enable"),
                              llvm::ConstantAsMetadata::get(b.getTrue())};
  llvm::MDNode* id = llvm::MDNode::getDistinct(ctx, {nullptr, llvm::MDNode::get(ctx, enable)});
  id->replaceOperandWith(0, id);
  latch->setMetadata(llvm::LLVMContext::MD_loop, id);
  b.SetInsertPoint(exit);
  b.CreateRetVoid();
  KernelOptions o;
  o.name = "quiet";
  o.disk_cache = false;
  ::testing::internal::CaptureStderr();
  const codegen::CompiledModule compiled = codegen::compile_module(module, codegen::Optimization::kFull, false);
  (void)compile_kernel(parse_jaxpr(jx::testing::softmax_text("f32", 66666, 24)), "rows", o);
  (void)compile_kernel(parse_jaxpr(jx::testing::softmax_text("f32", 1000, 100)), "rows", o);
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed, "");
  EXPECT_FALSE(compiled.object.empty());
}

}  // namespace
}  // namespace jx::compiler
