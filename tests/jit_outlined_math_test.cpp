// Outlined inline math (scalar_ops.h): a kernel whose body is longer than kLargeBodyOps
// calls exp, tanh, erf and the inline fast functions as jx_outline.* functions, defined
// on demand with the code short kernels inline. Checked here:
//   - bits: every unary transcendental in a long body gives, at every position (vector
//     lanes and the scalar remainder, ordinary and rare-path inputs, NaN and infinities;
//     a length with a remainder, and one of whole blocks, each a vector of
//     kLargeBodyVectors registers whose parts test their rare paths apart),
//     exactly the bits of the same function in a one-op kernel, for every vector ISA
//     this CPU runs;
//   - the dumps: a long body calls jx_outline.*, a short one inlines;
//   - the disk cache: a long kernel loaded from it in a fresh process, where no outlined
//     function is defined yet, links (its outlined functions read from the same cache)
//     and computes the same bits;
//   - malformed names are internal errors that name the function; any width compiles.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/vector_math.h"
#include "jit/codegen/kernel.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/codegen/llvm_session.h"
#include "jit/codegen/loop_kernel.h"
#include "jit/codegen/object_cache.h"
#include "jit/kernel_support.h"
#include "jx/jaxpr.h"
#include "kernel_test_util.h"

namespace jx::compiler {
namespace {

namespace fs = std::filesystem;
using jx::testing::run_kernel;

constexpr int64_t kLength = 1005;  // not a multiple of any vector width: a scalar remainder
constexpr int64_t kBlockLength = 1024;  // whole blocks of kLargeBodyVectors registers (kernel_plan.cpp)

const char* dtype_text(DType d) { return d == DType::Float32 ? "f32" : "f64"; }

// `fn a` alone (one op: inline code), or followed by kLargeBodyOps + 5 subtractions in
// the same kernel (a long body: outlined calls); the first output is fn(a) either way.
std::string program(const std::string& fn, DType d, bool long_body, int64_t length = kLength) {
  const std::string t = std::string(dtype_text(d)) + "[" + std::to_string(length) + "]";
  std::ostringstream s;
  s << "{ lambda ; a:" << t << ". let\n  b:" << t << " = " << fn << " a\n";
  std::string last = "a";
  if (long_body)
    for (int64_t i = 0; i < codegen::kLargeBodyOps + 5; ++i) {
      const std::string next = "c" + std::to_string(i);
      s << "  " << next << ":" << t << " = sub " << last << " b\n";
      last = next;
    }
  s << "in (b" << (long_body ? ", " + last : std::string()) << ") }";
  return s.str();
}

// Random values over the functions' ranges, with special and rare-path values at the
// start, in the middle and in the last (remainder) positions.
Array inputs(DType d, uint32_t seed, int64_t length = kLength) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-12.0, 12.0);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // Rare-path inputs first: every other one of the last positions holds one.
  const std::vector<double> special = {1e30,  nan, 88.8,   -1e5,  -inf, 710,   -745.5, -104,  3e4,  inf,
                                       -1e30, 0.0, -0.0,   1e-30, -1e-30, 0.5,  1.0,    -1.0,  1e-40, 4.0};
  std::vector<double> v(static_cast<size_t>(length));
  for (double& x : v) x = u(rng);
  for (size_t i = 0; i < special.size(); ++i) {
    v[i] = special[i];
    v[v.size() / 2 + i] = special[i];
    v[v.size() - 1 - 2 * i] = special[i];
  }
  Array a(v, {length});
  return d == DType::Float32 ? a.astype(DType::Float32) : a;
}

KernelOptions options(std::string name, cpu::VectorIsa isa) {
  KernelOptions o;
  o.name = std::move(name);
  o.disk_cache = false;
  o.vector_isa = isa;
  return o;
}

std::vector<cpu::VectorIsa> isas() {
  std::vector<cpu::VectorIsa> out;
  for (cpu::VectorIsa isa : {cpu::VectorIsa::Scalar, cpu::VectorIsa::Avx2, cpu::VectorIsa::Avx512})
    if (isa <= cpu::best_vector_isa()) out.push_back(isa);
  return out;
}

std::vector<unsigned char> bytes_of(const Array& a) {
  std::vector<unsigned char> out(static_cast<size_t>(a.nbytes()));
  a.copy_to(out.data(), a.dtype());
  return out;
}

bool same_bits(const Array& a, const Array& b) { return a.dtype() == b.dtype() && bytes_of(a) == bytes_of(b); }

// The first position where a and b differ, as text.
std::string first_difference(const Array& a, const Array& b, const Array& x) {
  const std::vector<double> va = a.astype(DType::Float64).to_vector<double>(),
                            vb = b.astype(DType::Float64).to_vector<double>(),
                            vx = x.astype(DType::Float64).to_vector<double>();
  for (size_t i = 0; i < va.size(); ++i)
    if (std::memcmp(&va[i], &vb[i], sizeof(double)) != 0) {
      std::ostringstream s;
      s.precision(17);
      s << "at " << i << " (x = " << vx[i] << "): " << va[i] << " vs " << vb[i];
      return s.str();
    }
  return "none";
}

const char* const kFunctions[] = {"exp", "tanh", "erf", "logistic", "sin", "cos", "tan", "log", "log1p", "expm1"};

TEST(OutlinedMath, LongBodyGivesTheBitsOfAOneOpKernel) {
  for (cpu::VectorIsa isa : isas())
    for (DType d : {DType::Float32, DType::Float64})
      for (const char* fn : kFunctions)
        for (int64_t length : {kLength, kBlockLength}) {
          SCOPED_TRACE(std::string(fn) + " " + dtype_text(d) + " " + cpu::vector_isa_name(isa) + " length " +
                       std::to_string(length));
          const Jaxpr short_body = parse_jaxpr(program(fn, d, false, length)),
                      long_body = parse_jaxpr(program(fn, d, true, length));
          const Array x = inputs(d, 7, length);
          const Array inline_result = run_kernel(*compile_kernel(short_body, "loop", options("short", isa)), short_body, {x})[0];
          const Array outlined = run_kernel(*compile_kernel(long_body, "loop", options("long", isa)), long_body, {x})[0];
          EXPECT_TRUE(same_bits(outlined, inline_result)) << first_difference(outlined, inline_result, x);
        }
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(OutlinedMath, OnlyLongBodiesCallIt) {
  const fs::path dir = fs::temp_directory_path() / ("jx_outlined_dump_" + std::to_string(::getpid()));
  const cpu::VectorIsa isa = cpu::best_vector_isa();
  for (bool long_body : {false, true}) {
    const Jaxpr j = parse_jaxpr(program("tanh", DType::Float32, long_body));
    KernelOptions o = options(long_body ? "long" : "short", isa);
    o.dump_dir = dir.string();
    (void)compile_kernel(j, "loop", o);
    const std::string ir = read_file(dir / (o.name + ".ll"));
    const std::string callee = std::string("@jx_outline.tanh.f32.") + cpu::vector_isa_name(isa);
    if (long_body) {
      EXPECT_NE(ir.find(callee), std::string::npos) << ir.substr(0, 3000);
      EXPECT_EQ(ir.find("@llvm.fma"), std::string::npos) << "the rational's code is in the outlined function";
    } else {
      EXPECT_EQ(ir.find("jx_outline"), std::string::npos);
      EXPECT_NE(ir.find("@llvm.fma"), std::string::npos);
    }
  }
  fs::remove_all(dir);
}

// The child half of FreshProcessLinksCachedLongKernel, run only when the parent sets
// JX_OUTLINED_TEST_CACHE: a first child fills that cache (JX_OUTLINED_TEST_FILL=1), a
// second one must find its long kernel there and the outlined functions it calls,
// which no kernel of its process has linked yet, too.
TEST(OutlinedMath, ChildLoadsCachedLongKernel) {
  const char* cache = std::getenv("JX_OUTLINED_TEST_CACHE");
  if (!cache) GTEST_SKIP() << "run by FreshProcessLinksCachedLongKernel";
  const bool fill = std::getenv("JX_OUTLINED_TEST_FILL") != nullptr;
  const Jaxpr long_body = parse_jaxpr(program("exp", DType::Float32, true));
  const Jaxpr short_body = parse_jaxpr(program("exp", DType::Float32, false));
  KernelOptions o = options("cached_long", cpu::best_vector_isa());
  o.disk_cache = true;
  o.cache_dir = cache;
  const auto before = codegen::object_cache_stats();
  const int64_t compiles = codegen::llvm_compile_count();
  auto kernel = compile_kernel(long_body, "loop", o);
  if (fill) {
    // The kernel and the outlined exp it calls (vector and scalar) were compiled and stored.
    EXPECT_GE(codegen::object_cache_stats().stores, before.stores + 3);
    return;
  }
  EXPECT_EQ(codegen::object_cache_stats().misses, before.misses);
  EXPECT_EQ(codegen::object_cache_stats().hits, before.hits + 3);
  EXPECT_EQ(codegen::llvm_compile_count(), compiles);
  const Array x = inputs(DType::Float32, 11);
  const Array outlined = run_kernel(*kernel, long_body, {x})[0];
  const Array inline_result =
      run_kernel(*compile_kernel(short_body, "loop", options("short", cpu::best_vector_isa())), short_body, {x})[0];
  EXPECT_TRUE(same_bits(outlined, inline_result)) << first_difference(outlined, inline_result, x);
}

// Runs this test binary's ChildLoadsCachedLongKernel in a new process; its exit status.
int run_child(const fs::path& cache, bool fill) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::setenv("JX_OUTLINED_TEST_CACHE", cache.c_str(), 1);
    if (fill) ::setenv("JX_OUTLINED_TEST_FILL", "1", 1);
    ::execl("/proc/self/exe", "/proc/self/exe", "--gtest_filter=OutlinedMath.ChildLoadsCachedLongKernel",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(OutlinedMath, FreshProcessLinksCachedLongKernel) {
  if (std::getenv("JX_OUTLINED_TEST_CACHE")) GTEST_SKIP() << "the child";
  const fs::path dir = fs::temp_directory_path() / ("jx_outlined_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  EXPECT_EQ(run_child(dir, true), 0) << "the filling child failed (its output is above)";
  EXPECT_EQ(run_child(dir, false), 0) << "the loading child failed (its output is above)";
  fs::remove_all(dir);
  // Filled by a process that had linked the outlined functions before, for a kernel
  // compiled without the cache: storing the kernel stores them too.
  const Jaxpr long_body = parse_jaxpr(program("exp", DType::Float32, true));
  (void)compile_kernel(long_body, "loop", options("uncached_long", cpu::best_vector_isa()));
  KernelOptions o = options("cached_long", cpu::best_vector_isa());
  o.disk_cache = true;
  o.cache_dir = dir.string();
  (void)compile_kernel(long_body, "loop", o);
  EXPECT_EQ(run_child(dir, false), 0) << "the loading child failed (its output is above)";
  fs::remove_all(dir);
}

TEST(OutlinedMath, MalformedNamesAreInternalErrors) {
  for (const char* name : {"jx_outline.nosuch.f32.avx2", "jx_outline.tanh.f16.avx2", "jx_outline.tanh.f32.sse",
                           "jx_outline.tanh.f32.avx2.v1", "jx_outline.tanh.f32.avx2.w8", "jx_outline.tanh",
                           "jx_other.tanh.f32.avx2"}) {
    SCOPED_TRACE(name);
    try {
      (void)codegen::compile_outlined_math(name);
      ADD_FAILURE() << "no error";
    } catch (const InternalError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("malformed outlined math function name ") + name),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_FALSE(codegen::compile_outlined_math("jx_outline.exp.f64.scalar.v4").object.empty());
}

}  // namespace
}  // namespace jx::compiler
