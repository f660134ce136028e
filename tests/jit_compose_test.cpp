// jit composed with every transformation, in both orders and nested: each result is
// compared with the same composition without jit (eager), and derivatives of jitted
// functions with finite differences (check_grads). vmap of a jitted function is also
// checked against a C++ loop over the batch.
#include <stdlib.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "grad_test_util.h"
#include "jx/jx.h"
#include "jx/test_util.h"
#include "test_util.h"

namespace {
// Compile everything in this process: a kernel cached on disk by an older build of the
// code generator must not stand in for the code under test.
const bool g_no_disk_cache = [] {
  jx::config::set_disk_cache(false);
  return true;
}();
}  // namespace

namespace jx {
namespace {
namespace jnp = jx::numpy;

using testing::randn;

bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

template <class T>
void expect_same_tree(const T& got, const T& want, double rtol, double atol) {
  auto [g, gdef] = tree::flatten(got);
  auto [w, wdef] = tree::flatten(want);
  ASSERT_TRUE(gdef == wdef) << gdef.str() << " vs " << wdef.str();
  for (size_t i = 0; i < g.size(); ++i) {
    SCOPED_TRACE("leaf " + std::to_string(i));
    EXPECT_EQ(g[i].aval(), w[i].aval()) << g[i].aval().str() << " vs " << w[i].aval().str();
    EXPECT_ALLCLOSE(g[i], w[i], rtol, atol);
  }
}

// A smooth scalar function with a reduction, broadcasting and transcendentals.
Array smooth(const Array& x) { return jnp::sum(jnp::sin(x) * x * x + jnp::exp(-x * x) / (1 + x * x)); }

// ---- derivatives ----

TEST(JitCompose, JitOfGrad) {
  Array x = randn({17}, DType::Float32, 1);
  Array want = grad(smooth)(x);
  expect_same_tree(jit(grad(smooth))(x), want, 1e-5, 1e-6);
  Array x64 = randn({17}, DType::Float64, 2);
  expect_same_tree(jit(grad(smooth))(x64), grad(smooth)(x64), 1e-12, 1e-12);
  // Gradients of several arguments, as a tuple.
  auto f = [](const Array& a, const Array& b) { return jnp::sum(jnp::tanh(a * b) + a); };
  Array b = randn({17}, DType::Float32, 3);
  auto g_want = grad(f, argnums<0, 1>)(x, b);
  auto g_got = jit(grad(f, argnums<0, 1>))(x, b);
  expect_same_tree(g_got, g_want, 1e-5, 1e-6);
}

TEST(JitCompose, GradOfJit) {
  Array x = randn({17}, DType::Float32, 4);
  auto jf = jit(smooth);
  expect_same_tree(grad(jf)(x), grad(smooth)(x), 1e-5, 1e-6);
  JX_EXPECT_GRADS_OK(jf, std::tuple{x}, {.order = 2});
  JX_EXPECT_GRADS_OK(jf, std::tuple{randn({5}, DType::Float64, 5)}, {.order = 2});
  // A jitted function closing over an array: the constant gets no gradient, and the
  // gradient uses its captured value.
  Array w = randn({17}, DType::Float32, 6);
  auto weighted = jit([w](const Array& x) { return jnp::sum(w * jnp::sin(x)); });
  EXPECT_ALLCLOSE(grad(weighted)(x), w * jnp::cos(x), 1e-5, 1e-6);
  // jit(grad(jit(f))).
  expect_same_tree(jit(grad(jit(smooth)))(x), grad(smooth)(x), 1e-5, 1e-6);
}

// grad(jit(f)) stays compiled: the jvp of the jit equation is split by partial evaluation
// into a `jit` computing the primal outputs and residuals and a `linear_jit` for the
// tangents, and the transpose of that is one more `jit`. No operation of f's body runs
// outside a jit equation.
TEST(JitCompose, GradOfJitStaysCompiled) {
  auto f = [](const Array& x) { return jnp::sum(jnp::sin(x) * jnp::exp(x)); };
  Array x = randn({8}, DType::Float32, 11);
  std::string text = make_jaxpr(grad(jit(f)))(x).str();
  EXPECT_TRUE(contains(text, "jit[")) << text;
  // Top-level equations are all calls; the body's sin/exp/cos live inside them.
  for (const Equation& e : make_jaxpr(grad(jit(f)))(x).jaxpr.eqns)
    EXPECT_TRUE(e.primitive->name() == "jit" || e.primitive->name() == "linear_jit") << text;
  EXPECT_ALLCLOSE(grad(jit(f))(x), jnp::cos(x) * jnp::exp(x) + jnp::sin(x) * jnp::exp(x), 1e-5, 1e-6);
  // vjp with a non-unit cotangent and two outputs, one of them integer (no tangent).
  auto g = [](const Array& x) { return std::make_pair(jnp::tanh(x) * 3.0, jnp::argmax(x)); };
  auto [out, pullback] = vjp(jit(g), x);
  auto [ref_out, ref_pullback] = vjp(g, x);
  Array ct = randn({8}, DType::Float32, 12);
  EXPECT_ALLCLOSE(std::get<0>(pullback(std::make_pair(ct, jnp::zeros({}, DType::Int32)))),
                  std::get<0>(ref_pullback(std::make_pair(ct, jnp::zeros({}, DType::Int32)))), 1e-5, 1e-6);
}

TEST(JitCompose, JvpOfJit) {
  Array x = randn({9}, DType::Float32, 7), t = randn({9}, DType::Float32, 8);
  auto f = [](const Array& x) { return jnp::sin(x) * jnp::exp(x * 0.5); };
  auto [p, tan] = jvp(jit(f), x, t);
  auto [pw, tw] = jvp(f, x, t);
  expect_same_tree(p, pw, 1e-5, 1e-6);
  expect_same_tree(tan, tw, 1e-5, 1e-6);
  auto jf = jit(f);
  auto call_jf = [jf](const Array& x) { return jf(x); };
  JX_EXPECT_GRADS_OK(call_jf, std::tuple{x}, {.order = 1, .modes = test_util::Modes::Fwd});
  // jit of jvp.
  auto jvp_fn = [&](const Array& x, const Array& t) { return jvp(f, x, t); };
  auto [p2, t2] = jit(jvp_fn)(x, t);
  expect_same_tree(p2, pw, 1e-5, 1e-6);
  expect_same_tree(t2, tw, 1e-5, 1e-6);
}

TEST(JitCompose, HessianOfJit) {
  auto f = [](const Array& x) { return jnp::sum(jnp::sin(x) * x(0) + x * x * x); };
  Array x = randn({4}, DType::Float64, 9);
  Array want = hessian(f)(x);
  ASSERT_EQ(want.shape(), (Shape{4, 4}));
  expect_same_tree(hessian(jit(f))(x), want, 1e-12, 1e-12);
  expect_same_tree(jit(hessian(f))(x), want, 1e-12, 1e-12);
}

TEST(JitCompose, JitOfJacfwdAndJacrev) {
  auto f = [](const Array& x) { return jnp::tanh(jnp::matmul(jnp::reshape(x, {2, 3}), jnp::ones({3, 2})) * x(0)); };
  Array x = randn({6}, DType::Float32, 10);
  Array want = jacfwd(f)(x);
  ASSERT_EQ(want.shape(), (Shape{2, 2, 6}));
  expect_same_tree(jit(jacfwd(f))(x), want, 1e-5, 1e-6);
  expect_same_tree(jit(jacrev(f))(x), jacrev(f)(x), 1e-5, 1e-6);
  expect_same_tree(jacfwd(jit(f))(x), want, 1e-5, 1e-6);
  expect_same_tree(jacrev(jit(f))(x), jacrev(f)(x), 1e-5, 1e-6);
}

// ---- vmap ----

TEST(JitCompose, VmapOfJitMatchesALoop) {
  auto f = [](const Array& x, const Array& y) { return jnp::sum(jnp::sin(x) * y) + jnp::max(x); };
  auto jf = jit(f);
  Array xs = randn({5, 7}, DType::Float32, 11), ys = randn({5, 7}, DType::Float32, 12);
  Array got = vmap(jf)(xs, ys);
  ASSERT_EQ(got.shape(), (Shape{5}));
  for (int64_t i = 0; i < 5; ++i) {
    Array xi = xs(i), yi = ys(i);
    EXPECT_NEAR(got(i).item<float>(), f(xi, yi).item<float>(), 1e-5) << i;
  }
  // Batch axis 1 for x, y not mapped.
  Array y = randn({5}, DType::Float32, 13);
  Array got1 = vmap(jf, {.in_axes = {1, not_mapped}})(xs, y);
  ASSERT_EQ(got1.shape(), (Shape{7}));
  for (int64_t j = 0; j < 7; ++j) EXPECT_NEAR(got1(j).item<float>(), f(xs(Slice{}, j), y).item<float>(), 1e-5) << j;
  // vmap of vmap of jit.
  Array x3 = randn({2, 3, 7}, DType::Float32, 14), y3 = randn({2, 3, 7}, DType::Float32, 15);
  Array got3 = vmap(vmap(jf))(x3, y3);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      EXPECT_NEAR(got3(i, j).item<float>(), f(x3(i, j), y3(i, j)).item<float>(), 1e-5) << i << "," << j;
}

TEST(JitCompose, JitOfVmap) {
  auto row = [](const Array& r, const Array& w) { return jnp::tanh(jnp::dot(r, w)) + jnp::sum(r); };
  Array xs = randn({6, 4}, DType::Float32, 16), w = randn({4}, DType::Float32, 17);
  auto batched = vmap(row, {.in_axes = {0, not_mapped}});
  expect_same_tree(jit(batched)(xs, w), batched(xs, w), 1e-5, 1e-6);
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_NEAR(jit(batched)(xs, w)(i).item<float>(), row(xs(i), w).item<float>(), 1e-5) << i;
}

TEST(JitCompose, JitOfVmapOfGrad) {
  Array xs = randn({8, 5}, DType::Float32, 18);
  auto per_row = vmap(grad(smooth));
  Array want = per_row(xs);
  expect_same_tree(jit(per_row)(xs), want, 1e-5, 1e-6);
  expect_same_tree(vmap(jit(grad(smooth)))(xs), want, 1e-5, 1e-6);
  expect_same_tree(vmap(grad(jit(smooth)))(xs), want, 1e-5, 1e-6);
  for (int64_t i = 0; i < 8; ++i) EXPECT_ALLCLOSE(want(i), grad(smooth)(xs(i)), 1e-5, 1e-6);
}

TEST(JitCompose, VmapOfJitWithOutAxesAndSeveralOutputs) {
  auto f = jit([](const Array& x) { return std::make_pair(jnp::cumsum(x) * 2, jnp::sum(x * x)); });
  Array xs = randn({4, 6}, DType::Float32, 30);
  auto [c, s] = vmap(f, {.out_axes = {1, 0}})(xs);
  ASSERT_EQ(c.shape(), (Shape{6, 4}));
  ASSERT_EQ(s.shape(), (Shape{4}));
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_ALLCLOSE(c(Slice{}, i), jnp::cumsum(xs(i)) * 2, 1e-5, 1e-6);
    EXPECT_NEAR(s(i).item<float>(), jnp::sum(xs(i) * xs(i)).item<float>(), 1e-5);
  }
}

// A jitted function created inside a transformed one, closing over the outer traced
// value: the captured tracer is a constant of the program, and derivatives and batching
// flow through it.
TEST(JitCompose, JitClosingOverAnOuterTracer) {
  auto outer = [](const Array& x) {
    auto inner = jit([x](const Array& y) { return jnp::sin(x * y); });
    return inner(lax::convert_element_type(Array(2.0), x.dtype()));
  };
  for (double v : {0.3, -1.2}) {
    Array x = lax::convert_element_type(Array(v), DType::Float64);
    EXPECT_NEAR(outer(x).item<double>(), std::sin(2 * v), 1e-12);
    EXPECT_NEAR(grad(outer)(x).item<double>(), 2 * std::cos(2 * v), 1e-12);
    EXPECT_NEAR(grad(grad(outer))(x).item<double>(), -4 * std::sin(2 * v), 1e-12);
  }
  Array xs = randn({5}, DType::Float32, 31);
  Array got = vmap(outer)(xs);
  for (int64_t i = 0; i < 5; ++i) EXPECT_NEAR(got(i).item<float>(), std::sin(2 * xs(i).item<float>()), 1e-6);
  EXPECT_ALLCLOSE(jit(vmap(grad(outer)))(xs), 2 * jnp::cos(2 * xs), 1e-5, 1e-6);
}

TEST(JitCompose, GradWithAuxOfJit) {
  auto f = jit([](const Array& x) { return std::make_pair(jnp::sum(jnp::exp(x)), jnp::max(x)); });
  Array x = randn({7}, DType::Float32, 32);
  auto [g, aux] = grad(f, has_aux)(x);
  EXPECT_ALLCLOSE(g, jnp::exp(x), 1e-6, 1e-6);
  EXPECT_ALLCLOSE(aux, jnp::max(x), 0, 0);
  auto [va, g2] = value_and_grad(f, has_aux)(x);
  EXPECT_ALLCLOSE(va.first, jnp::sum(jnp::exp(x)), 1e-5, 1e-6);
  EXPECT_ALLCLOSE(g2, jnp::exp(x), 1e-6, 1e-6);
}

// ---- jit inside jit ----

TEST(JitCompose, NestedJitIsInlined) {
  auto inner = jit([](const Array& x) { return jnp::sin(x) * 2; }, JitOptions{.name = "inner"});
  auto outer = jit([inner](const Array& x) { return inner(x) + inner(x * 3); }, JitOptions{.name = "outer"});
  Array x = randn({33}, DType::Float32, 19);
  Array want = jnp::sin(x) * 2 + jnp::sin(x * 3) * 2;
  EXPECT_ALLCLOSE(outer(x), want, 1e-5, 1e-6);
  auto lowered = outer.lower(x);
  std::string traced = lowered.traced_text(), optimized = lowered.as_text();
  EXPECT_TRUE(contains(traced, "jit[")) << traced;  // the nested call is one equation when traced
  EXPECT_TRUE(contains(traced, "name='inner'")) << traced;
  EXPECT_FALSE(contains(optimized, "jit[")) << optimized;  // and inlined by the optimizer
  EXPECT_TRUE(contains(optimized, "fusion")) << optimized;
  // The inner function keeps its own cache: calling it directly traces once more.
  EXPECT_EQ(inner.cache_size(), 1u);
  EXPECT_ALLCLOSE(inner(x), jnp::sin(x) * 2, 1e-6, 1e-6);
  EXPECT_EQ(inner.cache_size(), 1u);
  // Gradient through both levels.
  auto loss = [outer](const Array& x) { return jnp::sum(outer(x)); };
  Array g = grad(loss)(x);
  EXPECT_ALLCLOSE(g, 2 * jnp::cos(x) + 6 * jnp::cos(x * 3), 1e-5, 1e-5);
  EXPECT_ALLCLOSE(jit(grad(loss))(x), g, 1e-5, 1e-6);
}

TEST(JitCompose, NamedCallInsideJitIsInlined) {
  auto inner = named_call([](const Array& x) { return jnp::exp(x) - 1; }, "expm1ish");
  auto outer = jit([inner](const Array& x) { return inner(x) * inner(-x); });
  Array x = randn({10}, DType::Float64, 20);
  EXPECT_ALLCLOSE(outer(x), (jnp::exp(x) - 1) * (jnp::exp(-x) - 1), 1e-12, 1e-12);
  std::string optimized = outer.lower(x).as_text();
  EXPECT_FALSE(contains(optimized, "closed_call")) << optimized;
}

// ---- training ----

struct Mlp {
  Array w1, b1, w2, b2;
};
JX_TREE_NODE(Mlp, w1, b1, w2, b2)

Array mlp_loss(const Mlp& p, const Array& x, const Array& y) {
  Array h = jnp::tanh(jnp::matmul(x, p.w1) + p.b1);
  Array out = jnp::matmul(h, p.w2) + p.b2;
  Array err = out - y;
  return jnp::mean(err * err);
}

Mlp init_mlp(uint32_t seed) {
  return Mlp{randn({3, 16}, DType::Float32, seed, 0.5), randn({16}, DType::Float32, seed + 1, 0.1),
             randn({16, 2}, DType::Float32, seed + 2, 0.5), randn({2}, DType::Float32, seed + 3, 0.1)};
}

TEST(JitCompose, ValueAndGradOfJittedMlpLoss) {
  Mlp p = init_mlp(21);
  Array x = randn({32, 3}, DType::Float32, 25), y = randn({32, 2}, DType::Float32, 26);
  auto [value, grads] = value_and_grad(jit(mlp_loss))(p, x, y);
  auto [want_value, want_grads] = value_and_grad(mlp_loss)(p, x, y);
  EXPECT_ALLCLOSE(value, want_value, 1e-5, 1e-6);
  expect_same_tree(grads, want_grads, 1e-4, 1e-6);
  auto [v2, g2] = jit(value_and_grad(mlp_loss))(p, x, y);
  EXPECT_ALLCLOSE(v2, want_value, 1e-5, 1e-6);
  expect_same_tree(g2, want_grads, 1e-4, 1e-6);
}

TEST(JitCompose, JittedTrainingStepMatchesEager) {
  auto step = [](const Mlp& p, const Array& x, const Array& y) {
    Mlp g = grad(mlp_loss)(p, x, y);
    return tree::map([](const Array& w, const Array& dw) { return w - 0.05 * dw; }, p, g);
  };
  int traces = 0;
  auto jstep = jit([&](const Mlp& p, const Array& x, const Array& y) {
    ++traces;
    return step(p, x, y);
  });
  Array x = randn({64, 3}, DType::Float32, 27);
  Array y = jnp::stack({jnp::sin(x(Slice{}, 0)) + x(Slice{}, 1), x(Slice{}, 2) * 0.5}, 1);
  Mlp eager = init_mlp(28), jitted = eager;
  for (int i = 0; i < 20; ++i) {
    eager = step(eager, x, y);
    jitted = jstep(jitted, x, y);
  }
  EXPECT_EQ(traces, 1);
  expect_same_tree(jitted, eager, 1e-4, 1e-5);
  // Training did something.
  EXPECT_LT(mlp_loss(jitted, x, y).item<float>(), mlp_loss(init_mlp(28), x, y).item<float>());
}

}  // namespace
}  // namespace jx
