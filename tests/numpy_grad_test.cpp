// jx::numpy functions under the transformations: every row is differentiated by
// check_grads (float64 finite differences; orders 1 and 2) and batched by vmap, the
// batch compared with a C++ loop of eager calls.
#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "grad_test_util.h"
#include "jx/jx.h"
#include "jx/test_util.h"
#include "test_util.h"
#include "transforms/custom_jvp.h"

namespace jx {
namespace {
namespace jnp = jx::numpy;

using Fn = std::function<std::vector<Array>(std::span<const Array>)>;

struct Row {
  std::string name;
  Fn f;
  std::vector<Array> args;
  int order = 2;
};
// gtest prints a row by its name.
void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

// Deterministic values in [lo, hi), float32 unless told.
Array data(const Shape& shape, uint32_t seed, double lo = -1.5, double hi = 1.5, DType d = DType::Float32) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(shape_size(shape)));
  for (double& x : v) x = u(rng);
  return lax::convert_element_type(Array(v, shape), d);
}
// Well separated values (no ties for max/sort): a shuffled ramp with step 0.3.
Array distinct(const Shape& shape, uint32_t seed) {
  std::vector<double> v(static_cast<size_t>(shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.3 * static_cast<double>(i) - 1.0;
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return lax::convert_element_type(Array(v, shape), DType::Float32);
}
// A well-conditioned matrix: identity * 3 plus small entries.
Array well_conditioned(int64_t n, uint32_t seed) {
  return data({n, n}, seed, -0.5, 0.5) + lax::convert_element_type(jnp::eye(n), DType::Float32) * 3.0;
}

template <class F>
Fn unary(F f) {
  return [f](std::span<const Array> x) { return std::vector<Array>{f(x[0])}; };
}
template <class F>
Fn binary(F f) {
  return [f](std::span<const Array> x) { return std::vector<Array>{f(x[0], x[1])}; };
}

Array eye_like(const Array& x, int64_t n) { return lax::convert_element_type(jnp::eye(n), x.dtype()); }

std::vector<Row> rows() {
  Array v = data({5}, 1), m = data({3, 4}, 2), m2 = data({4, 2}, 3), pos = data({3, 4}, 4, 0.5, 2.0);
  Array idx = Array(std::vector<int32_t>{3, 0, 2, 2});
  std::vector<Row> r = {
      {"sin", unary([](const Array& x) { return jnp::sin(x); }), {m}},
      {"exp", unary([](const Array& x) { return jnp::exp(x); }), {m}},
      {"log", unary([](const Array& x) { return jnp::log(x); }), {pos}},
      {"tanh", unary([](const Array& x) { return jnp::tanh(x); }), {m}},
      {"sqrt", unary([](const Array& x) { return jnp::sqrt(x); }), {pos}},
      {"power", binary([](const Array& x, const Array& y) { return jnp::power(x, y); }), {pos, m}},
      {"power_scalar", unary([](const Array& x) { return jnp::power(x, 3); }), {m}},
      {"maximum", binary([](const Array& x, const Array& y) { return jnp::maximum(x, y); }),
       {distinct({3, 4}, 5), distinct({3, 4}, 6) + 0.15}},
      {"where", unary([](const Array& x) { return jnp::where(x > 0, x * x, jnp::sin(x)); }), {distinct({3, 4}, 7) + 0.15}},
      {"sum_axis1", unary([](const Array& x) { return jnp::sum(x * x, 1); }), {m}},
      {"mean_axis0", unary([](const Array& x) { return jnp::mean(jnp::sin(x), 0); }), {m}},
      {"prod_axis1", unary([](const Array& x) { return jnp::prod(x, 1); }), {m}},
      {"max_axis1", unary([](const Array& x) { return jnp::max(x, 1); }), {distinct({3, 4}, 8)}},
      {"matmul", binary([](const Array& a, const Array& b) { return jnp::matmul(a, b); }), {m, m2}},
      {"dot_vec", binary([](const Array& a, const Array& b) { return jnp::dot(a, b); }), {v, data({5}, 9)}},
      {"einsum", binary([](const Array& a, const Array& b) { return jnp::einsum("ij,jk->ik", a, b); }), {m, m2}},
      {"einsum_trace", unary([](const Array& a) { return jnp::einsum("ii->", a); }), {data({3, 3}, 10)}},
      {"cumsum", unary([](const Array& x) { return jnp::cumsum(x, 0); }), {m}},
      {"cumprod", unary([](const Array& x) { return jnp::cumprod(x, 1); }), {m}},
      {"sort", unary([](const Array& x) { return jnp::sort(x, -1); }), {distinct({3, 4}, 11)}},
      {"take", unary([idx](const Array& x) { return jnp::take(x, idx, 1); }), {m}},
      {"index_int_slice", unary([](const Array& x) { return x(1, Slice{0, 3}); }), {m}},
      {"index_array", unary([](const Array& x) { return x(Array(std::vector<int32_t>{2, 0})); }), {m}},
      {"at_add", binary([](const Array& x, const Array& y) { return x.at(1).add(y); }), {m, data({4}, 12)}},
      {"concatenate", binary([](const Array& a, const Array& b) { return jnp::concatenate({a, b}, 0); }),
       {m, data({2, 4}, 13)}},
      {"stack", binary([](const Array& a, const Array& b) { return jnp::stack({a, b}, 1); }), {m, data({3, 4}, 14)}},
      {"transpose", unary([](const Array& x) { return jnp::transpose(x); }), {m}},
      {"reshape", unary([](const Array& x) { return jnp::reshape(x * x, {2, 6}); }), {m}},
      {"pad", unary([](const Array& x) { return jnp::pad(x, 1); }), {m}},
      {"flip", unary([](const Array& x) { return jnp::flip(x, 0); }), {m}},
      {"softmax", unary([](const Array& x) {
         Array e = jnp::exp(x - jnp::max(x, -1, true));
         return e / jnp::sum(e, -1, true);
       }),
       {m}},
      {"logsumexp", unary([](const Array& x) { return jnp::logsumexp(x, 1); }), {m}},
      // Custom jvp rules (custom_jvp_call): orders 1 and 2 and vmap through the rule.
      {"logaddexp", binary([](const Array& x, const Array& y) { return jnp::logaddexp(x, y); }), {m, data({3, 4}, 21)}},
      {"logaddexp2", binary([](const Array& x, const Array& y) { return jnp::logaddexp2(x, y); }), {m, data({4}, 22)}},
      {"hypot", binary([](const Array& x, const Array& y) { return jnp::hypot(x, y); }), {m, data({3, 4}, 23)}},
      {"sinc", unary([](const Array& x) { return jnp::sinc(x); }), {m}},
      {"var", unary([](const Array& x) { return jnp::var(x, 0); }), {m}},
      {"solve", binary([](const Array& a, const Array& b) { return jnp::linalg::solve(a, b); }),
       {well_conditioned(3, 15), data({3, 2}, 16)}},
      {"inv", unary([](const Array& a) { return jnp::linalg::inv(a); }), {well_conditioned(3, 17)}},
      {"det", unary([](const Array& a) { return jnp::linalg::det(a); }), {well_conditioned(3, 18)}},
      {"det_batched", unary([](const Array& a) { return jnp::linalg::det(a); }), {data({2, 3, 3}, 24)}},
      {"cholesky", unary([](const Array& a) {
         // Symmetric positive definite by construction, so every perturbation stays valid.
         return jnp::linalg::cholesky(jnp::matmul(a, jnp::transpose(a)) + eye_like(a, 3) * 2.0);
       }),
       {data({3, 3}, 19)}},
  };
  return r;
}

class NumpyGrad : public ::testing::TestWithParam<Row> {};

TEST_P(NumpyGrad, CheckGrads) {
  const Row& row = GetParam();
  JX_EXPECT_GRADS_OK(row.f, row.args, {.order = row.order});
}

TEST_P(NumpyGrad, VmapMatchesALoop) {
  const Row& row = GetParam();
  // A batch of 3 different argument sets: the first argument mapped at axis 0, the
  // others mapped too (at their last axis) or, for the third member set, not mapped.
  constexpr int kBatch = 3;
  for (bool map_rest : {true, false}) {
    std::vector<std::vector<Array>> members;
    for (int b = 0; b < kBatch; ++b) {
      std::vector<Array> args = row.args;
      args[0] = args[0] * (1.0 + 0.1 * b);
      if (map_rest)
        for (size_t i = 1; i < args.size(); ++i) args[i] = args[i] * (1.0 - 0.05 * b);
      members.push_back(args);
    }
    std::vector<Array> batched;
    std::vector<std::optional<int64_t>> in_dims;
    for (size_t i = 0; i < row.args.size(); ++i) {
      if (i > 0 && !map_rest) {
        batched.push_back(row.args[i]);
        in_dims.push_back(std::nullopt);
        continue;
      }
      std::vector<Array> column;
      for (auto& mem : members) column.push_back(mem[i]);
      int64_t axis = i == 0 ? 0 : row.args[i].ndim();  // last axis of the stacked array
      batched.push_back(jnp::stack(column, axis));
      in_dims.push_back(axis);
    }
    std::vector<std::optional<int64_t>> out_dims{0};
    std::vector<Array> outs;
    try {
      outs = detail::vmap_flat(row.f, batched, in_dims, out_dims, {});
    } catch (const Error& e) {
      ADD_FAILURE() << row.name << (map_rest ? " (all mapped)" : " (rest not mapped)") << ": " << e.what();
      continue;
    }
    std::vector<std::vector<Array>> loop;
    for (auto& mem : members) loop.push_back(row.f(mem));
    ASSERT_EQ(outs.size(), loop[0].size());
    for (size_t k = 0; k < outs.size(); ++k) {
      std::vector<Array> column;
      for (auto& l : loop) column.push_back(l[k]);
      EXPECT_ALLCLOSE(outs[k], jnp::stack(column, 0), 1e-5, 1e-5)
          << row.name << (map_rest ? " (all mapped)" : " (rest not mapped)") << " output " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Table, NumpyGrad, ::testing::ValuesIn(rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

// vmap of grad against a loop of grads, on a composition.
TEST(NumpyGradExtra, VmapOfGradOfSoftmaxLoss) {
  auto loss = [](const Array& logits) {
    Array e = jnp::exp(logits - jnp::max(logits));
    Array p = e / jnp::sum(e);
    return -jnp::log(p(1));
  };
  Array batch = data({4, 3}, 20);
  Array g = vmap(grad(loss))(batch);
  // Closed form: softmax(logits) - onehot(1).
  auto bv = batch.to_vector<double>();
  std::vector<double> want;
  for (int b = 0; b < 4; ++b) {
    double mx = std::max({bv[b * 3], bv[b * 3 + 1], bv[b * 3 + 2]}), s = 0;
    for (int j = 0; j < 3; ++j) s += std::exp(bv[b * 3 + j] - mx);
    for (int j = 0; j < 3; ++j) want.push_back(std::exp(bv[b * 3 + j] - mx) / s - (j == 1 ? 1.0 : 0.0));
  }
  EXPECT_ALLCLOSE(g, lax::convert_element_type(Array(want, {4, 3}), DType::Float32), 1e-5, 1e-6);
}


// Derivatives JAX defines by custom_jvp rules, at the points where the composition's own
// derivative differs. Expected values computed with JAX 0.10.2 (x64) in /work/venv:
// jax.grad(f, (0, 1))(a, b).
TEST(NumpyGradExtra, DerivativesAsJaxDefinesThem) {
  const double inf = INFINITY, nan = NAN;
  struct Case {
    const char* name;
    std::function<Array(const Array&, const Array&)> f;
    double a, b, da, db;
  };
  auto lae = [](const Array& x, const Array& y) { return jnp::logaddexp(x, y); };
  auto lae2 = [](const Array& x, const Array& y) { return jnp::logaddexp2(x, y); };
  auto hyp = [](const Array& x, const Array& y) { return jnp::hypot(x, y); };
  const std::vector<Case> cases = {
      {"logaddexp tie", lae, 1, 1, 0.5, 0.5},
      {"logaddexp +inf +inf", lae, inf, inf, 1, 1},
      {"logaddexp -inf -inf", lae, -inf, -inf, nan, nan},
      {"logaddexp +inf 1", lae, inf, 1, 1, 2.718281828459045},
      {"logaddexp -inf 1", lae, -inf, 1, 0, 1},
      {"logaddexp 2 1", lae, 2, 1, 0.7310585786300049, 0.2689414213699951},
      {"logaddexp nan 1", lae, nan, 1, nan, nan},
      {"logaddexp2 tie", lae2, 1, 1, 0.5, 0.5},
      {"logaddexp2 +inf +inf", lae2, inf, inf, 1, 1},
      {"logaddexp2 +inf 1", lae2, inf, 1, 1, 2},
      {"logaddexp2 -inf 1", lae2, -inf, 1, 0, 1},
      {"logaddexp2 2 1", lae2, 2, 1, 0.6666666666666666, 0.3333333333333333},
      {"hypot 0 0", hyp, 0, 0, 0.5, 0.5},
      {"hypot 3 0", hyp, 3, 0, 1, 0},
      {"hypot -3 4", hyp, -3, 4, -0.6, 0.8},
  };
  for (const Case& c : cases) {
    for (bool jitted : {false, true}) {
      auto g = grad(c.f, argnums<0, 1>);
      auto [da, db] = jitted ? jit(g)(Array(c.a), Array(c.b)) : g(Array(c.a), Array(c.b));
      EXPECT_ALLCLOSE(da, Array(c.da), 1e-12, 1e-12, false) << c.name << (jitted ? " (jit)" : "");
      EXPECT_ALLCLOSE(db, Array(c.db), 1e-12, 1e-12, false) << c.name << (jitted ? " (jit)" : "");
    }
  }
  // float32 ties, and vmap of the rule against the same values.
  Array one = lax::convert_element_type(Array(1.0), DType::Float32);
  auto [fa, fb] = grad(lae, argnums<0, 1>)(one, one);
  EXPECT_EQ(fa.dtype(), DType::Float32);
  EXPECT_EQ(fa.item<float>(), 0.5f);
  EXPECT_EQ(fb.item<float>(), 0.5f);
  Array xs = Array({1.0, inf, 2.0}), ys = Array({1.0, inf, 1.0});
  auto [va, vb] = vmap(grad(lae, argnums<0, 1>))(xs, ys);
  EXPECT_EQ(va.dtype(), xs.dtype());
  EXPECT_ALLCLOSE(va, Array({0.5, 1.0, 0.7310585786300049}), 1e-6, 1e-6, false);
  EXPECT_ALLCLOSE(vb, Array({0.5, 1.0, 0.2689414213699951}), 1e-6, 1e-6, false);
  // sinc at 0: JAX's jax.grad(jnp.sinc)(0.) = 0 and jax.grad(jax.grad(jnp.sinc))(0.) = -pi^2/3.
  auto sinc = [](const Array& x) { return jnp::sinc(x); };
  EXPECT_EQ(grad(sinc)(Array(0.0)).item<double>(), 0.0);
  EXPECT_ALLCLOSE(grad(grad(sinc))(Array(0.0)), Array(-3.2898681336964524), 1e-12, 1e-12, false);
  EXPECT_EQ(sinc(Array(0.0)).item<double>(), 1.0);
}


// The custom_jvp facility's own errors.
TEST(NumpyGradExtra, CustomJvpCallErrors) {
  using Outs = std::pair<std::vector<Array>, std::vector<Array>>;
  // f and its rule close over x, which grad differentiates: its tangent would bypass the rule.
  auto closes_over = [](const Array& x) {
    auto f = [x](std::span<const Array> a) { return std::vector<Array>{a[0] * x}; };
    auto rule = [x](std::span<const Array> p, std::span<const Array> t) {
      return Outs{{p[0] * x}, {t[0] * x}};
    };
    Array c = Array(3.0);
    return detail::custom_jvp_call("scale", f, rule, std::span<const Array>(&c, 1))[0];
  };
  EXPECT_JX_ERROR(grad(closes_over)(Array(2.0)), "[custom_jvp_call]", "'scale' closes over a value being differentiated",
                  "pass it as an argument");
  // A rule giving a tangent count that is not the output count.
  auto bad_rule = [](const Array& x) {
    auto f = [](std::span<const Array> a) { return std::vector<Array>{a[0] * 2.0}; };
    auto rule = [](std::span<const Array> p, std::span<const Array> t) { return Outs{{p[0] * 2.0}, {t[0], t[0]}}; };
    return detail::custom_jvp_call("twice", f, rule, std::span<const Array>(&x, 1))[0];
  };
  EXPECT_JX_ERROR(grad(bad_rule)(Array(2.0)), "[custom_jvp_call]", "'twice': the rule returned 2 tangents for 1 outputs");
  // A rule whose outputs are not the function's.
  auto mismatch = [](const Array& x) {
    auto f = [](std::span<const Array> a) { return std::vector<Array>{a[0] * 2.0}; };
    auto rule = [](std::span<const Array> p, std::span<const Array> t) { return Outs{{p[0], p[0]}, {t[0], t[0]}}; };
    return detail::custom_jvp_call("pair", f, rule, std::span<const Array>(&x, 1))[0];
  };
  EXPECT_JX_ERROR(grad(mismatch)(Array(2.0)), "[custom_jvp_call]", "'pair': the rule gives 2 outputs but the function 1");
  // A rule calling its own custom function would stage forever.
  std::function<Array(const Array&)> self = [&self](const Array& x) {
    auto f = [](std::span<const Array> a) { return std::vector<Array>{a[0] * 2.0}; };
    auto rule = [&self](std::span<const Array> p, std::span<const Array> t) { return Outs{{self(p[0])}, {t[0] * 2.0}}; };
    return detail::custom_jvp_call("self", f, rule, std::span<const Array>(&x, 1))[0];
  };
  EXPECT_JX_ERROR(grad(self)(Array(2.0)), "[custom_jvp_call]", "'self': staging rules nested 32 deep");
  // Eagerly the function simply runs.
  EXPECT_EQ(bad_rule(Array(2.0)).item<double>(), 4.0);
}

}  // namespace
}  // namespace jx
