// Composition of the transformations (grad of grad, vmap of grad, grad of vmap, jacobians,
// pytrees of parameters) and their error messages. Oracles: closed-form derivatives,
// finite differences and C++ loops, never the transformation under test.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "grad_test_util.h"
#include "jx/jx.h"
#include "jx/test_util.h"
#include "test_util.h"

namespace jx {
namespace {
namespace jnp = jx::numpy;

Array f32(std::vector<double> v) { return lax::convert_element_type(Array(v), DType::Float32); }
Array scalar32(double v) { return lax::convert_element_type(Array(v), DType::Float32); }
Array f32(std::vector<double> v, Shape shape) { return lax::reshape(f32(std::move(v)), shape); }

// ---- higher order ----

TEST(Transforms, GradOfGradOfGradMatchesClosedForm) {
  auto f = [](const Array& x) { return x * x * x * x; };
  for (double v : {-1.5, 0.5, 2.0}) {
    Array x = Array(static_cast<float>(v));
    EXPECT_NEAR(grad(f)(x).item<double>(), 4 * v * v * v, 1e-4);
    EXPECT_NEAR(grad(grad(f))(x).item<double>(), 12 * v * v, 1e-4);
    EXPECT_NEAR(grad(grad(grad(f)))(x).item<double>(), 24 * v, 1e-4);
  }
  // exp(sin(x)): third derivative by hand.
  auto g = [](const Array& x) { return jnp::exp(jnp::sin(x)); };
  double x = 0.7, s = std::sin(x), c = std::cos(x), e = std::exp(s);
  double d3 = e * (c * c * c - 3 * s * c - c);
  EXPECT_NEAR(grad(grad(grad(g)))(Array(x)).item<double>(), d3, 1e-10);
}

TEST(Transforms, SinOverXExample) {
  auto f = [](const Array& x) { return jnp::sin(x) / x; };
  const double want[] = {NAN,         -0.30116874, -0.43539774, -0.3456775,  -0.11611074,
                         0.09508941,  0.16778992,  0.09429243,  -0.03364623, -0.10632458};
  for (int i = 0; i < 10; ++i) {
    Array g = grad(f)(Array(static_cast<float>(i)));
    EXPECT_EQ(g.dtype(), DType::Float32);
    float got = g.item<float>();
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got)) << "x = " << i << " gave " << got;
    } else {
      EXPECT_NEAR(got, want[i], 1e-6 * std::abs(want[i]) + 1e-7) << "x = " << i;
    }
  }
  EXPECT_NEAR(grad(grad(f))(Array(1.0f)).item<float>(), -0.23913354, 1e-6);
}

TEST(Transforms, PerturbationConfusion) {
  // d/dx [x * d/dy (x + y)] = 1: the inner derivative must not see the outer perturbation.
  auto outer = [](const Array& x) {
    auto inner = [&](const Array& y) { return x + y; };
    return x * grad(inner)(Array(1.0f));
  };
  for (float x : {-2.0f, 0.0f, 0.5f, 3.0f}) EXPECT_NEAR(grad(outer)(Array(x)).item<float>(), 1.0f, 1e-6) << x;
  // And with the inner derivative depending on x: d/dx [d/dy (x*y)] = d/dx x = 1.
  auto outer2 = [](const Array& x) { return grad([&](const Array& y) { return x * y; })(Array(2.0f)); };
  EXPECT_NEAR(grad(outer2)(Array(0.3f)).item<float>(), 1.0f, 1e-6);
}

// ---- vmap and grad together ----

TEST(Transforms, VmapOfGradMatchesALoop) {
  auto f = [](const Array& x) { return jnp::sum(jnp::sin(x) * x * x); };
  std::vector<double> data{0.1, -0.4, 1.3, 2.2, -1.0, 0.7, 0.05, 3.0, -2.5, 1.1, 0.0, 0.9};
  Array xs = f32(data, {3, 4});
  Array g = vmap(grad(f))(xs);
  ASSERT_EQ(g.shape(), (Shape{3, 4}));
  std::vector<double> want;
  for (double x : data) want.push_back(std::cos(x) * x * x + 2 * x * std::sin(x));
  EXPECT_ALLCLOSE(g, f32(want, {3, 4}), 1e-5, 1e-6);
  // in_axes on the last axis: the batch is the columns.
  Array gc = vmap(grad(f), {.in_axes = {1}})(xs);
  EXPECT_ALLCLOSE(gc, jnp::transpose(f32(want, {3, 4})), 1e-5, 1e-6);
}

TEST(Transforms, GradOfVmap) {
  // sum over rows of (sum of the row)^2: d/dx_ij = 2 * rowsum_i.
  auto row = [](const Array& r) { return jnp::sum(r) * jnp::sum(r); };
  auto total = [&](const Array& x) { return jnp::sum(vmap(row)(x)); };
  std::vector<double> data{1, 2, 3, -1, 0.5, 0.25};
  Array g = grad(total)(f32(data, {2, 3}));
  EXPECT_ALLCLOSE(g, f32({12, 12, 12, -0.5, -0.5, -0.5}, {2, 3}));
}

TEST(Transforms, VmapOfVmap) {
  auto f = [](const Array& a, const Array& b) { return jnp::sum(a * b) + jnp::sin(a(0)); };
  std::vector<double> av, bv;
  for (int i = 0; i < 24; ++i) av.push_back(0.1 * i - 1), bv.push_back(std::cos(i));
  Array a = f32(av, {2, 3, 4}), b = f32(bv, {2, 3, 4});
  Array out = vmap(vmap(f))(a, b);
  ASSERT_EQ(out.shape(), (Shape{2, 3}));
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += av[(i * 3 + j) * 4 + k] * bv[(i * 3 + j) * 4 + k];
      want.push_back(s + std::sin(av[(i * 3 + j) * 4]));
    }
  EXPECT_ALLCLOSE(out, f32(want, {2, 3}), 1e-5, 1e-5);
  // The inner vmap maps only b: out[i][j] = a[i, 0, :] . b[i, j, :].
  auto g = [](const Array& a, const Array& b) { return jnp::sum(a * b); };
  Array o2 = vmap(vmap(g, {.in_axes = {not_mapped, 0}}), {.in_axes = {0, 0}})(a(Slice{}, 0), b);
  ASSERT_EQ(o2.shape(), (Shape{2, 3}));
  std::vector<double> want2;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += av[(i * 3 + 0) * 4 + k] * bv[(i * 3 + j) * 4 + k];
      want2.push_back(s);
    }
  EXPECT_ALLCLOSE(o2, f32(want2, {2, 3}), 1e-5, 1e-5);
}

// ---- jacobians ----

// R^3 -> R^2: (x0 * x1, sin(x2) + x0^2).
Array vector_fn(const Array& x) { return jnp::stack({x(0) * x(1), jnp::sin(x(2)) + x(0) * x(0)}); }

TEST(Transforms, JacfwdEqualsJacrevAndFiniteDifferences) {
  Array x = Array(std::vector<double>{0.5, -1.5, 0.8});
  Array jf = jacfwd(vector_fn)(x);
  Array jr = jacrev(vector_fn)(x);
  ASSERT_EQ(jf.shape(), (Shape{2, 3}));
  ASSERT_EQ(jr.shape(), (Shape{2, 3}));
  Array closed = Array(std::vector<double>{-1.5, 0.5, 0, 1.0, 0, std::cos(0.8)}).reshape({2, 3});
  EXPECT_ALLCLOSE(jf, closed, 1e-12, 1e-12);
  EXPECT_ALLCLOSE(jr, closed, 1e-12, 1e-12);
  // Central differences, column by column.
  std::vector<double> xv{0.5, -1.5, 0.8}, fd(6);
  for (int j = 0; j < 3; ++j) {
    auto p = xv, m = xv;
    p[j] += 1e-6, m[j] -= 1e-6;
    auto yp = vector_fn(Array(p)).to_vector<double>(), ym = vector_fn(Array(m)).to_vector<double>();
    for (int i = 0; i < 2; ++i) fd[i * 3 + j] = (yp[i] - ym[i]) / 2e-6;
  }
  EXPECT_ALLCLOSE(jf, Array(fd).reshape({2, 3}), 1e-6, 1e-8);
}

TEST(Transforms, HessianOfQuadraticForm) {
  std::vector<double> av{1, 2, 0.5, -1, 3, 0.25, 4, 0, -2};
  Array a = Array(av).reshape({3, 3});
  auto q = [&](const Array& x) { return jnp::dot(x, jnp::matmul(a, x)); };
  Array h = hessian(q)(Array(std::vector<double>{0.3, -0.7, 1.1}));
  ASSERT_EQ(h.shape(), (Shape{3, 3}));
  std::vector<double> want(9);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) want[i * 3 + j] = av[i * 3 + j] + av[j * 3 + i];
  EXPECT_ALLCLOSE(h, Array(want).reshape({3, 3}), 1e-12, 1e-12);
}

// ---- argnums, has_aux, pytrees ----

TEST(Transforms, ValueAndGradWithArgnumsAndAux) {
  auto f = [](const Array& x, const Array& y) {
    Array v = jnp::sum(x * y * y);
    return std::make_pair(v, jnp::max(x));
  };
  Array x = f32({1, 2, 3}), y = f32({0.5, -1, 2});
  auto [value_aux, grads] = value_and_grad(f, argnums<0, 1>, has_aux)(x, y);
  auto [value, aux] = value_aux;
  EXPECT_NEAR(value.item<float>(), 0.25f + 2.0f + 12.0f, 1e-5);
  EXPECT_NEAR(aux.item<float>(), 3.0f, 0);
  auto [gx, gy] = grads;
  EXPECT_ALLCLOSE(gx, f32({0.25, 1, 4}));                 // y^2
  EXPECT_ALLCLOSE(gy, f32({1.0, -4, 12}));                // 2xy
  // grad with has_aux returns (grad, aux).
  auto [g1, aux1] = grad(f, has_aux)(x, y);
  EXPECT_ALLCLOSE(g1, f32({0.25, 1, 4}));
  EXPECT_NEAR(aux1.item<float>(), 3.0f, 0);
  // argnums<1> alone.
  EXPECT_ALLCLOSE(grad([](const Array& a, const Array& b) { return jnp::sum(a * b * b); }, argnums<1>)(x, y),
                  f32({1.0, -4, 12}));
}

struct Linear {
  Array w, b;
};
JX_TREE_NODE(Linear, w, b)

TEST(Transforms, GradOfRegisteredStructAndUpdateStep) {
  // loss = sum((x w + b - t)^2) for one input row x.
  Array x = f32({1, 2}), t = f32({0.5, -1});
  Linear params{f32({0.1, 0.2, -0.3, 0.4}, {2, 2}), f32({0.0, 0.5})};
  auto loss = [&](const Linear& p) {
    Array pred = jnp::matmul(x, p.w) + p.b;
    Array d = pred - t;
    return jnp::sum(d * d);
  };
  Linear grads = grad(loss)(params);
  // Closed form: r = x w + b - t; dL/db = 2r; dL/dw[i][j] = 2 x[i] r[j].
  std::vector<double> w{0.1, 0.2, -0.3, 0.4};
  double r0 = 1 * w[0] + 2 * w[2] + 0.0 - 0.5, r1 = 1 * w[1] + 2 * w[3] + 0.5 + 1;
  EXPECT_ALLCLOSE(grads.b, f32({2 * r0, 2 * r1}), 1e-5, 1e-6);
  EXPECT_ALLCLOSE(grads.w, f32({2 * r0, 2 * r1, 4 * r0, 4 * r1}, {2, 2}), 1e-5, 1e-6);
  double before = loss(params).item<double>();
  params = tree::map([](const Array& p, const Array& g) { return p - 0.1 * g; }, params, grads);
  EXPECT_EQ(params.w.dtype(), DType::Float32);
  EXPECT_ALLCLOSE(params.b, f32({0.0 - 0.2 * r0, 0.5 - 0.2 * r1}), 1e-5, 1e-6);
  EXPECT_LT(loss(params).item<double>(), before);
}

TEST(Transforms, GradOfMapAndVectorArguments) {
  std::map<std::string, Array> m{{"a", f32({1, 2})}, {"b", Array(3.0f)}};
  auto fm = [](const std::map<std::string, Array>& p) { return jnp::sum(p.at("a") * p.at("a")) * p.at("b"); };
  std::map<std::string, Array> gm = grad(fm)(m);
  ASSERT_EQ(gm.size(), 2u);
  EXPECT_ALLCLOSE(gm.at("a"), f32({6, 12}));
  EXPECT_NEAR(gm.at("b").item<float>(), 5.0f, 1e-6);
  std::vector<Array> v{f32({1, -1}), f32({2, 0.5})};
  auto fv = [](const std::vector<Array>& p) { return jnp::sum(p[0] * p[1]); };
  std::vector<Array> gv = grad(fv)(v);
  ASSERT_EQ(gv.size(), 2u);
  EXPECT_ALLCLOSE(gv[0], f32({2, 0.5}));
  EXPECT_ALLCLOSE(gv[1], f32({1, -1}));
}

// ---- linearize, jvp, vjp ----

TEST(Transforms, LinearizeAppliedTwiceMatchesJvp) {
  auto f = [](const Array& x) { return jnp::sin(x) * jnp::exp(x); };
  Array x = f32({0.2, -0.5, 1.0});
  auto [y, lin] = linearize(f, x);
  Array t1 = f32({1, 0, -1}), t2 = f32({0.5, 2, 0.25});
  for (const Array& t : {t1, t2}) {
    auto [y2, jt] = jvp(f, x, t);
    EXPECT_ALLCLOSE(lin(t), jt, 1e-6, 1e-6);
    EXPECT_ALLCLOSE(y, y2);
    // Closed form: (cos + sin) e^x t.
    std::vector<double> xv{0.2, -0.5, 1.0};
    auto tv = t.to_vector<double>();
    std::vector<double> want;
    for (int i = 0; i < 3; ++i) want.push_back((std::cos(xv[i]) + std::sin(xv[i])) * std::exp(xv[i]) * tv[i]);
    EXPECT_ALLCLOSE(jt, f32(want), 1e-5, 1e-6);
  }
}

TEST(Transforms, VjpWithTupleOutput) {
  auto f = [](const Array& x) { return std::make_tuple(x * x, jnp::sum(jnp::sin(x))); };
  Array x = f32({0.3, -1.0});
  auto [out, pullback] = vjp(f, x);
  EXPECT_ALLCLOSE(std::get<0>(out), f32({0.09, 1.0}));
  auto [gx] = pullback(std::make_tuple(f32({1, 2}), scalar32(3.0)));
  // 2x * c0 + cos(x) * c1
  EXPECT_ALLCLOSE(gx, f32({0.6 + 3 * std::cos(0.3), -4.0 + 3 * std::cos(-1.0)}), 1e-6, 1e-6);
  EXPECT_JX_ERROR(pullback(f32({1, 2})), "[vjp]", "structure");
}

TEST(Transforms, SymbolicZeros) {
  auto f = [](const Array& x, const Array& y) { return jnp::sum(jnp::sin(y)); };
  Array x = f32({1, 2}), y = f32({0.5, 0.25});
  EXPECT_ALLCLOSE(grad(f)(x, y), f32({0, 0}));
  // The gradient with respect to x needs no derivative of sin: no cos is staged.
  ClosedJaxpr j = make_jaxpr(grad(f))(x, y);
  EXPECT_EQ(j.str().find("cos"), std::string::npos) << j.str();
  // A constant function.
  EXPECT_ALLCLOSE(grad([](const Array& x) { return Array(2.0f); })(Array(1.0f)), Array(0.0f), 0, 0, false);
}

TEST(Transforms, StopGradient) {
  auto f = [](const Array& x) { return x * stop_gradient(x); };
  for (float v : {-1.0f, 0.5f, 3.0f}) EXPECT_NEAR(grad(f)(Array(v)).item<float>(), v, 1e-6);
  auto g = [](const Array& x) { return jnp::sum(stop_gradient(jnp::sin(x)) + x); };
  EXPECT_ALLCLOSE(grad(g)(f32({1, 2})), f32({1, 1}));
}

// ---- value-dependent control flow ----

TEST(Transforms, ControlFlowUnderGradAndConcretizationErrors) {
  auto f = [](const Array& x) { return (x > 0) ? x * x : -x * 3.0; };
  EXPECT_NEAR(grad(f)(Array(2.0f)).item<float>(), 4.0f, 1e-6);
  EXPECT_NEAR(grad(f)(Array(-2.0f)).item<float>(), -3.0f, 1e-6);
  EXPECT_JX_ERROR(vmap(f)(f32({1, -1})), "[bool]", "vmap", "jnp::where", "select");
  EXPECT_JX_ERROR(make_jaxpr(f)(Array(1.0f)), "[bool]", "make_jaxpr", "jnp::where", "select");
  // The jnp::where form works under all of them.
  auto w = [](const Array& x) { return jnp::where(x > 0, x * x, -x * 3.0); };
  EXPECT_ALLCLOSE(vmap(grad(w))(f32({2, -2})), f32({4, -3}));
}

// ---- errors ----

TEST(Transforms, Errors) {
  EXPECT_JX_ERROR(grad([](const Array& x) { return x * 2.0; })(f32({1, 2, 3})), "[grad]", "scalar", "f32[3]");
  EXPECT_JX_ERROR(grad([](const Array& x) { return jnp::sum(x); })(Array(std::vector<int32_t>{1, 2})), "[grad]",
                  "i32[2]", "floating");
  EXPECT_JX_ERROR(vmap([](const Array& a, const Array& b) { return a + b; })(f32({1, 2}), f32({1, 2, 3})), "[vmap]",
                  "inconsistent sizes");
  EXPECT_JX_ERROR(vmap([](const Array& a) { return a * 2.0; }, {.out_axes = {not_mapped}})(f32({1, 2})), "[vmap]",
                  "not_mapped", "depends on the batch");
  EXPECT_JX_ERROR(jvp([](const Array& x) { return jnp::sin(x); }, f32({1, 2}), f32({1, 2, 3})), "[jvp]", "tangent",
                  "f32[3]", "f32[2]");
}

// DISABLED: crashes (use after free). A tracer keeps a raw Trace*, but vmap_flat and
// make_jaxpr_flat own their trace on the stack, so t->alive() reads a destroyed object
// once the transformation returned. Enable once tracers share ownership of a liveness flag.
TEST(Transforms, LeakedTracer) {
  Array leaked;
  vmap([&](const Array& x) {
    leaked = x;
    return x * 2.0;
  })(f32({1, 2}));
  EXPECT_JX_ERROR(leaked.item<float>(), "leaked", "vmap");
  Array staged;
  make_jaxpr([&](const Array& x) {
    staged = x;
    return x;
  })(Array(1.0f));
  EXPECT_JX_ERROR(jnp::sin(staged), "[sin]", "leaked", "make_jaxpr");
  // A leaked tracer meeting a later trace (maybe built at the same address) is a constant to it.
  EXPECT_JX_ERROR(vmap([&](const Array& x) { return x + leaked; })(f32({1, 2})), "leaked", "vmap");
}

// ---- check_grads on compositions ----

TEST(Transforms, CheckGradsOfCompositions) {
  Array x = f32({0.3, -0.8, 1.2});
  JX_EXPECT_GRADS_OK([](const Array& a) { return vmap([](const Array& r) { return jnp::sin(r) * r; })(a); },
                     std::tuple{x}, {.order = 2});
  JX_EXPECT_GRADS_OK([](const Array& a) { return vmap(grad([](const Array& r) { return jnp::sin(r) * r; }))(a); },
                     std::tuple{x}, {.order = 2});
}

}  // namespace
}  // namespace jx
