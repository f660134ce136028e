// lax::scan, map, fori_loop and the scan primitive: values against plain C++ loops,
// derivatives against finite differences (check_grads, first and second order), vmap
// against a loop over the batch, jit against eager, the program text (and its parse
// round trip), the rules' program-level behaviour (dce, partial evaluation keeps
// loop-invariant residuals unstacked), and every error message.
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "jx/control_flow/scan.h"
#include "jx/jx.h"
#include "jx/test_util.h"
#include "test_util.h"
#include "transforms/jaxpr_transforms.h"
#include "transforms/linearize.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;
using testing::randn;
using test_util::check_grads;

bool contains(const std::string& s, std::string_view sub) { return s.find(sub) != std::string::npos; }

Array row(const Array& x, int64_t i) {
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), limit = x.shape();
  start[0] = i;
  limit[0] = i + 1;
  return lax::squeeze(lax::slice(x, start, limit), {0});
}

Array scalar(double v, DType d) { return lax::convert_element_type(Array(v), d); }

// ---- values against C++ loops ----

TEST(Scan, CumulativeSumMatchesALoop) {
  std::vector<float> v = {1.5f, -2.0f, 0.25f, 4.0f, 3.0f};
  Array xs(v);
  auto [total, partial] = lax::scan([](const Array& c, const Array& x) { return std::pair(c + x, c + x); },
                                    scalar(0, DType::Float32), xs);
  std::vector<float> expect;
  float acc = 0;
  for (float x : v) expect.push_back(acc += x);
  EXPECT_ALLCLOSE(total, Array(acc));
  EXPECT_ALLCLOSE(partial, Array(expect));
}

TEST(Scan, CumulativeProductOfRowsMatchesALoop) {
  Array xs = randn({4, 3}, DType::Float64, 1);
  auto [prod, stack] = lax::scan([](const Array& c, const Array& x) { return std::pair(c * x, c * x); },
                                 jnp::ones({3}, DType::Float64), xs);
  std::vector<double> x = xs.to_vector<double>(), acc(3, 1.0), rows;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) rows.push_back(acc[j] *= x[i * 3 + j]);
  EXPECT_ALLCLOSE(prod, Array(acc), 1e-12, 1e-12);
  EXPECT_ALLCLOSE(stack, Array(rows, {4, 3}), 1e-12, 1e-12);
}

struct RnnState {
  Array h, steps;
};
JX_TREE_NODE(RnnState, h, steps)

// h' = tanh(W h + u * v), a pytree carry {h, steps} and pytree xs {"u": (T, 3), "v": (T,)};
// W is captured by the body.
std::pair<RnnState, std::vector<Array>> rnn(const Array& w, const Array& h0, const Array& u, const Array& v) {
  std::map<std::string, Array> xs{{"u", u}, {"v", v}};
  auto step = [&w](const RnnState& s, const std::map<std::string, Array>& x) {
    Array h = jnp::tanh(jnp::matmul(w, s.h) + x.at("u") * x.at("v"));
    return std::pair(RnnState{h, s.steps + 1}, std::vector<Array>{h, jnp::sum(h)});
  };
  return lax::scan(step, RnnState{h0, scalar(0, DType::Int32)}, xs);
}

TEST(Scan, PytreeCarryAndXsWithAClosureMatchALoop) {
  Array w = randn({3, 3}, DType::Float64, 2, 0.5), h0 = randn({3}, DType::Float64, 3);
  Array u = randn({6, 3}, DType::Float64, 4), v = randn({6}, DType::Float64, 5);
  auto [state, ys] = rnn(w, h0, u, v);
  Array h = h0;
  for (int64_t t = 0; t < 6; ++t) {
    h = jnp::tanh(jnp::matmul(w, h) + row(u, t) * row(v, t));
    EXPECT_ALLCLOSE(row(ys[0], t), h, 1e-12, 1e-12);
    EXPECT_ALLCLOSE(row(ys[1], t), jnp::sum(h), 1e-12, 1e-12);
  }
  EXPECT_ALLCLOSE(state.h, h, 1e-12, 1e-12);
  EXPECT_EQ(state.steps.item<int32_t>(), 6);
  EXPECT_EQ(state.steps.dtype(), DType::Int32);
}

TEST(Scan, ReverseRunsFromTheEndAndKeepsYsInOrder) {
  Array xs(std::vector<double>{1, 2, 3, 4});
  auto step = [](const Array& c, const Array& x) { return std::pair(c * 2.0 + x, c); };
  auto [c, ys] = lax::scan(step, scalar(0, DType::Float64), xs, {.reverse = true});
  // c: 0 -> 4 -> 11 -> 24 -> 49, visiting x = 4, 3, 2, 1; y at i is the carry before x[i].
  EXPECT_ALLCLOSE(c, Array(49.0));
  EXPECT_ALLCLOSE(ys, Array(std::vector<double>{24, 11, 4, 0}));
}

TEST(Scan, NoneXsWithALength) {
  auto [c, ys] = lax::scan([](const Array& c, None) { return std::pair(c * 0.5, c); }, scalar(8, DType::Float32),
                           none, {.length = 4});
  EXPECT_ALLCLOSE(c, Array(0.5f));
  EXPECT_ALLCLOSE(ys, Array({8.0, 4.0, 2.0, 1.0}));
  // A body emitting nothing returns jx::None as its ys.
  auto [c2, nothing] = lax::scan([](const Array& c, None) { return std::pair(c + 1, none); },
                                 scalar(0, DType::Int32), none, {.length = 3});
  static_assert(std::is_same_v<decltype(nothing), None>);
  EXPECT_EQ(c2.item<int32_t>(), 3);
}

TEST(Scan, ZeroLengthReturnsInitAndEmptyYs) {
  Array xs = jnp::zeros({0, 2}, DType::Float32);
  auto [c, ys] = lax::scan([](const Array& c, const Array& x) { return std::pair(c + x, x * 2.0); },
                           jnp::ones({2}, DType::Float32), xs);
  EXPECT_ALLCLOSE(c, jnp::ones({2}, DType::Float32));
  EXPECT_EQ(ys.shape(), (Shape{0, 2}));
}

TEST(Scan, WeaklyTypedInitTakesTheBodysType) {
  Array xs(std::vector<float>{1, 2, 3});
  auto [c, ys] = lax::scan([](const Array& c, const Array& x) { return std::pair(c + x, c); }, 0.0, xs);
  EXPECT_EQ(c.dtype(), DType::Float32);
  EXPECT_ALLCLOSE(c, Array(6.0f));
}

TEST(ForiLoop, MatchesALoopWithAPytreeCarry) {
  Array x = randn({3}, DType::Float64, 6);
  auto body = [](const Array& i, const std::pair<Array, Array>& c) {
    EXPECT_EQ(i.dtype(), DType::Int32);
    EXPECT_EQ(i.ndim(), 0);
    return std::pair(c.first + c.second * i, c.second * 0.5);
  };
  auto [acc, scale] = lax::fori_loop(2, 7, body, std::pair(jnp::zeros({3}, DType::Float64), x));
  std::vector<double> xv = x.to_vector<double>(), a(3, 0.0), s = xv;
  for (int i = 2; i < 7; ++i)
    for (int j = 0; j < 3; ++j) {
      a[j] += s[j] * i;
      s[j] *= 0.5;
    }
  EXPECT_ALLCLOSE(acc, Array(a), 1e-12, 1e-12);
  EXPECT_ALLCLOSE(scale, Array(s), 1e-12, 1e-12);
  // No steps when upper <= lower.
  Array same = lax::fori_loop(5, 2, [](const Array&, const Array& c) { return c * 3.0; }, x);
  EXPECT_ALLCLOSE(same, x, 0, 0);
}

Array cube_by_loop(const Array& x) {
  return lax::fori_loop(0, 3, [&x](const Array&, const Array& c) { return c * x; }, jnp::ones_like(x));
}

TEST(ForiLoop, DifferentiatesInReverseModeToSecondOrder) {
  Array x = scalar(1.5, DType::Float64);
  EXPECT_ALLCLOSE(cube_by_loop(x), Array(3.375), 1e-12, 1e-12);
  EXPECT_ALLCLOSE(jx::grad(cube_by_loop)(x), Array(3 * 1.5 * 1.5), 1e-12, 1e-12);
  EXPECT_ALLCLOSE(jx::grad(jx::grad(cube_by_loop))(x), Array(6 * 1.5), 1e-12, 1e-12);
  check_grads([](const Array& x) { return cube_by_loop(x); }, std::tuple{randn({4}, DType::Float64, 7)},
              {.order = 2});
}

TEST(Map, MatchesALoopWithAndWithoutBatches) {
  Array xs = randn({5, 3}, DType::Float64, 8);
  auto f = [](const Array& x) { return std::pair(jnp::sum(jnp::sin(x)), x * x); };
  for (std::optional<int64_t> batch : {std::optional<int64_t>(), std::optional<int64_t>(1),
                                       std::optional<int64_t>(2), std::optional<int64_t>(5),
                                       std::optional<int64_t>(7)}) {
    auto [sums, squares] = lax::map(f, xs, {.batch_size = batch});
    ASSERT_EQ(sums.shape(), (Shape{5})) << batch.value_or(0);
    for (int64_t i = 0; i < 5; ++i) {
      EXPECT_ALLCLOSE(row(sums, i), jnp::sum(jnp::sin(row(xs, i))), 1e-12, 1e-12) << batch.value_or(0);
      EXPECT_ALLCLOSE(row(squares, i), row(xs, i) * row(xs, i), 1e-12, 1e-12) << batch.value_or(0);
    }
  }
  // A pytree of xs.
  Array ys = lax::map([](const std::pair<Array, Array>& p) { return p.first * p.second; },
                      std::pair(xs, xs + 1.0), {.batch_size = 2});
  EXPECT_ALLCLOSE(ys, xs * (xs + 1.0), 1e-12, 1e-12);
  // Chunks and remainder differentiate.
  check_grads([](const Array& xs) {
    return jnp::sum(lax::map([](const Array& r) { return jnp::sin(r) * jnp::sum(r); }, xs, {.batch_size = 2}));
  }, std::tuple{xs});
}

// ---- derivatives ----

// A scan reading a const (w), a carry and xs, with sin for curvature.
Array scan_loss(const Array& w, const Array& xs) {
  auto [c, ys] = lax::scan([&w](const Array& c, const Array& x) {
    Array next = jnp::sin(c * w) + x * c;
    return std::pair(next, next * x);
  }, jnp::ones_like(row(xs, 0)), xs);
  return jnp::sum(c) + jnp::sum(ys * ys);
}

TEST(ScanGrad, FirstAndSecondOrderAgainstFiniteDifferences) {
  Array w = randn({3}, DType::Float64, 9, 0.5), xs = randn({4, 3}, DType::Float64, 10, 0.5);
  check_grads(scan_loss, std::tuple{w, xs}, {.order = 2});
  // Reverse as well.
  auto reversed = [](const Array& w, const Array& xs) {
    auto [c, ys] = lax::scan([&w](const Array& c, const Array& x) { return std::pair(c * jnp::cos(x) + w, c * x); },
                             jnp::zeros_like(w), xs, {.reverse = true});
    return jnp::sum(c * c) + jnp::sum(ys);
  };
  check_grads(reversed, std::tuple{w, xs}, {.order = 2});
}

TEST(ScanGrad, PytreeRnnThroughGradVjpLinearizeAndJacrev) {
  Array w = randn({3, 3}, DType::Float64, 11, 0.5), h0 = randn({3}, DType::Float64, 12);
  Array u = randn({5, 3}, DType::Float64, 13), v = randn({5}, DType::Float64, 14);
  auto loss = [&](const Array& w, const Array& h0) {
    auto [s, ys] = rnn(w, h0, u, v);
    return jnp::sum(s.h * s.h) + jnp::sum(ys[1]);
  };
  check_grads(loss, std::tuple{w, h0}, {.order = 1});
  // grad against jacrev and the vjp of the same function.
  Array g = jx::grad(loss)(w, h0);
  auto [out, pullback] = jx::vjp(loss, w, h0);
  EXPECT_ALLCLOSE(std::get<0>(pullback(Array(1.0))), g, 1e-12, 1e-12);
  EXPECT_ALLCLOSE(jx::jacrev(loss)(w, h0), g, 1e-12, 1e-12);
  // linearize's tangent map against jvp.
  Array dw = randn({3, 3}, DType::Float64, 15);
  auto [value, f_jvp] = jx::linearize([&](const Array& w) { return loss(w, h0); }, w);
  auto [value2, tangent] = jx::jvp([&](const Array& w) { return loss(w, h0); }, w, dw);
  EXPECT_ALLCLOSE(f_jvp(dw), tangent, 1e-12, 1e-12);
  EXPECT_ALLCLOSE(value, value2, 1e-12, 1e-12);
}

TEST(ScanGrad, CarryWithoutATangentInitAndIntegerCarries) {
  // init is a constant (its tangent is zero) and a counter rides along as an int carry.
  auto f = [](const Array& xs) {
    auto [c, ys] = lax::scan([](const std::pair<Array, Array>& c, const Array& x) {
      Array i = lax::convert_element_type(c.second, x.dtype());
      return std::pair(std::pair(c.first + x * i, c.second + 1), c.first * x);
    }, std::pair(jnp::zeros_like(row(xs, 0)), scalar(1, DType::Int32)), xs);
    return jnp::sum(c.first) + jnp::sum(ys);
  };
  check_grads(f, std::tuple{randn({4, 2}, DType::Float64, 16)}, {.order = 2});
}

// Partial evaluation keeps loop-invariant residuals (a const, a function of the consts)
// out of the stacked residuals: the linear program's scan reads w itself, not a (T, 8, 8) stack.
TEST(ScanGrad, LoopInvariantResidualsAreNotStacked) {
  Array w = randn({8, 8}, DType::Float32, 17, 0.3), xs = randn({50, 8}, DType::Float32, 18);
  auto f = [&xs](const Array& w) {
    auto [c, ys] = lax::scan([&w](const Array& h, const Array& x) {
      return std::pair(jnp::tanh(jnp::matmul(jnp::exp(w) * 0.1, h) + x), none);
    }, jnp::zeros({8}, w.dtype()), lax::convert_element_type(xs, w.dtype()));
    return jnp::sum(c);
  };
  detail::FlatFn flat = [&](std::span<const Array> a) { return std::vector<Array>{f(a[0])}; };
  detail::Linearized lin = detail::linearize_flat(flat, std::vector<Array>{w}, "grad");
  const std::string text = lin.linear->jaxpr.str();
  EXPECT_TRUE(contains(text, "scan[")) << text;
  EXPECT_FALSE(contains(text, "f32[50,8,8]")) << text;
  check_grads([&](const Array& w) { return f(w); }, std::tuple{lax::convert_element_type(w, DType::Float64)});
}

// ---- vmap ----

TEST(ScanVmap, MatchesALoopOverTheBatch) {
  Array ws = randn({4, 3}, DType::Float64, 19, 0.5), xs = randn({5, 4, 3}, DType::Float64, 20);
  auto f = [](const Array& w, const Array& xs) {
    auto [c, ys] = lax::scan([&w](const Array& c, const Array& x) {
      return std::pair(jnp::sin(c) * w + x, c * 2.0);
    }, jnp::zeros_like(w), xs);
    return std::pair(c, ys);
  };
  // Batched const and xs (the xs along their axis 1), then only the xs, then only w.
  auto [c, ys] = jx::vmap(f, {.in_axes = {0, 1}})(ws, xs);
  auto [c1, ys1] = jx::vmap(f, {.in_axes = {jx::not_mapped, 1}})(row(ws, 0), xs);
  Array xs0 = lax::squeeze(lax::slice(xs, {0, 0, 0}, {5, 1, 3}), {1});
  auto [c2, ys2] = jx::vmap(f, {.in_axes = {0, jx::not_mapped}})(ws, xs0);
  for (int64_t b = 0; b < 4; ++b) {
    Array xb = lax::squeeze(lax::slice(xs, {0, b, 0}, {5, b + 1, 3}), {1});
    auto [rc, rys] = f(row(ws, b), xb);
    EXPECT_ALLCLOSE(row(c, b), rc, 1e-12, 1e-12);
    EXPECT_ALLCLOSE(row(ys, b), rys, 1e-12, 1e-12);
    auto [rc1, rys1] = f(row(ws, 0), xb);
    EXPECT_ALLCLOSE(row(c1, b), rc1, 1e-12, 1e-12);
    EXPECT_ALLCLOSE(row(ys1, b), rys1, 1e-12, 1e-12);
    auto [rc2, rys2] = f(row(ws, b), xs0);
    EXPECT_ALLCLOSE(row(c2, b), rc2, 1e-12, 1e-12);
    EXPECT_ALLCLOSE(row(ys2, b), rys2, 1e-12, 1e-12);
  }
}

// The batch axis of xs at 0 (vmap's default) moves to 1, so axis 0 stays the scanned one;
// fori_loop and a batched map under vmap too.
TEST(ScanVmap, XsBatchedAtAxisZeroForiLoopAndMap) {
  Array xs = randn({2, 5, 3}, DType::Float64, 44);
  auto f = [](const Array& xs) {
    auto [c, ys] = lax::scan([](const Array& c, const Array& x) { return std::pair(c * x + x, c); },
                             jnp::ones_like(row(xs, 0)), xs, {.reverse = true});
    return std::pair(c, ys);
  };
  auto [c, ys] = jx::vmap(f)(xs);
  auto loop = [](const Array& x) { return lax::fori_loop(0, 4, [&x](const Array& i, const Array& c) {
    return c * x + lax::convert_element_type(i, x.dtype());
  }, x); };
  auto chunked = [](const Array& xs) { return lax::map([](const Array& r) { return jnp::sum(r * r); }, xs, {.batch_size = 2}); };
  Array l = jx::vmap(loop)(xs), m = jx::vmap(chunked)(xs);
  for (int64_t b = 0; b < 2; ++b) {
    auto [rc, rys] = f(row(xs, b));
    EXPECT_ALLCLOSE(row(c, b), rc, 1e-12, 1e-12);
    EXPECT_ALLCLOSE(row(ys, b), rys, 1e-12, 1e-12);
    EXPECT_ALLCLOSE(row(l, b), loop(row(xs, b)), 1e-12, 1e-12);
    EXPECT_ALLCLOSE(row(m, b), chunked(row(xs, b)), 1e-12, 1e-12);
  }
}

TEST(ScanVmap, BatchedInitOnlyAndOutAxes) {
  Array inits = randn({3, 2}, DType::Float64, 21), xs = randn({4, 2}, DType::Float64, 22);
  auto f = [&xs](const Array& init) {
    return lax::scan([](const Array& c, const Array& x) { return std::pair(c * x + 1.0, c); }, init, xs);
  };
  auto [c, ys] = jx::vmap(f)(inits);
  for (int64_t b = 0; b < 3; ++b) {
    auto [rc, rys] = f(row(inits, b));
    EXPECT_ALLCLOSE(row(c, b), rc, 1e-12, 1e-12);
    EXPECT_ALLCLOSE(row(ys, b), rys, 1e-12, 1e-12);
  }
}

// ---- jit and compositions ----

TEST(ScanJit, MatchesEagerAndComposes) {
  Array w = randn({3}, DType::Float64, 23, 0.5), xs = randn({4, 3}, DType::Float64, 24, 0.5);
  auto jitted = jx::jit(scan_loss);
  EXPECT_ALLCLOSE(jitted(w, xs), scan_loss(w, xs), 1e-12, 1e-12);
  // grad(jit), jit(grad), jit(vmap(grad)), vmap(grad) all agree with the eager gradient.
  Array g = jx::grad(scan_loss)(w, xs);
  EXPECT_ALLCLOSE(jx::grad(jitted)(w, xs), g, 1e-12, 1e-12);
  EXPECT_ALLCLOSE(jx::jit(jx::grad(scan_loss))(w, xs), g, 1e-12, 1e-12);
  Array ws = randn({2, 3}, DType::Float64, 25, 0.5);
  Array batched = jx::jit(jx::vmap(jx::grad(scan_loss), {.in_axes = {0, jx::not_mapped}}))(ws, xs);
  for (int64_t b = 0; b < 2; ++b)
    EXPECT_ALLCLOSE(row(batched, b), jx::grad(scan_loss)(row(ws, b), xs), 1e-12, 1e-12);
  // The jit of a fori_loop and of a map.
  Array x = randn({3}, DType::Float64, 26);
  EXPECT_ALLCLOSE(jx::jit(cube_by_loop)(x), cube_by_loop(x), 1e-12, 1e-12);
  auto mapped = [](const Array& xs) { return lax::map([](const Array& r) { return jnp::sum(r * r); }, xs); };
  EXPECT_ALLCLOSE(jx::jit(mapped)(xs), mapped(xs), 1e-12, 1e-12);
}

// ---- the program ----

TEST(ScanProgram, PrintsAndParsesBack) {
  auto f = [](const Array& w, const Array& xs) {
    return lax::scan([&w](const Array& c, const Array& x) { return std::pair(c * w + x, c); }, jnp::zeros_like(w),
                     xs, {.reverse = true, .unroll = 2});
  };
  ClosedJaxpr j = jx::make_jaxpr(f)(jnp::ones({3}, DType::Float32), jnp::ones({5, 3}, DType::Float32));
  const std::string text = j.str();
  for (const char* want : {"scan[body={ lambda ; ", "length=5", "num_carry=1", "num_consts=1", "reverse=True",
                           "unroll=2", "f32[5,3]"})
    EXPECT_TRUE(contains(text, want)) << want << " in\n" << text;
  Jaxpr parsed = parse_jaxpr(text);
  EXPECT_EQ(parsed.str(), text);
  verify_jaxpr(parsed);
  // The parsed program computes the same.
  Array w = randn({3}, DType::Float32, 27), xs = randn({5, 3}, DType::Float32, 28);
  std::vector<Array> a = eval_jaxpr(ClosedJaxpr{parsed, {}}, std::vector<Array>{w, xs});
  auto [c, ys] = f(w, xs);
  EXPECT_ALLCLOSE(a[0], c);
  EXPECT_ALLCLOSE(a[1], ys);
}

TEST(ScanProgram, DceDropsUnusedCarriesAndYs) {
  // Carry 1 and y 0 are unused; carry 0 stays (its output is used).
  auto f = [](const Array& xs) {
    auto [c, ys] = lax::scan([](const std::pair<Array, Array>& c, const Array& x) {
      return std::pair(std::pair(c.first + x, c.second * x), std::pair(jnp::sin(x), c.first));
    }, std::pair(jnp::zeros({2}, DType::Float32), jnp::ones({2}, DType::Float32)), xs);
    return std::pair(c.first, ys.second);
  };
  ClosedJaxpr j = jx::make_jaxpr(f)(jnp::ones({4, 2}, DType::Float32));
  detail::DcedJaxpr d = detail::dce_jaxpr(j.jaxpr, {true, true});
  ASSERT_EQ(d.jaxpr.eqns.back().primitive->name(), "scan") << d.jaxpr.str();
  const Equation& e = d.jaxpr.eqns.back();
  EXPECT_EQ(e.params.get_int("num_carry"), 1) << d.jaxpr.str();
  EXPECT_EQ(e.outputs.size(), 2u);
  EXPECT_FALSE(contains(d.jaxpr.str(), "sin")) << d.jaxpr.str();
  Array xs = randn({4, 2}, DType::Float32, 29);
  std::vector<Array> consts;
  for (size_t i = 0; i < j.consts.size(); ++i)
    if (d.used_constvars[i]) consts.push_back(j.consts[i]);
  std::vector<Array> got = eval_jaxpr(ClosedJaxpr{d.jaxpr, consts}, std::vector<Array>{xs});
  auto [c0, y1] = f(xs);
  EXPECT_ALLCLOSE(got[0], c0);
  EXPECT_ALLCLOSE(got[1], y1);
  // A carry the kept ones read stays, though its output is unused.
  auto g = [](const Array& xs) {
    auto [c, ys] = lax::scan([](const std::pair<Array, Array>& c, const Array& x) {
      return std::pair(std::pair(c.first + c.second, c.second * x), none);
    }, std::pair(jnp::zeros({2}, DType::Float32), jnp::ones({2}, DType::Float32)), xs);
    return c.first;
  };
  ClosedJaxpr jg = jx::make_jaxpr(g)(jnp::ones({4, 2}, DType::Float32));
  detail::DcedJaxpr dg = detail::dce_jaxpr(jg.jaxpr, {true});
  EXPECT_EQ(dg.jaxpr.eqns.back().params.get_int("num_carry"), 2) << dg.jaxpr.str();
}

// ---- associative_scan ----

TEST(AssociativeScan, PrefixSumsAndProductsMatchALoop) {
  for (int64_t n : {1, 2, 5, 8, 13}) {
    Array x = randn({n, 2}, DType::Float64, 30 + static_cast<uint32_t>(n));
    Array sums = lax::associative_scan([](const Array& a, const Array& b) { return a + b; }, x);
    EXPECT_ALLCLOSE(sums, jnp::cumsum(x, 0), 1e-12, 1e-12) << n;
    Array rev = lax::associative_scan([](const Array& a, const Array& b) { return a + b; }, x, {.reverse = true});
    EXPECT_ALLCLOSE(rev, jnp::flip(jnp::cumsum(jnp::flip(x, 0), 0), 0), 1e-12, 1e-12) << n;
    Array cols = lax::associative_scan([](const Array& a, const Array& b) { return a * b; }, lax::transpose(x, {1, 0}),
                                       {.axis = -1});
    EXPECT_ALLCLOSE(cols, jnp::cumprod(lax::transpose(x, {1, 0}), 1), 1e-12, 1e-12) << n;
  }
}

// The linear recurrence h_t = a_t h_{t-1} + b_t as an associative combination of
// (a, b) pairs, against the loop (and a pytree of elems).
TEST(AssociativeScan, PytreeLinearRecurrenceDifferentiatesAndBatches) {
  auto recurrence = [](const Array& a, const Array& b) {
    auto combine = [](const std::pair<Array, Array>& l, const std::pair<Array, Array>& r) {
      return std::pair(l.first * r.first, r.first * l.second + r.second);
    };
    return lax::associative_scan(combine, std::pair(a, b)).second;
  };
  Array a = randn({7}, DType::Float64, 40, 0.5), b = randn({7}, DType::Float64, 41);
  std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>(), h;
  double acc = 0;
  for (size_t t = 0; t < 7; ++t) h.push_back(acc = av[t] * acc + bv[t]);
  EXPECT_ALLCLOSE(recurrence(a, b), Array(h), 1e-12, 1e-12);
  check_grads([&](const Array& a, const Array& b) { return jnp::sum(recurrence(a, b)); }, std::tuple{a, b}, {.order = 2});
  Array as = randn({3, 7}, DType::Float64, 42), bs = randn({3, 7}, DType::Float64, 43);
  Array batched = jx::vmap(recurrence)(as, bs);
  for (int64_t k = 0; k < 3; ++k) EXPECT_ALLCLOSE(row(batched, k), recurrence(row(as, k), row(bs, k)), 1e-12, 1e-12);
}

TEST(AssociativeScan, Errors) {
  auto add = [](const std::pair<Array, Array>& l, const std::pair<Array, Array>& r) {
    return std::pair(l.first + r.first, l.second + r.second);
  };
  EXPECT_JX_ERROR(lax::associative_scan(add, std::pair(jnp::ones({3}), jnp::ones({4}))), "[associative_scan]",
                  "same size along axis 0", "f32[3], f32[4]");
  EXPECT_JX_ERROR(lax::associative_scan([](const Array& a, const Array& b) { return a + b; }, jnp::ones({3}),
                                        {.axis = 1}),
                  "[associative_scan]", "axis 1 is out of range", "f32[3]");
  EXPECT_JX_ERROR(lax::associative_scan([](const Array& a, const Array&) { return std::pair(a, a); }, jnp::ones({3})),
                  "[associative_scan]", "fn must return a pytree with the structure of elems");
}

// ---- errors ----

TEST(ScanErrors, NameTheMismatch) {
  Array a = jnp::ones({3, 2}, DType::Float32), b = jnp::ones({4}, DType::Float32);
  auto add = [](const Array& c, const std::pair<Array, Array>& x) { return std::pair(c, x.first); };
  EXPECT_JX_ERROR(lax::scan(add, scalar(0, DType::Float32), std::pair(a, b)), "[scan]",
                  "different leading sizes", "3 (leaf 0: f32[3,2])", "4 (leaf 1: f32[4])");
  auto keep = [](const Array& c, const Array& x) { return std::pair(c, x); };
  EXPECT_JX_ERROR(lax::scan(keep, scalar(0, DType::Float32), a, {.length = 5}), "[scan]", "length=5",
                  "leading size 3");
  EXPECT_JX_ERROR(lax::scan(keep, scalar(0, DType::Float32), scalar(1, DType::Float32)), "[scan]",
                  "xs leaf 0 has type f32[]", "no leading axis");
  EXPECT_JX_ERROR(lax::scan([](const Array& c, None) { return std::pair(c, none); }, scalar(0, DType::Float32), none),
                  "[scan]", "no array leaves", "ScanOptions::length");
  EXPECT_JX_ERROR(lax::scan(keep, scalar(0, DType::Float32), a, {.length = -1}), "[scan]",
                  "length must be nonnegative");
  EXPECT_JX_ERROR(lax::scan(keep, scalar(0, DType::Float32), a, {.unroll = 0}), "[scan]", "unroll must be at least 1");
  // The carry's type must be kept: shape, dtype (not weakly typed), structure.
  EXPECT_JX_ERROR(lax::scan([](const Array& c, const Array& x) { return std::pair(c + x, x); },
                            scalar(0, DType::Float32), a),
                  "[scan]", "f must return a carry of the type it takes", "carry leaf 0 is f32[]",
                  "f32[2] on output");
  EXPECT_JX_ERROR(lax::scan([](const Array& c, const Array& x) { return std::pair(lax::convert_element_type(c, DType::Float64), x); },
                            scalar(0, DType::Float32), a),
                  "[scan]", "carry leaf 0 is f32[]", "f64[] on output");
  EXPECT_JX_ERROR(lax::scan([](const std::vector<Array>& c, const Array& x) {
                    return std::pair(std::vector<Array>{c[0]}, x);
                  }, std::vector<Array>{scalar(0, DType::Float32), scalar(0, DType::Float32)}, a),
                  "[scan]", "f must return a carry with the structure of its input", "PyTreeDef([*])",
                  "PyTreeDef([*, *])");
}

TEST(ScanErrors, ForiLoopAndMap) {
  Array x = jnp::ones({3}, DType::Float32);
  EXPECT_JX_ERROR(lax::fori_loop(0, 3, [](const Array&, const Array& c) { return jnp::sum(c); }, x), "[fori_loop]",
                  "body_fn must return a carry of the type it takes", "carry leaf 0 is f32[3]", "f32[] on output");
  EXPECT_JX_ERROR(lax::fori_loop(0, 3, [](const Array&, const Array& c) { return std::pair(c, c); }, x), "[fori_loop]",
                  "body_fn must return a carry with the structure of its input", "PyTreeDef((*, *))",
                  "PyTreeDef(*)");
  EXPECT_JX_ERROR(lax::fori_loop(0, int64_t{1} << 40, [](const Array&, const Array& c) { return c; }, x),
                  "[fori_loop]", "must fit int32", "upper=1099511627776");
  Array xs = jnp::ones({4, 2}, DType::Float32);
  EXPECT_JX_ERROR(lax::map([](const Array& r) { return r; }, xs, {.batch_size = 0}), "[map]",
                  "batch_size must be positive, got 0");
  EXPECT_JX_ERROR(lax::map([](None) { return none; }, none), "[map]", "no array leaves");
}

TEST(ScanErrors, ThePrimitivesShapeRule) {
  ClosedJaxpr body_program = jx::make_jaxpr([](const Array& c, const Array& x) { return std::vector<Array>{c + x, c}; })(
      jnp::ones({2}, DType::Float32), jnp::ones({2}, DType::Float32));
  auto body = std::make_shared<ClosedJaxpr>(body_program);
  auto params = [&](int64_t length) {
    return Params{{"body", JaxprRef(body)}, {"num_consts", int64_t{0}}, {"num_carry", int64_t{1}},
                  {"length", length}, {"reverse", false}, {"unroll", int64_t{1}}};
  };
  const Primitive& scan = *find_primitive("scan");
  Array c = jnp::ones({2}, DType::Float32), xs = jnp::ones({3, 2}, DType::Float32);
  EXPECT_EQ(jx::bind(scan, std::vector<Array>{c, xs}, params(3)).size(), 2u);
  EXPECT_JX_ERROR(jx::bind(scan, std::vector<Array>{c, xs}, params(4)), "[scan]", "xs operand 0 has type f32[3,2]",
                  "length is 4");
  EXPECT_JX_ERROR(jx::bind(scan, std::vector<Array>{jnp::ones({3}, DType::Float32), xs}, params(3)), "[scan]",
                  "carry operand 0 has type f32[3]", "body takes f32[2]");
  EXPECT_JX_ERROR(jx::bind(scan, std::vector<Array>{c}, params(3)), "[scan]", "the body takes 2 inputs",
                  "1 operands");
  EXPECT_JX_ERROR(jx::bind(scan, std::vector<Array>{c, jnp::ones({3, 4}, DType::Float32)}, params(3)), "[scan]",
                  "xs operand 0 has type f32[3,4]", "slices of type f32[2]");
  // A body changing its carry's type, counts that do not fit, bad length and unroll.
  ClosedJaxpr widening = jx::make_jaxpr([](const Array& c, const Array& x) {
    return std::vector<Array>{lax::convert_element_type(c + x, DType::Float64), c};
  })(jnp::ones({2}, DType::Float32), jnp::ones({2}, DType::Float32));
  Params bad = params(3);
  bad.set("body", JaxprRef(std::make_shared<ClosedJaxpr>(widening)));
  EXPECT_JX_ERROR(jx::bind(scan, std::vector<Array>{c, xs}, bad), "[scan]", "the body must keep the carry's type",
                  "carry 0 is f32[2] on input but f64[2] on output");
  EXPECT_JX_ERROR(jx::bind(scan, std::vector<Array>{c, xs}, Params(params(3)).set("num_carry", int64_t{3})),
                  "[scan]", "num_consts=0 and num_carry=3 do not fit a body of 2 inputs");
  EXPECT_JX_ERROR(jx::bind(scan, std::vector<Array>{c, xs}, Params(params(3)).set("length", int64_t{-1})), "[scan]",
                  "length must be nonnegative");
  EXPECT_JX_ERROR(jx::bind(scan, std::vector<Array>{c, xs}, Params(params(3)).set("unroll", int64_t{0})), "[scan]",
                  "unroll must be at least 1");
  EXPECT_JX_ERROR(jx::bind(scan, std::vector<Array>{c, xs}, Params(params(3)).set("body", JaxprRef())), "[scan]",
                  "null body");
  EXPECT_TRUE(scan.has(kLinear) && scan.has(kCallsSubprogram));
}

TEST(None, IsAPytreeWithoutLeaves) {
  auto [leaves, def] = tree::flatten(std::pair(none, jnp::ones({2})));
  EXPECT_EQ(leaves.size(), 1u);
  EXPECT_EQ(def.str(), "PyTreeDef((None, *))");
  EXPECT_TRUE(tree::leaves(none).empty());
  auto back = tree::unflatten<std::pair<None, Array>>(def, leaves);
  EXPECT_EQ(back.second.shape(), (Shape{2}));
  EXPECT_JX_ERROR(tree::unflatten<None>(tree::structure(jnp::ones({2})), leaves), "[tree::unflatten]",
                  "the type expects None");
}

}  // namespace
}  // namespace jx
