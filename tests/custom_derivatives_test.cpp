// jx::custom_jvp (include/jx/custom_derivatives.h): eager values are f's; jvp, grad, vmap
// and jit use the rule (checked with a rule that is deliberately not f's derivative, so a
// test fails if the composition's own derivative is used); a true rule against finite
// differences (check_grads, orders 1 and 2); pytree arguments and outputs; integer
// arguments; vmap against a loop, jit against eager; every error message.
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "jx/jx.h"
#include "jx/test_util.h"
#include "test_util.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;
Array f64(std::vector<double> v) { return Array(v); }

// sin(x) whose "derivative" is 3·t: linear in t, but not cos(x).
auto sin_with_fake_rule() {
  return custom_jvp([](const Array& x) { return jnp::sin(x); },
                    [](std::tuple<Array> p, std::tuple<Array> t) {
                      return std::pair{jnp::sin(std::get<0>(p)), std::get<0>(t) * 3.0};
                    },
                    "fake_sin");
}

// log(1 + e^x) with its true derivative written stably: the composition's own derivative
// e^x / (1 + e^x) is inf / inf = NaN at x = 1000.
auto log1pexp() {
  return custom_jvp([](const Array& x) { return jnp::log1p(jnp::exp(x)); },
                    [](std::tuple<Array> p, std::tuple<Array> t) {
                      auto [x] = p;
                      auto [dx] = t;
                      return std::pair{jnp::log1p(jnp::exp(x)), dx * lax::logistic(x)};
                    },
                    "log1pexp");
}

TEST(CustomJvp, EagerRunsTheFunction) {
  int rule_calls = 0;
  auto f = custom_jvp([](const Array& x) { return x * 2.0; },
                      [&rule_calls](std::tuple<Array> p, std::tuple<Array> t) {
                        ++rule_calls;
                        return std::pair{std::get<0>(p) * 2.0, std::get<0>(t) * 2.0};
                      });
  EXPECT_ALLCLOSE(f(f64({1.0, -2.0})), f64({2.0, -4.0}), 0.0, 0.0);
  EXPECT_EQ(rule_calls, 0);
  EXPECT_ALLCLOSE(sin_with_fake_rule()(Array(0.5)), jnp::sin(Array(0.5)), 0.0, 0.0);
}

TEST(CustomJvp, JvpAndGradUseTheRule) {
  auto f = sin_with_fake_rule();
  auto [y, ty] = jvp(f, f64({0.5, 1.0}), f64({1.0, -2.0}));
  EXPECT_ALLCLOSE(y, jnp::sin(f64({0.5, 1.0})), 0.0, 0.0);
  EXPECT_ALLCLOSE(ty, f64({3.0, -6.0}), 0.0, 0.0);
  EXPECT_EQ(grad(f)(Array(0.5)).item<double>(), 3.0);
  // Composed with other operations, the chain rule goes through the rule.
  EXPECT_EQ(grad([&f](const Array& x) { return f(x * x); })(Array(2.0)).item<double>(), 12.0);
  EXPECT_ALLCLOSE(jacrev(f)(f64({0.5, 1.0})), Array(std::vector<double>{3.0, 0.0, 0.0, 3.0}).reshape({2, 2}), 0.0,
                  0.0);
}

TEST(CustomJvp, TrueRuleAgainstFiniteDifferences) {
  auto f = log1pexp();
  for (double x : {-3.0, 0.0, 0.7, 4.0})
    test_util::check_grads([&f](const Array& a) { return f(a); }, std::tuple{Array(x)}, {.order = 2});
  // Where the composition's derivative is NaN the rule's is finite.
  EXPECT_TRUE(std::isnan(grad([](const Array& x) { return jnp::log1p(jnp::exp(x)); })(Array(1000.0)).item<double>()));
  EXPECT_EQ(grad(f)(Array(1000.0)).item<double>(), 1.0);
  // Second order differentiates the rule's program: d/dx logistic(x) at 0 is 1/4.
  EXPECT_ALLCLOSE(grad(grad(f))(Array(0.0)), Array(0.25), 1e-15, 1e-15);
}

TEST(CustomJvp, PytreeArgumentsAndOutputs) {
  using In = std::map<std::string, Array>;
  using Out = std::pair<Array, std::vector<Array>>;
  // f({a, b}, c) = (a·b, [c, a]); the rule's tangent is (2·(ta·b + a·tb), [tc, ta]):
  // twice the true tangent in the first output, so the rule's use is visible.
  auto f = custom_jvp(
      [](const In& d, const Array& c) { return Out{d.at("a") * d.at("b"), {c, d.at("a")}}; },
      [](std::tuple<In, Array> p, std::tuple<In, Array> t) {
        const auto& [d, c] = p;
        const auto& [td, tc] = t;
        Out out{d.at("a") * d.at("b"), {c, d.at("a")}};
        Out tan{(td.at("a") * d.at("b") + d.at("a") * td.at("b")) * 2.0, {tc, td.at("a")}};
        return std::pair{out, tan};
      });
  In d{{"a", Array(2.0)}, {"b", Array(5.0)}};
  Out y = f(d, Array(7.0));
  EXPECT_EQ(y.first.item<double>(), 10.0);
  EXPECT_EQ(y.second[0].item<double>(), 7.0);
  auto [out, tan] = jvp(f, std::tuple{d, Array(7.0)}, std::tuple{In{{"a", Array(1.0)}, {"b", Array(0.0)}}, Array(4.0)});
  EXPECT_EQ(out.first.item<double>(), 10.0);
  EXPECT_EQ(tan.first.item<double>(), 10.0);  // 2 · (1 · 5)
  EXPECT_EQ(tan.second[0].item<double>(), 4.0);
  EXPECT_EQ(tan.second[1].item<double>(), 1.0);
  In g = grad([&f](const In& d, const Array& c) {
    Out o = f(d, c);
    return o.first + o.second[0] * o.second[1];
  })(d, Array(7.0));
  EXPECT_EQ(g.at("a").item<double>(), 2.0 * 5.0 + 7.0);
  EXPECT_EQ(g.at("b").item<double>(), 2.0 * 2.0);
}

TEST(CustomJvp, IntegerArgumentsGetZeroTangents) {
  // An integer argument (a C++ int here) reaches the rule with a tangent of its dtype (zeros).
  auto f = custom_jvp([](const Array& x, const Array& n) { return x * n.astype(x.dtype()); },
                      [](std::tuple<Array, Array> p, std::tuple<Array, Array> t) {
                        auto [x, n] = p;
                        auto [tx, tn] = t;
                        EXPECT_EQ(tn.dtype(), n.dtype());  // values are traced here: only types are known
                        return std::pair{x * n.astype(x.dtype()), tx * 10.0};
                      });
  EXPECT_EQ(f(Array(1.5), 4).item<double>(), 6.0);
  EXPECT_EQ(grad(f)(Array(1.5), 4).item<double>(), 10.0);
}

TEST(CustomJvp, VmapAgainstALoop) {
  auto f = sin_with_fake_rule();
  Array xs = f64({0.1, -0.4, 2.0});
  Array ys = vmap(f)(xs);
  Array gs = vmap(grad(f))(xs);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_ALLCLOSE(ys[i], f(xs[i]), 0.0, 0.0);
    EXPECT_EQ(gs[i].item<double>(), grad(f)(xs[i]).item<double>());
  }
  // grad of vmap: the batched rule is still the rule.
  EXPECT_ALLCLOSE(grad([&f](const Array& x) { return jnp::sum(vmap(f)(x)); })(xs), f64({3.0, 3.0, 3.0}), 0.0, 0.0);
  // The true rule batched: the loop over lanes of its gradient.
  auto g = log1pexp();
  Array big = f64({-1000.0, 0.0, 1000.0});
  Array bg = vmap(grad(g))(big);
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(bg[i].item<double>(), grad(g)(big[i]).item<double>());
}

TEST(CustomJvp, JitAgainstEager) {
  auto f = log1pexp();
  Array xs = f64({-2.0, 0.3, 1000.0});
  EXPECT_ALLCLOSE(jit(f)(xs), f(xs), 1e-15, 1e-15);
  auto g = grad([&f](const Array& x) { return jnp::sum(f(x)); });
  EXPECT_ALLCLOSE(jit(g)(xs), g(xs), 1e-15, 1e-15);
  auto fake = sin_with_fake_rule();
  EXPECT_EQ(jit(grad(fake))(Array(0.5)).item<double>(), 3.0);
}

TEST(CustomJvp, Errors) {
  // The rule's primal output has another structure than f's.
  auto wrong_out = custom_jvp([](const Array& x) { return x; },
                              [](std::tuple<Array> p, std::tuple<Array> t) {
                                return std::pair{std::tuple{std::get<0>(p), std::get<0>(p)}, std::tuple{std::get<0>(t), std::get<0>(t)}};
                              },
                              "ident");
  EXPECT_JX_ERROR(grad(wrong_out)(Array(1.0)), "[custom_jvp]", "'ident': the rule's primal output has structure",
                  "PyTreeDef((*, *))", "but the function's output has PyTreeDef(*)");
  // The tangent output's structure is not the output's.
  auto wrong_tan = custom_jvp([](const Array& x) { return x; },
                              [](std::tuple<Array> p, std::tuple<Array> t) {
                                return std::pair{std::get<0>(p), std::vector<Array>{std::get<0>(t)}};
                              },
                              "ident");
  EXPECT_JX_ERROR(grad(wrong_tan)(Array(1.0)), "[custom_jvp]", "'ident': the rule's tangent output has structure",
                  "PyTreeDef([*])", "but the function's output has PyTreeDef(*)");
  // The tangent's shape or dtype is not its primal's.
  auto wrong_shape = custom_jvp([](const Array& x) { return x; },
                                [](std::tuple<Array> p, std::tuple<Array> t) {
                                  return std::pair{std::get<0>(p), jnp::stack({std::get<0>(t), std::get<0>(t)})};
                                },
                                "ident");
  EXPECT_JX_ERROR(jvp(wrong_shape, Array(1.0), Array(1.0)), "[custom_jvp]", "'ident': the rule's tangent output 0 is",
                  "f64[2]", "but its primal output is f64", "must have its primal's shape and dtype");
  auto wrong_dtype = custom_jvp([](const Array& x) { return x; },
                                [](std::tuple<Array> p, std::tuple<Array> t) {
                                  return std::pair{std::get<0>(p), std::get<0>(t).astype(DType::Float32)};
                                },
                                "ident");
  EXPECT_JX_ERROR(jvp(wrong_dtype, Array(1.0), Array(1.0)), "[custom_jvp]", "tangent output 0 is f32",
                  "but its primal output is f64");
  // f closes over a value being differentiated.
  auto closes = [](const Array& y) {
    auto f = custom_jvp([y](const Array& x) { return x * y; },
                        [y](std::tuple<Array> p, std::tuple<Array> t) {
                          return std::pair{std::get<0>(p) * y, std::get<0>(t) * y};
                        },
                        "scale");
    return f(Array(2.0));
  };
  EXPECT_JX_ERROR(grad(closes)(Array(3.0)), "'scale' closes over a value being differentiated");
}


// ---- custom_vmap ----

// sum(x) whose batching rule sums along axis 1 plus 100 per batched call, so a vmap that
// used the plain batching of sum would give other values.
auto marked_sum() {
  return custom_vmap([](const Array& x) { return jnp::sum(x); },
                     [](int64_t size, const std::vector<bool>& in_batched, const Array& xs) {
                       EXPECT_EQ(in_batched, std::vector<bool>{true});
                       EXPECT_EQ(xs.shape()[0], size);
                       return std::pair{jnp::sum(xs, 1) + 100.0, true};
                     },
                     "marked_sum");
}

// x^n with the count n (an int) and a mode (a std::string, not a pytree) as nondiff
// arguments; the rule reads both and scales its tangent by `scale` so the tests see it used.
auto power_with_rule(double scale) {
  return custom_jvp(
      [](int n, const Array& x, const std::string& mode) { return mode == "neg" ? -jnp::power(x, n) : jnp::power(x, n); },
      [scale](int n, const std::string& mode, std::tuple<Array> primals, std::tuple<Array> tangents) {
        auto [x] = primals;
        auto [t] = tangents;
        const double sign = mode == "neg" ? -1.0 : 1.0;
        return std::pair{sign * jnp::power(x, n), t * (sign * scale * n) * jnp::power(x, n - 1)};
      },
      nondiff_argnums<0, 2>, "power");
}

TEST(CustomJvp, NondiffArgumentsReachTheRuleAsTheyAre) {
  auto f = power_with_rule(2.0);  // twice the true derivative: the rule is what runs
  const Array x = f64({0.5, -1.5, 2.0});
  EXPECT_ALLCLOSE(f(3, x, std::string("pos")), jnp::power(x, 3), 0, 0);
  auto d = [&](const std::string& mode) {
    return grad([&](const Array& y) { return jnp::sum(f(3, y, mode)); })(x);
  };
  EXPECT_ALLCLOSE(d("pos"), 2.0 * 3.0 * jnp::square(x), 1e-14, 1e-14);
  EXPECT_ALLCLOSE(d("neg"), -2.0 * 3.0 * jnp::square(x), 1e-14, 1e-14);
  // The true rule against finite differences, under jit and vmap too.
  auto g = power_with_rule(1.0);
  auto h = [&](const Array& y) { return g(4, y, std::string("pos")); };
  test_util::check_grads(h, std::tuple{x}, {.order = 2});
  EXPECT_ALLCLOSE(jit(grad([&](const Array& y) { return jnp::sum(h(y)); }))(x), 4.0 * jnp::power(x, 3), 1e-14, 1e-14);
  Array xs = f64({0.5, 1.0, 2.0, 3.0}).reshape({2, 2});
  Array batched = vmap(grad([&](const Array& y) { return jnp::sum(h(y)); }))(xs);
  for (int64_t b = 0; b < 2; ++b) EXPECT_ALLCLOSE(batched(b), 4.0 * jnp::power(xs(b), 3), 1e-14, 1e-14);
}

TEST(CustomJvp, DifferentiatingANondiffArgumentRaises) {
  auto f = custom_jvp([](const Array& scale, const Array& x) { return scale * x; },
                      [](const Array& scale, std::tuple<Array> p, std::tuple<Array> t) {
                        return std::pair{scale * std::get<0>(p), scale * std::get<0>(t)};
                      },
                      nondiff_argnums<0>, "scaled");
  const Array x = f64({1.0, 2.0});
  EXPECT_ALLCLOSE(grad([&](const Array& y) { return jnp::sum(f(Array(3.0), y)); })(x), f64({3.0, 3.0}), 0, 0);
  EXPECT_JX_ERROR(grad([&](const Array& s) { return jnp::sum(f(s, x)); })(Array(3.0)), "[custom_jvp] 'scaled'",
                  "a nondiff_argnums argument (which cannot be differentiated, as in JAX)", "closes over");
}

TEST(CustomVmap, EagerAndJitRunTheFunction) {
  auto f = marked_sum();
  Array x = f64({1.0, 2.0, 3.5});
  EXPECT_EQ(f(x).item<double>(), 6.5);
  EXPECT_EQ(jit(f)(x).item<double>(), 6.5);
  EXPECT_EQ(grad(f)(x).shape(), (Shape{3}));
  EXPECT_ALLCLOSE(grad(f)(x), f64({1.0, 1.0, 1.0}), 0.0, 0.0);  // f's own derivative (unbatched)
}

TEST(CustomVmap, VmapUsesTheRule) {
  auto f = marked_sum();
  Array xs = Array(std::vector<double>{1, 2, 3, 4, 5, 6}).reshape({2, 3});
  Array ys = vmap(f)(xs);
  // The loop over the batch, plus the rule's mark.
  for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(ys[i].item<double>(), f(xs[i]).item<double>() + 100.0);
  // in_axes = 1: the rule still sees the batch axis at 0.
  EXPECT_ALLCLOSE(vmap(f, {.in_axes = {1}})(xs.T()), ys, 0.0, 0.0);
  // Under jit the recorded equation is batched by the rule too.
  EXPECT_ALLCLOSE(jit(vmap(f))(xs), ys, 0.0, 0.0);
  EXPECT_ALLCLOSE(vmap(jit(f))(xs), ys, 0.0, 0.0);
}

TEST(CustomVmap, PytreesAndUnbatchedArguments) {
  // f(x, (a, b)) = (x·a, b); the rule multiplies batched lanes and reports which outputs
  // carry the batch, marking its results with +1000 so its use is visible.
  using P = std::pair<Array, Array>;
  auto f = custom_vmap([](const Array& x, const P& ab) { return P{x * ab.first, ab.second}; },
                       [](int64_t, const std::vector<bool>& in_batched, const Array& x, const P& ab) {
                         EXPECT_EQ(in_batched, (std::vector<bool>{true, false, false}));
                         return std::pair{P{x * ab.first + 1000.0, ab.second}, std::vector<bool>{true, false}};
                       });
  P ab{Array(2.0), f64({7.0, 8.0})};
  auto out = vmap([&](const Array& x) { return f(x, ab); })(f64({1.0, 3.0}));
  EXPECT_ALLCLOSE(out.first, f64({1002.0, 1006.0}), 0.0, 0.0);
  // An unbatched output that vmap's caller sees broadcast to the batch.
  EXPECT_ALLCLOSE(out.second, Array(std::vector<double>{7, 8, 7, 8}).reshape({2, 2}), 0.0, 0.0);
}

// sin(x) whose batching rule is 2·sin, so which derivative is taken shows.
auto doubled_sin() {
  return custom_vmap([](const Array& x) { return jnp::sin(x); },
                     [](int64_t, const std::vector<bool>& in_batched, const Array& xs) {
                       return std::pair{jnp::sin(xs) * 2.0, in_batched[0]};
                     },
                     "doubled_sin");
}

TEST(CustomVmap, DerivativesAsJax) {
  // Expected values: JAX 0.10.2 (x64) with the same function and rule, e.g.
  //   jax.vmap(lambda x: jax.jvp(f, (x,), (jnp.ones_like(x),)))(jnp.array([.1, .2, -1.]))
  //   -> ([0.19966683, 0.39733866, -1.68294197], [1.99000833, 1.96013316, 1.08060461])
  //   jax.vmap(lambda t: jax.jvp(f, (.1,), (t,))[1])(jnp.array([.1, .2, -1.]))
  //   -> [0.19900083, 0.39800167, -1.99000833]
  auto f = doubled_sin();
  Array xs = f64({0.1, 0.2, -1.0});
  const Array rule_value = f64({0.1996668332936563, 0.39733866159012243, -1.682941969615793});
  const Array rule_tangent = f64({1.9900083305560516, 1.9601331556824833, 1.0806046117362795});
  // Unbatched, jvp differentiates f.
  EXPECT_ALLCLOSE(jvp(f, Array(0.1), Array(1.0)).second, Array(std::cos(0.1)), 1e-15, 1e-15);
  // vmap of jvp differentiates the rule, as jvp of vmap does.
  auto [ys, ts] = vmap([&f](const Array& x) { return jvp(f, x, jnp::ones_like(x)); })(xs);
  EXPECT_ALLCLOSE(ys, rule_value, 1e-14, 1e-15);
  EXPECT_ALLCLOSE(ts, rule_tangent, 1e-14, 1e-15);
  auto [ys2, ts2] = jvp(vmap(f), xs, jnp::ones_like(xs));
  EXPECT_ALLCLOSE(ys2, ys, 1e-15, 0.0);
  EXPECT_ALLCLOSE(ts2, ts, 1e-15, 0.0);
  EXPECT_ALLCLOSE(jit(vmap([&f](const Array& x) { return jvp(f, x, jnp::ones_like(x)).second; }))(xs), ts, 1e-15, 0.0);
  // Only the primal, or only the tangent, batched.
  EXPECT_ALLCLOSE(vmap([&f](const Array& x) { return jvp(f, x, Array(1.0)).second; })(xs), rule_tangent, 1e-14, 1e-15);
  EXPECT_ALLCLOSE(vmap([&f](const Array& t) { return jvp(f, Array(0.1), t).second; })(xs),
                  f64({0.19900083305560518, 0.39800166611121035, -1.9900083305560516}), 1e-14, 1e-15);
  // Second order forward through the rule: d²/dx² 2·sin = -2·sin.
  auto d2 = vmap([&f](const Array& x) {
    return jvp([&f](const Array& y) { return jvp(f, y, jnp::ones_like(y)).second; }, x, jnp::ones_like(x)).second;
  })(xs);
  EXPECT_ALLCLOSE(d2, jnp::sin(xs) * -2.0, 1e-15, 1e-15);
  // Reverse mode: grad of vmap differentiates the rule; grad alone differentiates f (JAX
  // refuses it); vmap of grad cannot split the rule, so it raises (JAX raises too) rather
  // than give f's derivative.
  EXPECT_ALLCLOSE(grad([&f](const Array& x) { return jnp::sum(vmap(f)(x)); })(xs), rule_tangent, 1e-14, 1e-15);
  EXPECT_ALLCLOSE(grad(f)(Array(0.1)), Array(std::cos(0.1)), 1e-15, 1e-15);
  EXPECT_ALLCLOSE(jit(grad(f))(Array(0.1)), Array(std::cos(0.1)), 1e-15, 1e-15);
  EXPECT_ALLCLOSE(grad(grad(f))(Array(0.1)), Array(-std::sin(0.1)), 1e-15, 1e-15);
  EXPECT_JX_ERROR(vmap(grad(f))(xs), "[custom_vmap]", "'doubled_sin': vmap of a reverse-mode derivative",
                  "grad(vmap(f)) differentiates the rule");
  // jacrev batches the pullback over cotangents, not f over inputs: that is allowed.
  auto g = [&f](const Array& x) { return f(x) * 3.0; };
  EXPECT_ALLCLOSE(jacrev(g)(xs), jnp::diag(jnp::cos(xs) * 3.0), 1e-15, 1e-15);
}

TEST(CustomVmap, Errors) {
  Array xs = f64({1.0, 2.0});
  auto wrong_shape = custom_vmap([](const Array& x) { return x * 2.0; },
                                 [](int64_t, const std::vector<bool>&, const Array& x) { return std::pair{x[0], true}; },
                                 "double");
  EXPECT_JX_ERROR(vmap(wrong_shape)(xs), "[custom_vmap]", "'double': the batching rule's output 0 is f64[]",
                  "but batched it must be f64[2]");
  auto wrong_tree = custom_vmap(
      [](const Array& x) { return x; },
      [](int64_t, const std::vector<bool>&, const Array& x) { return std::pair{std::vector<Array>{x}, true}; }, "id");
  EXPECT_JX_ERROR(vmap(wrong_tree)(xs), "[custom_vmap]", "'id': the batching rule's output has structure PyTreeDef([*])",
                  "but the function's output has PyTreeDef(*)");
  auto wrong_flags = custom_vmap([](const Array& x) { return x; },
                                 [](int64_t, const std::vector<bool>&, const Array& x) {
                                   return std::pair{x, std::vector<bool>{true, true}};
                                 },
                                 "id");
  EXPECT_JX_ERROR(vmap(wrong_flags)(xs), "[custom_vmap]",
                  "'id': the batching rule returned 1 outputs and 2 out_batched flags for the function's 1 outputs");
  auto closes = [](const Array& y) {
    auto f = custom_vmap([y](const Array& x) { return x * y; },
                         [y](int64_t, const std::vector<bool>&, const Array& x) { return std::pair{x * y, true}; },
                         "scale");
    return f(Array(2.0));
  };
  EXPECT_JX_ERROR(vmap(closes)(xs), "[custom_vmap]", "'scale' closes over a value being batched (f64[2])",
                  "pass it as an argument");
}

// ---- derivatives at edge inputs against JAX ----

// Expected values: JAX 0.10.2 with jax_enable_x64, e.g.
//   jax.grad(jnp.logaddexp, argnums=(0, 1))(jnp.float64(-inf), jnp.float64(0.))
//   jax.grad(jax.scipy.special.logsumexp)(jnp.array([inf, 1.]))
//   jax.grad(jnp.linalg.norm)(jnp.array([0., 1e-200]))
// for each row below. NaN where JAX gives NaN. jx matched JAX at every point tried (also
// softplus-style log1p(exp(x)), whose NaN at 1000 JAX shares; jx has no jax.nn.softplus)
// except logsumexp with weights b, where an inf weighted 0 gave NaN (now left out, as JAX
// does). Also checked against JAX and equal: sinc at 0 (orders 1, 2), logaddexp2, prod and
// cumprod with zeros, power at 0, arctan2(0, 0), max/amax/maximum/minimum/fmax ties, clip
// at its bounds, nansum/nanmean/nanmax, std/var of constants, norm ord 1/inf/'fro', median,
// nan_to_num, average with a 0 weight, det of a singular matrix, svdvals/eigvalsh of
// repeated values, pinv of a singular matrix.
bool same_as_jax(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= 1e-12 * std::max(1.0, std::abs(want));
}

TEST(EdgeGradients, MatchJax) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  struct Binary {
    const char* name;
    Array (*f)(const Array&, const Array&);
    double x, y, gx, gy;
  };
  const std::vector<Binary> binary = {
      {"logaddexp", jnp::logaddexp, 0.0, 0.0, 0.5, 0.5},
      {"logaddexp", jnp::logaddexp, -inf, -inf, nan, nan},
      {"logaddexp", jnp::logaddexp, 1000.0, 1000.0, 0.5000000000000275, 0.5000000000000275},
      {"logaddexp", jnp::logaddexp, -inf, 0.0, 0.0, 1.0},
      {"logaddexp", jnp::logaddexp, 0.0, -inf, 1.0, 0.0},
      {"logaddexp", jnp::logaddexp, inf, inf, 1.0, 1.0},
      {"hypot", jnp::hypot, 0.0, 0.0, 0.5, 0.5},
      {"hypot", jnp::hypot, 0.0, 1.0, 0.0, 1.0},
  };
  for (const Binary& b : binary) {
    auto [gx, gy] = grad(b.f, argnums<0, 1>)(Array(b.x), Array(b.y));
    EXPECT_TRUE(same_as_jax(gx.item<double>(), b.gx) && same_as_jax(gy.item<double>(), b.gy))
        << b.name << "(" << b.x << ", " << b.y << "): jx " << gx.item<double>() << ", " << gy.item<double>()
        << " JAX " << b.gx << ", " << b.gy;
  }
  struct Vector {
    const char* name;
    std::function<Array(const Array&)> f;
    std::vector<double> x, g;
  };
  const std::vector<Vector> vector = {
      {"logsumexp", [](const Array& x) { return jnp::logsumexp(x); }, {-inf, -inf}, {nan, nan}},
      {"logsumexp", [](const Array& x) { return jnp::logsumexp(x); }, {1000.0, 1000.0}, {0.5, 0.5}},
      {"logsumexp", [](const Array& x) { return jnp::logsumexp(x); }, {0.0, -inf}, {1.0, 0.0}},
      {"logsumexp", [](const Array& x) { return jnp::logsumexp(x); }, {inf, 1.0}, {nan, 0.0}},
      // With weights b (jax.scipy.special.logsumexp(x, b=b)): an entry weighted 0 is left out.
      {"logsumexp b=(1, 0)", [](const Array& x) { return jnp::logsumexp(x, {}, f64({1.0, 0.0})); }, {0.0, inf}, {1.0, 0.0}},
      {"logsumexp b=(2, 0)", [](const Array& x) { return jnp::logsumexp(x, {}, f64({2.0, 0.0})); }, {1.0, inf}, {1.0, 0.0}},
      {"logsumexp b=(0, 2)", [](const Array& x) { return jnp::logsumexp(x, {}, f64({0.0, 2.0})); }, {-inf, 0.0}, {0.0, 1.0}},
      {"logsumexp b=(3, -1)", [](const Array& x) { return jnp::logsumexp(x, {}, f64({3.0, -1.0})); }, {0.0, 1.0},
       {10.648940334911554, -9.648940334911552}},
      {"norm", [](const Array& x) { return jnp::linalg::norm(x); }, {0.0, 0.0}, {nan, nan}},
      {"norm", [](const Array& x) { return jnp::linalg::norm(x); }, {0.0, 1e-200}, {nan, inf}},
  };
  for (const Vector& v : vector) {
    Array g = grad(v.f)(Array(v.x));
    for (size_t i = 0; i < v.x.size(); ++i)
      EXPECT_TRUE(same_as_jax(g[static_cast<int64_t>(i)].item<double>(), v.g[i]))
          << v.name << " at " << v.x[0] << ", " << v.x[1] << ": element " << i << " jx "
          << g[static_cast<int64_t>(i)].item<double>() << " JAX " << v.g[i];
  }
  // The values too: jax.scipy.special.logsumexp(jnp.array([1., inf]), b=jnp.array([2., 0.]))
  // is 1.6931471805599454 (jx gave NaN, inf·0, before entries weighted 0 were left out).
  EXPECT_EQ(jnp::logsumexp(f64({0.0, inf}), {}, f64({1.0, 0.0})).item<double>(), 0.0);
  EXPECT_TRUE(same_as_jax(jnp::logsumexp(f64({1.0, inf}), {}, f64({2.0, 0.0})).item<double>(), 1.6931471805599454));
  EXPECT_EQ(jnp::logsumexp(f64({1.0, 2.0}), {}, f64({0.0, 0.0})).item<double>(), -inf);
  EXPECT_TRUE(same_as_jax(jnp::logsumexp(f64({0.0, 1.0}), {}, f64({3.0, -1.0})).item<double>(), -1.266848099467626));
  // b broadcast against x, weights 0 in a column.
  Array m = Array(std::vector<double>{0.0, inf, 1.0, inf}).reshape({2, 2});
  EXPECT_ALLCLOSE(jnp::logsumexp(m, 1, f64({1.0, 0.0})), f64({0.0, 1.0}), 0.0, 0.0);
}

}  // namespace
}  // namespace jx
