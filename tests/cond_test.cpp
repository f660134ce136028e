// lax::cond / lax::switch_ and the `cond` primitive: values against a C++ if, derivatives
// against finite differences (check_grads) and closed forms, vmap against a loop over the
// batch (batched operands and batched predicates / indices), jit against eager, the IR
// text and its parse round trip, the jaxpr-level rules (dce, partial evaluation,
// transposition), and every error message.
#include <functional>
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
using lax::cond;
using lax::switch_;
using testing::randn;

bool contains(const std::string& s, std::string_view sub) { return s.find(sub) != std::string::npos; }
size_t count_of(const std::string& s, std::string_view sub) {
  size_t n = 0;
  for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + 1)) ++n;
  return n;
}
Array f64(std::vector<double> v) { return Array(v); }

// The function most tests use: a branch on the sign of sum(x), each side a different
// smooth function of both operands, the true side capturing an array (a constant).
const Array kWeights = Array(std::vector<double>{0.5, -1.0, 2.0});
Array pos_branch(const Array& x, const Array& y) { return jnp::sin(x) * y * kWeights; }
Array neg_branch(const Array& x, const Array& y) { return jnp::cos(x) + y * y; }
Array branchy(const Array& x, const Array& y) {
  return cond(jnp::sum(x) > 0.0, [](const Array& a, const Array& b) { return pos_branch(a, b); },
              [](const Array& a, const Array& b) { return neg_branch(a, b); }, x, y);
}
Array branchy_oracle(const Array& x, const Array& y) {
  return jnp::sum(x).item<double>() > 0 ? pos_branch(x, y) : neg_branch(x, y);
}

const Array kPos = f64({0.3, 0.9, -0.2}), kNeg = f64({-0.7, 0.1, -0.4}), kY = f64({1.5, -0.5, 0.25});

// ---- values ----

TEST(Cond, PicksTheBranchOfThePredicate) {
  EXPECT_ALLCLOSE(branchy(kPos, kY), branchy_oracle(kPos, kY), 1e-15, 1e-15);
  EXPECT_ALLCLOSE(branchy(kNeg, kY), branchy_oracle(kNeg, kY), 1e-15, 1e-15);
}

TEST(Cond, PredicateAsCppBoolIntegerOrFloat) {
  auto twice = [](const Array& x) { return x * 2.0; };
  auto neg = [](const Array& x) { return -x; };
  Array x = f64({1.0, -2.0});
  EXPECT_ALLCLOSE(cond(true, twice, neg, x), f64({2.0, -4.0}));
  EXPECT_ALLCLOSE(cond(false, twice, neg, x), f64({-1.0, 2.0}));
  EXPECT_ALLCLOSE(cond(Array(3), twice, neg, x), f64({2.0, -4.0}));         // integer: nonzero is true
  EXPECT_ALLCLOSE(cond(Array(0), twice, neg, x), f64({-1.0, 2.0}));
  EXPECT_ALLCLOSE(cond(Array(0.0f), twice, neg, x), f64({-1.0, 2.0}));      // float: 0 is false
  EXPECT_ALLCLOSE(cond(Array(-0.5), twice, neg, x), f64({2.0, -4.0}));
  EXPECT_ALLCLOSE(cond(lax::convert_element_type(Array(7), DType::UInt8), twice, neg, x), f64({2.0, -4.0}));
}

TEST(Switch, ThreeBranchesWithClampedIndex) {
  std::vector<std::function<Array(const Array&)>> branches{
      [](const Array& x) { return x + 1.0; }, [](const Array& x) { return x * x; },
      [](const Array& x) { return jnp::exp(x); }};
  Array x = f64({0.5, -1.0});
  // JAX clamps the index into [0, 2]: -3 runs branch 0, 7 runs branch 2.
  const std::map<int, int> taken{{-3, 0}, {0, 0}, {1, 1}, {2, 2}, {7, 2}};
  for (auto [index, b] : taken) {
    SCOPED_TRACE(index);
    EXPECT_ALLCLOSE(switch_(index, branches, x), branches[static_cast<size_t>(b)](x), 1e-15, 1e-15);
    EXPECT_ALLCLOSE(switch_(Array(index), branches, x), branches[static_cast<size_t>(b)](x), 1e-15, 1e-15);
  }
  // Other integer index dtypes are converted.
  EXPECT_ALLCLOSE(switch_(lax::convert_element_type(Array(1), DType::Int64), branches, x), x * x);
  EXPECT_ALLCLOSE(switch_(lax::convert_element_type(Array(2), DType::UInt8), branches, x), jnp::exp(x));
}

TEST(Switch, AVectorOfOneLambdaTypeAndASingleBranch) {
  auto scale = [](double s) { return [s](const Array& x) { return x * s; }; };
  std::vector<decltype(scale(1.0))> branches{scale(1.0), scale(2.0), scale(3.0)};
  Array x = f64({1.0, 2.0});
  EXPECT_ALLCLOSE(switch_(2, branches, x), f64({3.0, 6.0}));
  // One branch is called directly (as in JAX): no cond equation.
  std::vector<decltype(scale(1.0))> one{scale(5.0)};
  EXPECT_ALLCLOSE(switch_(4, one, x), f64({5.0, 10.0}));
  auto staged = make_jaxpr([&](const Array& i, const Array& v) { return switch_(i, one, v); })(Array(0), x);
  EXPECT_FALSE(contains(staged.str(), "cond[")) << staged.str();
}

struct Pair {
  Array a, b;
};
JX_TREE_NODE(Pair, a, b)

TEST(Cond, PytreeOperandsAndResults) {
  Pair p{f64({1.0, 2.0}), f64({3.0})};
  std::map<std::string, Array> m{{"s", Array(2.0)}};
  auto scaled = [](const Pair& q, const std::map<std::string, Array>& d) {
    return std::tuple{Pair{q.a * d.at("s"), q.b + q.a(0)}, jnp::sum(q.a)};
  };
  auto keep = [](const Pair& q, const std::map<std::string, Array>&) { return std::tuple{Pair{q.a, q.b}, Array(0.0)}; };
  auto [r, s] = cond(true, scaled, keep, p, m);
  EXPECT_ALLCLOSE(r.a, f64({2.0, 4.0}));
  EXPECT_ALLCLOSE(r.b, f64({4.0}));
  EXPECT_ALLCLOSE(s, Array(3.0), 0, 0, /*check_dtype=*/false);
  auto [r2, s2] = cond(false, scaled, keep, p, m);
  EXPECT_ALLCLOSE(r2.a, f64({1.0, 2.0}));
  EXPECT_ALLCLOSE(s2, Array(0.0), 0, 0, /*check_dtype=*/false);
  // No operands at all: the branches close over what they need.
  Array c = f64({4.0, 5.0});
  EXPECT_ALLCLOSE(cond(false, [&] { return c; }, [&] { return c * 10.0; }), f64({40.0, 50.0}));
}

// ---- the program it stages ----

TEST(Cond, StagesBothBranchesEvenForAConcretePredicate) {
  ClosedJaxpr j = make_jaxpr([](const Array& x, const Array& y) {
    return cond(true, [](const Array& a, const Array& b) { return jnp::sin(a) * b; },
                [](const Array& a, const Array& b) { return a - b; }, x, y);
  })(kPos, kY);
  const std::string text = j.str();
  EXPECT_EQ(count_of(text, "cond["), 1u) << text;
  for (const char* part : {"branch0={ lambda", "branch1={ lambda", "num_branches=2", "sin", "sub"})
    EXPECT_TRUE(contains(text, part)) << part << " in\n" << text;
  // The text parses back to the same program.
  EXPECT_EQ(parse_jaxpr(text).str(), text);
  Jaxpr parsed = parse_jaxpr(text);
  EXPECT_ALLCLOSE(eval_jaxpr(parsed, {}, std::vector<Array>{kPos, kY})[0], jnp::sin(kPos) * kY, 1e-15, 1e-15);
}

TEST(Cond, CapturedArraysAreSharedConstantOperands) {
  const Array w1 = f64({1.0, 2.0, 3.0}), w2 = f64({-1.0, 0.5, 4.0});
  auto f = [&](const Array& x) {
    return cond(jnp::sum(x) > 0.0, [&](const Array& a) { return a * w1 + w2; }, [&](const Array& a) { return a * w1; }, x);
  };
  EXPECT_ALLCLOSE(f(kPos), kPos * w1 + w2, 1e-15, 1e-15);
  EXPECT_ALLCLOSE(f(kNeg), kNeg * w1, 1e-15, 1e-15);
  ClosedJaxpr j = make_jaxpr(f)(kPos);
  // w1, captured by both branches, is one operand; each branch takes both constants.
  ASSERT_EQ(j.consts.size(), 2u) << j.str();
  const Equation& e = j.jaxpr.eqns.back();
  ASSERT_EQ(e.primitive->name(), "cond");
  EXPECT_EQ(e.inputs.size(), 4u);  // index, w1, w2, x
  for (const char* b : {"branch0", "branch1"}) EXPECT_EQ(e.params.get_jaxpr(b)->jaxpr.invars.size(), 3u) << b;
}

TEST(Cond, NestedConds) {
  auto f = [](const Array& x) {
    return cond(x > 0.0,
                [](const Array& a) { return cond(a > 1.0, [](const Array& b) { return b * 3.0; }, [](const Array& b) { return b * 2.0; }, a); },
                [](const Array& a) { return -a; }, x);
  };
  EXPECT_ALLCLOSE(f(Array(2.0)), Array(6.0));
  EXPECT_ALLCLOSE(f(Array(0.5)), Array(1.0));
  EXPECT_ALLCLOSE(f(Array(-4.0)), Array(4.0));
  EXPECT_NEAR(grad(f)(Array(2.0)).item<double>(), 3.0, 1e-15);
  EXPECT_NEAR(grad(f)(Array(0.5)).item<double>(), 2.0, 1e-15);
  EXPECT_NEAR(grad(f)(Array(-4.0)).item<double>(), -1.0, 1e-15);
  EXPECT_ALLCLOSE(vmap(f)(f64({2.0, 0.5, -4.0})), f64({6.0, 1.0, 4.0}));
  EXPECT_ALLCLOSE(vmap(grad(f))(f64({2.0, 0.5, -4.0})), f64({3.0, 2.0, -1.0}));
}

// ---- derivatives ----

TEST(Cond, GradsMatchFiniteDifferences) {
  for (const Array& x : {kPos, kNeg}) {
    SCOPED_TRACE(str(x));
    test_util::check_grads([](const Array& a, const Array& b) { return branchy(a, b); }, std::tuple{x, kY},
                           {.order = 2});
  }
}

TEST(Cond, GradVjpLinearizeAndJacobiansAgree) {
  auto loss = [](const Array& x, const Array& y) { return jnp::sum(branchy(x, y)); };
  // Closed forms: d/dx sum(sin(x) y w) = cos(x) y w; d/dx sum(cos(x) + y^2) = -sin(x).
  EXPECT_ALLCLOSE(grad(loss)(kPos, kY), jnp::cos(kPos) * kY * kWeights, 1e-14, 1e-14);
  EXPECT_ALLCLOSE(grad(loss)(kNeg, kY), -jnp::sin(kNeg), 1e-14, 1e-14);
  EXPECT_ALLCLOSE(grad(loss, argnums<1>)(kNeg, kY), kY * 2.0, 1e-14, 1e-14);
  // vjp with a non-trivial cotangent equals J^T ct from jacfwd and jacrev.
  for (const Array& x : {kPos, kNeg}) {
    auto f = [](const Array& a) { return branchy(a, kY); };
    Array ct = f64({0.3, -1.2, 2.0});
    auto [out, pullback] = vjp(f, x);
    EXPECT_ALLCLOSE(out, branchy_oracle(x, kY), 1e-15, 1e-15);
    Array jf = jacfwd(f)(x), jr = jacrev(f)(x);
    EXPECT_ALLCLOSE(jf, jr, 1e-14, 1e-14);
    EXPECT_ALLCLOSE(std::get<0>(pullback(ct)), jnp::matmul(ct, jf), 1e-14, 1e-14);
    auto [y, f_jvp] = linearize(f, x);
    Array t = f64({1.0, 0.5, -2.0});
    EXPECT_ALLCLOSE(f_jvp(t), jnp::matmul(jf, t), 1e-14, 1e-14);
    EXPECT_ALLCLOSE(y, out, 0, 0);
  }
}

TEST(Cond, DerivativesThroughCapturedValues) {
  // y reaches the branches only as a captured value: a constant operand of the cond that
  // carries the tangent.
  auto f = [](const Array& y) {
    return jnp::sum(cond(jnp::sum(y) > 0.0, [&](const Array& x) { return x * y * y; }, [&](const Array& x) { return x + y; }, kPos));
  };
  EXPECT_ALLCLOSE(grad(f)(kY), kPos * kY * 2.0, 1e-15, 1e-15);
  EXPECT_ALLCLOSE(grad(f)(-kY), jnp::ones_like(kY), 1e-15, 1e-15);
  EXPECT_ALLCLOSE(jit(grad(f))(kY), kPos * kY * 2.0, 1e-15, 1e-15);
  test_util::check_grads(f, std::tuple{kY}, {.order = 2});
}

TEST(Cond, TangentsNonzeroInOneBranchOnly) {
  // The false branch ignores x (its tangent is zero there) and returns an integer too.
  auto f = [](const Array& x, const Array& y) {
    return cond(
        jnp::sum(x) > 0.0, [](const Array& a, const Array& b) { return std::tuple{a * b, Array(1)}; },
        [](const Array&, const Array& b) { return std::tuple{b * 3.0, Array(2)}; }, x, y);
  };
  auto first = [&](const Array& x, const Array& y) { return jnp::sum(std::get<0>(f(x, y))); };
  EXPECT_ALLCLOSE(grad(first)(kPos, kY), kY, 1e-15, 1e-15);
  EXPECT_ALLCLOSE(grad(first)(kNeg, kY), jnp::zeros_like(kNeg), 0, 0);
  EXPECT_ALLCLOSE(grad(first, argnums<1>)(kNeg, kY), jnp::full_like(kY, Array(3.0)), 1e-15, 1e-15);
  auto [out, tan] = jvp([&](const Array& x) { return std::get<0>(f(x, kY)); }, kNeg, kNeg);
  EXPECT_ALLCLOSE(tan, jnp::zeros_like(kNeg), 0, 0);
  EXPECT_EQ(std::get<1>(f(kNeg, kY)).item<int32_t>(), 2);
}

TEST(Switch, GradOfEveryBranch) {
  std::vector<std::function<Array(const Array&)>> branches{
      [](const Array& x) { return jnp::sum(jnp::sin(x)); }, [](const Array& x) { return jnp::sum(x * x * x); },
      [](const Array& x) { return jnp::sum(jnp::exp(x) * 2.0); }};
  const std::vector<Array> want{jnp::cos(kPos), kPos * kPos * 3.0, jnp::exp(kPos) * 2.0};
  for (int i = 0; i < 3; ++i) {
    auto f = [&](const Array& x) { return switch_(i, branches, x); };
    EXPECT_ALLCLOSE(grad(f)(kPos), want[static_cast<size_t>(i)], 1e-14, 1e-14) << i;
    test_util::check_grads(f, std::tuple{kPos}, {.order = 2});
  }
}

// ---- vmap ----

TEST(Cond, VmapWithAnUnbatchedPredicateStaysACond) {
  Array xs = randn({4, 3}, DType::Float64, 1), ys = randn({4, 3}, DType::Float64, 2);
  for (bool p : {true, false}) {
    auto f = [p](const Array& x, const Array& y) {
      return cond(p, [](const Array& a, const Array& b) { return pos_branch(a, b); },
                  [](const Array& a, const Array& b) { return neg_branch(a, b); }, x, y);
    };
    Array got = vmap(f)(xs, ys);
    for (int64_t i = 0; i < 4; ++i)
      EXPECT_ALLCLOSE(got(i), p ? pos_branch(xs(i), ys(i)) : neg_branch(xs(i), ys(i)), 1e-15, 1e-15) << i;
    // Only y batched: the output is batched in both branches (instantiated where a branch does not batch it).
    auto g = [p](const Array& x, const Array& y) {
      return cond(p, [](const Array& a, const Array&) { return a * 2.0; }, [](const Array&, const Array& b) { return b; }, x, y);
    };
    Array gy = vmap(g, {.in_axes = {not_mapped, 0}})(kPos, ys);
    for (int64_t i = 0; i < 4; ++i) EXPECT_ALLCLOSE(gy(i), p ? kPos * 2.0 : ys(i), 0, 0) << i;
  }
  ClosedJaxpr j = make_jaxpr(vmap([](const Array& x, const Array& y) {
    return cond(true, [](const Array& a, const Array& b) { return a * b; }, [](const Array& a, const Array& b) { return a - b; }, x, y);
  }))(xs, ys);
  EXPECT_TRUE(contains(j.str(), "cond[")) << j.str();
  EXPECT_FALSE(contains(j.str(), "select_n")) << j.str();
}

TEST(Cond, VmapWithABatchedPredicateSelectsPerLane) {
  Array xs = randn({6, 3}, DType::Float64, 3), ys = randn({6, 3}, DType::Float64, 4);
  Array got = vmap(branchy)(xs, ys);
  for (int64_t i = 0; i < 6; ++i) EXPECT_ALLCLOSE(got(i), branchy_oracle(xs(i), ys(i)), 1e-15, 1e-15) << i;
  ClosedJaxpr j = make_jaxpr(vmap(branchy))(xs, ys);
  EXPECT_TRUE(contains(j.str(), "select_n")) << j.str();
  EXPECT_FALSE(contains(j.str(), "cond[")) << j.str();
  // y unbatched, x batched (so is the predicate).
  Array got_x = vmap(branchy, {.in_axes = {0, not_mapped}})(xs, kY);
  for (int64_t i = 0; i < 6; ++i) EXPECT_ALLCLOSE(got_x(i), branchy_oracle(xs(i), kY), 1e-15, 1e-15) << i;
}

TEST(Cond, VmapOfGradWithABatchedPredicate) {
  Array xs = randn({5, 3}, DType::Float64, 5);
  auto loss = [](const Array& x) { return jnp::sum(branchy(x, kY)); };
  Array got = vmap(grad(loss))(xs);
  for (int64_t i = 0; i < 5; ++i) EXPECT_ALLCLOSE(got(i), grad(loss)(xs(i)), 1e-14, 1e-14) << i;
  Array got2 = grad([&](const Array& x) { return jnp::sum(vmap(loss)(x)); })(xs);
  EXPECT_ALLCLOSE(got2, got, 1e-14, 1e-14);
  Array jac = vmap(jacfwd([](const Array& x) { return branchy(x, kY); }))(xs);
  for (int64_t i = 0; i < 5; ++i)
    EXPECT_ALLCLOSE(jac(i), jacrev([](const Array& x) { return branchy(x, kY); })(xs(i)), 1e-14, 1e-14) << i;
}

TEST(Cond, BatchedPredicateSendsNoNanThroughTheUntakenBranch) {
  // log(x) is taken only where x > 0; at x = 0 its derivative is infinite, yet the lane
  // taking the other branch gets gradient 1, not NaN (JAX's select with stop_gradient).
  auto f = [](const Array& x) { return cond(x > 0.0, [](const Array& a) { return jnp::log(a); }, [](const Array& a) { return a; }, x); };
  Array g = vmap(grad(f))(f64({0.0, 2.0, -1.0}));
  EXPECT_ALLCLOSE(g, f64({1.0, 0.5, 1.0}), 1e-15, 1e-15);
}

TEST(Switch, VmapWithABatchedIndex) {
  std::vector<std::function<Array(const Array&)>> branches{
      [](const Array& x) { return x + 1.0; }, [](const Array& x) { return x * x; },
      [](const Array& x) { return jnp::exp(x); }};
  Array index = Array(std::vector<int32_t>{2, -1, 1, 9, 0});
  Array xs = randn({5, 2}, DType::Float64, 6);
  auto f = [&](const Array& i, const Array& x) { return switch_(i, branches, x); };
  Array got = vmap(f)(index, xs);
  const int taken[] = {2, 0, 1, 2, 0};
  for (int64_t k = 0; k < 5; ++k) EXPECT_ALLCLOSE(got(k), branches[static_cast<size_t>(taken[k])](xs(k)), 1e-15, 1e-15) << k;
  // Index batched, operand not.
  const Array x2 = f64({0.3, 0.9});
  Array got2 = vmap(f, {.in_axes = {0, not_mapped}})(index, x2);
  for (int64_t k = 0; k < 5; ++k) EXPECT_ALLCLOSE(got2(k), branches[static_cast<size_t>(taken[k])](x2), 1e-15, 1e-15) << k;
  // Derivatives through the per-lane selection.
  auto loss = [&](const Array& i, const Array& x) { return jnp::sum(switch_(i, branches, x)); };
  Array g = vmap(grad(loss, argnums<1>))(index, xs);
  for (int64_t k = 0; k < 5; ++k)
    EXPECT_ALLCLOSE(g(k), grad(loss, argnums<1>)(Array(taken[k]), xs(k)), 1e-14, 1e-14) << k;
}

// ---- jit ----

TEST(Cond, JitMatchesEager) {
  auto jitted = jit(branchy, JitOptions{.name = "cond_test.branchy"});
  for (const Array& x : {kPos, kNeg}) EXPECT_ALLCLOSE(jitted(x, kY), branchy_oracle(x, kY), 1e-15, 1e-15);
  EXPECT_TRUE(contains(jitted.lower(kPos, kY).as_text(), "cond[")) << jitted.lower(kPos, kY).as_text();
  Array xs = randn({4, 3}, DType::Float64, 8);
  Array batched = vmap(jitted)(xs, jnp::stack({kY, kY, kY, kY}));
  for (int64_t i = 0; i < 4; ++i) EXPECT_ALLCLOSE(batched(i), branchy_oracle(xs(i), kY), 1e-15, 1e-15) << i;
  auto loss = [](const Array& x) { return jnp::sum(branchy(x, kY)); };
  for (const Array& x : {kPos, kNeg}) {
    EXPECT_ALLCLOSE(jit(grad(loss))(x), grad(loss)(x), 1e-14, 1e-14);
    EXPECT_ALLCLOSE(grad(jit(loss))(x), grad(loss)(x), 1e-14, 1e-14);
  }
}

TEST(Cond, JitOfVmapOfGrad) {
  Array xs = randn({4, 3}, DType::Float64, 7);
  auto loss = [](const Array& x) { return jnp::sum(branchy(x, kY)); };
  Array got = jit(vmap(grad(loss)))(xs);
  for (int64_t i = 0; i < 4; ++i) EXPECT_ALLCLOSE(got(i), grad(loss)(xs(i)), 1e-14, 1e-14) << i;
  Array hess = jit(hessian(loss))(kPos);
  EXPECT_ALLCLOSE(hess, hessian(loss)(kPos), 1e-13, 1e-13);
  EXPECT_ALLCLOSE(jnp::diagonal(hess), -jnp::sin(kPos) * kY * kWeights, 1e-13, 1e-13);
}

// ---- the jaxpr-level rules ----

// A program with one cond whose branches compute (sin(a) * b, cos(a)) and (b, exp(a)).
constexpr const char* kTwoOutputs = R"({ lambda ; i:i32[] a:f64[3] b:f64[3]. let
    c:f64[3] d:f64[3] = cond[branch0={ lambda ; a:f64[3] b:f64[3]. let
        c:f64[3] = sin a
        d:f64[3] = mul c b
        e:f64[3] = cos a
      in (d, e) } branch1={ lambda ; a:f64[3] b:f64[3]. let
        c:f64[3] = exp a
      in (b, c) } num_branches=2] i a b
  in (c, d) })";

TEST(CondRules, DceDropsAnOutputAndTheOperandsOnlyItNeeded) {
  Jaxpr j = parse_jaxpr(kTwoOutputs);
  // Only output 1 (cos(a) / exp(a)) is used: b is dropped from the cond and both branches.
  detail::DcedJaxpr d = detail::dce_jaxpr(j, {false, true});
  ASSERT_EQ(d.jaxpr.eqns.size(), 1u);
  const Equation& e = d.jaxpr.eqns[0];
  EXPECT_EQ(e.inputs.size(), 2u);
  EXPECT_EQ(e.outputs.size(), 1u);
  for (const char* b : {"branch0", "branch1"}) {
    const Jaxpr& body = e.params.get_jaxpr(b)->jaxpr;
    EXPECT_EQ(body.invars.size(), 1u) << b;
    EXPECT_EQ(body.outvars.size(), 1u) << b;
  }
  EXPECT_FALSE(contains(d.jaxpr.str(), "sin")) << d.jaxpr.str();
  verify_jaxpr(d.jaxpr);
  Array a = f64({0.1, 0.2, 0.3}), b = f64({1.0, 2.0, 3.0});
  EXPECT_EQ(d.used_inputs, (std::vector<bool>{true, true, false}));
  for (int i : {0, 1})
    EXPECT_ALLCLOSE(eval_jaxpr(d.jaxpr, {}, std::vector<Array>{Array(i), a})[0],
                    eval_jaxpr(j, {}, std::vector<Array>{Array(i), a, b})[1], 0, 0);
}

TEST(CondRules, PartialEvalJoinsTheBranchesResiduals) {
  ClosedJaxpr j{parse_jaxpr(kTwoOutputs), {}};
  // a known, b unknown: branch0 needs sin(a) as a residual, branch1 none.
  detail::PartialEvalJaxpr pe = detail::partial_eval_jaxpr(j, {false, false, true}, {});
  EXPECT_EQ(pe.out_unknowns, (std::vector<bool>{true, false}));
  EXPECT_GE(pe.num_residuals, 2u);  // the index and sin(a)
  Array a = f64({0.1, 0.2, 0.3}), b = f64({1.0, 2.0, 3.0});
  for (int i : {0, 1}) {
    SCOPED_TRACE(i);
    std::vector<Array> known = eval_jaxpr(pe.known, std::vector<Array>{Array(i), a});
    std::vector<Array> unknown_in(known.end() - static_cast<std::ptrdiff_t>(pe.num_residuals), known.end());
    unknown_in.push_back(b);
    std::vector<Array> unknown = eval_jaxpr(pe.unknown, unknown_in);
    std::vector<Array> want = eval_jaxpr(j, std::vector<Array>{Array(i), a, b});
    EXPECT_ALLCLOSE(unknown[0], want[0], 0, 0);
    EXPECT_ALLCLOSE(known[0], want[1], 0, 0);
  }
}

TEST(CondRules, TransposeOfALinearCondMatchesVjp) {
  // Linear in b: branch0 scales by sin(a), branch1 passes b through.
  ClosedJaxpr j{parse_jaxpr(R"({ lambda ; i:i32[] a:f64[3] b:f64[3]. let
    c:f64[3] = cond[branch0={ lambda ; a:f64[3] b:f64[3]. let
        c:f64[3] = sin a
        d:f64[3] = mul c b
      in (d) } branch1={ lambda ; a:f64[3] b:f64[3]. let
      in (b) } num_branches=2] i a b
  in (c) })"),
                {}};
  ClosedJaxpr t = detail::transpose_jaxpr(j, {false, false, true});
  Array a = f64({0.1, 0.2, 0.3}), ct = f64({1.0, -2.0, 0.5});
  EXPECT_ALLCLOSE(eval_jaxpr(t, std::vector<Array>{Array(0), a, ct})[0], jnp::sin(a) * ct, 1e-15, 1e-15);
  EXPECT_ALLCLOSE(eval_jaxpr(t, std::vector<Array>{Array(1), a, ct})[0], ct, 0, 0);
}

// ---- errors ----

TEST(CondErrors, PredicateAndIndex) {
  auto id = [](const Array& x) { return x; };
  Array x = f64({1.0});
  EXPECT_JX_ERROR(cond(Array({true, false}), id, id, x), "[cond]", "pred must be a scalar",
                  "bool[2]");
  EXPECT_JX_ERROR(cond(Array(complex64_t(1, 0)), id, id, x), "[cond]", "bool or a real number", "c64");
  std::vector<std::function<Array(const Array&)>> branches{id, id};
  EXPECT_JX_ERROR(switch_(Array(1.0), branches, x), "[switch]", "index must be an integer", "f64");
  EXPECT_JX_ERROR(switch_(Array(std::vector<int32_t>{0, 1}), branches, x), "[switch]", "index must be a scalar",
                  "i32[2]");
  EXPECT_JX_ERROR(switch_(Array(true), branches, x), "[switch]", "index must be an integer", "bool");
  std::vector<std::function<Array(const Array&)>> none;
  EXPECT_JX_ERROR(switch_(0, none, x), "[switch]", "at least one branch");
}

TEST(CondErrors, BranchesMustAgree) {
  Array x = f64({1.0, 2.0});
  EXPECT_JX_ERROR(cond(true, [](const Array& a) { return a; }, [](const Array& a) { return std::tuple{a, a}; }, x),
                  "[cond]", "true_fn and false_fn must return the same structure", "PyTreeDef");
  EXPECT_JX_ERROR(cond(true, [](const Array& a) { return a; }, [](const Array& a) { return a(Slice{0, 1}); }, x),
                  "[cond]", "must return the same types", "f64[2]", "f64[1]", "true_fn", "false_fn");
  EXPECT_JX_ERROR(cond(true, [](const Array& a) { return a; },
                       [](const Array& a) { return lax::convert_element_type(a, DType::Float32); }, x),
                  "[cond]", "f64[2]", "f32[2]");
  std::vector<std::function<Array(const Array&)>> branches{
      [](const Array& a) { return a; }, [](const Array& a) { return a; }, [](const Array& a) { return jnp::sum(a); }};
  EXPECT_JX_ERROR(switch_(0, branches, x), "[cond]", "branch 2 and branch 0", "f64[]", "f64[2]");
  // A value read concretely inside a branch is abstract there.
  EXPECT_JX_ERROR(cond(true, [](const Array& a) { return a * a.item<double>(); }, [](const Array& a) { return a; },
                       Array(2.0)),
                  "abstract", "cond");
}

TEST(CondErrors, ThePrimitivesShapeRule) {
  auto bad = [](const char* text) { return parse_jaxpr(text); };
  EXPECT_JX_ERROR(bad(R"({ lambda ; i:f32[] a:f64[3]. let
    c:f64[3] = cond[branch0={ lambda ; a:f64[3]. let  in (a) } num_branches=1] i a
  in (c) })"),
                  "[cond]", "branch index must be an int32 scalar", "f32[]");
  EXPECT_JX_ERROR(bad(R"({ lambda ; i:i32[] a:f64[3]. let
    c:f64[3] = cond[branch0={ lambda ; a:f64[2]. let  in (a) } num_branches=1] i a
  in (c) })"),
                  "[cond]", "branch0 input 0 has type f64[2] but its operand is f64[3]");
  EXPECT_JX_ERROR(bad(R"({ lambda ; i:i32[] a:f64[3]. let
    c:f64[3] = cond[branch0={ lambda ; a:f64[3]. let  in (a) } branch1={ lambda ; a:f64[3]. let
        b:f32[3] = convert_element_type[new_dtype=float32 weak_type=False] a
      in (b) } num_branches=2] i a
  in (c) })"),
                  "[cond]", "output 0 of branch1 is f32[3] but output 0 of branch0 is f64[3]");
  EXPECT_JX_ERROR(bad(R"({ lambda ; i:i32[] a:f64[3]. let
    c:f64[3] = cond[branch0={ lambda ; a:f64[3]. let  in (a) } num_branches=2] i a
  in (c) })"),
                  "[cond]", "num_branches=2 but parameter branch1 is missing");
  EXPECT_JX_ERROR(bad(R"({ lambda ; i:i32[] a:f64[3]. let
    c:f64[3] = cond[branch0={ lambda ; a:f64[3] b:f64[3]. let  in (a) } num_branches=1] i a
  in (c) })"),
                  "[cond]", "branch0 takes 2 inputs");
}

}  // namespace
}  // namespace jx
