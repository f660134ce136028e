// Control flow under jit: a loop or conditional stays one runtime step of the compiled
// program, and its bodies run as compiled programs of their own (core/subprogram.h,
// src/jit/executable.cpp), compiled once on first use and reused on later calls, with
// fusion inside them. Checked against eager, and through the dump directory, which
// shows which programs were compiled.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "jx/jx.h"
#include "lax/control_flow/buffer_loop.h"
#include "test_util.h"

namespace jx {
namespace {

namespace fs = std::filesystem;
namespace jnp = jx::numpy;
using testing::randn;

// A dump directory for the test's lifetime; restores "no dumps" at the end.
struct DumpDir {
  fs::path path;
  DumpDir() {
    path = fs::temp_directory_path() / ("jx_control_flow_jit_test." + std::to_string(getpid()) + "." +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    config::set_dump_dir(path.string());
  }
  ~DumpDir() {
    config::set_dump_dir("");
    fs::remove_all(path);
  }
  // Names of the dumped programs' directories that start with `prefix` (the number after
  // the last '.' dropped: "f.body0.1" -> "f.body0").
  std::vector<std::string> programs(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) {
      std::string name = e.path().filename().string();
      if (name.rfind(prefix, 0) == 0) out.push_back(name.substr(0, name.rfind('.')));
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  bool has_kernel(const std::string& program) const {
    for (const auto& e : fs::directory_iterator(path)) {
      if (e.path().filename().string().rfind(program + ".", 0) != 0) continue;
      for (const auto& f : fs::directory_iterator(e.path()))
        if (f.path().extension() == ".ll") return true;
    }
    return false;
  }
};

JitOptions named(std::string name) { return JitOptions{.name = std::move(name), .disk_cache = false}; }

// sum_t tanh(c * t + x_t): a carry, stacked ys, and an elementwise chain to fuse.
std::pair<Array, Array> running_tanh(const Array& x0, const Array& xs) {
  return lax::scan([](const Array& c, const Array& x) {
    Array next = jnp::tanh(c * 0.5 + x) + jnp::sin(x);
    return std::pair(next, next * 2.0);
  }, x0, xs);
}

TEST(JitLoops, ScanBodyIsCompiledOnceWithFusedKernels) {
  DumpDir dump;
  Array x0 = randn({8}, DType::Float32, 1), xs = randn({5, 8}, DType::Float32, 2);
  auto f = jit(running_tanh, named("scanner"));
  auto [c, ys] = f(x0, xs);
  auto [c2, ys2] = f(x0 * 2.0, xs);  // a second call reuses the compiled body
  auto [ce, yse] = running_tanh(x0, xs);
  auto [ce2, yse2] = running_tanh(x0 * 2.0, xs);
  EXPECT_ALLCLOSE(c, ce, 1e-6, 1e-6);
  EXPECT_ALLCLOSE(ys, yse, 1e-6, 1e-6);
  EXPECT_ALLCLOSE(c2, ce2, 1e-6, 1e-6);
  EXPECT_ALLCLOSE(ys2, yse2, 1e-6, 1e-6);
  EXPECT_EQ(dump.programs("scanner.body"), std::vector<std::string>{"scanner.body0"});
  EXPECT_TRUE(dump.has_kernel("scanner.body0"));
}

TEST(JitLoops, WhileCompilesItsPredicateAndBody) {
  // Carries of arrays: the predicate and the body are compiled programs of their own.
  DumpDir dump;
  auto newton_sqrt = [](const Array& a) {
    // x <- (x + a / x) / 2 until converged, counting the steps.
    auto [i, x] = lax::while_loop(
        [&](const std::pair<Array, Array>& s) {
          return (s.first < 50) & (jnp::max(jnp::abs(s.second * s.second - a)) > 1e-5 * jnp::max(a));
        },
        [&](const std::pair<Array, Array>& s) { return std::pair(s.first + 1, (s.second + a / s.second) * 0.5); },
        std::pair(Array(0), a));
    return std::pair(i, x);
  };
  Array a = jnp::abs(randn({3}, DType::Float32, 5)) * 10.0f + 1.0f;
  auto [i, x] = jit(newton_sqrt, named("newton"))(a);
  auto [ie, xe] = newton_sqrt(a);
  EXPECT_EQ(i.item<int32_t>(), ie.item<int32_t>());
  EXPECT_GT(i.item<int32_t>(), 2);
  EXPECT_ALLCLOSE(x, xe, 0, 0);
  EXPECT_ALLCLOSE(x, jnp::sqrt(a), 1e-5, 1e-5);
  EXPECT_EQ(dump.programs("newton.body"), (std::vector<std::string>{"newton.body0", "newton.body1"}));
}

TEST(JitLoops, ScalarWhileIsOneKernel) {
  // Scalar carries: the whole loop is one native "scalar_loop" kernel, no programs of its own.
  DumpDir dump;
  auto newton_sqrt = [](const Array& a) {
    auto [i, x] = lax::while_loop(
        [&](const std::pair<Array, Array>& s) { return (s.first < 50) & (jnp::abs(s.second * s.second - a) > 1e-5); },
        [&](const std::pair<Array, Array>& s) { return std::pair(s.first + 1, (s.second + a / s.second) * 0.5); },
        std::pair(Array(0), a));
    return std::pair(i, x);
  };
  Array a(7.0f);
  auto jf = jit(newton_sqrt, named("scalar_newton"));
  auto [i, x] = jf(a);
  auto [ie, xe] = newton_sqrt(a);
  EXPECT_EQ(i.item<int32_t>(), ie.item<int32_t>());
  EXPECT_GT(i.item<int32_t>(), 2);
  EXPECT_EQ(x.item<float>(), xe.item<float>());
  EXPECT_NEAR(x.item<float>(), std::sqrt(7.0f), 1e-5);
  EXPECT_TRUE(dump.programs("scalar_newton.body").empty());
  EXPECT_NE(jf.lower(a).as_text().find("kind='scalar_loop'"), std::string::npos);
}

TEST(JitLoops, CondTakesOnlyTheCompiledBranchItRuns) {
  DumpDir dump;
  auto f = [](const Array& p, const Array& x) {
    return lax::cond(p > 0, [](const Array& v) { return jnp::exp(v) * 2.0; },
                     [](const Array& v) { return jnp::log1p(v * v); }, x);
  };
  auto g = jit(f, named("branchy"));
  Array x = randn({6}, DType::Float32, 3);
  EXPECT_ALLCLOSE(g(Array(1.0f), x), f(Array(1.0f), x), 1e-6, 1e-6);
  EXPECT_EQ(dump.programs("branchy.body").size(), 1u);  // only the branch taken so far
  EXPECT_ALLCLOSE(g(Array(-1.0f), x), f(Array(-1.0f), x), 1e-6, 1e-6);
  EXPECT_EQ(dump.programs("branchy.body").size(), 2u);
}

TEST(JitLoops, NestedControlFlowCompilesEachLevel) {
  DumpDir dump;
  // A scan whose body holds a cond whose branch holds a fori_loop.
  auto f = [](const Array& x0, const Array& xs) {
    return lax::scan([](const Array& c, const Array& x) {
      Array next = lax::cond(jnp::sum(x) > 0,
                             [](const Array& v) {
                               return lax::fori_loop(0, 3, [](const Array&, const Array& u) { return jnp::sin(u) + u; },
                                                     v);
                             },
                             [](const Array& v) { return v * 0.5; }, c + x);
      return std::pair(next, jnp::sum(next));
    }, x0, xs);
  };
  Array x0 = randn({4}, DType::Float32, 4), xs = randn({6, 4}, DType::Float32, 5);
  auto [c, ys] = jit(f, named("nest"))(x0, xs);
  auto [ce, yse] = f(x0, xs);
  EXPECT_ALLCLOSE(c, ce, 1e-5, 1e-5);
  EXPECT_ALLCLOSE(ys, yse, 1e-5, 1e-5);
  std::vector<std::string> bodies = dump.programs("nest.body0.body");
  EXPECT_FALSE(bodies.empty());  // the cond's branches, compiled inside the scan's body
  EXPECT_FALSE(dump.programs("nest.body0.body0.body").empty() && dump.programs("nest.body0.body1.body").empty());
}

TEST(JitLoops, GradOfJittedScanMatchesEager) {
  auto loss = [](const Array& x0, const Array& xs) {
    auto [c, ys] = running_tanh(x0, xs);
    return jnp::sum(c * c) + jnp::sum(ys);
  };
  Array x0 = randn({3}, DType::Float32, 6), xs = randn({7, 3}, DType::Float32, 7);
  auto g = jit(grad(loss, argnums<0, 1>));
  auto [g0, g1] = g(x0, xs);
  auto [e0, e1] = grad(loss, argnums<0, 1>)(x0, xs);
  EXPECT_ALLCLOSE(g0, e0, 1e-5, 1e-5);
  EXPECT_ALLCLOSE(g1, e1, 1e-5, 1e-5);
}

TEST(JitLoops, VmapOfJittedWhileMatchesALoop) {
  auto halve_until_small = [](const Array& x) {
    return lax::while_loop([](const Array& v) { return jnp::abs(v) > 1.0; }, [](const Array& v) { return v * 0.5; },
                           x);
  };
  Array xs = jnp::asarray(std::vector<float>{0.5f, 3.0f, -40.0f, 1000.0f});
  Array batched = jit(vmap(halve_until_small))(xs);
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_EQ(batched(i).item<float>(), halve_until_small(xs(i)).item<float>()) << "lane " << i;
}


// ---- bodies made only of kernels run on buffers (lax/control_flow/buffer_loop.h) ----

TEST(JitLoopsOnBuffers, WhileWithKernelBodiesRunsOnBuffers) {
  auto count_and_halve = [](const Array& x, const Array& n) {
    return lax::while_loop([&](const std::pair<Array, Array>& s) { return (s.first < n) & (jnp::sum(s.second) > 1e-3); },
                           [](const std::pair<Array, Array>& s) { return std::pair(s.first + 1, s.second * 0.5); },
                           std::pair(Array(0), x));
  };
  auto f = jit(count_and_halve, named("halver"));
  Array x = jnp::abs(randn({5}, DType::Float32, 8));
  for (int n : {0, 1, 7, 1000}) {
    const int64_t before = detail::loops_run_on_buffers();
    auto [i, v] = f(x, Array(n));
    EXPECT_EQ(detail::loops_run_on_buffers(), before + 1) << "n = " << n;
    auto [ie, ve] = count_and_halve(x, Array(n));
    EXPECT_EQ(i.item<int32_t>(), ie.item<int32_t>()) << "n = " << n;
    EXPECT_ALLCLOSE(v, ve, 0, 0);
  }
  // Zero iterations return the initial carry itself, unchanged.
  auto [i0, v0] = f(x, Array(0));
  EXPECT_EQ(i0.item<int32_t>(), 0);
  EXPECT_ALLCLOSE(v0, x, 0, 0);
}

TEST(JitLoopsOnBuffers, WhilePassesUnchangedCarriesAndStopsAtMaxSteps) {
  // The body leaves the second carry alone (an output that is an input: copied) and
  // the loop stops at max_steps before its predicate does.
  auto f = [](const Array& x) {
    return lax::while_loop([](const std::tuple<Array, Array, Array>& s) { return std::get<0>(s) < 100; },
                           [](const std::tuple<Array, Array, Array>& s) {
                             auto [i, a, b] = s;
                             return std::tuple(i + 1, a, b + a);
                           },
                           std::tuple(Array(0), x, jnp::zeros_like(x)), {.max_steps = 6});
  };
  Array x = randn({3, 4}, DType::Float64, 9);
  const int64_t before = detail::loops_run_on_buffers();
  auto [i, a, b] = jit(f, named("passer"))(x);
  EXPECT_EQ(detail::loops_run_on_buffers(), before + 1);
  EXPECT_EQ(i.item<int32_t>(), 6);
  EXPECT_ALLCLOSE(a, x, 0, 0);
  EXPECT_ALLCLOSE(b, x * 6.0, 1e-12, 1e-12);
}

TEST(JitLoopsOnBuffers, ScanWritesRowsInPlaceForwardAndReversed) {
  // Carries (a, b) with b passed through; ys: x itself (an input), a * 2 twice (one value
  // as two outputs) and a constant; views as initial carry (jnp::ones) and as xs (a
  // transpose).
  auto body = [](const std::pair<Array, Array>& c, const Array& x) {
    Array a = jnp::tanh(c.first + x * c.second);
    Array twice = a * 2.0;
    return std::pair(std::pair(a, c.second), std::tuple(x, twice, twice, jnp::full({2}, 3.0f)));
  };
  Array xs = jnp::transpose(randn({4, 6}, DType::Float32, 10));  // [6, 4], not contiguous
  for (bool reverse : {false, true}) {
    auto f = [&](const Array& b, const Array& xs) {
      return lax::scan(body, std::pair(jnp::ones({4}), b), xs, {.reverse = reverse});
    };
    Array b = randn({4}, DType::Float32, 11);
    const int64_t before = detail::loops_run_on_buffers();
    auto [carry, ys] = jit(f, named(reverse ? "scan_rev" : "scan_fwd"))(b, xs);
    EXPECT_EQ(detail::loops_run_on_buffers(), before + 1);
    auto [ce, yse] = f(b, xs);
    EXPECT_ALLCLOSE(carry.first, ce.first, 1e-6, 1e-6);
    EXPECT_ALLCLOSE(carry.second, b, 0, 0);
    EXPECT_ALLCLOSE(std::get<0>(ys), xs, 0, 0);
    EXPECT_ALLCLOSE(std::get<1>(ys), std::get<1>(yse), 1e-6, 1e-6);
    EXPECT_ALLCLOSE(std::get<2>(ys), std::get<1>(yse), 1e-6, 1e-6);
    EXPECT_ALLCLOSE(std::get<3>(ys), jnp::full({6, 2}, 3.0f), 0, 0);
  }
}

TEST(JitLoopsOnBuffers, EmptyScanReturnsItsInitAndEmptyStacks) {
  auto f = [](const Array& c, const Array& xs) {
    return lax::scan([](const Array& c, const Array& x) { return std::pair(c + x, c * x); }, c, xs);
  };
  Array c = randn({3}, DType::Float32, 12);
  auto [carry, ys] = jit(f, named("empty_scan"))(c, jnp::zeros({0, 3}));
  EXPECT_ALLCLOSE(carry, c, 0, 0);
  EXPECT_EQ(ys.shape(), (Shape{0, 3}));
}

TEST(JitLoopsOnBuffers, ZeroSizeCarriesAndRows) {
  // An empty carry beside a counter, and xs whose rows are empty.
  auto w = [](const Array& e) {
    return lax::while_loop([](const std::pair<Array, Array>& s) { return s.first < 4; },
                           [](const std::pair<Array, Array>& s) { return std::pair(s.first + 1, s.second * 2.0f); },
                           std::pair(Array(0), e));
  };
  auto [i, e] = jit(w, named("empty_carry"))(jnp::zeros({0, 3}));
  EXPECT_EQ(i.item<int32_t>(), 4);
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
  auto s = [](const Array& c, const Array& xs) {
    return lax::scan([](const Array& c, const Array& x) { return std::pair(c + 1.0f, x * 2.0f); }, c, xs);
  };
  auto [c, ys] = jit(s, named("empty_rows"))(Array(1.0f), jnp::zeros({5, 0}));
  EXPECT_EQ(c.item<float>(), 6.0f);
  EXPECT_EQ(ys.shape(), (Shape{5, 0}));
}

TEST(JitLoopsOnBuffers, BodiesWithRuntimeCallsRunThroughArrays) {
  // A sort is a runtime call, not a kernel: the body runs as a program on arrays.
  auto f = [](const Array& xs) {
    return lax::scan([](const Array& c, const Array& x) { return std::pair(c + jnp::sort(x), jnp::sort(x)); },
                     jnp::zeros({5}), xs);
  };
  Array xs = randn({4, 5}, DType::Float32, 13);
  const int64_t before = detail::loops_run_on_buffers();
  auto [c, ys] = jit(f, named("sorting_scan"))(xs);
  EXPECT_EQ(detail::loops_run_on_buffers(), before);
  auto [ce, yse] = f(xs);
  EXPECT_ALLCLOSE(c, ce, 1e-6, 1e-6);
  EXPECT_ALLCLOSE(ys, yse, 0, 0);
}

}  // namespace
}  // namespace jx
