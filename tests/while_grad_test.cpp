// Reverse mode through lax::while_loop. With max_steps the loop is linearized as the
// equivalent scan of max_steps guarded steps (while_partial_eval), checkpointed by
// default (O(sqrt N) saved carries, the steps between recomputed in the backward pass);
// without max_steps an eager backward pass counts the trip count first. grad/vjp/jacrev
// work eagerly, under jit and under vmap (lanes with different trip counts). Oracles:
// finite differences (check_grads, reverse mode), the same loop unrolled in C++, eager
// for jit, a loop over the batch for vmap, store-every-step for the checkpointed loop.
#include <cmath>

#include "jx/control_flow/while_loop.h"
#include "jx/jx.h"
#include "jx/test_util.h"
#include "test_util.h"
#include "transforms/jaxpr_transforms.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;
using lax::while_loop;
using Carry = std::tuple<Array, Array>;

Array f64(std::vector<double> v) { return Array(v); }
const Array kX = f64({0.3, -1.2, 0.7});

// x <- sin(x) * 1.5 + x * 0.5 while i < n (at most options.max_steps times); i is an int32 counter.
Array iterate(const Array& x, const Array& n, const lax::WhileOptions& options) {
  return std::get<1>(while_loop([&](const Carry& c) { return std::get<0>(c) < n; },
                                [](const Carry& c) {
                                  auto [i, v] = c;
                                  return Carry{i + 1, jnp::sin(v) * 1.5 + v * 0.5};
                                },
                                Carry{Array(0), x}, options));
}
Array iterate(const Array& x, const Array& n, int64_t max_steps) { return iterate(x, n, {.max_steps = max_steps}); }
// The same map unrolled in C++: value and derivative of sum(x_k) after `steps` steps.
std::pair<double, double> unrolled(double x, int steps) {
  double d = 1.0;
  for (int k = 0; k < steps; ++k) {
    d *= std::cos(x) * 1.5 + 0.5;
    x = std::sin(x) * 1.5 + x * 0.5;
  }
  return {x, d};
}
void expect_unrolled_derivative(const Array& g, int steps) {
  const std::vector<double> x = kX.to_vector<double>();
  for (int64_t j = 0; j < 3; ++j)
    EXPECT_NEAR(g(j).item<double>(), unrolled(x[static_cast<size_t>(j)], steps).second, 1e-12) << j;
}

// The bytes reverse mode's forward pass keeps for the backward pass: the residuals that
// partial evaluation of f's jvp program passes from its known half to its unknown one.
int64_t residual_bytes(const std::function<Array(const Array&)>& f, const Array& x) {
  const ClosedJaxpr program = make_jaxpr(f)(x);
  const detail::JvpJaxpr j = detail::jvp_jaxpr(program, {true}, {});
  const detail::PartialEvalJaxpr pe = detail::partial_eval_jaxpr(j.jaxpr, {false, true}, {});
  int64_t bytes = 0;
  for (size_t r = 0; r < pe.num_residuals; ++r) {
    const Aval& a = pe.unknown.jaxpr.invars[r].aval;
    bytes += a.size() * itemsize(a.dtype);
  }
  return bytes;
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

TEST(WhileGrad, GradStagesACheckpointedScanAndPlainEvaluationAWhile) {
  auto loss = [](const Array& x) { return jnp::sum(iterate(x, Array(3), 7)); };
  // 7 steps as 3 checkpointed runs of 3 steps (the last two guarded off by max_steps).
  const std::string text = make_jaxpr(grad(loss))(kX).str();
  EXPECT_NE(text.find("checkpoint["), std::string::npos) << text;
  EXPECT_NE(text.find("lt a 7:i32[]"), std::string::npos) << text;
  EXPECT_NE(text.find("length=3"), std::string::npos) << text;
  EXPECT_EQ(text.find("while["), std::string::npos) << text;
  // Saving every step: one scan of max_steps steps.
  auto every = [](const Array& x) { return jnp::sum(iterate(x, Array(3), {.max_steps = 7, .checkpoints = 7})); };
  const std::string flat = make_jaxpr(grad(every))(kX).str();
  EXPECT_NE(flat.find("length=7"), std::string::npos) << flat;
  EXPECT_EQ(flat.find("checkpoint["), std::string::npos) << flat;
  const std::string forward = make_jaxpr(loss)(kX).str();
  EXPECT_NE(forward.find("while["), std::string::npos) << forward;
  EXPECT_EQ(forward.find("checkpoints="), std::string::npos) << forward;  // the default is not printed
}

// ---- checkpointing ----

TEST(WhileGrad, CheckpointedMatchesTheUnrolledLoopWhereverThePredicateTurnsFalse) {
  // max_steps = 23 is no multiple of the runs: ceil(sqrt(23)) = 5 runs of 5 steps, the
  // last two steps guarded off. The predicate turns false before any step (0), in the
  // first run (2), mid-run (12), at max_steps (23) or never (40: cut off).
  const std::vector<lax::WhileOptions> schedules{{.max_steps = 23},
                                                 {.max_steps = 23, .checkpoints = 23},  // every step
                                                 {.max_steps = 23, .checkpoints = 4},
                                                 {.max_steps = 23, .checkpoints = 1},
                                                 {.max_steps = 23, .checkpoint_levels = 2},
                                                 {.max_steps = 23, .checkpoints = 3, .checkpoint_levels = 3}};
  for (int n : {0, 2, 12, 23, 40})
    for (size_t s = 0; s < schedules.size(); ++s) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " schedule " << s);
      Array g = grad([&](const Array& x) { return jnp::sum(iterate(x, Array(n), schedules[s])); })(kX);
      expect_unrolled_derivative(g, std::min(n, 23));
    }
}

TEST(WhileGrad, CheckpointedMatchesFiniteDifferencesToSecondOrder) {
  test_util::check_grads([](const Array& x) { return iterate(x, Array(11), {.max_steps = 13}); }, std::tuple{kX},
                         {.order = 2, .modes = test_util::Modes::Rev});
  test_util::check_grads(
      [](const Array& x) { return iterate(x, Array(9), {.max_steps = 13, .checkpoints = 2, .checkpoint_levels = 2}); },
      std::tuple{kX}, {.order = 2, .modes = test_util::Modes::Rev});
}

TEST(WhileGrad, CheckpointedUnderJitAndVmapMatchesEagerAndALoop) {
  auto f = [](const Array& x, const Array& limit) {
    return while_loop([&](const Array& v) { return jnp::sum(v) < limit; }, [](const Array& v) { return v * 1.25 + 0.1; },
                      x, {.max_steps = 17, .checkpoint_levels = 2});
  };
  auto d = [&](const Array& x, const Array& l) { return grad([&](const Array& y) { return jnp::sum(f(y, l)); })(x); };
  const Array xs = f64({0.5, 1.0, 3.0, 0.01}).reshape({4, 1}), limits = f64({3.0, 2.5, 1.0, 1e9});
  Array got = vmap(d)(xs, limits);
  // d/dx = 1.25^steps; the last lane is cut off by max_steps.
  for (int64_t b = 0; b < 4; ++b) EXPECT_ALLCLOSE(got(b), d(xs(b), limits(b)), 1e-15, 1e-15) << b;
  EXPECT_ALLCLOSE(got(3), f64({std::pow(1.25, 17)}), 1e-12, 1e-12);
  EXPECT_ALLCLOSE(jit(vmap(d))(xs, limits), got, 1e-14, 1e-14);
  EXPECT_ALLCLOSE(jit(d)(xs(0), limits(0)), got(0), 1e-14, 1e-14);
}

TEST(WhileGrad, CheckpointedResidualsGrowLikeTheSquareRootOfMaxSteps) {
  auto bytes = [](int64_t n, std::optional<int64_t> checkpoints, int64_t levels = 1) {
    return residual_bytes(
        [&](const Array& x) {
          return iterate(x, Array(5), {.max_steps = n, .checkpoints = checkpoints, .checkpoint_levels = levels});
        },
        kX);
  };
  const int64_t every_100 = bytes(100, 100), every_10000 = bytes(10000, 10000);
  const int64_t sqrt_100 = bytes(100, std::nullopt), sqrt_10000 = bytes(10000, std::nullopt);
  // Every step: each of the N steps saves its residuals (at least the carry, 28 bytes).
  EXPECT_GE(every_100, 100 * 28);
  EXPECT_GT(every_10000, 90 * every_100);
  // sqrt(N) runs: a carry (i32 counter, f64[3]) per run, plus a few loop invariants.
  EXPECT_LE(sqrt_100, 10 * 28 + 64);
  EXPECT_LE(sqrt_10000, 100 * 28 + 64);
  EXPECT_LT(sqrt_10000, 12 * sqrt_100);
  // Two levels: ceil(10000^(1/3)) = 22 saved carries.
  EXPECT_LE(bytes(10000, std::nullopt, 2), 22 * 28 + 64);
}

// ---- without max_steps: the trip count is counted when the backward pass runs ----

TEST(WhileGrad, UnboundedLoopsDifferentiateEagerly) {
  auto f = [](const Array& x, int n) { return iterate(x, Array(n), lax::WhileOptions{}); };
  for (int n : {0, 1, 7, 30}) {
    SCOPED_TRACE(n);
    expect_unrolled_derivative(grad([&](const Array& x) { return jnp::sum(f(x, n)); })(kX), n);
  }
  auto g = [&](const Array& x) { return f(x, 5); };
  EXPECT_ALLCLOSE(jacrev(g)(kX), jacfwd(g)(kX), 1e-13, 1e-13);
  auto [out, pullback] = vjp(g, kX);
  EXPECT_ALLCLOSE(out, g(kX), 0, 0);
  test_util::check_grads(g, std::tuple{kX}, {.order = 2, .modes = test_util::Modes::Rev});
  // Newton's iteration for sqrt(a) until converged: dy/da = 1 / (2 sqrt(a)).
  auto newton = [](const Array& a) {
    return while_loop([&](const Array& y) { return jnp::abs(y * y - a) > 1e-12; },
                      [&](const Array& y) { return (y + a / y) * 0.5; }, jnp::ones_like(a));
  };
  EXPECT_NEAR(grad(newton)(Array(2.0)).item<double>(), 0.5 / std::sqrt(2.0), 1e-8);
}

TEST(WhileGrad, UnboundedLoopsUnderJitCountTheTripsWhenTheyRun) {
  auto loss = [](const Array& x) {
    return jnp::sum(while_loop([](const Array& v) { return jnp::sum(v) < 10.0; }, [](const Array& v) { return v * 2.0; }, x));
  };
  EXPECT_ALLCLOSE(grad(loss)(f64({1.0, 2.0})), f64({4.0, 4.0}), 0, 0);  // 2 steps
  // Under jit the backward pass is one while_backward step counting the trips at run
  // time: each call gets its own trip count.
  auto jitted = jit(grad(loss));
  EXPECT_NE(jitted.lower(f64({1.0, 2.0})).as_text().find("while_backward"), std::string::npos);
  EXPECT_ALLCLOSE(jitted(f64({1.0, 2.0})), f64({4.0, 4.0}), 0, 0);      // 2 steps
  EXPECT_ALLCLOSE(jitted(f64({0.1, 0.2})), f64({64.0, 64.0}), 0, 0);    // 6 steps
  EXPECT_ALLCLOSE(jitted(f64({20.0, 1.0})), f64({1.0, 1.0}), 0, 0);     // none
  EXPECT_ALLCLOSE(grad(jit(loss))(f64({0.1, 0.2})), f64({64.0, 64.0}), 0, 0);
  // The same against the unrolled loop, on the shared iterate().
  auto f = [](const Array& x) { return jnp::sum(iterate(x, Array(7), lax::WhileOptions{})); };
  expect_unrolled_derivative(jit(grad(f))(kX), 7);
  // vmap would need a trip count per lane when the backward pass is built.
  EXPECT_JX_ERROR(vmap(grad(loss))(f64({1.0, 2.0, 3.0, 4.0}).reshape({2, 2})), "[while]", "reverse-mode",
                  "under vmap", "max_steps");
}

TEST(WhileGrad, WhileBackwardChecksItsOperandMask) {
  auto loss = [](const Array& x) {
    return jnp::sum(while_loop([](const Array& v) { return jnp::sum(v) < 10.0; }, [](const Array& v) { return v * 2.0; }, x));
  };
  // The while_backward equation a traced grad stages, parsed back with a mask of the
  // wrong size.
  std::string text = make_jaxpr(grad(loss))(f64({1.0, 2.0})).str();
  EXPECT_NO_THROW(parse_jaxpr(text));
  ASSERT_NE(text.find("linear=(0, 1)"), std::string::npos) << text;
  const std::string bad = text.replace(text.find("linear=(0, 1)"), 13, "linear=(1,)");
  EXPECT_JX_ERROR(parse_jaxpr(bad), "[while_backward] linear has 1 entries but the loop has 2 operands");
}

TEST(WhileGrad, TheScheduleIsPrintedAndParsed) {
  const ClosedJaxpr j = make_jaxpr([](const Array& x) {
    return iterate(x, Array(3), {.max_steps = 9, .checkpoints = 4, .checkpoint_levels = 2});
  })(kX);
  const std::string text = j.str();
  EXPECT_NE(text.find("checkpoints=4"), std::string::npos) << text;
  EXPECT_NE(text.find("checkpoint_levels=2"), std::string::npos) << text;
  EXPECT_EQ(parse_jaxpr(text).str(), text);
}

// A loop over one f64 carry, its predicate reading it; `params` goes into the while.
Jaxpr one_carry_loop(const std::string& params) {
  return parse_jaxpr(R"({ lambda ; a:f64[]. let
    b:f64[] = while[body_jaxpr={ lambda ; a:f64[]. let
        b:f64[] = mul a 2.0:f64[]
      in (b) } body_nconsts=0 cond_jaxpr={ lambda ; a:f64[]. let
        c:bool[] = lt a 1.0:f64[]
      in (c) } cond_nconsts=0 )" + params + R"(] a
  in (b) })");
}

TEST(WhileGrad, OptionErrors) {
  auto loop = [](const lax::WhileOptions& o) {
    return while_loop([](const Array& v) { return v < 2.0; }, [](const Array& v) { return v + 1.0; }, Array(0.0), o);
  };
  EXPECT_JX_ERROR(loop({.max_steps = 5, .checkpoints = 0}), "[while_loop]", "checkpoints must be at least 1, got 0");
  EXPECT_JX_ERROR(loop({.checkpoint_levels = 0}), "[while_loop]", "checkpoint_levels must be at least 1, got 0");
  EXPECT_JX_ERROR(one_carry_loop("max_steps=4 checkpoints=0"), "[while]", "checkpoints must be positive", "got 0");
  EXPECT_JX_ERROR(one_carry_loop("max_steps=4 checkpoint_levels=0"), "[while]", "checkpoint_levels must be at least 1");
  const int64_t huge = int64_t{1} << 32;
  EXPECT_JX_ERROR(grad([&](const Array& x) { return iterate(x, Array(3), huge); })(Array(0.5)), "[while]",
                  "max_steps up to 2^31 - 1", "4294967296");
  // Transposing a loop in a carry its predicate reads: not linear in it.
  EXPECT_JX_ERROR(detail::transpose_jaxpr(ClosedJaxpr{one_carry_loop("max_steps=-1"), {}}, {true}), "[while]",
                  "predicate reads a linear (tangent) value");
}

}  // namespace
}  // namespace jx
