// The transformation API a JAX user reaches for first (issue 9, item 8): jacfwd / jacrev /
// hessian over several argnums and pytree arguments and outputs, has_aux for jvp, vjp,
// linearize and the jacobians, random::fold_in with a traced integer, block_until_ready.
// Oracles: central finite differences in float64, jacfwd == jacrev, the non-aux forms, a
// loop of concrete calls for vmap, and values from jax 0.10 (partitionable threefry).
// The compile-time misuse checks live in tests/compile_fail (a ctest that expects each
// static_assert message).
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "jx/jit.h"
#include "jx/random.h"
#include "test_util.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;
namespace rnd = jx::random;

Array f64(std::vector<double> v, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return Array(v, shape);
}

// d out / d x by central differences: shape out.shape + x.shape, float64.
template <class Fn>
Array fd_jacobian(const Fn& fn, const Array& x, double h = 1e-6) {
  std::vector<double> xv = x.to_vector<double>();
  Array y0 = fn(x);
  auto n = static_cast<size_t>(x.size()), m = static_cast<size_t>(y0.size());
  std::vector<double> jac(m * n);
  for (size_t k = 0; k < n; ++k) {
    std::vector<double> plus = xv, minus = xv;
    plus[k] += h;
    minus[k] -= h;
    std::vector<double> fp = fn(Array(plus, x.shape())).template to_vector<double>();
    std::vector<double> fm = fn(Array(minus, x.shape())).template to_vector<double>();
    for (size_t o = 0; o < m; ++o) jac[o * n + k] = (fp[o] - fm[o]) / (2 * h);
  }
  Shape shape = y0.shape();
  shape.insert(shape.end(), x.shape().begin(), x.shape().end());
  return Array(jac, shape);
}

// ---- the tree pieces jacobians are built from ----

TEST(TransformsApi, TreeComposeAndWithLeaves) {
  auto outer = tree::structure(std::make_tuple(Array(1.0), std::vector<Array>{Array(2.0), Array(3.0)}));
  auto inner = tree::structure(std::map<std::string, Array>{{"a", Array(1.0)}, {"b", Array(2.0)}});
  tree::TreeDef c = tree::compose(outer, inner);
  EXPECT_EQ(c.str(), "PyTreeDef(({'a': *, 'b': *}, [{'a': *, 'b': *}, {'a': *, 'b': *}]))");
  EXPECT_EQ(c.num_leaves(), 6u);
  EXPECT_EQ(tree::compose(outer, tree::TreeDef()).str(), outer.str());  // a leaf inner: the same
  static_assert(std::is_same_v<tree::detail::with_leaves_t<std::vector<double>, std::pair<Array, Array>>,
                               std::vector<std::pair<Array, Array>>>);
  static_assert(std::is_same_v<tree::array_tree_t<std::tuple<float, std::optional<int>>>,
                               std::tuple<Array, std::optional<Array>>>);
}

// ---- jacobians over several argnums ----

// out[i, j] = y[i] * sin(x[j]) + x[j]^2 * y[i]^3: shape (2, 3) from x (3,) and y (2,).
Array two_arg(const Array& x, const Array& y) {
  Array yc = jnp::reshape(y, {2, 1});
  return yc * jnp::sin(x) + x * x * yc * yc * yc;
}

TEST(TransformsApi, JacobiansOverSeveralArgnumsMatchFiniteDifferences) {
  Array x = f64({0.3, -0.7, 1.1}), y = f64({0.5, -1.5});
  auto [fx, fy] = jacfwd(two_arg, argnums<0, 1>)(x, y);
  auto [rx, ry] = jacrev(two_arg, argnums<0, 1>)(x, y);
  ASSERT_EQ(fx.shape(), (Shape{2, 3, 3}));
  ASSERT_EQ(fy.shape(), (Shape{2, 3, 2}));
  EXPECT_ALLCLOSE(rx, fx, 1e-12, 1e-12);
  EXPECT_ALLCLOSE(ry, fy, 1e-12, 1e-12);
  EXPECT_ALLCLOSE(fx, fd_jacobian([&](const Array& a) { return two_arg(a, y); }, x), 1e-6, 1e-6);
  EXPECT_ALLCLOSE(fy, fd_jacobian([&](const Array& b) { return two_arg(x, b); }, y), 1e-6, 1e-6);
  // One argnum: the bare jacobian, as before; argnums<1> differentiates y only.
  EXPECT_ALLCLOSE(jacfwd(two_arg)(x, y), fx, 0, 0);
  EXPECT_ALLCLOSE(jacrev(two_arg, argnums<1>)(x, y), fy, 1e-12, 1e-12);
  // Argument order in argnums is the order of the result.
  auto [gy, gx] = jacfwd(two_arg, argnums<1, 0>)(x, y);
  EXPECT_ALLCLOSE(gy, fy, 0, 0);
  EXPECT_ALLCLOSE(gx, fx, 0, 0);
}

TEST(TransformsApi, JacobianOfTupleOutputIsOutputOuterInputInner) {
  auto f = [](const Array& x, const Array& y) { return std::make_tuple(jnp::sum(x * y), x * 2.0); };
  Array x = f64({1, 2}), y = f64({3, -4});
  auto jf = jacfwd(f, argnums<0, 1>)(x, y);
  auto jr = jacrev(f, argnums<0, 1>)(x, y);
  static_assert(std::is_same_v<decltype(jf), std::tuple<std::tuple<Array, Array>, std::tuple<Array, Array>>>);
  auto [d_sum, d_twice] = jf;
  EXPECT_ALLCLOSE(std::get<0>(d_sum), y, 0, 0);        // d sum(x y) / dx = y, shape () + (2,)
  EXPECT_ALLCLOSE(std::get<1>(d_sum), x, 0, 0);
  EXPECT_ALLCLOSE(std::get<0>(d_twice), f64({2, 0, 0, 2}, {2, 2}), 0, 0);
  EXPECT_ALLCLOSE(std::get<1>(d_twice), f64({0, 0, 0, 0}, {2, 2}), 0, 0);
  auto [r_sum, r_twice] = jr;
  EXPECT_ALLCLOSE(std::get<0>(r_sum), y, 0, 0);
  EXPECT_ALLCLOSE(std::get<1>(r_twice), std::get<1>(d_twice), 0, 0);
}

// ---- pytree arguments and outputs ----

struct Affine {
  Array w, b;
};
JX_TREE_NODE(Affine, w, b)

using Dict = std::map<std::string, Array>;

// {"lin": tanh(w x + b) (2,), "sq": sum(w^2) + b . x ()}.
Dict affine_out(const Affine& p, const Array& x) {
  Array lin = jnp::tanh(jnp::matmul(p.w, x) + p.b);
  return Dict{{"lin", lin}, {"sq", jnp::sum(p.w * p.w) + jnp::dot(p.b, x)}};
}

TEST(TransformsApi, JacobianOfPytreeToPytree) {
  Affine p{f64({0.1, -0.2, 0.3, 0.4}, {2, 2}), f64({0.5, -0.5})};
  Array x = f64({1.5, -2.0});
  auto jf = jacfwd(affine_out)(p, x);
  auto jr = jacrev(affine_out)(p, x);
  static_assert(std::is_same_v<decltype(jf), std::map<std::string, Affine>>);
  ASSERT_EQ(jf.size(), 2u);
  EXPECT_EQ(jf.at("lin").w.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(jf.at("lin").b.shape(), (Shape{2, 2}));
  EXPECT_EQ(jf.at("sq").w.shape(), (Shape{2, 2}));
  EXPECT_EQ(jf.at("sq").b.shape(), (Shape{2}));
  for (const char* k : {"lin", "sq"}) {
    EXPECT_ALLCLOSE(jr.at(k).w, jf.at(k).w, 1e-12, 1e-12) << k;
    EXPECT_ALLCLOSE(jr.at(k).b, jf.at(k).b, 1e-12, 1e-12) << k;
    auto of_w = [&](const Array& w) { return affine_out(Affine{w, p.b}, x).at(k); };
    auto of_b = [&](const Array& b) { return affine_out(Affine{p.w, b}, x).at(k); };
    EXPECT_ALLCLOSE(jf.at(k).w, fd_jacobian(of_w, p.w), 1e-6, 1e-6) << k;
    EXPECT_ALLCLOSE(jf.at(k).b, fd_jacobian(of_b, p.b), 1e-6, 1e-6) << k;
  }
  // Both arguments: each output leaf holds a (params, x) tuple.
  auto j2 = jacrev(affine_out, argnums<0, 1>)(p, x);
  static_assert(std::is_same_v<decltype(j2), std::map<std::string, std::tuple<Affine, Array>>>);
  Array dlin_dx = std::get<1>(j2.at("lin"));
  EXPECT_ALLCLOSE(dlin_dx, fd_jacobian([&](const Array& v) { return affine_out(p, v).at("lin"); }, x), 1e-6, 1e-6);
  EXPECT_ALLCLOSE(std::get<0>(j2.at("sq")).b, jf.at("sq").b, 1e-12, 1e-12);
  // A vector of arrays in, a struct out (with respect to an Array: the struct's fields hold it).
  auto g = [](const std::vector<Array>& v) { return Affine{v[0] * v[1], jnp::sum(v[0])}; };
  std::vector<Array> v{f64({1, 2}), f64({3, 4})};
  auto jv = jacfwd([&](const Array& a) { return g({a, v[1]}); })(v[0]);
  static_assert(std::is_same_v<decltype(jv), Affine>);
  EXPECT_ALLCLOSE(jv.w, f64({3, 0, 0, 4}, {2, 2}), 0, 0);
  EXPECT_ALLCLOSE(jv.b, f64({1, 1}), 0, 0);
}

TEST(TransformsApi, EmptyInputGivesEmptyBlocks) {
  auto f = [](const Array& x, const Array& y) { return jnp::sum(x) * y; };
  Array x = jnp::zeros({0}, DType::Float64), y = f64({1, 2});
  auto [jx_f, jy_f] = jacfwd(f, argnums<0, 1>)(x, y);
  auto [jx_r, jy_r] = jacrev(f, argnums<0, 1>)(x, y);
  EXPECT_EQ(jx_f.shape(), (Shape{2, 0}));
  EXPECT_EQ(jx_r.shape(), (Shape{2, 0}));
  EXPECT_ALLCLOSE(jy_f, f64({0, 0, 0, 0}, {2, 2}), 0, 0);
  EXPECT_ALLCLOSE(jy_r, jy_f, 0, 0);
  auto [e_x, e_y] = jacfwd(f, argnums<0, 1>)(x, jnp::zeros({0}, DType::Float64));
  EXPECT_EQ(e_x.shape(), (Shape{0, 0}));
  EXPECT_EQ(e_y.shape(), (Shape{0, 0}));
}

// ---- hessian ----

TEST(TransformsApi, HessianOverTwoArgumentsIsBlockMatrix) {
  // f(x, y) = sum(sin(x) * y^2) + x . y
  auto f = [](const Array& x, const Array& y) { return jnp::sum(jnp::sin(x) * y * y) + jnp::dot(x, y); };
  Array x = f64({0.3, -0.7, 1.1}), y = f64({0.5, 2.0, -1.0});
  auto h = hessian(f, argnums<0, 1>)(x, y);
  static_assert(std::is_same_v<decltype(h), std::tuple<std::tuple<Array, Array>, std::tuple<Array, Array>>>);
  auto [hx, hy] = h;
  auto [hxx, hxy] = hx;
  auto [hyx, hyy] = hy;
  std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>();
  std::vector<double> want_xx(9, 0.0), want_xy(9, 0.0), want_yy(9, 0.0);
  for (int i = 0; i < 3; ++i) {
    want_xx[i * 4] = -std::sin(xv[i]) * yv[i] * yv[i];
    want_xy[i * 4] = 2 * std::cos(xv[i]) * yv[i] + 1;
    want_yy[i * 4] = 2 * std::sin(xv[i]);
  }
  EXPECT_ALLCLOSE(hxx, f64(want_xx, {3, 3}), 1e-12, 1e-12);
  EXPECT_ALLCLOSE(hxy, f64(want_xy, {3, 3}), 1e-12, 1e-12);
  EXPECT_ALLCLOSE(hyx, jnp::transpose(hxy), 1e-12, 1e-12);
  EXPECT_ALLCLOSE(hyy, f64(want_yy, {3, 3}), 1e-12, 1e-12);
  // Against finite differences of the gradient.
  auto gx = [&](const Array& a) { return grad(f)(a, y); };
  EXPECT_ALLCLOSE(hxx, fd_jacobian(gx, x), 1e-6, 1e-6);
  // A pytree argument: the hessian of a dict is a dict of dicts.
  auto fd = [](const Dict& d) { return jnp::sum(d.at("a") * d.at("a") * d.at("b")); };
  Dict d{{"a", f64({1, 2})}, {"b", f64({3, 4})}};
  auto hd = hessian(fd)(d);
  static_assert(std::is_same_v<decltype(hd), std::map<std::string, std::map<std::string, Array>>>);
  EXPECT_ALLCLOSE(hd.at("a").at("a"), f64({6, 0, 0, 8}, {2, 2}), 1e-12, 1e-12);   // 2 b
  EXPECT_ALLCLOSE(hd.at("a").at("b"), f64({2, 0, 0, 4}, {2, 2}), 1e-12, 1e-12);   // 2 a
  EXPECT_ALLCLOSE(hd.at("b").at("a"), hd.at("a").at("b"), 1e-12, 1e-12);
  EXPECT_ALLCLOSE(hd.at("b").at("b"), f64({0, 0, 0, 0}, {2, 2}), 0, 0);
}

// ---- has_aux ----

// (out, aux) with an integer leaf in aux, which transformations hand back undifferentiated.
std::pair<Array, std::tuple<Array, Array>> with_aux(const Array& x) {
  Array out = jnp::sin(x) * x;
  return {out, std::make_tuple(jnp::cos(x), jnp::argmax(x))};
}
Array without_aux(const Array& x) { return with_aux(x).first; }

void expect_aux(const std::tuple<Array, Array>& aux, const Array& x) {
  EXPECT_ALLCLOSE(std::get<0>(aux), jnp::cos(x), 0, 0);
  EXPECT_EQ(std::get<1>(aux).dtype(), DType::Int32);
  EXPECT_EQ(std::get<1>(aux).item<int32_t>(), 2);
}

TEST(TransformsApi, HasAuxForJvpVjpLinearize) {
  Array x = f64({0.2, -0.5, 1.0}), t = f64({1.0, 2.0, -1.0});
  auto [p0, t0] = jvp(without_aux, x, t);
  auto [p1, t1, aux1] = jvp(with_aux, x, t, has_aux);
  EXPECT_ALLCLOSE(p1, p0, 0, 0);
  EXPECT_ALLCLOSE(t1, t0, 0, 0);
  expect_aux(aux1, x);
  auto [p2, t2, aux2] = jvp(with_aux, std::make_tuple(x), std::make_tuple(t), has_aux);
  EXPECT_ALLCLOSE(t2, t0, 0, 0);
  expect_aux(aux2, x);

  auto [y0, pull0] = vjp(without_aux, x);
  auto [y1, pull1, aux3] = vjp(with_aux, x, has_aux);
  EXPECT_ALLCLOSE(y1, y0, 0, 0);
  expect_aux(aux3, x);
  EXPECT_ALLCLOSE(std::get<0>(pull1(t)), std::get<0>(pull0(t)), 0, 0);
  EXPECT_JX_ERROR(pull1(std::make_pair(t, t)), "[vjp]", "cotangent has structure");

  auto [y2, lin2, aux4] = linearize(with_aux, x, has_aux);
  EXPECT_ALLCLOSE(y2, y0, 0, 0);
  expect_aux(aux4, x);
  EXPECT_ALLCLOSE(lin2(t), t0, 1e-15, 1e-15);

  // Several primals before the option.
  auto f2 = [](const Array& a, const Array& b) { return std::make_pair(a * b, a + b); };
  auto [y3, pull3, aux5] = vjp(f2, x, t, has_aux);
  auto [ca, cb] = pull3(jnp::ones_like(x));
  EXPECT_ALLCLOSE(ca, t, 0, 0);
  EXPECT_ALLCLOSE(cb, x, 0, 0);
  EXPECT_ALLCLOSE(aux5, x + t, 0, 0);
}

TEST(TransformsApi, HasAuxForJacobiansAndHessian) {
  Array x = f64({0.2, -0.5, 1.0});
  Array want = jacfwd(without_aux)(x);
  auto [jf, aux_f] = jacfwd(with_aux, has_aux)(x);
  auto [jr, aux_r] = jacrev(with_aux, has_aux)(x);
  EXPECT_ALLCLOSE(jf, want, 0, 0);
  EXPECT_ALLCLOSE(jr, want, 1e-15, 1e-15);
  expect_aux(aux_f, x);
  expect_aux(aux_r, x);
  // With argnums too, either order of the options.
  auto f2 = [](const Array& a, const Array& b) { return std::make_pair(a * b, jnp::sum(a)); };
  auto [j2, aux2] = jacrev(f2, has_aux, argnums<0, 1>)(x, x);
  EXPECT_ALLCLOSE(std::get<1>(j2), jnp::diag(x), 0, 0);
  EXPECT_NEAR(aux2.item<double>(), 0.7, 1e-15);
  auto [j3, aux3] = jacfwd(f2, argnums<1>, has_aux)(x, x);
  EXPECT_ALLCLOSE(j3, jnp::diag(x), 0, 0);
  // hessian with aux: jacfwd(jacrev(f, has_aux), has_aux).
  auto sc = [](const Array& a) { return std::make_pair(jnp::sum(a * a * a), a * 2.0); };
  auto [h, aux_h] = hessian(sc, has_aux)(x);
  EXPECT_ALLCLOSE(h, jnp::diag(6.0 * x), 1e-15, 1e-15);
  EXPECT_ALLCLOSE(aux_h, x * 2.0, 0, 0);
}

// ---- random::fold_in with traced data ----

TEST(TransformsApi, FoldInUnderVmapMatchesLoopAndJax) {
  Array key = rnd::key(42);
  Array keys = vmap([&](const Array& i) { return rnd::fold_in(key, i); })(jnp::arange(4));
  ASSERT_EQ(keys.shape(), (Shape{4, 2}));
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(keys(i).to_vector<uint32_t>(), rnd::fold_in(key, i).to_vector<uint32_t>()) << i;
  // jax.vmap(lambda i: jax.random.fold_in(jax.random.PRNGKey(42), i))(jnp.arange(4))
  std::vector<uint32_t> want{1832780943u, 270669613u,  64467757u,  2916123636u,
                             2465931498u, 255383827u, 3134548294u, 894150801u};
  EXPECT_EQ(keys.to_vector<uint32_t>(), want);
  // The samples drawn from them: jax.vmap(lambda i: normal(fold_in(key, i), (3,)))(arange(4)),
  // within the 2 ulp normal agrees to.
  Array samples = vmap([&](const Array& i) { return rnd::normal(rnd::fold_in(key, i), {3}); })(jnp::arange(4));
  std::vector<float> want_n{0.0759255365f, -0.486342639f, 1.29032063f,  0.605764031f, 0.799044073f, -0.908927023f,
                            0.432306498f,  0.587263823f,  -1.14167428f, -0.281894714f, -1.36748898f, -1.6350379f};
  EXPECT_ALLCLOSE(samples, Array(want_n, Shape{4, 3}), 1e-6, 1e-7);
  // Batched keys and data together: vmap(fold_in)(split(key, 3), arange(3)).
  Array both = vmap([](const Array& k, const Array& i) { return rnd::fold_in(k, i); })(rnd::split(key, 3),
                                                                                      jnp::arange(3));
  EXPECT_EQ(both.to_vector<uint32_t>(), (std::vector<uint32_t>{1012194634u, 3152801799u, 2350016172u, 1168365246u,
                                                               3446849625u, 3976683102u}));
}

TEST(TransformsApi, FoldInWithArrayDataUnderJitAndWrapping) {
  Array key = rnd::key(42);
  // jax.jit(lambda i: fold_in(key, i))(jnp.int32(7)) == fold_in(key, 7)
  Array k7 = jit([&](const Array& i) { return rnd::fold_in(key, i); })(Array(7));
  EXPECT_EQ(k7.to_vector<uint32_t>(), (std::vector<uint32_t>{2547012911u, 1371500959u}));
  EXPECT_EQ(rnd::fold_in(key, Array(7)).to_vector<uint32_t>(), rnd::fold_in(key, 7).to_vector<uint32_t>());
  // int32 -1 folds as uint32 0xffffffff, as jnp.uint32 converts it.
  std::vector<uint32_t> want{2398536845u, 3890976714u};
  EXPECT_EQ(rnd::fold_in(key, Array(-1)).to_vector<uint32_t>(), want);
  EXPECT_EQ(rnd::fold_in(key, int64_t{0xffffffff}).to_vector<uint32_t>(), want);
  EXPECT_EQ(rnd::fold_in(key, Array(true)).to_vector<uint32_t>(), rnd::fold_in(key, 1).to_vector<uint32_t>());
  EXPECT_JX_ERROR(rnd::fold_in(key, Array(1.5)), "[random.fold_in]", "0-d integer", "f");
  EXPECT_JX_ERROR(rnd::fold_in(key, jnp::arange(3)), "[random.fold_in]", "i32[3]", "vmap");
  EXPECT_JX_ERROR(rnd::fold_in(key, Array()), "[random.fold_in]", "null");
}

// ---- block_until_ready ----

TEST(TransformsApi, BlockUntilReadyReturnsTheValue) {
  Array x = f64({1, 2, 3});
  Array y = (x * 2.0).block_until_ready();
  EXPECT_ALLCLOSE(y, f64({2, 4, 6}), 0, 0);
  EXPECT_EQ(x.block_until_ready().id(), x.id());

  Dict d{{"a", x}, {"b", y}};
  Dict same = block_until_ready(d);
  EXPECT_EQ(same.at("a").id(), x.id());
  EXPECT_EQ(same.at("b").id(), y.id());
  auto t = block_until_ready(std::make_tuple(x, 2.0));
  EXPECT_EQ(std::get<1>(t), 2.0);
  // Under a transformation it is the identity too.
  EXPECT_ALLCLOSE(grad([](const Array& a) { return jnp::sum(a * a).block_until_ready(); })(x), x * 2.0, 0, 0);
}

}  // namespace
}  // namespace jx
