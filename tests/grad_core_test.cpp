// Core of the transformations: grad/jvp/vjp/vmap on the first rules, perturbation
// confusion, concrete values under tracing.
#include <cmath>

#include "jx/jx.h"
#include "test_util.h"

namespace jx {
namespace {
namespace jnp = jx::numpy;

TEST(GradCore, SinOfScalar) {
  auto f = [](const Array& x) { return lax::sin(x); };
  Array g = grad(f)(Array(0.5f));
  EXPECT_NEAR(g.item<float>(), std::cos(0.5f), 1e-6);
  Array gg = grad(grad(f))(Array(0.5f));
  EXPECT_NEAR(gg.item<float>(), -std::sin(0.5f), 1e-6);
  Array ggg = grad(grad(grad(f)))(Array(0.5f));
  EXPECT_NEAR(ggg.item<float>(), -std::cos(0.5f), 1e-6);
}

TEST(GradCore, PerturbationConfusion) {
  // d/dx [x * d/dy (x + y)] = 1 for every x.
  auto outer = [](const Array& x) {
    auto inner = [&](const Array& y) { return lax::add(x, y); };
    return lax::mul(x, grad(inner)(Array(3.0f)));
  };
  EXPECT_NEAR(grad(outer)(Array(2.0f)).item<float>(), 1.0f, 1e-6);
}

TEST(GradCore, JvpAndVjpOfSumSin) {
  Array x = jnp::arange(4.0f);
  auto f = [](const Array& v) { return lax::reduce_sum(lax::mul(lax::sin(v), v), {0}); };
  auto [y, ty] = jvp(f, x, jnp::ones({4}));
  float want = 0, dwant = 0;
  for (int i = 0; i < 4; ++i) {
    want += std::sin(float(i)) * i;
    dwant += std::cos(float(i)) * i + std::sin(float(i));
  }
  EXPECT_NEAR(y.item<float>(), want, 1e-5);
  EXPECT_NEAR(ty.item<float>(), dwant, 1e-5);
  auto [y2, pullback] = vjp(f, x);
  auto [gx] = pullback(Array(1.0f));
  auto gv = gx.to_vector<float>();
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(gv[i], std::cos(float(i)) * i + std::sin(float(i)), 1e-5);
}

TEST(GradCore, VmapOfGrad) {
  auto f = [](const Array& x) { return lax::mul(lax::sin(x), x); };
  Array xs = jnp::arange(5.0f);
  Array g = vmap(grad(f))(xs);
  auto gv = g.to_vector<float>();
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(gv[i], std::cos(float(i)) * i + std::sin(float(i)), 1e-5);
}

TEST(GradCore, ControlFlowOnConcreteValuesUnderGrad) {
  auto f = [](const Array& x) { return (x > 0) ? lax::sin(x) : lax::cos(x); };
  EXPECT_NEAR(grad(f)(Array(1.0f)).item<float>(), std::cos(1.0f), 1e-6);
  EXPECT_NEAR(grad(f)(Array(-1.0f)).item<float>(), -std::sin(-1.0f), 1e-6);
  EXPECT_JX_ERROR(vmap(f)(jnp::ones({3})), "[bool]", "vmap", "bool[]", "jnp::where");
}

TEST(GradCore, MakeJaxpr) {
  auto f = [](const Array& x) { return lax::reduce_sum(lax::mul(lax::sin(x), x), {0}); };
  ClosedJaxpr j = make_jaxpr(f)(jnp::ones({3}));
  EXPECT_EQ(j.jaxpr.eqns.size(), 3u);
  std::string text = j.str();
  EXPECT_NE(text.find("sin"), std::string::npos) << text;
}

}  // namespace
}  // namespace jx

namespace jx {
namespace {
namespace jnp = jx::numpy;

TEST(GradCore, NamedCallNestsAProgramAndTransformsThroughIt) {
  auto inner = [](const Array& x) { return lax::mul(lax::sin(x), x); };
  auto outer = [&](const Array& x) { return lax::reduce_sum(named_call(inner, "inner")(x), {0}); };
  Array x = jnp::arange(3.0f);
  ClosedJaxpr j = make_jaxpr(outer)(x);
  std::string text = j.str();
  EXPECT_NE(text.find("closed_call"), std::string::npos) << text;
  EXPECT_NE(text.find("name='inner'"), std::string::npos) << text;
  Jaxpr parsed = parse_jaxpr(text);
  EXPECT_EQ(parsed.str(), text);
  EXPECT_ALLCLOSE(eval_jaxpr(j, std::vector<Array>{x})[0], outer(x));
  Array g = grad(outer)(x);
  auto gv = g.to_vector<float>();
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(gv[i], std::cos(float(i)) * i + std::sin(float(i)), 1e-5);
  Array v = vmap(inner)(x);
  EXPECT_ALLCLOSE(v, inner(x));
}

}  // namespace
}  // namespace jx
