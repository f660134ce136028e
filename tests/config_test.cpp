// jx::config: the environment is read once, at first use (checked in child processes
// started with a given environment), setters take effect on the next compile, and
// malformed values raise jx::Error naming the variable or setter and the value.
// Internal invariant failures raise jx::InternalError, which is not a jx::Error.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "backend/cpu/thread_pool.h"
#include "backend/cpu/vector_math.h"
#include "jit/codegen/loop_kernel.h"
#include "jit/codegen/object_cache.h"
#include "jx/jx.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace jx {
namespace {

namespace jnp = jx::numpy;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The child's side: writes what it sees (or the error the first read raised) to the file
// named by JX_CONFIG_TEST_OUT (read only by this test).
std::string describe(const Config& c) {
  std::ostringstream os;
  os << "num_threads=" << c.num_threads << "\nnum_cpu_devices=" << c.num_cpu_devices << "\ncache_dir=" << c.cache_dir
     << "\ndisk_cache=" << c.disk_cache << "\nlog_compiles=" << c.log_compiles << "\ndump_dir=" << c.dump_dir
     << "\nverify_passes=" << c.verify_passes << "\nvector_isa=" << c.vector_isa
     << "\nblock_cache_mb=" << c.block_cache_mb << "\njit_every_op=" << c.jit_every_op
     << "\ndebug_nans=" << c.debug_nans << "\n";
  return os.str();
}

TEST(ConfigChild, Report) {
  const char* out = std::getenv("JX_CONFIG_TEST_OUT");
  if (!out) GTEST_SKIP() << "run by the Config tests in a child process";
  std::ofstream file(out);
  try {
    const Config first = config::get();
    // Read once: a later change of the environment is not seen.
    setenv("JX_LOG_COMPILES", first.log_compiles ? "0" : "1", 1);
    setenv("JX_CACHE_DIR", "/changed/later", 1);
    const Config second = config::get();
    file << describe(first) << (describe(second) == describe(first) ? "stable\n" : "CHANGED\n");
    // The pool starts with the configured thread count.
    file << "pool_threads=" << cpu::num_threads() << "\n";
  } catch (const Error& e) {
    file << "error: " << e.what() << "\n";
  }
}

// Runs ConfigChild.Report with `env` (VAR=value ...) prepended; returns what it wrote.
std::string run_child(const std::string& env) {
  static int counter = 0;
  const fs::path out =
      fs::temp_directory_path() / ("jx_config_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  const std::string cmd = "env -u JX_NUM_THREADS -u JX_NUM_CPU_DEVICES -u JX_CACHE_DIR -u JX_DISABLE_DISK_CACHE "
                          "-u JX_LOG_COMPILES -u JX_DUMP -u JX_VERIFY_PASSES -u JX_VECTOR_ISA -u JX_BLOCK_CACHE_MB "
                          "-u JX_JIT_EVERY_OP -u JX_DEBUG_NANS -u XDG_CACHE_HOME " +
                          env + " JX_CONFIG_TEST_OUT=" + out.string() + " /proc/" + std::to_string(::getpid()) +
                          "/exe --gtest_filter=ConfigChild.Report > /dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::string text = read_file(out);
  fs::remove(out);
  return text;
}

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(Config, EnvironmentAtStartupIsHonouredAndReadOnce) {
  const std::string seen = run_child(
      "JX_NUM_THREADS=3 JX_NUM_CPU_DEVICES=4 JX_CACHE_DIR=/tmp/jx_cfg_cache JX_DISABLE_DISK_CACHE=1 "
      "JX_LOG_COMPILES=yes JX_DUMP=/tmp/jx_cfg_dump JX_VERIFY_PASSES=true JX_VECTOR_ISA=scalar "
      "JX_BLOCK_CACHE_MB=7 JX_JIT_EVERY_OP=off JX_DEBUG_NANS=1");
  for (const char* line : {"num_threads=3", "num_cpu_devices=4", "cache_dir=/tmp/jx_cfg_cache", "disk_cache=0",
                           "log_compiles=1", "dump_dir=/tmp/jx_cfg_dump", "verify_passes=1", "vector_isa=scalar",
                           "block_cache_mb=7", "jit_every_op=0", "debug_nans=1", "stable", "pool_threads=3"})
    EXPECT_TRUE(has_line(seen, line)) << line << " not in:\n" << seen;
}

TEST(Config, DefaultsWithoutTheVariables) {
  const std::string seen = run_child("HOME=/tmp/jx_cfg_home");
  for (const char* line : {"num_threads=0", "num_cpu_devices=1", "cache_dir=/tmp/jx_cfg_home/.cache/jx",
                           "disk_cache=1", "log_compiles=0", "dump_dir=", "block_cache_mb=1024", "jit_every_op=0", "debug_nans=0",
                           "stable"})
    EXPECT_TRUE(has_line(seen, line)) << line << " not in:\n" << seen;
  EXPECT_TRUE(has_line(seen, std::string("vector_isa=") + cpu::vector_isa_name(cpu::best_vector_isa()))) << seen;
  EXPECT_TRUE(has_line(seen, "pool_threads=" + std::to_string(std::max(1u, std::thread::hardware_concurrency()))))
      << seen;
  // XDG_CACHE_HOME comes before HOME.
  EXPECT_TRUE(has_line(run_child("XDG_CACHE_HOME=/tmp/jx_cfg_xdg HOME=/tmp/h"), "cache_dir=/tmp/jx_cfg_xdg/jx"));
}

TEST(Config, MalformedVariablesRaiseNamingTheVariableAndValue) {
  const std::pair<const char*, const char*> cases[] = {
      {"JX_NUM_THREADS=-2", "[config] JX_NUM_THREADS='-2' is not an integer in [0, "},
      {"JX_NUM_THREADS=four", "[config] JX_NUM_THREADS='four' is not an integer"},
      {"JX_NUM_CPU_DEVICES=0", "[config] JX_NUM_CPU_DEVICES='0' is not an integer in [1, "},
      {"JX_VECTOR_ISA=sse9", "[config] JX_VECTOR_ISA='sse9' is not one of auto, scalar, avx2, avx512"},
      {"JX_LOG_COMPILES=maybe", "[config] JX_LOG_COMPILES='maybe' is not a boolean"},
      {"JX_DISABLE_DISK_CACHE=2", "[config] JX_DISABLE_DISK_CACHE='2' is not a boolean"},
      {"JX_BLOCK_CACHE_MB=12x", "[config] JX_BLOCK_CACHE_MB='12x' is not an integer"},
      {"JX_DEBUG_NANS=sometimes", "[config] JX_DEBUG_NANS='sometimes' is not a boolean"},
      {"JX_COLLECTIVE_TIMEOUT_S=0", "[config] JX_COLLECTIVE_TIMEOUT_S='0' is not a number of seconds in (0, 3.2e7]"},
      {"JX_COLLECTIVE_TIMEOUT_S=5m", "[config] JX_COLLECTIVE_TIMEOUT_S='5m' is not a number of seconds"},
  };
  for (const auto& [env, message] : cases) {
    const std::string seen = run_child(env);
    EXPECT_NE(seen.find(std::string("error: ") + message), std::string::npos) << env << ":\n" << seen;
  }
}

TEST(Config, InvalidSetterValuesRaiseNamingTheSetterAndValue) {
  EXPECT_JX_ERROR(config::set_num_threads(-1), "[config] set_num_threads(-1): the thread count must be in [0, ");
  EXPECT_JX_ERROR(config::set_num_cpu_devices(0), "[config] set_num_cpu_devices(0): the device count must be in [1, ");
  EXPECT_JX_ERROR(config::set_vector_isa("sse9"), "[config] set_vector_isa('sse9'): not one of auto, scalar");
  EXPECT_JX_ERROR(config::set_block_cache_mb(-5), "[config] set_block_cache_mb(-5): the size must be in [0, ");
  EXPECT_JX_ERROR(config::set_cache_dir(""), "[config] set_cache_dir(\"\"): the directory must not be empty");
  EXPECT_JX_ERROR(config::set_collective_timeout_s(-1), "[config] set_collective_timeout_s(-1): the timeout must be in (0, ");
  // A refused value leaves the setting as it was.
  const Config before = config::get();
  EXPECT_THROW(config::set_vector_isa("neon"), Error);
  EXPECT_EQ(config::get().vector_isa, before.vector_isa);
}

TEST(Config, ThreadCountIsFixedOnceThePoolRuns) {
  const int threads = cpu::num_threads();  // starts the pool
  config::set_num_threads(threads);        // the same count: accepted
  EXPECT_EQ(config::get().num_threads, threads);
  EXPECT_JX_ERROR(config::set_num_threads(threads + 1), "[config] set_num_threads(", "): the thread pool already runs ",
                  "set the count before the first parallel kernel");
  EXPECT_EQ(config::get().num_threads, threads);
}

TEST(Config, SettersTakeEffect) {
  const Config saved = config::get();
  config::set_log_compiles(!saved.log_compiles);
  EXPECT_EQ(config::get().log_compiles, !saved.log_compiles);
  config::set_log_compiles(saved.log_compiles);
  config::set_verify_passes(true);
  EXPECT_TRUE(config::get().verify_passes);
  config::set_verify_passes(saved.verify_passes);
  config::set_block_cache_mb(3);
  EXPECT_EQ(config::get().block_cache_mb, 3);
  EXPECT_EQ(saved.collective_timeout_s, 300);
  config::set_collective_timeout_s(2.5);
  EXPECT_EQ(config::get().collective_timeout_s, 2.5);
  config::set_collective_timeout_s(saved.collective_timeout_s);
  config::set_block_cache_mb(saved.block_cache_mb);
  config::set_cache_dir("/tmp/jx_cfg_setter");
  EXPECT_EQ(config::get().cache_dir, "/tmp/jx_cfg_setter");
  config::set_cache_dir(saved.cache_dir.empty() ? std::string("/tmp/jx_cfg_unused") : saved.cache_dir);
}

TEST(Config, VectorIsaSetterSwitchesEagerAndJit) {
  const cpu::VectorIsa saved = cpu::vector_isa();
  config::set_vector_isa("scalar");
  EXPECT_EQ(config::get().vector_isa, "scalar");
  EXPECT_EQ(cpu::vector_isa(), cpu::VectorIsa::Scalar);
  // Eager and jit agree bit for bit under the configured ISA (scalar libm here; exp,
  // tanh and erf are inline polynomials in jit whatever the ISA, so they are left out).
  Array x = jnp::linspace(-3.0, 3.0, 999).astype(DType::Float32);
  auto f = jit([](const Array& v) { return jnp::sin(v) + jnp::log1p(v * v); });
  EXPECT_EQ(f(x).to_vector<float>(), (jnp::sin(x) + jnp::log1p(x * x)).to_vector<float>());
  config::set_vector_isa("AUTO");  // names are case-insensitive
  EXPECT_EQ(cpu::vector_isa(), cpu::best_vector_isa());
  cpu::set_vector_isa(saved);
  EXPECT_EQ(config::get().vector_isa, cpu::vector_isa_name(saved));  // get() reports the ISA in use
}

TEST(Config, DumpDirAndDiskCacheSettersReachTheNextCompile) {
  const Config saved = config::get();
  const fs::path dump = fs::temp_directory_path() / ("jx_cfg_dump_" + std::to_string(::getpid()));
  const fs::path cache = fs::temp_directory_path() / ("jx_cfg_cache_" + std::to_string(::getpid()));
  fs::remove_all(dump);
  fs::remove_all(cache);
  config::set_dump_dir(dump.string());
  config::set_cache_dir(cache.string());
  config::set_disk_cache(false);
  Array x = jnp::arange(64).astype(DType::Float32);
  auto f = jit([](const Array& v) { return jnp::tanh(v * 0.37125) - 1.5; }, JitOptions{.name = "cfg_dumped"});
  EXPECT_ALLCLOSE(f(x), jnp::tanh(x * 0.37125) - 1.5, 1e-6, 1e-6);
  EXPECT_TRUE(fs::exists(dump)) << dump;
  EXPECT_FALSE(fs::exists(cache)) << "disk cache off, yet " << cache << " was written";
  bool traced = false;
  for (const auto& e : fs::recursive_directory_iterator(dump)) traced = traced || e.path().filename() == "00-traced.txt";
  EXPECT_TRUE(traced);
  // Dumps off, disk cache on: the next program writes the cache, not the dump.
  fs::remove_all(dump);
  config::set_dump_dir("");
  config::set_disk_cache(true);
  auto g = jit([](const Array& v) { return jnp::tanh(v * 0.73125) + 2.5; });
  EXPECT_ALLCLOSE(g(x), jnp::tanh(x * 0.73125) + 2.5, 1e-6, 1e-6);
  EXPECT_FALSE(fs::exists(dump));
  EXPECT_TRUE(fs::exists(cache) && !fs::is_empty(cache)) << cache;
  fs::remove_all(cache);
  config::set_dump_dir(saved.dump_dir);
  config::set_disk_cache(saved.disk_cache);
  if (!saved.cache_dir.empty()) config::set_cache_dir(saved.cache_dir);
}

TEST(Config, JitEveryOpSetterCompilesEagerOperations) {
  config::set_disk_cache(false);
  config::set_jit_every_op(true);
  EXPECT_TRUE(config::get().jit_every_op);
  const int64_t before = compiler::codegen::llvm_compile_count();
  Array x = jnp::arange(10).astype(DType::Float64);
  Array y = jnp::cosh(x * 0.123456789);  // compiled: one LLVM compile at least
  EXPECT_GT(compiler::codegen::llvm_compile_count(), before);
  config::set_jit_every_op(false);
  const int64_t after = compiler::codegen::llvm_compile_count();
  Array z = jnp::cosh(x * 0.987654321);
  EXPECT_EQ(compiler::codegen::llvm_compile_count(), after);
  EXPECT_ALLCLOSE(y, jnp::cosh(x * 0.123456789), 1e-15, 1e-15);
  config::set_disk_cache(true);
}

TEST(InternalError, IsNotAUserError) {
  auto check = [](int n) { JX_CHECK(n > 0, "demo", "n is ", n); };
  EXPECT_NO_THROW(check(1));
  try {
    check(-3);
    ADD_FAILURE() << "JX_CHECK did not raise";
  } catch (const Error&) {
    ADD_FAILURE() << "an internal error must not be a jx::Error";
  } catch (const InternalError& e) {
    EXPECT_STREQ(e.what(), "[demo] internal error: check failed: n > 0: n is -3");
  }
}

}  // namespace
}  // namespace jx
