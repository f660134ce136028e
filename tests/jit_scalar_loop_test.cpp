// The "scalar_loop" kernel (src/jit/codegen/scalar_loop_kernel.cpp): a while_loop or a
// scan on scalars under jit is one native loop. Oracle: the same loop run eagerly (the interpreter runs the
// same scalar operations one at a time). Loops of arrays, or with an op no scalar kernel
// computes, stay runtime steps and still agree.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <tuple>

#include "jit/codegen/kernel.h"
#include "jit/codegen/loop_kernel.h"
#include "jx/jx.h"
#include "test_util.h"

namespace {

using namespace jx;
namespace jnp = jx::numpy;
namespace lax = jx::lax;

bool has_loop_kernel(const std::string& text) { return text.find("kind='scalar_loop'") != std::string::npos; }

TEST(JitScalarLoop, CountingLoopIsOneNativeLoop) {
  auto count = [](const Array& n) {
    return lax::while_loop([&](const Array& i) { return i < n; }, [](const Array& i) { return i + 1; },
                           jnp::zeros({}, int32));
  };
  auto jf = jit(count);
  for (int n : {0, 1, 7, 100000, -3}) {
    const Array trips = jnp::full({}, n, int32);
    EXPECT_EQ(jf(trips).item<int32_t>(), count(trips).item<int32_t>()) << n;
  }
  EXPECT_TRUE(has_loop_kernel(jf.lower(jnp::full({}, 3, int32)).as_text()));
}

TEST(JitScalarLoop, NewtonIterationWithMixedCarries) {
  // sqrt(a) by Newton's method until converged, counting the steps: a float64 and an
  // int32 carry, a float64 constant captured from the enclosing function.
  auto newton = [](const Array& a) {
    auto cond = [&](const std::tuple<Array, Array>& c) {
      const auto& [x, k] = c;
      return jnp::logical_and(jnp::abs(x * x - a) > 1e-12 * a, k < 100);
    };
    auto body = [&](const std::tuple<Array, Array>& c) {
      const auto& [x, k] = c;
      return std::make_tuple(0.5 * (x + a / x), k + 1);
    };
    return lax::while_loop(cond, body, std::make_tuple(a, jnp::zeros({}, int32)));
  };
  auto jf = jit(newton);
  for (double a : {2.0, 1e-6, 12345.678, 1.0}) {
    const Array x = Array(a);
    auto [root, steps] = jf(x);
    auto [want_root, want_steps] = newton(x);
    EXPECT_EQ(root.item<double>(), want_root.item<double>()) << a;
    EXPECT_EQ(steps.item<int32_t>(), want_steps.item<int32_t>()) << a;
    EXPECT_NEAR(root.item<double>(), std::sqrt(a), 1e-9 * std::sqrt(a));
  }
  EXPECT_TRUE(has_loop_kernel(jf.lower(Array(2.0)).as_text()));
}

TEST(JitScalarLoop, MaxStepsBoundsTheLoop) {
  auto f = [](const Array& x, int64_t max_steps) {
    return lax::while_loop([](const Array& v) { return v < 1000.0f; }, [](const Array& v) { return v * 1.5f + 1.0f; },
                           x, {.max_steps = max_steps});
  };
  for (int64_t m : {0, 1, 3, 50}) {
    auto jf = jit([m, &f](const Array& x) { return f(x, m); });
    const Array x = Array(1.0f);
    EXPECT_EQ(jf(x).item<float>(), f(x, m).item<float>()) << m;
    EXPECT_TRUE(has_loop_kernel(jf.lower(x).as_text()));
  }
}

TEST(JitScalarLoop, TranscendentalsBoolsAndSmallIntegers) {
  // A float32 carry through sin and exp, a bool carry, a uint8 counter that wraps.
  auto f = [](const Array& x0) {
    auto cond = [](const std::tuple<Array, Array, Array>& c) { return jnp::logical_not(std::get<1>(c)); };
    auto body = [](const std::tuple<Array, Array, Array>& c) {
      const auto& [x, done, k] = c;
      Array next = jnp::sin(x) * jnp::exp(-0.01f * x) + 0.5f;
      Array k1 = k + jnp::ones({}, uint8);
      return std::make_tuple(next, jnp::logical_or(jnp::abs(next - x) < 1e-6f, k1 == 200), k1);
    };
    return lax::while_loop(cond, body, std::make_tuple(x0, Array(false), jnp::zeros({}, uint8)));
  };
  auto jf = jit(f);
  for (float v : {0.0f, 2.5f, -7.0f}) {
    auto [x, done, k] = jf(Array(v));
    auto [wx, wdone, wk] = f(Array(v));
    EXPECT_NEAR(x.item<float>(), wx.item<float>(), 1e-6f) << v;
    EXPECT_EQ(done.item<bool>(), wdone.item<bool>()) << v;
    EXPECT_EQ(k.item<uint8_t>(), wk.item<uint8_t>()) << v;
  }
  EXPECT_TRUE(has_loop_kernel(jf.lower(Array(1.0f)).as_text()));
}

TEST(JitScalarLoop, ScalarLoopInsideAScanBody) {
  // Each step of the scan runs a scalar while loop: the body program is all kernels, so
  // the scan runs it on buffers, its while loop native.
  auto f = [](const Array& xs) {
    auto step = [](const Array& acc, const Array& x) {
      auto halvings = lax::while_loop([](const std::tuple<Array, Array>& c) { return std::get<0>(c) > 1.0f; },
                                       [](const std::tuple<Array, Array>& c) {
                                         return std::make_tuple(std::get<0>(c) * 0.5f, std::get<1>(c) + 1);
                                       },
                                       std::make_tuple(jnp::abs(x) * 100.0f, jnp::zeros({}, int32)));
      Array next = acc + std::get<1>(halvings);
      return std::make_pair(next, next);
    };
    return lax::scan(step, jnp::zeros({}, int32), xs).second;
  };
  const Array xs = jx::testing::randn({64}, DType::Float32, 3);
  EXPECT_ALLCLOSE(jit(f)(xs), f(xs), 0, 0);
}

TEST(JitScalarLoop, LoopsOfArraysStayRuntimeSteps) {
  // An array carry: the bodies run as compiled programs (on buffers), not as a while kernel.
  auto f = [](const Array& v) {
    return lax::while_loop([](const Array& x) { return jnp::sum(x) < 100.0f; }, [](const Array& x) { return x * 2.0f; },
                           v);
  };
  const Array v = jnp::abs(jx::testing::randn({5}, DType::Float32, 4)) + 0.1f;
  auto jf = jit(f);
  EXPECT_ALLCLOSE(jf(v), f(v), 0, 0);
  EXPECT_FALSE(has_loop_kernel(jf.lower(v).as_text()));
}

TEST(JitScalarLoop, BranchesAndNestedLoopsInsideTheLoop) {
  // Collatz: while n != 1, n = cond(n even, n / 2, 3n + 1), counting steps; each step
  // also runs an inner while loop (the number of halvings to bring n below 10) whose
  // total is carried. One native loop, branches and inner loop included.
  auto collatz = [](const Array& n0) {
    using C = std::tuple<Array, Array, Array>;
    auto cond = [](const C& c) { return std::get<0>(c) != 1; };
    auto body = [](const C& c) {
      const auto& [n, steps, halvings] = c;
      Array next = lax::cond(n % 2 == 0, [](const Array& v) { return jnp::floor_divide(v, 2); },
                             [](const Array& v) { return 3 * v + 1; }, n);
      auto inner = lax::while_loop([](const std::tuple<Array, Array>& s) { return std::get<0>(s) >= 10; },
                                   [](const std::tuple<Array, Array>& s) {
                                     return std::make_tuple(jnp::floor_divide(std::get<0>(s), 2), std::get<1>(s) + 1);
                                   },
                                   std::make_tuple(next, jnp::zeros({}, int32)));
      return C(next, steps + 1, halvings + std::get<1>(inner));
    };
    return lax::while_loop(cond, body, C(n0, jnp::zeros({}, int32), jnp::zeros({}, int32)));
  };
  auto jf = jit(collatz);
  for (int n : {1, 6, 27, 97, 871}) {
    const Array n0 = jnp::full({}, n, int32);
    auto [end, steps, halvings] = jf(n0);
    auto [wend, wsteps, whalvings] = collatz(n0);
    EXPECT_EQ(end.item<int32_t>(), 1) << n;
    EXPECT_EQ(steps.item<int32_t>(), wsteps.item<int32_t>()) << n;
    EXPECT_EQ(halvings.item<int32_t>(), whalvings.item<int32_t>()) << n;
  }
  const Array n27 = jnp::full({}, 27, int32);
  EXPECT_EQ(std::get<1>(jf(n27)).item<int32_t>(), 111);  // the known trajectory length
  const std::string text = jf.lower(n27).as_text();
  EXPECT_TRUE(has_loop_kernel(text));
  EXPECT_EQ(text.find("kind='loop'"), std::string::npos) << "the branches and the inner loop are inside the kernel";
  // A three-way switch inside a scan over a sequence: the index is clamped as eagerly.
  auto piecewise = [](const Array& xs) {
    return lax::scan(
        [](const Array& acc, const Array& x) {
          std::vector<std::function<Array(const Array&)>> branches = {
              [](const Array& v) { return v * 10.0f; }, [](const Array& v) { return -v; },
              [](const Array& v) { return v + 100.0f; }};
          Array y = lax::switch_(jnp::astype(x * 2.0f, int32), branches, x);
          return std::make_pair(acc + y, y);
        },
        jnp::zeros({}), xs);
  };
  const Array xs = jx::testing::randn({200}, DType::Float32, 9) * 2.0f;
  auto jp = jit(piecewise);
  auto [acc, ys] = jp(xs);
  auto [wacc, wys] = piecewise(xs);
  EXPECT_ALLCLOSE(ys, wys, 0, 0);
  EXPECT_ALLCLOSE(acc, wacc, 0, 0);
  EXPECT_TRUE(has_loop_kernel(jp.lower(xs).as_text()));
}

TEST(JitScalarLoop, ScanOverASequenceForwardAndReversed) {
  // A first-order IIR filter y[t] = a y[t-1] + (1 - a) x[t] over 1000 samples, with a
  // second carry counting the samples above the running value; reversed too.
  for (bool reverse : {false, true}) {
    auto f = [reverse](const Array& xs, const Array& a) {
      auto step = [&](const std::tuple<Array, Array>& c, const Array& x) {
        const auto& [y, above] = c;
        Array next = a * y + (1.0f - a) * x;
        return std::make_pair(std::make_tuple(next, above + jnp::astype(x > next, int32)), next);
      };
      return lax::scan(step, std::make_tuple(jnp::zeros({}), jnp::zeros({}, int32)), xs, {.reverse = reverse});
    };
    const Array xs = jx::testing::randn({1000}, DType::Float32, 7);
    const Array a = Array(0.9f);
    auto jf = jit(f);
    auto [carry, ys] = jf(xs, a);
    auto [want_carry, want_ys] = f(xs, a);
    SCOPED_TRACE(reverse ? "reversed" : "forward");
    EXPECT_ALLCLOSE(ys, want_ys, 0, 0);
    EXPECT_ALLCLOSE(std::get<0>(carry), std::get<0>(want_carry), 0, 0);
    EXPECT_EQ(std::get<1>(carry).item<int32_t>(), std::get<1>(want_carry).item<int32_t>());
    EXPECT_TRUE(has_loop_kernel(jf.lower(xs, a).as_text()));
  }
}

TEST(JitScalarLoop, ForiLoopAndEmptyScan) {
  // fori_loop with static bounds is a scan over the indices: one native loop.
  auto sum_of_squares = [](const Array& n0) {
    return lax::fori_loop(0, 1000, [](const Array& i, const Array& acc) { return acc + i * i % 7; }, n0);
  };
  auto jf = jit(sum_of_squares);
  const Array n0 = jnp::zeros({}, int32);
  EXPECT_EQ(jf(n0).item<int32_t>(), sum_of_squares(n0).item<int32_t>());
  EXPECT_TRUE(has_loop_kernel(jf.lower(n0).as_text()));
  // A scan of length 0 leaves its carry as it was and returns empty ys.
  auto empty = [](const Array& c0, const Array& xs) {
    return lax::scan([](const Array& c, const Array& x) { return std::make_pair(c + x, c * x); }, c0, xs);
  };
  auto [c, ys] = jit(empty)(Array(2.5), jnp::zeros({0}, float64));
  EXPECT_EQ(c.item<double>(), 2.5);
  EXPECT_EQ(ys.size(), 0);
}

TEST(JitScalarLoop, ScansOverRowsStayRuntimeSteps) {
  // xs rows of 3 elements: the body is a program of its own, run on buffers.
  auto f = [](const Array& xs) {
    return lax::scan([](const Array& c, const Array& x) { return std::make_pair(c + jnp::sum(x), jnp::sin(x) * c); },
                     jnp::zeros({}), xs);
  };
  const Array xs = jx::testing::randn({20, 3}, DType::Float32, 8);
  auto jf = jit(f);
  auto [c, ys] = jf(xs);
  auto [wc, wys] = f(xs);
  EXPECT_ALLCLOSE(c, wc, 1e-6, 1e-6);
  EXPECT_ALLCLOSE(ys, wys, 1e-6, 1e-6);
  EXPECT_FALSE(has_loop_kernel(jf.lower(xs).as_text()));
}

TEST(JitScalarLoop, CompileKernelNamesWhatItCannotCompile) {
  // compile_kernel(kind "scalar_loop") takes a body of exactly one scalar loop equation.
  Jaxpr not_a_loop;
  not_a_loop.invars.push_back(Var{0, Aval{{}, DType::Float32}});
  not_a_loop.outvars.push_back(not_a_loop.invars[0]);
  compiler::KernelOptions options{.name = "while_test", .disk_cache = false};
  EXPECT_JX_ERROR(compiler::compile_kernel(not_a_loop, "scalar_loop", options),
                  "[jit] internal: a scalar_loop kernel holds one while or scan equation, got 0 equations");
}

}  // namespace
