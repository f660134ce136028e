// jit hardening (issue 9): leaked tracers captured by staging, the on-disk cache's trust
// in its entries, and compile time linear in the size of programs with reuse.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "jit/codegen/kernel.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/codegen/loop_kernel.h"
#include "jit/codegen/object_cache.h"
#include "jx/jx.h"
#include "kernel_test_util.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace jx {
namespace {
namespace jnp = jx::numpy;
using testing::randn;

Array f32(std::vector<float> v) { return Array(v); }
Array f32(std::vector<float> v, Shape shape) { return Array(v, std::move(shape)); }
const Shape k2x3{2, 3};

// ---- leaked tracers ----

// Ways to leak a tracer: each runs a transformation whose function stores its traced
// argument (times 2) outside, and returns the leaked value and the transformation's name.
struct Leak {
  const char* transformation;
  std::function<Array()> make;
};

std::vector<Leak> leaks() {
  return {
      {"grad",
       [] {
         Array leaked;
         grad([&](const Array& x) {
           leaked = x * 2.0f;
           return jnp::sum(x);
         })(f32({1, 2, 3}));
         return leaked;
       }},
      {"vmap",
       [] {
         Array leaked;
         vmap([&](const Array& x) {
           leaked = x * 2.0f;
           return x;
         })(f32({1, 2, 3, 4, 5, 6}, k2x3));
         return leaked;
       }},
      {"jvp",
       [] {
         Array leaked;
         jvp(
             [&](const Array& x) {
               leaked = x * 2.0f;
               return x;
             },
             f32({1, 2, 3}), f32({1, 1, 1}));
         return leaked;
       }},
      {"jit",
       [] {
         Array leaked;
         jit([&](const Array& x) {
           leaked = x * 2.0f;
           return x;
         })(f32({1, 2, 3}));
         return leaked;
       }},
      {"make_jaxpr",
       [] {
         Array leaked;
         make_jaxpr([&](const Array& x) {
           leaked = x * 2.0f;
           return x;
         })(f32({1, 2, 3}));
         return leaked;
       }},
  };
}

std::string leak_text(const char* transformation) {
  return std::string("leaked out of the ") + transformation + " transformation";
}

TEST(LeakedTracer, CapturedByJitRaises) {
  const Array y = f32({1, 2, 3});
  for (const Leak& leak : leaks()) {
    SCOPED_TRACE(leak.transformation);
    Array leaked = leak.make();
    ASSERT_FALSE(leaked.is_concrete());
    const std::string text = leak_text(leak.transformation);
    // Read by an equation, and returned as it is.
    EXPECT_JX_ERROR(jit([&](const Array& x) { return x + leaked; })(y), "[add]", text.c_str(), "f32[3]");
    EXPECT_JX_ERROR(jit([&](const Array& x) { return std::make_pair(x, leaked); })(y), "[jit]", text.c_str());
  }
}

TEST(LeakedTracer, CapturedByMakeJaxprRaises) {
  const Array y = f32({1, 2, 3});
  for (const Leak& leak : leaks()) {
    SCOPED_TRACE(leak.transformation);
    Array leaked = leak.make();
    const std::string text = leak_text(leak.transformation);
    EXPECT_JX_ERROR(make_jaxpr([&](const Array& x) { return jnp::sin(x) * leaked; })(y), "[mul]", text.c_str());
    EXPECT_JX_ERROR(make_jaxpr([&](const Array& x) { return std::make_pair(x, leaked); })(y), "[make_jaxpr]",
                    text.c_str());
  }
}

// Captured inside a transformation nested in the staging one: the inner interpreter
// treats the leaked tracer as a constant and hands it down to the staging trace.
TEST(LeakedTracer, CapturedInsideNestedTransformationRaises) {
  const Array y = f32({1, 2, 3});
  for (const Leak& leak : leaks()) {
    SCOPED_TRACE(leak.transformation);
    Array leaked = leak.make();
    const std::string text_s = leak_text(leak.transformation);
    const char* text = text_s.c_str();
    auto use = [&](const Array& x) { return jnp::sum(jnp::sin(x) * leaked); };
    EXPECT_JX_ERROR(jit([&](const Array& x) { return grad(use)(x); })(y), text);
    EXPECT_JX_ERROR(jit([&](const Array& x) { return vmap([&](const Array& r) { return r * leaked; })(x); })(
                        f32({1, 2, 3, 4, 5, 6}, k2x3)),
                    text);
    EXPECT_JX_ERROR(make_jaxpr([&](const Array& x) { return grad(use)(x); })(y), text);
    EXPECT_JX_ERROR(make_jaxpr([&](const Array& x) { return jvp(use, x, x); })(y), text);
    EXPECT_JX_ERROR(jit([&](const Array& x) { return jit(use)(x); })(y), text);
    // And a jit under another transformation.
    EXPECT_JX_ERROR(grad([&](const Array& x) { return jit(use)(x); })(y), text);
    EXPECT_JX_ERROR(vmap([&](const Array& x) { return jit(use)(x); })(f32({1, 2, 3, 4, 5, 6}, k2x3)), text);
  }
}

// A jitted function closing over an enclosing transformation's tracer is traced for that
// call only: its program holds the tracer, which is meaningless once the trace ends.
TEST(LeakedTracer, ProgramCapturingAnOuterTracerIsNotCached) {
  const Array y = f32({1, 2, 3});
  Array captured = f32({1, 1, 1});
  auto scaled = jit([&](const Array& v) { return v * captured; });
  Array g = grad([&](const Array& x) {
    captured = x;
    // Such a program has no native code of its own: its constant is only known as grad's.
    EXPECT_JX_ERROR(scaled.lower(y).as_text(), "[jit] cannot compile", "on its own", "f32[3]",
                    "enclosing transformation");
    return jnp::sum(scaled(y));
  })(f32({4, 5, 6}));
  EXPECT_ALLCLOSE(g, y, 0, 0);  // d/dx sum(y * x) = y
  EXPECT_EQ(scaled.cache_size(), 0u);
  // `captured` is now grad's leaked tracer: a later call traces again and says so.
  const std::string text = leak_text("grad");
  EXPECT_JX_ERROR(scaled(y), "[mul]", text.c_str());
  captured = f32({2, 3, 4});
  EXPECT_ALLCLOSE(scaled(y), f32({2, 6, 12}), 0, 0);
  EXPECT_EQ(scaled.cache_size(), 1u);
}

// ---- the on-disk cache: an entry serves only its own key ----

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::vector<fs::path> cache_entries(const fs::path& dir) {
  std::vector<fs::path> files;
  if (fs::exists(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".jxo") files.push_back(e.path());
  return files;
}

std::string key_of(const fs::path& entry) { return entry.stem().string().substr(std::string("kernel-").size()); }

using jx::testing::run_kernel;

class CacheKeys : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("jx_hardening_cache_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Two kernels of different signatures: a small one (one input, one f32[4] output) and
  // a larger one (two inputs, two f64[257] outputs). Run with the other's code, the
  // second would write far past the first's buffers.
  const Jaxpr small_ = parse_jaxpr(R"({ lambda ; a:f32[4]. let
    b:f32[4] = sinh a
  in (b) })");
  const Jaxpr large_ = parse_jaxpr(R"({ lambda ; a:f64[257] b:f64[257]. let
    c:f64[257] = mul a b
    d:f64[257] = cosh c
  in (d, c) })");

  // Compiles (disk cache on), runs and checks j against eager; returns LLVM compiles done.
  int64_t compile_and_check(const Jaxpr& j, uint32_t seed) {
    std::vector<Array> args;
    for (const Var& v : j.invars) args.push_back(randn(v.aval.shape, v.aval.dtype, seed++));
    const int64_t before = compiler::codegen::llvm_compile_count();
    auto kernel = compiler::compile_kernel(j, "loop", compiler::KernelOptions{.name = "hardening", .cache_dir = dir_.string()});
    std::vector<Array> got = run_kernel(*kernel, j, args), want = eval_jaxpr(j, {}, args);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_ALLCLOSE(got[i], want[i], 1e-6, 1e-6);
    return compiler::codegen::llvm_compile_count() - before;
  }

  fs::path entry_of(const Jaxpr& j) {
    auto before = cache_entries(dir_);
    compile_and_check(j, 1);
    for (const fs::path& p : cache_entries(dir_))
      if (std::find(before.begin(), before.end(), p) == before.end()) return p;
    ADD_FAILURE() << "no cache entry was written";
    return {};
  }

  fs::path dir_;
};

TEST_F(CacheKeys, EntryCopiedOntoAnotherKeyIsRecompiled) {
  const fs::path small = entry_of(small_), large = entry_of(large_);
  ASSERT_FALSE(small.empty());
  ASSERT_FALSE(large.empty());
  const std::string small_bytes = read_bytes(small), large_bytes = read_bytes(large);
  EXPECT_EQ(compile_and_check(small_, 2), 0);  // a hit
  for (int round = 0; round < 2; ++round) {
    // Either direction: each kernel finds the other's entry under its own name.
    const fs::path& target = round == 0 ? small : large;
    write_bytes(target, round == 0 ? large_bytes : small_bytes);
    const auto before = compiler::codegen::object_cache_stats();
    EXPECT_EQ(compile_and_check(round == 0 ? small_ : large_, 3), 1);
    EXPECT_EQ(compiler::codegen::object_cache_stats().rejected, before.rejected + 1);
    EXPECT_EQ(compiler::codegen::object_cache_stats().hits, before.hits);
    EXPECT_EQ(read_bytes(target), round == 0 ? small_bytes : large_bytes);  // replaced by its own
  }
}

// An entry that is well formed for its key but holds another kernel's object code (the
// checks cannot see that): the kernel's symbol is named after its key, so linking fails
// and it is compiled afresh instead of running foreign code.
TEST_F(CacheKeys, ForeignObjectUnderTheRightKeyDoesNotLink) {
  const fs::path small = entry_of(small_), large = entry_of(large_);
  const std::optional<std::string> large_object = compiler::codegen::object_cache_load(dir_.string(), key_of(large));
  ASSERT_TRUE(large_object.has_value());
  compiler::codegen::object_cache_store(dir_.string(), key_of(small), *large_object);
  const auto before = compiler::codegen::object_cache_stats();
  EXPECT_EQ(compile_and_check(small_, 4), 1);
  EXPECT_EQ(compiler::codegen::object_cache_stats().rejected, before.rejected + 1);
}

TEST_F(CacheKeys, TruncatedOrFlippedEntriesAreRecompiled) {
  const fs::path entry = entry_of(large_);
  const std::string good = read_bytes(entry);
  std::vector<std::string> bad;
  for (size_t n : {size_t{0}, size_t{7}, size_t{31}, size_t{32}, size_t{40}, good.size() / 2, good.size() - 1})
    bad.push_back(good.substr(0, n));
  for (size_t at : {size_t{9}, size_t{17}, size_t{25}, size_t{33}, size_t{60}, good.size() / 2, good.size() - 1}) {
    std::string flipped = good;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x10);
    bad.push_back(flipped);
  }
  // A header claiming huge lengths.
  std::string huge = good;
  for (size_t k = 8; k < 24; ++k) huge[k] = '\xff';
  bad.push_back(huge);
  for (size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE("variant " + std::to_string(i));
    write_bytes(entry, bad[i]);
    const auto before = compiler::codegen::object_cache_stats();
    EXPECT_EQ(compile_and_check(large_, 5), 1);
    EXPECT_EQ(compiler::codegen::object_cache_stats().rejected, before.rejected + 1);
    EXPECT_EQ(read_bytes(entry), good);
  }
}

// ---- compile time linear in program size ----

// y = y * y * a + b, n times: every step reads the previous value twice.
std::string reuse_chain_text(int n) {
  std::ostringstream os;
  os << "{ lambda ; v0:f32[8] a:f32[8] b:f32[8]. let\n";
  for (int i = 0; i < n; ++i) {
    os << "    s" << i << ":f32[8] = mul v" << i << " v" << i << "\n";
    os << "    h" << i << ":f32[8] = mul s" << i << " a\n";
    os << "    v" << i + 1 << ":f32[8] = add h" << i << " b\n";
  }
  os << "  in (v" << n << ") }";
  return os.str();
}

TEST(LinearCompile, PlannerVisitsEachValueOnce) {
  for (int n : {20, 40, 80}) {
    SCOPED_TRACE("chain of " + std::to_string(n));
    const Jaxpr j = parse_jaxpr(reuse_chain_text(n));
    const compiler::codegen::KernelPlan plan = compiler::codegen::plan_kernel(j, "loop");
    EXPECT_EQ(plan.stats.visits, 3 * n);  // one per equation
    EXPECT_LE(plan.nodes.size(), static_cast<size_t>(3 * n + 3));
  }
}

// The same value read through two index maps is planned twice (it is recomputed per
// map), but each (value, map) pair still only once.
TEST(LinearCompile, PlannerVisitsEachValueOncePerIndexMap) {
  std::ostringstream os;
  const int n = 40;
  os << "{ lambda ; v0:f32[4,4]. let\n";
  for (int i = 0; i < n; ++i) {
    os << "    t" << i << ":f32[4,4] = transpose[permutation=(1, 0)] v" << i << "\n";
    os << "    v" << i + 1 << ":f32[4,4] = add v" << i << " t" << i << "\n";
  }
  os << "  in (v" << n << ") }";
  const compiler::codegen::KernelPlan plan = compiler::codegen::plan_kernel(parse_jaxpr(os.str()), "loop");
  EXPECT_LE(plan.stats.visits, 4 * n);  // each equation under the identity and the transpose
  std::vector<Array> args{randn({4, 4}, DType::Float32, 7)};
  const Jaxpr j = parse_jaxpr(os.str());
  auto kernel = compiler::compile_kernel(j, "loop", compiler::KernelOptions{.name = "twomaps", .disk_cache = false});
  EXPECT_ALLCLOSE(run_kernel(*kernel, j, args)[0], eval_jaxpr(j, {}, args)[0], 1e-5, 1e-5);
}

TEST(LinearCompile, JitOfDeepReuseChainMatchesEager) {
  auto chain = [](const Array& x) {
    Array y = x;
    for (int i = 0; i < 80; ++i) y = y * y * 0.5f + 0.25f;
    return y;
  };
  Array x = randn({64}, DType::Float32, 3, 0.5);
  auto jitted = jit(chain, JitOptions{.disk_cache = false});
  EXPECT_ALLCLOSE(jitted(x), chain(x), 1e-5, 1e-6);
  const std::string text = jitted.lower(x).as_text();
  ASSERT_NE(text.find("= fusion["), std::string::npos) << text;
  EXPECT_EQ(text.find("= fusion["), text.rfind("= fusion[")) << text;  // one kernel
}

// Binary exponentiation over a 32-bit exponent array: 32 steps that each read the
// accumulator and the base twice (jnp::power's integer path).
TEST(LinearCompile, JitPowerWithIntegerExponentArrays) {
  Array e = Array(std::vector<int32_t>{0, 1, 2, 3, 5, -1, -2, 7, 10, 31}, {10});
  Array xf = f32({1.5, -2.0, 0.5, 3.0, -1.25, 2.0, -4.0, 1.1, 0.9, 1.0});
  auto power = [](const Array& a, const Array& b) { return jnp::power(a, b); };
  EXPECT_ALLCLOSE(jit(power, JitOptions{.disk_cache = false})(xf, e), power(xf, e), 1e-6, 1e-6);
  Array xi = Array(std::vector<int32_t>{2, -3, 1, -1, 0, 5, 7, -2, 3, 1}, {10});
  Array ei = Array(std::vector<int32_t>{3, 2, -5, -3, 0, 4, 1, 9, 19, 31}, {10});
  EXPECT_ALLCLOSE(jit(power, JitOptions{.disk_cache = false})(xi, ei), power(xi, ei), 0, 0);
}

// jnp functions with JAX's derivative rules are custom_jvp_call equations when traced;
// jit inlines them (derivatives are taken before optimization), so they fuse like any
// other elementwise chain, and grad through jit still uses the rule (ties give 1/2).
TEST(CustomJvpCall, InlinedAndFusedUnderJit) {
  auto lae = [](const Array& a, const Array& b) { return jnp::logaddexp(a, b) * 2.0f; };
  Array a = f32({0.5, -1.0, 3.0, 2.0}), b = f32({0.5, 2.0, -3.0, 2.0});
  auto jitted = jit(lae, JitOptions{.disk_cache = false});
  EXPECT_ALLCLOSE(jitted(a, b), lae(a, b), 1e-6, 1e-6);
  EXPECT_NE(jitted.lower(a, b).traced_text().find("custom_jvp_call"), std::string::npos);
  const std::string text = jitted.lower(a, b).as_text();
  EXPECT_EQ(text.find("custom_jvp_call"), std::string::npos) << text;
  ASSERT_NE(text.find("= fusion["), std::string::npos) << text;
  EXPECT_EQ(text.find("= fusion["), text.rfind("= fusion[")) << text;  // one kernel
  auto g = grad([&](const Array& x) { return jnp::sum(jit(lae)(x, b)); });
  EXPECT_ALLCLOSE(g(a), f32({1.0, 2.0 * 0.04742587, 2.0 * 0.99752738, 1.0}), 1e-5, 1e-6);
}

}  // namespace
}  // namespace jx
