// jx::numpy reductions against NumPy/SciPy fixtures (scripts/fixtures/numpy_core.py):
// function x dtype x axis (none, int, negative, tuple) x keepdims, with JAX's result dtypes.
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "test_util.h"

namespace jnp = jx::numpy;
using jx::Array;

namespace {

using Reducer = std::function<Array(const Array&, const jnp::Axes&, bool)>;
using Scanner = std::function<Array(const Array&, std::optional<int64_t>)>;

const std::map<std::string, Reducer>& reducers() {
  static const std::map<std::string, Reducer> t = {
      {"sum", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::sum(x, a, k); }},
      {"prod", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::prod(x, a, k); }},
      {"mean", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::mean(x, a, k); }},
      {"var", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::var(x, a, 0, k); }},
      {"std", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::std(x, a, 0, k); }},
      {"max", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::max(x, a, k); }},
      {"min", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::min(x, a, k); }},
      {"ptp", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::ptp(x, a, k); }},
      {"all", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::all(x, a, k); }},
      {"any", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::any(x, a, k); }},
      {"median", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::median(x, a, k); }},
      {"count_nonzero", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::count_nonzero(x, a, k); }},
      {"nansum", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::nansum(x, a, k); }},
      {"nanmean", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::nanmean(x, a, k); }},
      {"nanmax", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::nanmax(x, a, k); }},
      {"nanmin", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::nanmin(x, a, k); }},
      {"logsumexp", [](const Array& x, const jnp::Axes& a, bool k) { return jnp::logsumexp(x, a, std::nullopt, k); }},
  };
  return t;
}

const std::map<std::string, Scanner>& scanners() {
  static const std::map<std::string, Scanner> t = {
      {"argmax", [](const Array& x, std::optional<int64_t> a) { return jnp::argmax(x, a); }},
      {"argmin", [](const Array& x, std::optional<int64_t> a) { return jnp::argmin(x, a); }},
      {"cumsum", [](const Array& x, std::optional<int64_t> a) { return jnp::cumsum(x, a); }},
      {"cumprod", [](const Array& x, std::optional<int64_t> a) { return jnp::cumprod(x, a); }},
  };
  return t;
}

const std::map<std::string, Array>& fixtures() {
  static const std::map<std::string, Array> f = jx::testing::fixture_npz("numpy_core/reductions");
  return f;
}

std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t next = s.find(sep, pos);
    out.push_back(s.substr(pos, next - pos));
    if (next == std::string::npos) return out;
    pos = next + sep.size();
  }
}

// "none" -> all axes; "0_2" -> {0, 2}; "m1" -> -1.
std::optional<std::vector<int64_t>> parse_axes(const std::string& s) {
  if (s == "none") return std::nullopt;
  std::vector<int64_t> out;
  for (const std::string& part : split(s, "_")) out.push_back(part[0] == 'm' ? -std::stoll(part.substr(1)) : std::stoll(part));
  return out;
}

double rtol_for(jx::DType d) {
  return d == jx::float64 ? 1e-12 : d == jx::float32 ? 2e-5 : d == jx::float16 ? 5e-3 : 0;
}
double atol_for(jx::DType d) {
  return d == jx::float64 ? 1e-12 : d == jx::float32 ? 2e-5 : d == jx::float16 ? 2e-2 : 0;
}

}  // namespace

TEST(NumpyReductions, Fixtures) {
  int checked = 0;
  std::set<std::string> seen;
  for (const auto& [key, expected] : fixtures()) {
    auto parts = split(key, "__");
    // <name>__<dtype>__ax_<axes>__kd<0|1>__out
    if (parts.size() != 5 || parts[4] != "out") continue;
    SCOPED_TRACE(key);
    const std::string& name = parts[0];
    const Array& x = fixtures().at(parts[0] + "__" + parts[1] + "__" + parts[2] + "__" + parts[3] + "__x");
    auto axes = parse_axes(parts[2].substr(3));
    bool keepdims = parts[3] == "kd1";
    Array got;
    if (auto it = reducers().find(name); it != reducers().end()) {
      got = it->second(x, axes ? jnp::Axes(*axes) : jnp::Axes(), keepdims);
      // A non-contiguous view of the same values reduces the same way.
      Array view = jnp::transpose(jnp::transpose(x, std::vector<int64_t>{2, 0, 1}), std::vector<int64_t>{1, 2, 0});
      EXPECT_ALLCLOSE(it->second(view, axes ? jnp::Axes(*axes) : jnp::Axes(), keepdims), expected,
                      rtol_for(expected.dtype()), atol_for(expected.dtype()));
    } else if (auto sit = scanners().find(name); sit != scanners().end()) {
      got = sit->second(x, axes ? std::optional<int64_t>((*axes)[0]) : std::nullopt);
    } else {
      ADD_FAILURE() << "no table row for " << name;
      continue;
    }
    EXPECT_ALLCLOSE(got, expected, rtol_for(expected.dtype()), atol_for(expected.dtype()));
    seen.insert(name);
    ++checked;
  }
  EXPECT_GT(checked, 150);
  for (const auto& [name, fn] : reducers()) EXPECT_TRUE(seen.count(name)) << name;
  for (const auto& [name, fn] : scanners()) EXPECT_TRUE(seen.count(name)) << name;
}

TEST(NumpyReductions, WeightedQuantilesLogsumexp) {
  const auto& f = fixtures();
  EXPECT_ALLCLOSE(jnp::average(f.at("quantile__x"), 1, f.at("average_w1d__w")), f.at("average_w1d__out"), 1e-5, 1e-6);
  EXPECT_ALLCLOSE(jnp::average(f.at("quantile__x"), {}, f.at("average_wfull__w")), f.at("average_wfull__out"), 1e-5,
                  1e-6);
  EXPECT_ALLCLOSE(jnp::quantile(f.at("quantile__x"), f.at("quantile__q"), 1), f.at("quantile_ax1__out"), 1e-5, 1e-6);
  EXPECT_ALLCLOSE(jnp::quantile(f.at("quantile__x"), f.at("quantile__q")), f.at("quantile_none__out"), 1e-5, 1e-6);
  EXPECT_ALLCLOSE(jnp::percentile(f.at("quantile__x"), 30.0, 0, true), f.at("percentile_ax0_kd__out"), 1e-5, 1e-6);
  EXPECT_ALLCLOSE(jnp::logsumexp(f.at("logsumexp_b__x"), 1, f.at("logsumexp_b__b")), f.at("logsumexp_b__out"), 1e-5,
                  1e-6);
  EXPECT_ALLCLOSE(jnp::logsumexp(f.at("logsumexp_special__x"), 1), f.at("logsumexp_special__out"), 1e-6, 1e-6);
}

TEST(NumpyReductions, DtypesFollowJax) {
  EXPECT_EQ(jnp::sum(Array({true, true})).dtype(), jx::int32);
  EXPECT_EQ(jnp::sum(jnp::ones({3}, jx::int8)).dtype(), jx::int32);
  EXPECT_EQ(jnp::sum(jnp::ones({3}, jx::uint8)).dtype(), jx::uint32);
  EXPECT_EQ(jnp::sum(jnp::ones({3}, jx::int64)).dtype(), jx::int64);
  EXPECT_EQ(jnp::sum(jnp::ones({3}, jx::float16)).dtype(), jx::float16);
  EXPECT_EQ(jnp::mean(Array({1, 2})).dtype(), jx::float32);
  EXPECT_EQ(jnp::var(Array(std::vector<jx::complex64_t>{{1, 1}, {2, 0}})).dtype(), jx::float32);
  EXPECT_EQ(jnp::cumsum(Array({true})).dtype(), jx::int32);
  EXPECT_EQ(jnp::cumsum(jnp::ones({3}, jx::uint8)).dtype(), jx::uint8);
  EXPECT_EQ(jnp::argmax(Array({1.f, 3.f})).dtype(), jx::int32);
  EXPECT_EQ(jnp::sum(Array({1.f, 2.f}), {}, false, jx::float64).dtype(), jx::float64);
  EXPECT_EQ(jnp::sum(jnp::ones({4}, jx::float16)).item<float>(), 4.f);
  EXPECT_FALSE(jnp::sum(Array(2.0)).weak_type());
  Array z = Array(std::vector<jx::complex64_t>{{1, 2}, {3, -1}});
  EXPECT_ALLCLOSE(jnp::sum(z), jnp::asarray(Array(jx::complex64_t(4, 1)), jx::complex64));
  EXPECT_ALLCLOSE(jnp::mean(z), jnp::asarray(Array(jx::complex64_t(2, 0.5f)), jx::complex64));
  EXPECT_ALLCLOSE(jnp::var(z), jnp::asarray(Array(3.25f), jx::float32));
}

TEST(NumpyReductions, HandComputedValues) {
  Array x = Array({{1.f, 5.f, 3.f}, {4.f, 2.f, 6.f}});
  EXPECT_ALLCLOSE(jnp::var(x, 1, 1), Array({4.f, 4.f}));
  EXPECT_ALLCLOSE(jnp::std(x, {}, 0, true), jnp::reshape(Array({static_cast<float>(std::sqrt(35.0 / 12.0))}), {1, 1}), 1e-6, 1e-6);
  EXPECT_ALLCLOSE(jnp::max(x, 0, false, Array(4.5f)), Array({4.5f, 5.f, 6.f}));
  EXPECT_ALLCLOSE(jnp::max(jnp::zeros({0}), {}, false, Array(-1.f)), Array(-1.f).astype(jx::float32));
  EXPECT_ALLCLOSE(jnp::argmax(Array({1.f, NAN, 3.f})), jnp::asarray(Array(1)));
  EXPECT_ALLCLOSE(jnp::argmin(x, 1, true), jnp::reshape(Array({0, 1}), {2, 1}));
  EXPECT_ALLCLOSE(jnp::argmax(x, std::nullopt, true), jnp::reshape(Array({5}), {1, 1}));
  EXPECT_ALLCLOSE(jnp::cumsum(x), Array({1.f, 6.f, 9.f, 13.f, 15.f, 21.f}));
  EXPECT_ALLCLOSE(jnp::cumprod(x, 0), Array({{1.f, 5.f, 3.f}, {4.f, 10.f, 18.f}}));
  EXPECT_ALLCLOSE(jnp::cummax(Array({1, 3, 2, 5})), Array({1, 3, 3, 5}));
  EXPECT_ALLCLOSE(jnp::median(Array({3.f, 1.f, NAN})), Array(NAN).astype(jx::float32));
  EXPECT_ALLCLOSE(jnp::median(Array({3, 1, 2, 4})), Array(2.5f).astype(jx::float32));
  EXPECT_ALLCLOSE(jnp::count_nonzero(Array({{0, 1}, {2, 0}}), 0), Array({1, 1}));
  EXPECT_ALLCLOSE(jnp::nanmax(Array({NAN, NAN})), Array(NAN).astype(jx::float32));
  EXPECT_ALLCLOSE(jnp::logsumexp(Array({1000.f, 1000.f})), Array(1000.f + std::log(2.f)).astype(jx::float32));
  EXPECT_ALLCLOSE(jnp::logsumexp(Array({-INFINITY, -INFINITY})), Array(-INFINITY).astype(jx::float32));
  EXPECT_ALLCLOSE(jnp::logsumexp(Array({0.f, 0.f}), {}, Array({1.f, -2.f})), Array(NAN).astype(jx::float32));
  EXPECT_ALLCLOSE(x.sum(), Array(21.f).astype(jx::float32));
  EXPECT_ALLCLOSE(x.mean(), Array(3.5f).astype(jx::float32));
  EXPECT_ALLCLOSE(x.max(), Array(6.f).astype(jx::float32));
  EXPECT_ALLCLOSE(x.min(), Array(1.f).astype(jx::float32));
}

// argmax/argmin over rows of up to 32 floats scan twice without branches (the extreme,
// then its first index: reductions.cpp, float_arg_extreme): against a plain loop (the
// first NaN, else the first extreme), over rows of 1 to 40 holding ties, both zeros and
// NaNs, along the contiguous axis and across it, float32 and float64.
// Rows short (two branch-free scans), long and contiguous (blocks of 256), and strided
// (axis 0): few values (many ties, NaN in most rows), then many values with NaN in some
// rows only, often in a late block, where a blocked scan must still return the first.
TEST(NumpyReductions, ArgExtremesOfRowsMatchALoop) {
  for (jx::DType dtype : {jx::DType::Float32, jx::DType::Float64}) {
    for (int64_t n : {1, 2, 3, 10, 17, 32, 33, 40, 255, 256, 257, 700}) {
     for (bool sparse_nans : {false, true}) {
      SCOPED_TRACE(std::string(jx::dtype_name(dtype)) + ", rows of " + std::to_string(n) +
                   (sparse_nans ? ", NaN in a few rows" : ""));
      const int64_t rows = 50;
      std::vector<double> v(static_cast<size_t>(rows * n));
      uint32_t state = 12345u + static_cast<uint32_t>(n);
      for (size_t i = 0; i < v.size(); ++i) {
        state = state * 1664525u + 1013904223u;
        if (sparse_nans) {
          v[i] = static_cast<double>((state >> 8) % 1000) - 500.0;
          if ((state >> 3) % 97 == 0) v[i] = -0.0;
          if ((state >> 5) % 20011 == 0) v[i] = NAN;
        } else {
          v[i] = static_cast<double>((state >> 8) % 7) - 3.0;  // few values: many ties
          if ((state >> 3) % 23 == 0) v[i] = -0.0;
          if ((state >> 5) % 41 == 0) v[i] = NAN;
        }
      }
      if (sparse_nans) v[static_cast<size_t>(7 * n + n - 1)] = NAN;  // a row's last element
      Array x = jx::lax::convert_element_type(Array(v, jx::Shape{rows, n}), dtype);
      for (bool max : {true, false}) {
        for (int axis : {1, 0}) {
          const int64_t outer = axis == 1 ? rows : n, len = axis == 1 ? n : rows;
          std::vector<int64_t> want(static_cast<size_t>(outer));
          for (int64_t o = 0; o < outer; ++o) {
            int64_t best = 0;
            auto at = [&](int64_t k) { return v[static_cast<size_t>(axis == 1 ? o * n + k : k * n + o)]; };
            for (int64_t k = 1; k < len; ++k) {
              const double a = at(k), b = at(best);
              if (std::isnan(b)) break;
              if (std::isnan(a) || (max ? a > b : a < b)) best = k;
            }
            want[static_cast<size_t>(o)] = best;
          }
          Array got = max ? jnp::argmax(x, axis) : jnp::argmin(x, axis);
          EXPECT_EQ(got.astype(jx::DType::Int64).to_vector<int64_t>(), want) << (max ? "argmax" : "argmin") << " axis " << axis;
        }
      }
     }
    }
  }
}

TEST(NumpyReductions, EmptyAndZeroD) {
  Array e = jnp::zeros({0, 3});
  EXPECT_ALLCLOSE(jnp::sum(e, 0), jnp::zeros({3}));
  EXPECT_ALLCLOSE(jnp::prod(e, 0), jnp::ones({3}));
  EXPECT_ALLCLOSE(jnp::sum(e, 1), jnp::zeros({0}));
  EXPECT_TRUE(std::isnan(jnp::mean(e).item<float>()));
  EXPECT_ALLCLOSE(jnp::all(e), Array(true));
  EXPECT_ALLCLOSE(jnp::any(e), Array(false));
  EXPECT_ALLCLOSE(jnp::cumsum(e, 0), e);
  EXPECT_ALLCLOSE(jnp::logsumexp(e, 0), jnp::full({3}, -INFINITY));
  Array s = Array(2.5f).astype(jx::float32);
  EXPECT_ALLCLOSE(jnp::sum(s), s);
  EXPECT_ALLCLOSE(jnp::max(s), s);
  EXPECT_ALLCLOSE(jnp::mean(s, {}, true), s);
  EXPECT_ALLCLOSE(jnp::argmax(s), jnp::asarray(Array(0)));
  EXPECT_ALLCLOSE(jnp::cumsum(s), Array({2.5f}));
}

TEST(NumpyReductions, Errors) {
  Array x = jnp::ones({2, 2});
  EXPECT_JX_ERROR(jnp::sum(x, 2), "[sum] axis 2 is out of bounds for array of shape (2, 2)");
  EXPECT_JX_ERROR(jnp::mean(x, -3), "[mean] axis -3 is out of bounds for array of shape (2, 2)");
  EXPECT_JX_ERROR(jnp::sum(x, {0, 0}), "[sum] repeated axis 0");
  EXPECT_JX_ERROR(jnp::max(jnp::zeros({0})), "[max] zero-size array to reduction operation max which has no identity");
  EXPECT_JX_ERROR(jnp::argmin(jnp::zeros({0})), "[argmin] attempt to get argmin of an empty sequence");
  EXPECT_JX_ERROR(jnp::cumsum(x, 2), "[cumsum] axis 2 is out of bounds");
  EXPECT_JX_ERROR(jnp::quantile(x, 1.5), "[quantile] quantiles must be in the range [0, 1]");
  EXPECT_JX_ERROR(jnp::quantile(x, 0.5, {}, false, "nearest"), "[quantile] only method 'linear'");
  EXPECT_JX_ERROR(jnp::percentile(x, 101.0), "[percentile]", "[0, 100]");
  EXPECT_JX_ERROR(jnp::median(jnp::zeros({0})), "[quantile] cannot take a quantile of an empty slice");
  EXPECT_JX_ERROR(jnp::average(x, {}, jnp::ones({2})), "[average] axis must be specified");
  EXPECT_JX_ERROR(jnp::average(x, 0, jnp::ones({3})), "[average] length of weights 3 not compatible with axis 0");
}
