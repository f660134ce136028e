// lax::while_loop and the `while` primitive: values against a plain C++ loop, forward
// derivatives against finite differences (check_grads in forward mode) and jvp against
// linearize and jacfwd, vmap against a loop over the batch (batched predicates: lanes
// finish at different steps), jit against eager, max_steps, the IR text and its parse
// round trip, dce and partial evaluation, the reverse-mode error, and every error message.
#include <cmath>
#include <map>

#include "jx/control_flow/cond.h"
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
using testing::randn;

bool contains(const std::string& s, std::string_view sub) { return s.find(sub) != std::string::npos; }
Array f64(std::vector<double> v) { return Array(v); }

// x <- sin(x) * w + x * 0.5 while i < n: n steps of a smooth map (w captured: a constant).
const Array kW = f64({1.5, -0.5, 2.0});
Carry step(const Carry& c) {
  auto [i, x] = c;
  return {i + 1, jnp::sin(x) * kW + x * 0.5};
}
Carry iterate_with_count(const Array& x, int n) {
  return while_loop([n](const Carry& c) { return std::get<0>(c) < n; }, step, Carry{Array(0), x});
}
Array iterate(const Array& x, int n) { return std::get<1>(iterate_with_count(x, n)); }
std::vector<double> iterate_oracle(std::vector<double> x, int n) {
  const std::vector<double> w{1.5, -0.5, 2.0};
  for (int k = 0; k < n; ++k)
    for (size_t j = 0; j < x.size(); ++j) x[j] = std::sin(x[j]) * w[j] + x[j] * 0.5;
  return x;
}

const Array kX = f64({0.3, -0.8, 0.1});

// ---- values ----

TEST(WhileLoop, MatchesACppLoop) {
  for (int n : {0, 1, 4}) {
    auto [i, x] = iterate_with_count(kX, n);
    EXPECT_EQ(i.item<int32_t>(), n);
    EXPECT_ALLCLOSE(x, f64(iterate_oracle({0.3, -0.8, 0.1}, n)), 1e-15, 1e-15) << n;
  }
  // A data-dependent trip count: doubles until the value passes 100.
  auto [steps, v] = while_loop([](const Carry& c) { return std::get<1>(c) < 100.0; },
                               [](const Carry& c) { return Carry{std::get<0>(c) + 1, std::get<1>(c) * 2.0}; },
                               Carry{Array(0), Array(3.0)});
  EXPECT_EQ(steps.item<int32_t>(), 6);
  EXPECT_EQ(v.item<double>(), 192.0);
}

TEST(WhileLoop, MaxStepsBoundsTheIterations) {
  auto run = [](std::optional<int64_t> max_steps) {
    return while_loop([](const Array& i) { return i < 10; }, [](const Array& i) { return i + 1; }, Array(0),
                      {.max_steps = max_steps})
        .item<int32_t>();
  };
  EXPECT_EQ(run(std::nullopt), 10);
  EXPECT_EQ(run(3), 3);
  EXPECT_EQ(run(0), 0);
  EXPECT_EQ(run(25), 10);
  auto staged = make_jaxpr([](const Array& i) {
    return while_loop([](const Array& j) { return j < 10; }, [](const Array& j) { return j + 1; }, i, {.max_steps = 3});
  })(Array(0));
  EXPECT_TRUE(contains(staged.str(), "max_steps=3")) << staged.str();
}

struct State {
  Array step, value;
  std::map<std::string, Array> extra;
};
JX_TREE_NODE(State, step, value, extra)

TEST(WhileLoop, PytreeCarryAndWeakInitialValues) {
  State init{Array(0), f64({1.0, 2.0}), {{"sum", Array(0.0)}}};
  State out = while_loop([](const State& s) { return s.step < 3; },
                         [](const State& s) {
                           return State{s.step + 1, s.value * 2.0, {{"sum", s.extra.at("sum") + jnp::sum(s.value)}}};
                         },
                         init);
  EXPECT_EQ(out.step.item<int32_t>(), 3);
  EXPECT_ALLCLOSE(out.value, f64({8.0, 16.0}));
  EXPECT_NEAR(out.extra.at("sum").item<double>(), 3.0 + 6.0 + 12.0, 1e-15);
  // A weakly typed C++ initial value takes the dtype the body gives it (JAX's promotion).
  Array f = while_loop([](const Array& x) { return x < 2.0f; }, [](const Array& x) { return x + Array(0.75f); }, 0);
  EXPECT_EQ(f.dtype(), DType::Float32);
  EXPECT_FLOAT_EQ(f.item<float>(), 2.25f);
}

TEST(WhileLoop, ClosuresCaptureArrays) {
  const Array limit = f64({4.0, 4.0}), inc = f64({1.0, 0.5});
  Array out = while_loop([&](const Array& x) { return jnp::all(x < limit); }, [&](const Array& x) { return x + inc; },
                         f64({0.0, 0.0}));
  EXPECT_ALLCLOSE(out, f64({4.0, 2.0}));
  ClosedJaxpr j = make_jaxpr([&](const Array& x) {
    return while_loop([&](const Array& v) { return jnp::all(v < limit); }, [&](const Array& v) { return v + inc; }, x);
  })(f64({0.0, 0.0}));
  const Equation& e = j.jaxpr.eqns.back();
  ASSERT_EQ(e.primitive->name(), "while");
  EXPECT_EQ(e.params.get_int("cond_nconsts"), 1);
  EXPECT_EQ(e.params.get_int("body_nconsts"), 1);
  EXPECT_EQ(e.inputs.size(), 3u);
}

TEST(WhileLoop, CondInsideTheBodyAndALoopInsideACond) {
  // Collatz steps of 27: a cond per iteration.
  auto collatz = [](const Carry& c) {
    auto [n, steps] = c;
    Array next = lax::cond(n % 2 == 0, [](const Array& v) { return lax::div(v, Array(2)); }, [](const Array& v) { return v * 3 + 1; }, n);
    return Carry{next, steps + 1};
  };
  auto [n, steps] = while_loop([](const Carry& c) { return std::get<0>(c) != 1; }, collatz, Carry{Array(27), Array(0)});
  EXPECT_EQ(n.item<int32_t>(), 1);
  EXPECT_EQ(steps.item<int32_t>(), 111);
  auto f = [](const Array& x) {
    return lax::cond(jnp::sum(x) > 0.0, [](const Array& v) { return iterate(v, 2); }, [](const Array& v) { return v; }, x);
  };
  EXPECT_ALLCLOSE(f(kX), kX, 0, 0);
  EXPECT_ALLCLOSE(f(-kX), f64(iterate_oracle({-0.3, 0.8, -0.1}, 2)), 1e-15, 1e-15);
}

// x <- sin(x) where x > 0, else x * x - 0.5, three times: a cond inside the loop body.
Array bouncing(const Array& x) {
  auto [i, out] = while_loop(
      [](const Carry& c) { return std::get<0>(c) < 3; },
      [](const Carry& c) {
        Array y = lax::cond(std::get<1>(c) > 0.0, [](const Array& v) { return jnp::sin(v); },
                            [](const Array& v) { return v * v - 0.5; }, std::get<1>(c));
        return Carry{std::get<0>(c) + 1, y};
      },
      Carry{Array(0), x});
  return out;
}
double bouncing_oracle(double x) {
  for (int k = 0; k < 3; ++k) x = x > 0 ? std::sin(x) : x * x - 0.5;
  return x;
}

TEST(WhileLoop, ACondInsideTheBodyUnderJvpVmapAndJit) {
  const std::vector<double> xs{0.7, -0.2, 1.9, -1.1};
  Array batched = vmap(bouncing)(f64(xs));  // the cond's predicate is batched inside the loop
  Array jitted = jit(vmap(bouncing))(f64(xs));
  for (size_t b = 0; b < xs.size(); ++b) {
    EXPECT_NEAR(bouncing(Array(xs[b])).item<double>(), bouncing_oracle(xs[b]), 1e-15) << b;
    EXPECT_NEAR(batched(static_cast<int64_t>(b)).item<double>(), bouncing_oracle(xs[b]), 1e-15) << b;
    EXPECT_NEAR(jitted(static_cast<int64_t>(b)).item<double>(), bouncing_oracle(xs[b]), 1e-15) << b;
    test_util::check_grads([](const Array& x) { return bouncing(x); }, std::tuple{Array(xs[b])},
                           {.order = 2, .modes = test_util::Modes::Fwd});
  }
  Array per_lane = vmap([](const Array& x) { return jvp(bouncing, x, Array(1.0)).second; })(f64(xs));
  for (size_t b = 0; b < xs.size(); ++b)
    EXPECT_NEAR(per_lane(static_cast<int64_t>(b)).item<double>(), jvp(bouncing, Array(xs[b]), Array(1.0)).second.item<double>(),
                1e-14)
        << b;
}

// ---- forward-mode derivatives ----

TEST(WhileLoop, JvpMatchesFiniteDifferences) {
  test_util::check_grads([](const Array& x) { return iterate(x, 3); }, std::tuple{kX},
                         {.order = 2, .modes = test_util::Modes::Fwd});
  // Tangents entering through a body constant and a carry the body mixes in later.
  auto g = [](const Array& x, const Array& s) {
    auto [i, a, b] = while_loop([](const auto& c) { return std::get<0>(c) < 3; },
                                [&](const auto& c) {
                                  auto [k, u, v] = c;
                                  return std::tuple{k + 1, u * s, v + u};
                                },
                                std::tuple{Array(0), x, jnp::zeros_like(x)});
    return b;
  };
  test_util::check_grads(g, std::tuple{kX, Array(1.3)}, {.modes = test_util::Modes::Fwd});
  // b = x (1 + s + s^2): its tangent in s is x (1 + 2 s).
  auto [out, tan] = jvp([&](const Array& s) { return g(kX, s); }, Array(1.3), Array(1.0));
  EXPECT_ALLCLOSE(out, kX * (1 + 1.3 + 1.3 * 1.3), 1e-14, 1e-14);
  EXPECT_ALLCLOSE(tan, kX * (1 + 2 * 1.3), 1e-14, 1e-14);
}

TEST(WhileLoop, JvpThroughACapturedValue) {
  // s enters only as a captured constant of the body (and of cond).
  auto f = [](const Array& s) {
    return while_loop([&](const Array& x) { return jnp::sum(x) < s * 10.0; }, [&](const Array& x) { return x * s; },
                      f64({1.0, 2.0}));
  };
  // s = 1.5: 3 -> 4.5 -> 6.75 -> 10.125 -> 15.19 (>= 15): 4 steps, x = x0 s^4, dx/ds = 4 x0 s^3.
  auto [out, tan] = jvp(f, Array(1.5), Array(1.0));
  EXPECT_ALLCLOSE(out, f64({1.0, 2.0}) * std::pow(1.5, 4), 1e-14, 1e-14);
  EXPECT_ALLCLOSE(tan, f64({4.0, 8.0}) * std::pow(1.5, 3), 1e-14, 1e-14);
  EXPECT_ALLCLOSE(jit([&](const Array& s) { return jvp(f, s, Array(1.0)).second; })(Array(1.5)), tan, 1e-14, 1e-14);
}

TEST(WhileLoop, LinearizeAndJacfwdAgreeWithJvp) {
  auto f = [](const Array& x) { return iterate(x, 4); };
  Array t = f64({1.0, -2.0, 0.5});
  auto [out, tan] = jvp(f, kX, t);
  auto [y, f_jvp] = linearize(f, kX);
  EXPECT_ALLCLOSE(y, out, 0, 0);
  EXPECT_ALLCLOSE(f_jvp(t), tan, 1e-14, 1e-14);
  Array jac = jacfwd(f)(kX);
  EXPECT_ALLCLOSE(jnp::matmul(jac, t), tan, 1e-14, 1e-14);
  // Elementwise map: the jacobian is diagonal.
  EXPECT_ALLCLOSE(jac - jnp::diag(jnp::diagonal(jac)), jnp::zeros_like(jac), 0, 0);
}

TEST(WhileLoop, ReverseModeWithoutMaxStepsUnderJitMatchesEager) {
  // Eagerly the backward pass counts the trip count (while_grad_test.cpp); under jit it
  // counts it when the compiled program runs (a while_backward step).
  auto loss = [](const Array& x) { return jnp::sum(iterate(x, 3)); };
  EXPECT_ALLCLOSE(jit(grad(loss))(kX), grad(loss)(kX), 1e-14, 1e-14);
  EXPECT_ALLCLOSE(grad(jit(loss))(kX), grad(loss)(kX), 1e-14, 1e-14);
  auto [out, pullback] = vjp([](const Array& x) { return iterate(x, 2); }, kX);
  EXPECT_ALLCLOSE(out, iterate(kX, 2), 0, 0);
  const Array jac = jacfwd([](const Array& x) { return iterate(x, 2); })(kX);
  EXPECT_ALLCLOSE(std::get<0>(pullback(kX)), jnp::matmul(kX, jac), 1e-14, 1e-14);
  EXPECT_ALLCLOSE(jit([](const Array& x) { return jacrev([](const Array& y) { return iterate(y, 2); })(x); })(kX), jac,
                  1e-14, 1e-14);
  // Differentiating the backward pass again under jit is refused by while_backward.
  EXPECT_JX_ERROR(jit(grad([&](const Array& x) { return jnp::sum(grad(loss)(x)); }))(kX), "[while_backward]",
                  "cannot be differentiated again", "max_steps");
  auto bounded = [](const Array& x) {
    return jnp::sum(while_loop([](const Array& v) { return jnp::sum(v) < 10.0; }, [](const Array& v) { return v * 2.0; },
                               x, {.max_steps = 5}));
  };
  // With max_steps, reverse mode works (while_grad_test.cpp).
  EXPECT_ALLCLOSE(grad(bounded)(f64({1.0, 2.0})), f64({4.0, 4.0}), 0, 0);
}

// ---- vmap ----

TEST(WhileLoop, VmapWithAnUnbatchedPredicate) {
  Array xs = randn({4, 3}, DType::Float64, 1);
  auto f = [](const Array& x) { return iterate(x, 3); };
  Array got = vmap(f)(xs);
  for (int64_t b = 0; b < 4; ++b) EXPECT_ALLCLOSE(got(b), f(xs(b)), 1e-15, 1e-15) << b;
  std::string text = make_jaxpr(vmap(f))(xs).str();
  EXPECT_TRUE(contains(text, "while[")) << text;
  EXPECT_FALSE(contains(text, "reduce_or")) << text;
}

// Doubles x until it passes its lane's limit, counting the steps.
Carry double_until(const Array& x, const Array& limit, std::optional<int64_t> max_steps = std::nullopt) {
  return while_loop([&](const Carry& c) { return std::get<1>(c) < limit; },
                    [](const Carry& c) { return Carry{std::get<0>(c) + 1, std::get<1>(c) * 2.0}; }, Carry{Array(0), x},
                    {.max_steps = max_steps});
}

TEST(WhileLoop, VmapWithABatchedPredicateRunsEveryLaneToItsEnd) {
  const std::vector<double> xs{1.0, 3.0, 0.5, 200.0}, limits{10.0, 100.0, 2.0, 1.0};
  for (std::optional<int64_t> max_steps : {std::optional<int64_t>(), std::optional<int64_t>(3)}) {
    SCOPED_TRACE(max_steps ? "max_steps=3" : "unbounded");
    auto [steps, vals] = vmap([&](const Array& x, const Array& l) { return double_until(x, l, max_steps); })(f64(xs), f64(limits));
    for (size_t b = 0; b < xs.size(); ++b) {
      int n = 0;
      double v = xs[b];
      while (v < limits[b] && (!max_steps || n < *max_steps)) v *= 2, ++n;
      EXPECT_EQ(steps(static_cast<int64_t>(b)).item<int32_t>(), n) << b;
      EXPECT_EQ(vals(static_cast<int64_t>(b)).item<double>(), v) << b;
    }
  }
  // Only the limit batched: the predicate is batched, so every carry becomes batched.
  auto [steps, vals] = vmap([](const Array& l) { return double_until(Array(1.0), l); })(f64(limits));
  EXPECT_EQ(steps.shape(), (Shape{4}));
  EXPECT_ALLCLOSE(vals, f64({16.0, 128.0, 2.0, 1.0}));
  std::string text = make_jaxpr(vmap([](const Array& l) { return double_until(Array(1.0), l); }))(f64(limits)).str();
  EXPECT_TRUE(contains(text, "reduce_or")) << text;
  EXPECT_TRUE(contains(text, "select_n")) << text;
}

TEST(WhileLoop, VmapOfJvpAndJacfwdWithBatchedTripCounts) {
  // x <- x * 1.5 while x < limit: the derivative is 1.5^steps, steps varying per lane.
  auto f = [](const Array& x, const Array& limit) {
    return while_loop([&](const Array& v) { return v < limit; }, [](const Array& v) { return v * 1.5; }, x);
  };
  const Array xs = f64({1.0, 2.0, 0.1}), limits = f64({3.0, 2.5, 10.0});
  auto d = [&](const Array& x, const Array& l) { return jvp([&](const Array& y) { return f(y, l); }, x, Array(1.0)).second; };
  Array got = vmap(d)(xs, limits);
  for (int64_t b = 0; b < 3; ++b) EXPECT_ALLCLOSE(got(b), d(xs(b), limits(b)), 1e-15, 1e-15) << b;
  EXPECT_ALLCLOSE(got, f64({std::pow(1.5, 3), 1.5, std::pow(1.5, 12)}), 1e-13, 1e-13);
  Array jac = jacfwd([&](const Array& x) { return vmap(f)(x, limits); })(xs);
  EXPECT_ALLCLOSE(jnp::diagonal(jac), got, 1e-13, 1e-13);
}

// ---- jit ----

TEST(WhileLoop, JitMatchesEager) {
  auto f = [](const Array& x) { return iterate(x, 5); };
  auto jitted = jit(f, JitOptions{.name = "while_test.iterate"});
  EXPECT_ALLCLOSE(jitted(kX), f(kX), 1e-15, 1e-15);
  EXPECT_TRUE(contains(jitted.lower(kX).as_text(), "while[")) << jitted.lower(kX).as_text();
  Array xs = randn({3, 3}, DType::Float64, 2);
  Array got = jit(vmap(f))(xs);
  for (int64_t b = 0; b < 3; ++b) EXPECT_ALLCLOSE(got(b), f(xs(b)), 1e-15, 1e-15) << b;
  EXPECT_ALLCLOSE(jit(jacfwd(f))(kX), jacfwd(f)(kX), 1e-14, 1e-14);
  const std::vector<double> limits{10.0, 100.0, 2.0};
  auto batched = jit(vmap([](const Array& x, const Array& l) { return double_until(x, l); }));
  auto [steps, vals] = batched(f64({1.0, 3.0, 0.5}), f64(limits));
  EXPECT_EQ(steps.to_vector<int32_t>(), (std::vector<int32_t>{4, 6, 2}));
  EXPECT_ALLCLOSE(vals, f64({16.0, 192.0, 2.0}));
}

// ---- the program it stages and the jaxpr-level rules ----

TEST(WhileLoop, TextRoundTrip) {
  ClosedJaxpr j = make_jaxpr([](const Array& x) {
    return while_loop([](const Carry& c) { return std::get<0>(c) < 3; },
                      [](const Carry& c) { return Carry{std::get<0>(c) + 1, jnp::sin(std::get<1>(c))}; },
                      Carry{Array(0), x});
  })(kX);
  const std::string text = j.str();
  for (const char* part : {"while[", "body_jaxpr={ lambda", "cond_jaxpr={ lambda", "cond_nconsts=0", "body_nconsts=0",
                           "max_steps=-1", "sin", "lt"})
    EXPECT_TRUE(contains(text, part)) << part << " in\n" << text;
  Jaxpr parsed = parse_jaxpr(text);
  EXPECT_EQ(parsed.str(), text);
  std::vector<Array> out = eval_jaxpr(parsed, {}, std::vector<Array>{kX});
  EXPECT_ALLCLOSE(out[1], jnp::sin(jnp::sin(jnp::sin(kX))), 1e-15, 1e-15);
}

// Carries (i, a, b, c): cond reads i, a feeds b, c is independent.
constexpr const char* kThreeCarries = R"({ lambda ; i:i32[] a:f64[] b:f64[] c:f64[]. let
    j:i32[] k:f64[] l:f64[] m:f64[] = while[body_jaxpr={ lambda ; i:i32[] a:f64[] b:f64[] c:f64[]. let
        j:i32[] = add i 1:i32[]
        k:f64[] = mul a 2.0:f64[]
        l:f64[] = add b a
        m:f64[] = sin c
      in (j, k, l, m) } body_nconsts=0 cond_jaxpr={ lambda ; i:i32[] a:f64[] b:f64[] c:f64[]. let
        d:bool[] = lt i 3:i32[]
      in (d) } cond_nconsts=0 max_steps=-1] i a b c
  in (j, k, l, m) })";

TEST(WhileRules, DceKeepsTheCarriesTheUsedOnesNeed) {
  Jaxpr j = parse_jaxpr(kThreeCarries);
  // Only b is used: it needs a (the body), and cond needs i; c goes.
  detail::DcedJaxpr d = detail::dce_jaxpr(j, {false, false, true, false});
  ASSERT_EQ(d.jaxpr.eqns.size(), 1u);
  const Equation& e = d.jaxpr.eqns[0];
  EXPECT_EQ(e.inputs.size(), 3u);
  EXPECT_EQ(e.outputs.size(), 3u);
  EXPECT_FALSE(contains(d.jaxpr.str(), "sin")) << d.jaxpr.str();
  verify_jaxpr(d.jaxpr);
  std::vector<Array> args{Array(0), Array(1.0), Array(0.0), Array(0.5)};
  EXPECT_EQ(eval_jaxpr(d.jaxpr, {}, std::vector<Array>(args.begin(), args.end() - 1))[0].item<double>(),
            eval_jaxpr(j, {}, args)[2].item<double>());
  // Nothing unused: unchanged.
  EXPECT_FALSE(detail::dce_jaxpr(j, {true, true, true, true}).changed);
}

TEST(WhileRules, PartialEvalRunsTheKnownCarriesAndStagesTheLoopForTheRest) {
  ClosedJaxpr j{parse_jaxpr(kThreeCarries), {}};
  std::vector<Array> args{Array(0), Array(1.0), Array(0.0), Array(0.5)};
  std::vector<Array> want = eval_jaxpr(j, args);
  // b unknown: a, c and i stay known (a feeds b, not the other way).
  detail::PartialEvalJaxpr pe = detail::partial_eval_jaxpr(j, {false, false, true, false}, {});
  EXPECT_EQ(pe.out_unknowns, (std::vector<bool>{false, false, true, false}));
  std::vector<Array> known = eval_jaxpr(pe.known, std::vector<Array>{args[0], args[1], args[3]});
  std::vector<Array> unknown_in(known.end() - static_cast<std::ptrdiff_t>(pe.num_residuals), known.end());
  unknown_in.push_back(args[2]);
  std::vector<Array> unknown = eval_jaxpr(pe.unknown, unknown_in);
  EXPECT_EQ(known[0].item<int32_t>(), want[0].item<int32_t>());
  EXPECT_EQ(known[1].item<double>(), want[1].item<double>());
  EXPECT_EQ(known[2].item<double>(), want[3].item<double>());
  EXPECT_EQ(unknown[0].item<double>(), want[2].item<double>());
  // i unknown: the predicate is, so the whole loop is.
  detail::PartialEvalJaxpr all = detail::partial_eval_jaxpr(j, {true, false, false, false}, {});
  EXPECT_EQ(all.out_unknowns, (std::vector<bool>(4, true)));
}

// ---- errors ----

TEST(WhileErrors, CondAndBodyTypes) {
  auto inc = [](const Array& x) { return x + 1.0; };
  EXPECT_JX_ERROR(while_loop([](const Array& x) { return x; }, [](const Array& x) { return x * x; }, Array(1.0f)), "[while]",
                  "cond_fn must return a bool scalar", "f32");
  EXPECT_JX_ERROR(while_loop([](const Array& x) { return x < 2.0; }, inc, f64({1.0, 2.0})), "[while]",
                  "cond_fn must return a bool scalar", "bool[2]");
  EXPECT_JX_ERROR(while_loop([](const Array& x) { return std::tuple{x < 2.0, x < 3.0}; }, inc, Array(1.0)), "[while]",
                  "cond_fn must return a bool scalar", "2 leaves");
  EXPECT_JX_ERROR(while_loop([](const Array& x) { return jnp::sum(x) < 2.0; },
                             [](const Array& x) { return jnp::concatenate({x, x}); }, f64({1.0, 2.0})),
                  "[while]", "changes the type of carry leaf 0", "f64[2]", "f64[4]");
  EXPECT_JX_ERROR(while_loop([](const Array& x) { return x < 2.0f; },
                             [](const Array& x) { return lax::convert_element_type(x, DType::Float64); },
                             lax::convert_element_type(Array(1.0f), DType::Float32)),  // strong: no promotion
                  "[while]", "changes the type of carry leaf 0", "f32[]", "f64[]");
  EXPECT_JX_ERROR(while_loop([](const Carry& c) { return std::get<0>(c) < 2; },
                             [](const Carry& c) { return std::tuple{std::get<0>(c), std::get<1>(c), std::get<1>(c)}; },
                             Carry{Array(0), Array(1.0)}),
                  "[while]", "body_fn must return the carry's structure", "PyTreeDef");
  EXPECT_JX_ERROR(while_loop([](const Array& x) { return x < 2.0; }, inc, Array(1.0), {.max_steps = -2}),
                  "[while_loop]", "max_steps must be nonnegative", "-2");
}

TEST(WhileErrors, ThePrimitivesShapeRule) {
  auto bad = [](const char* text) { return parse_jaxpr(text); };
  EXPECT_JX_ERROR(bad(R"({ lambda ; a:f64[]. let
    b:f64[] = while[body_jaxpr={ lambda ; a:f64[]. let  in (a) } body_nconsts=0 cond_jaxpr={ lambda ; a:f64[]. let
      in (a) } cond_nconsts=0 max_steps=-1] a
  in (b) })"),
                  "[while]", "cond_jaxpr must return a bool scalar", "f64[]");
  EXPECT_JX_ERROR(bad(R"({ lambda ; a:f64[]. let
    b:f32[] = while[body_jaxpr={ lambda ; a:f64[]. let
        b:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a
      in (b) } body_nconsts=0 cond_jaxpr={ lambda ; a:f64[]. let
        c:bool[] = lt a 1.0:f64[]
      in (c) } cond_nconsts=0 max_steps=-1] a
  in (b) })"),
                  "[while]", "body_jaxpr changes the type of carry 0: the carry is f64[] but the body returns f32[]");
  EXPECT_JX_ERROR(bad(R"({ lambda ; a:f64[]. let
    b:f64[] = while[body_jaxpr={ lambda ; a:f64[]. let  in (a) } body_nconsts=2 cond_jaxpr={ lambda ; a:f64[]. let
        c:bool[] = lt a 1.0:f64[]
      in (c) } cond_nconsts=0 max_steps=-1] a
  in (b) })"),
                  "[while]", "body_nconsts=2 but there are 1 operands");
  EXPECT_JX_ERROR(bad(R"({ lambda ; a:f64[]. let
    b:f64[] = while[body_jaxpr={ lambda ; a:f64[]. let  in (a) } body_nconsts=0 cond_jaxpr={ lambda ; a:f64[]. let
        c:bool[] = lt a 1.0:f64[]
      in (c) } cond_nconsts=0 max_steps=-5] a
  in (b) })"),
                  "[while]", "max_steps must be -1 (unbounded) or nonnegative, got -5");
}

}  // namespace
}  // namespace jx
