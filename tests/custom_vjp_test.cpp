// jx::custom_vjp (include/jx/custom_derivatives.h): eager runs f (not fwd); grad, vjp,
// jacrev use fwd and bwd (a bwd that clips, so a test fails if the composition's own
// derivative is used); a true bwd against finite differences and against the plain
// function; residual, argument and output pytrees; nondiff_argnums; integer arguments;
// jit against eager; vmap against a loop (batched, unbatched and moved axes); higher
// order (bwd differentiated as JAX does); the forward-mode error; every misuse error.
#include <cmath>
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

// sin(x) with residual cos(x) and a bwd that clips the cotangent to [-1/2, 1/2].
auto clipped_sin() {
  return custom_vjp([](const Array& x) { return jnp::sin(x); },
                    [](const Array& x) { return std::pair{jnp::sin(x), jnp::cos(x)}; },
                    [](const Array& cos_x, const Array& g) { return std::tuple{jnp::clip(cos_x * g, -0.5, 0.5)}; },
                    "clipped_sin");
}

// sin(x) with its true derivative as the rule.
auto true_sin() {
  return custom_vjp([](const Array& x) { return jnp::sin(x); },
                    [](const Array& x) { return std::pair{jnp::sin(x), jnp::cos(x)}; },
                    [](const Array& cos_x, const Array& g) { return std::tuple{cos_x * g}; }, "true_sin");
}

TEST(CustomVjp, EagerRunsTheFunctionOnly) {
  int f_calls = 0, fwd_calls = 0, bwd_calls = 0;
  auto f = custom_vjp(
      [&](const Array& x) {
        ++f_calls;
        return x * 2.0;
      },
      [&](const Array& x) {
        ++fwd_calls;
        return std::pair{x * 2.0, x};
      },
      [&](const Array&, const Array& g) {
        ++bwd_calls;
        return std::tuple{g * 2.0};
      });
  EXPECT_ALLCLOSE(f(f64({1.0, -2.0})), f64({2.0, -4.0}), 0.0, 0.0);
  EXPECT_EQ(f_calls, 1);
  EXPECT_EQ(fwd_calls, 0);
  EXPECT_EQ(bwd_calls, 0);
  EXPECT_EQ(grad(f)(Array(1.0)).item<double>(), 2.0);
  EXPECT_EQ(fwd_calls, 1);
  EXPECT_EQ(bwd_calls, 1);
}

TEST(CustomVjp, ReverseModeUsesBwd) {
  auto f = clipped_sin();
  // cos(0.1) = 0.995 is clipped; cos(1.4) = 0.17 is not.
  EXPECT_EQ(grad(f)(Array(0.1)).item<double>(), 0.5);
  EXPECT_ALLCLOSE(grad(f)(Array(1.4)), Array(std::cos(1.4)), 1e-15, 1e-15);
  auto [y, pull] = vjp(f, f64({0.1, 3.0}));
  EXPECT_ALLCLOSE(y, jnp::sin(f64({0.1, 3.0})), 0.0, 0.0);
  // cos(3)·0.2 = -0.198 passes; cos(0.1)·2 is clipped.
  EXPECT_ALLCLOSE(std::get<0>(pull(f64({2.0, 0.2}))), f64({0.5, std::cos(3.0) * 0.2}), 1e-15, 1e-15);
  EXPECT_ALLCLOSE(jacrev(f)(f64({0.1, 1.4})), Array(std::vector<double>{0.5, 0.0, 0.0, std::cos(1.4)}).reshape({2, 2}),
                  1e-15, 1e-15);
  // Composed: the chain rule goes through bwd. d/dx f(3x) = clip(3 cos(3x)) at x = 0.
  EXPECT_EQ(grad([&f](const Array& x) { return f(x * 3.0); })(Array(0.0)).item<double>(), 1.5);
}

TEST(CustomVjp, TrueRuleAgainstFiniteDifferencesAndThePlainFunction) {
  auto f = true_sin();
  for (double x : {-2.0, 0.0, 0.7, 3.0}) {
    test_util::check_grads([&f](const Array& a) { return f(a); }, std::tuple{Array(x)}, {.modes = test_util::Modes::Rev});
    EXPECT_ALLCLOSE(grad(f)(Array(x)), grad([](const Array& a) { return jnp::sin(a); })(Array(x)), 1e-15, 1e-15);
  }
  // A stable rule where the composition's derivative is NaN: log(1 + e^x) at x = 1000.
  auto softplus = custom_vjp([](const Array& x) { return jnp::logaddexp(x, Array(0.0)); },
                             [](const Array& x) { return std::pair{jnp::logaddexp(x, Array(0.0)), x}; },
                             [](const Array& x, const Array& g) { return std::tuple{g * lax::logistic(x)}; });
  EXPECT_EQ(grad(softplus)(Array(1000.0)).item<double>(), 1.0);
  EXPECT_TRUE(std::isnan(grad([](const Array& x) { return jnp::log1p(jnp::exp(x)); })(Array(1000.0)).item<double>()));
}

TEST(CustomVjp, PytreeResidualsArgumentsAndOutputs) {
  using In = std::map<std::string, Array>;
  using Out = std::pair<Array, std::vector<Array>>;
  using Res = std::tuple<Array, std::vector<Array>>;
  // f({a, b}, c) = (a·b, [c·a]); bwd gives twice the true cotangent of b, so its use shows.
  auto f = custom_vjp(
      [](const In& d, const Array& c) { return Out{d.at("a") * d.at("b"), {c * d.at("a")}}; },
      [](const In& d, const Array& c) {
        Out out{d.at("a") * d.at("b"), {c * d.at("a")}};
        return std::pair{out, Res{c, {d.at("a"), d.at("b")}}};
      },
      [](const Res& res, const Out& g) {
        const auto& [c, ab] = res;
        const Array ga = g.first * ab[1] + g.second[0] * c;
        return std::tuple{In{{"a", ga}, {"b", g.first * ab[0] * 2.0}}, g.second[0] * ab[0]};
      });
  In d{{"a", Array(2.0)}, {"b", Array(5.0)}};
  Out y = f(d, Array(7.0));
  EXPECT_EQ(y.first.item<double>(), 10.0);
  EXPECT_EQ(y.second[0].item<double>(), 14.0);
  auto [gd, gc] = grad(
      [&f](const In& d, const Array& c) {
        Out o = f(d, c);
        return o.first + o.second[0] * 3.0;
      },
      argnums<0, 1>)(d, Array(7.0));
  EXPECT_EQ(gd.at("a").item<double>(), 5.0 + 3.0 * 7.0);
  EXPECT_EQ(gd.at("b").item<double>(), 2.0 * 2.0);  // twice the true a
  EXPECT_EQ(gc.item<double>(), 3.0 * 2.0);
}

TEST(CustomVjp, NondiffArguments) {
  // f(s, x) = s·sin(x) with s passed to bwd first and given no cotangent.
  auto f = custom_vjp([](const Array& s, const Array& x) { return s * jnp::sin(x); },
                      [](const Array& s, const Array& x) { return std::pair{s * jnp::sin(x), jnp::cos(x)}; },
                      [](const Array& s, const Array& cos_x, const Array& g) { return std::tuple{s * cos_x * g}; },
                      nondiff_argnums<0>, "scaled_sin");
  EXPECT_ALLCLOSE(f(Array(2.0), Array(0.5)), Array(2.0 * std::sin(0.5)), 1e-15, 1e-15);
  EXPECT_ALLCLOSE(grad(f, argnums<1>)(Array(2.0), Array(0.5)), Array(2.0 * std::cos(0.5)), 1e-15, 1e-15);
  // jax.grad(f, 1)(2., .5) with nondiff_argnums=(0,): 1.7551651237807455
  EXPECT_ALLCLOSE(grad(f, argnums<1>)(Array(2.0), Array(0.5)), Array(1.7551651237807455), 1e-15, 1e-15);
  // The nondiff argument is the second here, and a C++ int: it still comes first in bwd.
  auto g = custom_vjp([](const Array& x, const Array& n) { return x * n.astype(x.dtype()); },
                      [](const Array& x, const Array& n) { return std::pair{x * n.astype(x.dtype()), Array(0.0)}; },
                      [](const Array& n, const Array&, const Array& ct) { return std::tuple{ct * 10.0}; },
                      nondiff_argnums<1>);
  EXPECT_EQ(g(Array(1.5), 4).item<double>(), 6.0);
  EXPECT_EQ(grad(g)(Array(1.5), 4).item<double>(), 10.0);
  // Differentiating a nondiff argument is an error (JAX refuses a tracer there too).
  EXPECT_JX_ERROR(grad(f)(Array(2.0), Array(0.5)), "[custom_vjp]", "'scaled_sin': a nondiff_argnums argument (f64",
                  "is being differentiated");
}

TEST(CustomVjp, IntegerArgumentsGetNoCotangent) {
  // n is an ordinary (differentiable-position) integer argument: bwd's entry for it is
  // ignored, whatever its type, and grad with respect to x is bwd's.
  auto f = custom_vjp([](const Array& x, const Array& n) { return x * n.astype(x.dtype()); },
                      [](const Array& x, const Array& n) { return std::pair{x * n.astype(x.dtype()), n}; },
                      [](const Array& n, const Array& g) { return std::tuple{g * n.astype(g.dtype()), Array(0.0)}; });
  EXPECT_EQ(grad(f)(Array(1.5), 4).item<double>(), 4.0);
  auto [y, pull] = vjp(f, Array(1.5), Array(int32_t{3}));
  auto [cx, cn] = pull(Array(2.0));
  EXPECT_EQ(cx.item<double>(), 6.0);
  EXPECT_EQ(cn.dtype(), DType::Int32);
  EXPECT_EQ(cn.item<int32_t>(), 0);
}

TEST(CustomVjp, ClosedOverConstants) {
  // f, fwd and bwd may close over concrete arrays (constants of their programs).
  const Array w = f64({1.0, 2.0, 3.0});
  auto f = custom_vjp([w](const Array& x) { return jnp::sum(w * x); },
                      [w](const Array& x) { return std::pair{jnp::sum(w * x), Array(0.0)}; },
                      [w](const Array&, const Array& g) { return std::tuple{w * w * g}; });
  EXPECT_ALLCLOSE(grad(f)(f64({0.0, 0.0, 0.0})), f64({1.0, 4.0, 9.0}), 0.0, 0.0);
  EXPECT_ALLCLOSE(jit(grad(f))(f64({0.0, 0.0, 0.0})), f64({1.0, 4.0, 9.0}), 0.0, 0.0);
  EXPECT_ALLCLOSE(vmap(grad(f))(jnp::zeros({2, 3}, DType::Float64)), Array(std::vector<double>{1, 4, 9, 1, 4, 9}).reshape({2, 3}), 0.0,
                  0.0);
}

TEST(CustomVjp, JitAgainstEager) {
  auto f = clipped_sin();
  Array xs = f64({0.1, 1.4, -2.0});
  EXPECT_ALLCLOSE(jit(f)(xs), f(xs), 0.0, 0.0);
  auto g = grad([&f](const Array& x) { return jnp::sum(f(x)); });
  Array eager = g(xs);
  EXPECT_ALLCLOSE(eager, f64({0.5, std::cos(1.4), std::max(std::cos(-2.0), -0.5)}), 1e-15, 1e-15);
  EXPECT_ALLCLOSE(jit(g)(xs), eager, 1e-15, 1e-15);
  auto jf = jit(f);
  EXPECT_ALLCLOSE(grad([&jf](const Array& x) { return jnp::sum(jf(x)); })(xs), eager, 1e-15, 1e-15);
  // One equation holding the three programs; the text parses back.
  std::string text = make_jaxpr(f)(xs).str();
  EXPECT_NE(text.find("custom_vjp_call"), std::string::npos) << text;
  EXPECT_NE(text.find("bwd="), std::string::npos) << text;
  EXPECT_NE(text.find("name='clipped_sin'"), std::string::npos) << text;
  EXPECT_EQ(parse_jaxpr(text).str(), text);
  // Staged forward mode holds custom_lin (it raises only when run); grad has transposed it.
  std::string lin = make_jaxpr([&f](const Array& x) { return jvp(f, x, x).second; })(xs).str();
  EXPECT_NE(lin.find("custom_lin"), std::string::npos) << lin;
  EXPECT_EQ(parse_jaxpr(lin).str(), lin);
  std::string back = make_jaxpr(g)(xs).str();
  EXPECT_EQ(back.find("custom_lin"), std::string::npos) << back;
  EXPECT_EQ(back.find("custom_vjp_call"), std::string::npos) << back;
}

TEST(CustomVjp, VmapAgainstALoop) {
  auto f = clipped_sin();
  Array xs = f64({0.1, 1.4, -2.0});
  Array ys = vmap(f)(xs);
  Array gs = vmap(grad(f))(xs);
  auto sum_f = [&f](const Array& x) { return jnp::sum(vmap(f)(x)); };
  Array gv = grad(sum_f)(xs);  // grad of vmap: bwd batched
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_ALLCLOSE(ys[i], f(xs[i]), 0.0, 0.0);
    EXPECT_EQ(gs[i].item<double>(), grad(f)(xs[i]).item<double>());
    EXPECT_EQ(gv[i].item<double>(), grad(f)(xs[i]).item<double>());
  }
  EXPECT_EQ(gs[0].item<double>(), 0.5);  // clipped
  EXPECT_ALLCLOSE(jit(grad(sum_f))(xs), gv, 1e-15, 1e-15);
  // An unbatched argument: its cotangent is the sum over the lanes. f(x, w) = x·w with
  // bwd's cotangent for w clipped per lane to at most 1.
  auto mul = custom_vjp([](const Array& x, const Array& w) { return x * w; },
                        [](const Array& x, const Array& w) { return std::pair{x * w, std::tuple{x, w}}; },
                        [](const std::tuple<Array, Array>& r, const Array& g) {
                          auto [x, w] = r;
                          return std::tuple{g * w, jnp::minimum(g * x, Array(1.0))};
                        });
  Array w = Array(3.0);
  auto loss = [&mul](const Array& x, const Array& w) {
    return jnp::sum(vmap(mul, {.in_axes = {0, not_mapped}})(x, w));
  };
  auto [gx, gw] = grad(loss, argnums<0, 1>)(f64({0.5, 2.0, 4.0}), w);
  EXPECT_ALLCLOSE(gx, f64({3.0, 3.0, 3.0}), 0.0, 0.0);
  EXPECT_EQ(gw.item<double>(), 0.5 + 1.0 + 1.0);
  EXPECT_EQ(gw.shape(), Shape{});
  // A batch axis that is not the first.
  Array m = Array(std::vector<double>{0.1, 1.4, -2.0, 0.3, 0.0, 2.5}).reshape({3, 2});
  Array gm = grad([&f](const Array& x) { return jnp::sum(vmap(f, {.in_axes = {1}})(x)); })(m);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j)
      EXPECT_EQ(gm[i][j].item<double>(), grad(f)(m[i][j]).item<double>()) << i << ", " << j;
}

TEST(CustomVjp, VmapOfNondiffAndClosedOverBatchedValues) {
  // s·sin(x), s nondiff, with bwd clipping s·cos(x)·g to at most 1.
  auto f = custom_vjp([](const Array& s, const Array& x) { return s * jnp::sin(x); },
                      [](const Array& s, const Array& x) { return std::pair{s * jnp::sin(x), jnp::cos(x)}; },
                      [](const Array& s, const Array& c, const Array& g) {
                        return std::tuple{jnp::minimum(s * c * g, Array(1.0))};
                      },
                      nondiff_argnums<0>);
  Array ss = f64({0.5, 2.0, 3.0}), xs = f64({0.3, 0.3, 2.0});
  auto df = grad(f, argnums<1>);
  Array gs = vmap(df)(ss, xs);
  Array gv = grad([&f](const Array& s, const Array& x) { return jnp::sum(vmap(f)(s, x)); }, argnums<1>)(ss, xs);
  for (int64_t i = 0; i < 3; ++i) {
    const double want = df(ss[i], xs[i]).item<double>();
    EXPECT_EQ(gs[i].item<double>(), want) << i;
    EXPECT_EQ(gv[i].item<double>(), want) << i;
  }
  EXPECT_EQ(gs[1].item<double>(), 1.0);  // 2·cos(0.3) clipped
  // fwd and bwd closing over a batched value (not differentiated): constants batched too.
  Array gw = vmap([&xs](const Array& w) {
    auto h = custom_vjp([w](const Array& x) { return w * x; },
                        [w](const Array& x) { return std::pair{w * x, Array(0.0)}; },
                        [w](const Array&, const Array& g) { return std::tuple{w * g * 10.0}; });
    return grad(h)(Array(1.0));
  })(xs);
  EXPECT_ALLCLOSE(gw, xs * 10.0, 1e-15, 1e-15);
}

TEST(CustomVjp, HigherOrderDifferentiatesFwdAndBwd) {
  auto f = true_sin();
  // bwd is cos(x)·g with cos(x) a residual fwd computed: the second derivative is -sin.
  for (double x : {-1.0, 0.5, 2.0})
    EXPECT_ALLCLOSE(grad(grad(f))(Array(x)), Array(-std::sin(x)), 1e-15, 1e-15);
  // jax.grad(jax.grad(lambda x: f(2., x)))(0.5) for the nondiff example: -0.958851077208406
  auto s = custom_vjp([](const Array& s, const Array& x) { return s * jnp::sin(x); },
                      [](const Array& s, const Array& x) { return std::pair{s * jnp::sin(x), jnp::cos(x)}; },
                      [](const Array& s, const Array& c, const Array& g) { return std::tuple{s * c * g}; },
                      nondiff_argnums<0>);
  EXPECT_ALLCLOSE(grad(grad([&s](const Array& x) { return s(Array(2.0), x); }))(Array(0.5)),
                  Array(-0.958851077208406), 1e-15, 1e-15);
}

TEST(CustomVjp, ForwardModeRaises) {
  auto f = clipped_sin();
  const char* msg = "can't apply forward-mode autodiff (jvp) to a custom_vjp function";
  EXPECT_JX_ERROR(jvp(f, Array(0.5), Array(1.0)), "[custom_vjp]", "'clipped_sin'", msg);
  EXPECT_JX_ERROR(jacfwd(f)(f64({0.5, 1.0})), "'clipped_sin'", msg);
  EXPECT_JX_ERROR(jit([&f](const Array& x) { return jvp(f, x, x); })(Array(0.5)), msg);
  auto [y, f_jvp] = linearize(f, Array(0.5));
  EXPECT_JX_ERROR(f_jvp(Array(1.0)), msg);
  auto [ys, f_jvps] = linearize(f, f64({0.5, 1.0}));
  EXPECT_JX_ERROR(vmap(f_jvps)(Array(std::vector<double>{1, 2, 3, 4}).reshape({2, 2})), msg);  // custom_lin batched
}

TEST(CustomVjp, Errors) {
  auto ident_fwd = [](const Array& x) { return std::pair{x, x}; };
  // bwd returns two cotangents for one argument.
  auto two = custom_vjp([](const Array& x) { return x; }, ident_fwd,
                        [](const Array&, const Array& g) { return std::tuple{g, g}; }, "ident");
  EXPECT_JX_ERROR(grad(two)(Array(1.0)), "[custom_vjp]", "'ident': bwd's output has structure PyTreeDef((*, *))",
                  "one cotangent per differentiated argument, PyTreeDef((*,))");
  // The wrong shape, or dtype.
  auto wrong_shape = custom_vjp([](const Array& x) { return x * 2.0; }, ident_fwd,
                                [](const Array&, const Array& g) { return std::tuple{jnp::stack({g, g})}; }, "twice");
  EXPECT_JX_ERROR(grad(wrong_shape)(Array(1.0)), "[custom_vjp]", "'twice': bwd's cotangent for argument 0 is f64[2]",
                  "but the argument is f64[]");
  auto wrong_dtype = custom_vjp([](const Array& x) { return x; }, ident_fwd,
                                [](const Array&, const Array& g) { return std::tuple{g.astype(DType::Float32)}; });
  EXPECT_JX_ERROR(grad(wrong_dtype)(f64({1.0, 2.0})[0]), "bwd's cotangent for argument 0 is f32[]",
                  "but the argument is f64[]");
  // A pytree argument names the leaf.
  auto leaf = custom_vjp([](const std::vector<Array>& v) { return v[0] + v[1]; },
                         [](const std::vector<Array>& v) { return std::pair{v[0] + v[1], Array(0.0)}; },
                         [](const Array&, const Array& g) { return std::tuple{std::vector<Array>{g, f64({1.0, 2.0})}}; });
  EXPECT_JX_ERROR(grad(leaf)(std::vector<Array>{Array(1.0), Array(2.0)}), "bwd's cotangent for argument 0 (leaf 1) is f64[2]");
  // fwd's output is not f's, in structure or in type.
  auto fwd_tree = custom_vjp([](const Array& x) { return x; },
                             [](const Array& x) { return std::pair{std::vector<Array>{x}, x}; },
                             [](const Array&, const Array& g) { return std::tuple{g}; }, "ident");
  EXPECT_JX_ERROR(grad(fwd_tree)(Array(1.0)), "[custom_vjp]", "'ident': fwd's output has structure PyTreeDef([*])",
                  "but f's output has PyTreeDef(*)");
  auto fwd_shape = custom_vjp([](const Array& x) { return x; },
                              [](const Array& x) { return std::pair{jnp::stack({x, x}), x}; },
                              [](const Array&, const Array& g) { return std::tuple{g}; }, "ident");
  EXPECT_JX_ERROR(grad(fwd_shape)(Array(1.0)), "'ident': fwd's output 0 is f64{weak}[2] but f's is f64{weak}[]");
  // Misuse raises as soon as the call is traced, under jit too.
  EXPECT_JX_ERROR(jit(wrong_shape)(Array(1.0)), "'twice': bwd's cotangent for argument 0 is f64[2]");
  // Closing over a value being differentiated.
  auto closes = [](const Array& y) {
    auto f = custom_vjp([y](const Array& x) { return x * y; },
                        [y](const Array& x) { return std::pair{x * y, Array(0.0)}; },
                        [y](const Array&, const Array& g) { return std::tuple{g * y}; }, "scale");
    return f(Array(2.0));
  };
  EXPECT_JX_ERROR(grad(closes)(Array(3.0)), "[custom_vjp]", "'scale' closes over a value being differentiated");
}

}  // namespace
}  // namespace jx
