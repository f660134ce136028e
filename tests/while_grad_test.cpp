// Reverse mode through lax::while_loop with max_steps: the loop is linearized as the
// equivalent scan of max_steps guarded steps (while_partial_eval), so grad/vjp/jacrev
// work eagerly, under jit and under vmap (lanes with different trip counts). Oracles:
// finite differences (check_grads, reverse mode), the same loop unrolled in C++, eager
// for jit, a loop over the batch for vmap.
#include <cmath>

#include "jx/control_flow/while_loop.h"
#include "jx/jx.h"
#include "jx/test_util.h"
#include "test_util.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;
using lax::while_loop;
using Carry = std::tuple<Array, Array>;

Array f64(std::vector<double> v) { return Array(v); }
const Array kX = f64({0.3, -1.2, 0.7});

// x <- sin(x) * 1.5 + x * 0.5 while i < n, at most max_steps times; i is an int32 counter.
Array iterate(const Array& x, const Array& n, int64_t max_steps) {
  return std::get<1>(while_loop([&](const Carry& c) { return std::get<0>(c) < n; },
                                [](const Carry& c) {
                                  auto [i, v] = c;
                                  return Carry{i + 1, jnp::sin(v) * 1.5 + v * 0.5};
                                },
                                Carry{Array(0), x}, {.max_steps = max_steps}));
}
// The same map unrolled in C++: value and derivative of sum(x_k) after `steps` steps.
std::pair<double, double> unrolled(double x, int steps) {
  double d = 1.0;
  for (int k = 0; k < steps; ++k) {
    d *= std::cos(x) * 1.5 + 0.5;
    x = std::sin(x) * 1.5 + x * 0.5;
  }
  return {x, d};
}

TEST(WhileGrad, MatchesTheUnrolledLoopForEveryTripCount) {
  // Trip counts 0, 1, 3 and exactly max_steps (5), and one cut off by max_steps (n = 9).
  for (int n : {0, 1, 3, 5, 9}) {
    SCOPED_TRACE(n);
    Array g = grad([&](const Array& x) { return jnp::sum(iterate(x, Array(n), 5)); })(kX);
    const std::vector<double> x = kX.to_vector<double>();
    for (int64_t j = 0; j < 3; ++j)
      EXPECT_NEAR(g(j).item<double>(), unrolled(x[static_cast<size_t>(j)], std::min(n, 5)).second, 1e-12) << j;
  }
}

TEST(WhileGrad, MatchesFiniteDifferences) {
  test_util::check_grads([](const Array& x) { return iterate(x, Array(3), 6); }, std::tuple{kX},
                         {.order = 2, .modes = test_util::Modes::Rev});
  // Through a body constant and a carry the body mixes in later; the trip count depends
  // on the values (sum(u) grows past 4).
  auto g = [](const Array& x, const Array& s) {
    auto [u, v] = while_loop([](const Carry& c) { return jnp::sum(std::get<0>(c)) < 4.0; },
                             [&](const Carry& c) {
                               auto [a, b] = c;
                               return Carry{a * s, b + jnp::sin(a)};
                             },
                             Carry{x, jnp::zeros_like(x)}, {.max_steps = 20});
    return v;
  };
  test_util::check_grads(g, std::tuple{f64({0.5, 0.8}), Array(1.3)}, {.order = 2, .modes = test_util::Modes::Rev});
}

TEST(WhileGrad, NewtonIterationForASquareRoot) {
  // y <- (y + a / y) / 2 until |y^2 - a| < 1e-12: y = sqrt(a), dy/da = 1 / (2 sqrt(a)).
  auto newton = [](const Array& a) {
    return while_loop([&](const Array& y) { return jnp::abs(y * y - a) > 1e-12; },
                      [&](const Array& y) { return (y + a / y) * 0.5; }, jnp::ones_like(a), {.max_steps = 50});
  };
  Array da = grad(newton)(Array(2.0));
  EXPECT_NEAR(newton(Array(2.0)).item<double>(), std::sqrt(2.0), 1e-12);
  // Differentiating the iterations converges to the implicit derivative.
  EXPECT_NEAR(da.item<double>(), 0.5 / std::sqrt(2.0), 1e-8);
  EXPECT_ALLCLOSE(jit(grad(newton))(Array(2.0)), da, 1e-14, 1e-14);
}

TEST(WhileGrad, JitAndJacrevMatchEager) {
  auto f = [](const Array& x) { return iterate(x, Array(4), 8); };
  auto loss = [&](const Array& x) { return jnp::sum(f(x)); };
  Array g = grad(loss)(kX);
  EXPECT_ALLCLOSE(jit(grad(loss))(kX), g, 1e-14, 1e-14);
  EXPECT_ALLCLOSE(grad(jit(loss))(kX), g, 1e-14, 1e-14);
  EXPECT_ALLCLOSE(jacrev(f)(kX), jacfwd(f)(kX), 1e-13, 1e-13);
  auto [out, pullback] = vjp(f, kX);
  EXPECT_ALLCLOSE(out, f(kX), 0, 0);
  EXPECT_ALLCLOSE(std::get<0>(pullback(jnp::ones_like(kX))), g, 1e-14, 1e-14);
}

TEST(WhileGrad, VmapWithDifferentTripCountsPerLane) {
  // x <- x * 1.5 while x < limit: d/dx = 1.5^steps, steps differing per lane; lane 3 is
  // cut off by max_steps = 6, lane 2 never runs.
  auto f = [](const Array& x, const Array& limit) {
    return while_loop([&](const Array& v) { return v < limit; }, [](const Array& v) { return v * 1.5; }, x,
                      {.max_steps = 6});
  };
  auto d = [&](const Array& x, const Array& l) { return grad([&](const Array& y) { return f(y, l); })(x); };
  const Array xs = f64({1.0, 2.0, 5.0, 0.01}), limits = f64({3.0, 2.5, 1.0, 10.0});
  Array got = vmap(d)(xs, limits);
  for (int64_t b = 0; b < 4; ++b) EXPECT_ALLCLOSE(got(b), d(xs(b), limits(b)), 1e-15, 1e-15) << b;
  EXPECT_ALLCLOSE(got, f64({std::pow(1.5, 3), 1.5, 1.0, std::pow(1.5, 6)}), 1e-13, 1e-13);
  EXPECT_ALLCLOSE(jit(vmap(d))(xs, limits), got, 1e-14, 1e-14);
}

TEST(WhileGrad, GradStagesAScanOfMaxStepsAndPlainEvaluationAWhile) {
  auto loss = [](const Array& x) { return jnp::sum(iterate(x, Array(3), 7)); };
  const std::string text = make_jaxpr(grad(loss))(kX).str();
  EXPECT_NE(text.find("scan["), std::string::npos) << text;
  EXPECT_NE(text.find("length=7"), std::string::npos) << text;
  EXPECT_EQ(text.find("while["), std::string::npos) << text;
  const std::string forward = make_jaxpr(loss)(kX).str();
  EXPECT_NE(forward.find("while["), std::string::npos) << forward;
}

TEST(WhileGrad, UnboundedLoopsStillRaise) {
  auto loss = [](const Array& x) {
    return jnp::sum(while_loop([](const Array& v) { return jnp::sum(v) < 10.0; }, [](const Array& v) { return v * 2.0; }, x));
  };
  EXPECT_JX_ERROR(grad(loss)(f64({1.0, 2.0})), "[while]", "reverse-mode", "bounded number of iterations", "max_steps");
}

}  // namespace
}  // namespace jx
