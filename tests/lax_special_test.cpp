// polygamma and zeta (the primitives added with the lowering slot): values against SciPy
// fixtures in float64 and float32, JAX's domain edges, errors, derivatives against finite
// differences, vmap against a loop, and native (fused) kernels under jit against eager.
// Fixtures: scripts/fixtures/special.py.
#include <cmath>
#include <functional>
#include <numbers>
#include <string>

#include "jx/test_util.h"
#include "test_util.h"

namespace jx {
namespace {

using BinaryFn = std::function<Array(const Array&, const Array&)>;

// The table: one row per primitive.
struct SpecialCase {
  std::string name;
  BinaryFn fn;
  // A smooth region for derivatives in the differentiable operand (b), the other fixed.
  std::vector<double> a;
  double b_lo, b_hi;
};
const std::vector<SpecialCase>& cases() {
  static const std::vector<SpecialCase> rows = {
      {"polygamma", lax::polygamma, {0, 1, 2, 3}, 0.6, 5.0},
      {"zeta", lax::zeta, {1.5, 2, 3.5, 6}, 0.4, 6.0},
  };
  return rows;
}

Array member(const std::string& key) { return testing::fixture_member("special/special", key); }

Array uniform(const Shape& shape, double lo, double hi, uint32_t seed) {
  Array u = testing::randn(shape, DType::Float64, seed);
  // Squash the normal samples into (lo, hi) with the logistic function: smooth, deterministic.
  Array s = lax::logistic(u);
  return lax::add(lax::mul(s, lax::broadcast_in_dim(Array(hi - lo), shape, {})),
                  lax::broadcast_in_dim(Array(lo), shape, {}));
}

TEST(Special, MatchesScipy) {
  for (const SpecialCase& c : cases())
    for (const char* dtype : {"float64", "float32"}) {
      const std::string k = c.name + "." + dtype;
      Array a = member(k + ".a"), b = member(k + ".b"), want = member(k + ".want");
      const bool f64 = std::string(dtype) == "float64";
      Array got = c.fn(a, b);
      EXPECT_ALLCLOSE(got, want, f64 ? 1e-12 : 3e-7, f64 ? 1e-13 : 1e-6) << k;
      // The native kernel calls the same function: the same bits.
      Array fused = jit([&c](const Array& x, const Array& y) { return c.fn(x, y); })(a, b);
      EXPECT_ALLCLOSE(fused, got, 0, 0) << k << " under jit";
    }
}

// float16 and bfloat16 compute in float64 too (eager only: native kernels skip them).
TEST(Special, HalfTypes) {
  for (const SpecialCase& c : cases())
    for (DType d : {DType::Float16, DType::BFloat16}) {
      Array a = lax::convert_element_type(member(c.name + ".float64.a"), d);
      Array b = lax::convert_element_type(member(c.name + ".float64.b"), d);
      Array want = lax::convert_element_type(
          c.fn(lax::convert_element_type(a, DType::Float64), lax::convert_element_type(b, DType::Float64)), d);
      // Within one unit in the last place: eager rounds through float32 (the half types'
      // compute type), the oracle rounds float64 once.
      const double ulp = d == DType::Float16 ? 1e-3 : 8e-3;
      EXPECT_ALLCLOSE(c.fn(a, b), want, ulp, 0) << c.name << " " << dtype_name(d);
      EXPECT_ALLCLOSE(jit([&c](const Array& x, const Array& y) { return c.fn(x, y); })(a, b), want, ulp, 0) << c.name;
    }
}

TEST(Special, DomainEdgesFollowJax) {
  for (const SpecialCase& c : cases()) {
    Array a = member(c.name + ".edge.a"), b = member(c.name + ".edge.b"), want = member(c.name + ".edge.want");
    EXPECT_ALLCLOSE(c.fn(a, b), want, 1e-12, 0) << c.name;
    EXPECT_ALLCLOSE(jit([&c](const Array& x, const Array& y) { return c.fn(x, y); })(a, b), want, 1e-12, 0)
        << c.name << " under jit";
  }
}

TEST(Special, KnownValues) {
  const double pi = std::numbers::pi;
  EXPECT_NEAR(lax::zeta(Array(2.0), Array(1.0)).item<double>(), pi * pi / 6, 1e-15);
  EXPECT_NEAR(lax::zeta(Array(4.0), Array(1.0)).item<double>(), std::pow(pi, 4) / 90, 1e-15);
  EXPECT_NEAR(lax::polygamma(Array(1.0), Array(0.5)).item<double>(), pi * pi / 2, 1e-14);
  EXPECT_NEAR(lax::polygamma(Array(0.0), Array(1.0)).item<double>(), -0.5772156649015329, 4e-15);  // digamma(1)
  EXPECT_EQ(lax::polygamma(Array(1.0f), Array(2.0f)).dtype(), DType::Float32);
}

TEST(Special, Errors) {
  for (const SpecialCase& c : cases()) {
    const std::string tag = "[" + c.name + "]";
    EXPECT_JX_ERROR(c.fn(Array(1), Array(2)), tag.c_str(), "must be floating", "i32");
    EXPECT_JX_ERROR(c.fn(Array(2.0), Array(1.0f)), tag.c_str(), "same dtype");
    EXPECT_JX_ERROR(c.fn(Array({2.0, 3.0}), Array({1.0, 2.0, 3.0})), tag.c_str(), "same shape");
  }
  // Differentiable in x (polygamma) and q (zeta) only, as JAX.
  EXPECT_JX_ERROR(grad([](const Array& m) { return lax::polygamma(m, Array(1.5)); })(Array(1.0)), "[polygamma]",
                  "not differentiable with respect to m", "f64");
  EXPECT_JX_ERROR(grad([](const Array& x) { return lax::zeta(x, Array(1.5)); })(Array(3.0)), "[zeta]",
                  "not differentiable with respect to x", "f64");
}

TEST(Special, DerivativesMatchFiniteDifferences) {
  uint32_t seed = 11;
  for (const SpecialCase& c : cases()) {
    Array a = Array(c.a.data(), Shape{static_cast<int64_t>(c.a.size())});
    Array b = uniform({4}, c.b_lo, c.b_hi, seed++);
    // Order 2: d/db of the derivative rule's own polygamma(m + 1) / zeta(x + 1).
    test_util::check_grads([&c, a](const Array& y) { return c.fn(a, y); }, std::tuple{b},
                           {.order = 2, .atol = 1e-6, .rtol = 1e-6});
  }
  // The derivative values: polygamma(m, x)' = polygamma(m + 1, x); zeta(x, q)' = -x zeta(x + 1, q).
  const double pi = std::numbers::pi;
  EXPECT_NEAR(grad([](const Array& x) { return lax::polygamma(Array(0.0), x); })(Array(1.0)).item<double>(),
              pi * pi / 6, 1e-13);
  EXPECT_NEAR(grad([](const Array& q) { return lax::zeta(Array(3.0), q); })(Array(1.0)).item<double>(),
              -3 * std::pow(pi, 4) / 90, 1e-13);
}

TEST(Special, VmapMatchesLoop) {
  for (const SpecialCase& c : cases()) {
    Array a = Array(c.a.data(), Shape{static_cast<int64_t>(c.a.size())});
    Array b = lax::reshape(uniform({12}, c.b_lo, c.b_hi, 90), {4, 3});
    // Both operands mapped (a over its only axis, b over axis 0), then only b (axis 1).
    Array both = vmap([&c](const Array& x, const Array& y) {
      return c.fn(lax::broadcast_in_dim(x, y.shape(), {}), y);
    })(a, b);
    Array only_b = vmap([&c](const Array& y) { return c.fn(lax::broadcast_in_dim(Array(c.a[1]), y.shape(), {}), y); },
                        {.in_axes = {1}})(b);
    for (int64_t i = 0; i < 4; ++i) {
      Array row = lax::reshape(lax::slice(b, {i, 0}, {i + 1, 3}), {3});
      Array want = c.fn(lax::broadcast_in_dim(Array(c.a[static_cast<size_t>(i)]), {3}, {}), row);
      EXPECT_ALLCLOSE(lax::reshape(lax::slice(both, {i, 0}, {i + 1, 3}), {3}), want, 0, 0) << c.name;
    }
    for (int64_t j = 0; j < 3; ++j) {
      Array col = lax::reshape(lax::slice(b, {0, j}, {4, j + 1}), {4});
      Array want = c.fn(lax::broadcast_in_dim(Array(c.a[1]), {4}, {}), col);
      EXPECT_ALLCLOSE(lax::reshape(lax::slice(only_b, {j, 0}, {j + 1, 4}), {4}), want, 0, 0) << c.name;
    }
  }
}

TEST(Special, FusedUnderJit) {
  for (const SpecialCase& c : cases())
    for (DType dtype : {DType::Float64, DType::Float32}) {
      auto f = [&c](const Array& x, const Array& y) {
        // Elementwise work around the primitive, so the fusion holds it with its neighbours.
        return lax::mul(c.fn(x, lax::mul(y, y)), lax::exp(lax::neg(y)));
      };
      Array a = lax::convert_element_type(lax::broadcast_in_dim(Array(c.a[2]), {257}, {}), dtype);
      Array b = lax::convert_element_type(uniform({257}, std::sqrt(c.b_lo + 0.2), std::sqrt(c.b_hi), 7), dtype);
      auto jf = jit(f);
      const std::string text = jf.lower(a, b).as_text();
      // The top-level program is one fusion equation, whose body holds the primitive.
      EXPECT_NE(text.find("= fusion["), std::string::npos) << text;
      EXPECT_NE(text.find("= " + c.name + " "), std::string::npos) << text;
      int top_level = 0;
      std::istringstream lines(text);
      for (std::string line; std::getline(lines, line);)
        if (line.rfind("    ", 0) == 0 && line.size() > 4 && line[4] != ' ' && line.find(" = ") != std::string::npos) {
          ++top_level;
          EXPECT_NE(line.find("= fusion["), std::string::npos) << line;
        }
      EXPECT_EQ(top_level, 1) << text;
      // exp is an inline polynomial in kernels (within a few ULP of eager); the rest agrees.
      EXPECT_ALLCLOSE(jf(a, b), f(a, b), dtype == DType::Float64 ? 1e-14 : 1e-6, 0) << c.name;
    }
}

}  // namespace
}  // namespace jx
