// jx::jit's public API: every jitted result is compared with eager execution of the same
// function (eager jx is itself tested against NumPy), plus the compile cache, static
// arguments, captured constants, lowering/compile, the compile log, dumps, the disk cache
// and the error messages.
//
// The configuration (jx::config) is set by a static initializer below, before any jit
// call: the compile log then goes to stderr in every test of this binary, and compiled
// code is cached in a fresh temporary directory instead of the user's ~/.cache/jx.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "jit/codegen/fast_math.h"
#include "jit/codegen/loop_kernel.h"
#include "jit/codegen/object_cache.h"
#include "jx/jx.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace {

std::string make_temp_dir(const char* tag) {
  std::string pattern = (fs::temp_directory_path() / (std::string("jx_") + tag + "_XXXXXX")).string();
  if (!mkdtemp(pattern.data())) return {};
  return pattern;
}

// Set before main(), whatever the environment says.
const std::string g_cache_dir = [] {
  std::string dir = make_temp_dir("jit_test_cache");
  jx::config::set_cache_dir(dir);
  jx::config::set_disk_cache(true);
  jx::config::set_log_compiles(true);
  jx::config::set_dump_dir("");
  return dir;
}();

// Removes the cache directory when the process exits.
struct RemoveAtExit {
  std::string dir;
  ~RemoveAtExit() {
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
};
const RemoveAtExit g_remove_cache_dir{g_cache_dir};

}  // namespace

namespace jx {
namespace {
namespace jnp = jx::numpy;

// ---- helpers ----

using testing::randn;

Array randint(const Shape& shape, int lo, int hi, uint32_t seed = 0) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> dist(lo, hi);
  std::vector<int32_t> v(static_cast<size_t>(shape_size(shape)));
  for (int32_t& x : v) x = dist(gen);
  return Array(v, shape);
}

double rtol_for(DType d) { return d == DType::Float64 ? 1e-12 : d == DType::Float32 ? 1e-5 : 0.0; }
double atol_for(DType d) { return d == DType::Float64 ? 1e-12 : d == DType::Float32 ? 1e-6 : 0.0; }

// Same structure, avals (shape, dtype, weak type) and values within the dtype's tolerance.
template <class T>
void expect_same_tree(const T& got, const T& want, double rtol = -1, double atol = -1) {
  auto [g, gdef] = tree::flatten(got);
  auto [w, wdef] = tree::flatten(want);
  ASSERT_TRUE(gdef == wdef) << gdef.str() << " vs " << wdef.str();
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i) {
    SCOPED_TRACE("leaf " + std::to_string(i));
    EXPECT_EQ(g[i].aval(), w[i].aval()) << g[i].aval().str() << " vs " << w[i].aval().str();
    DType d = w[i].dtype();
    EXPECT_ALLCLOSE(g[i], w[i], rtol < 0 ? rtol_for(d) : rtol, atol < 0 ? atol_for(d) : atol);
  }
}

// f jitted (with and without the optimizer) gives what f gives eagerly.
template <class F, class... A>
void expect_jit_matches_eager(const F& f, const A&... args) {
  auto want = f(args...);
  auto got = jit(f)(args...);
  expect_same_tree(got, decltype(got)(want));
  auto unoptimized = jit(f, JitOptions{.optimize = false})(args...);
  expect_same_tree(unoptimized, decltype(got)(want));
}

bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

// ---- values: jit equals eager ----

TEST(Jit, TutorialSinPlusCos) {
  auto f = [](const Array& x, const Array& y) { return jnp::sin(x) + jnp::cos(y); };
  for (DType d : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(d));
    Array x = randn({37, 129}, d, 1, 3.0);
    Array y = randn({37, 129}, d, 2, 3.0);
    expect_jit_matches_eager(f, x, y);
    // y broadcast from a row.
    Array row = randn({1, 129}, d, 3, 3.0);
    expect_jit_matches_eager(f, x, row);
    Array row1d = randn({129}, d, 4, 3.0);
    expect_jit_matches_eager(f, x, row1d);
  }
}

TEST(Jit, Selu) {
  auto selu = [](const Array& x) {
    const double alpha = 1.6732632423543772, scale = 1.0507009873554805;
    return scale * jnp::where(x > 0, x, alpha * (jnp::exp(x) - 1));
  };
  expect_jit_matches_eager(selu, randn({1000}, DType::Float32, 5, 2.0));
  expect_jit_matches_eager(selu, randn({13, 7}, DType::Float64, 6, 2.0));
}

TEST(Jit, SumOfExpression) {
  auto f = [](const Array& x, const Array& y, const Array& z) { return jnp::sum(x + 2 * y + z * z); };
  for (DType d : {DType::Float32, DType::Float64}) {
    Array x = randn({100, 30}, d, 7), y = randn({100, 30}, d, 8), z = randn({100, 30}, d, 9);
    auto want = f(x, y, z);
    auto got = jit(f)(x, y, z);
    EXPECT_EQ(got.aval(), want.aval());
    // A reduction of 3000 terms may be reassociated: a relative tolerance on the terms' scale.
    EXPECT_ALLCLOSE(got, want, d == DType::Float32 ? 1e-5 : 1e-12, d == DType::Float32 ? 1e-3 : 1e-10);
  }
}

Array softmax_rows(const Array& x) {
  Array shifted = x - jnp::max(x, 1, /*keepdims=*/true);
  Array e = jnp::exp(shifted);
  return e / jnp::sum(e, 1, /*keepdims=*/true);
}

TEST(Jit, SoftmaxAndLogsumexpOverRowsWithLargeValues) {
  Array x = randn({16, 50}, DType::Float32, 10, 5.0);
  // Values whose exp overflows f32 (and f64 for 1e3): only the max shift keeps them finite.
  Array big = x + lax::convert_element_type(Array(1000.0), DType::Float32);
  for (const Array& in : {x, big, lax::convert_element_type(big, DType::Float64)}) {
    SCOPED_TRACE(in.aval().str());
    Array got = jit(softmax_rows)(in);
    Array want = softmax_rows(in);
    EXPECT_TRUE(jnp::all(jnp::isfinite(got)).item<bool>());
    expect_same_tree(got, want, 1e-5, 1e-7);
    auto lse = [](const Array& v) { return jnp::logsumexp(v, 1); };
    Array lse_got = jit(lse)(in);
    EXPECT_TRUE(jnp::all(jnp::isfinite(lse_got)).item<bool>());
    expect_same_tree(lse_got, lse(in), 1e-6, 1e-5);
    // Rows sum to one.
    EXPECT_ALLCLOSE(jnp::sum(got, 1), jnp::ones({16}, in.dtype()), 1e-5, 1e-5);
  }
}

TEST(Jit, GradientOfSoftmaxCrossEntropyAndRowNorms) {
  // One rows kernel each (jit_fusion_test): values against eager.
  auto xent = [](const Array& x, const Array& y) {
    Array log_softmax = x - jnp::logsumexp(x, 1, std::nullopt, /*keepdims=*/true);
    return -jnp::sum(y * log_softmax) / 64.0;
  };
  auto row_norm = [](const Array& x) { return x / jnp::sqrt(jnp::sum(x * x, 1, /*keepdims=*/true)); };
  for (DType d : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(d));
    Array x = randn({64, 300}, d, 21, 3.0), y = jnp::abs(randn({64, 300}, d, 22));
    expect_same_tree(jit(grad(xent))(x, y), grad(xent)(x, y), 1e-5, 1e-8);
    expect_same_tree(jit(row_norm)(x), row_norm(x), 1e-5, 1e-7);
  }
}

TEST(Jit, ReductionsOverTheLeadingAxisWithTheirConsumers) {
  // One rows kernel run over blocks of columns each (jit_columns_kernel_test): a batch
  // standardization, and a leapfrog integrator whose step sums over 3 coordinates, in a
  // fori_loop, against eager steps.
  auto standardize = [](const Array& x) {
    Array centered = x - jnp::mean(x, 0);
    return centered / jnp::sqrt(jnp::mean(centered * centered, 0) + 1e-5);
  };
  auto step = [](const Array& q, const Array& p) {
    auto force = [](const Array& r) { return -r * (1.0 + jnp::sum(r * r, 0, /*keepdims=*/true)); };
    Array p_half = p + 0.005 * force(q);
    Array q_next = q + 0.01 * p_half;
    return std::pair<Array, Array>{q_next, p_half + 0.005 * force(q_next)};
  };
  for (DType d : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(d));
    Array x = randn({64, 100}, d, 31, 2.0);
    expect_same_tree(jit(standardize)(x), standardize(x), 1e-5, 1e-6);
    Array q = randn({3, 200}, d, 32), p = randn({3, 200}, d, 33);
    auto steps = jit([&](const Array& q0, const Array& p0) {
      return lax::fori_loop(0, 20, [&](const Array&, const std::pair<Array, Array>& s) { return step(s.first, s.second); },
                            std::pair<Array, Array>{q0, p0});
    });
    std::pair<Array, Array> want{q, p};
    for (int i = 0; i < 20; ++i) want = step(want.first, want.second);
    std::pair<Array, Array> got = steps(q, p);
    expect_same_tree(got.first, want.first, 1e-5, 1e-6);
    expect_same_tree(got.second, want.second, 1e-5, 1e-6);
  }
}

TEST(Jit, MatmulWithGeluEpilogue) {
  auto f = [](const Array& a, const Array& b, const Array& bias) {
    Array h = jnp::matmul(a, b) + bias;
    return 0.5 * h * (1 + jnp::tanh(0.7978845608028654 * (h + 0.044715 * h * h * h)));
  };
  for (DType d : {DType::Float32, DType::Float64}) {
    Array a = randn({33, 64}, d, 11), b = randn({64, 47}, d, 12), bias = randn({47}, d, 13);
    expect_jit_matches_eager(f, a, b, bias);
  }
}

TEST(Jit, DotGeneralVariantsWithEpilogues) {
  // Batch dims, contractions on either side's other axis, integer and mixed dtypes, each
  // followed by elementwise work the fusion pass may attach to the dot.
  struct Case {
    Shape lhs, rhs;
    lax::DotDimensionNumbers dn;
    DType dtype;
  };
  const Case cases[] = {
      {{5, 7}, {7, 3}, {{1}, {0}, {}, {}}, DType::Float32},
      {{7, 5}, {7, 3}, {{0}, {0}, {}, {}}, DType::Float32},      // lhs transposed
      {{5, 7}, {3, 7}, {{1}, {1}, {}, {}}, DType::Float64},      // rhs transposed
      {{2, 5, 7}, {2, 7, 3}, {{2}, {1}, {0}, {0}}, DType::Float32},  // batched
      {{5, 2, 7}, {7, 3, 2}, {{2}, {0}, {1}, {2}}, DType::Float64},  // batch dims elsewhere
      {{4, 6}, {6, 5}, {{1}, {0}, {}, {}}, DType::Int32},
      {{6}, {6}, {{0}, {0}, {}, {}}, DType::Float32},            // inner product
      {{4, 3, 2}, {3, 2, 5}, {{1, 2}, {0, 1}, {}, {}}, DType::Float32},  // two contracting dims
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.lhs) + " x " + ::testing::PrintToString(c.rhs) + " " + std::string(dtype_name(c.dtype)));
    Array a = c.dtype == DType::Int32 ? randint(c.lhs, -9, 9, 60) : randn(c.lhs, c.dtype, 60);
    Array b = c.dtype == DType::Int32 ? randint(c.rhs, -9, 9, 61) : randn(c.rhs, c.dtype, 61);
    auto f = [&c](const Array& a, const Array& b) {
      Array d = lax::dot_general(a, b, c.dn);
      Array bias = d.ndim() == 0 ? lax::convert_element_type(Array(1), d.dtype())
                                 : lax::convert_element_type(
                                       lax::broadcasted_iota(DType::Int32, d.shape(), d.ndim() - 1), d.dtype());
      Array e = jnp::maximum(d + bias, 0);
      return std::make_pair(d, e * 2 - 1);
    };
    expect_jit_matches_eager(f, a, b);
  }
}

TEST(Jit, NormalizationOverDifferentAxes) {
  auto layer_norm = [](const Array& x, int axis) {
    Array mean = jnp::mean(x, axis, true);
    Array centered = x - mean;
    Array var = jnp::mean(centered * centered, axis, true);
    return centered / jnp::sqrt(var + 1e-5);
  };
  for (DType d : {DType::Float32, DType::Float64}) {
    Array x = randn({6, 5, 9}, d, 62, 3.0);
    for (int axis : {0, 1, 2}) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " axis " + std::to_string(axis));
      auto f = [&](const Array& v) { return layer_norm(v, axis); };
      expect_jit_matches_eager(f, x);
      expect_jit_matches_eager(f, lax::transpose(x, {2, 0, 1}));  // a strided input
    }
  }
}

// The result of an inline function (fast_math.h: exp f32/f64, tanh f32, erf f32, and
// logistic = 1 / (1 + exp(-x)) with that exp), computed in C++ by the emitters' bit-exact
// twins; nullopt for the functions kernels compute with eager's libmvec variant.
std::optional<double> inline_result(const std::string& name, DType d, double x) {
  namespace cg = compiler::codegen;
  for (math::FastFunction f : math::kFastFunctions) {
    if (name != math::fast_function_name(f) || !cg::inline_fast_function(f, d, cpu::vector_isa())) continue;
    auto eager_one = [](auto v) { return v; };  // the rare path: not taken by these inputs
    if (d == DType::Float32) return math::fast_function_scalar<float>(f, static_cast<float>(x), eager_one);
    return math::fast_function_scalar<double>(f, x, eager_one);
  }
  if (d == DType::Float32) {
    const float xf = static_cast<float>(x);
    if (name == "exp") return cg::exp_f32_scalar(xf);
    if (name == "tanh") return cg::tanh_f32_scalar(xf);
    if (name == "erf") return cg::erf_f32_scalar(xf);
    if (name == "logistic") return 1.0f / (1.0f + cg::exp_f32_scalar(-xf));
  } else {
    if (name == "exp") return cg::exp_f64_scalar(x);
    if (name == "logistic") return 1.0 / (1.0 + cg::exp_f64_scalar(-x));
  }
  return std::nullopt;
}

// Units in the last place of dtype d (float32 or float64) between two finite values.
double ulp_distance(double a, double b, DType d) {
  auto ordered = [d](double x) -> long double {
    if (d == DType::Float32) {
      const int32_t i = std::bit_cast<int32_t>(static_cast<float>(x));
      return i < 0 ? static_cast<double>(std::numeric_limits<int32_t>::min()) - i : i;
    }
    const int64_t i = std::bit_cast<int64_t>(x);
    return static_cast<long double>(i < 0 ? std::numeric_limits<int64_t>::min() - i : i);
  };
  return static_cast<double>(std::fabs(ordered(a) - ordered(b)));  // long double: every int64 exactly
}

// The vectorized body of a loop and its scalar remainder compute a transcendental the
// same way, so equal inputs give equal results wherever they sit: they once differed by
// 1 ulp past the last full vector (the remainder called scalar libm), which made
// comparisons and argmax over equal values disagree with eager (found by jit_random_test
// seeds 21438 and 21439). Functions that call the libmvec variant eager runs
// (scalar_ops.h) give eager's bits; the inline ones (fast_math.h) give their C++ twin's
// bits, within 4 ULP of eager (logistic: 6). Every function with a vector variant,
// float32 and float64, every remainder length of a 512-bit loop (sizes 1..70) and 100.
TEST(Jit, SameInputGivesTheSameResultAtEveryPosition) {
  using Unary = Array (*)(const Array&);
  const std::vector<std::pair<std::string, Unary>> unary = {
      {"exp", lax::exp},     {"exp2", lax::exp2},   {"expm1", lax::expm1}, {"log", lax::log},
      {"log1p", lax::log1p}, {"sin", lax::sin},     {"cos", lax::cos},     {"tan", lax::tan},
      {"asin", lax::asin},   {"acos", lax::acos},   {"atan", lax::atan},   {"sinh", lax::sinh},
      {"cosh", lax::cosh},   {"tanh", lax::tanh},   {"asinh", lax::asinh}, {"acosh", lax::acosh},
      {"atanh", lax::atanh}, {"cbrt", lax::cbrt},   {"erf", lax::erf},     {"erfc", lax::erfc},
      {"logistic", lax::logistic}};
  // One program computing all of them (one fused kernel), so each size compiles once.
  auto all = [&](const Array& x, const Array& y) {
    std::vector<Array> out;
    for (const auto& [name, fn] : unary) out.push_back(fn(name == "acosh" ? x + y : x));  // acosh needs x >= 1
    out.push_back(lax::pow(x, y));
    out.push_back(lax::atan2(x, y));
    return out;
  };
  std::vector<std::string> names;
  for (const auto& [name, fn] : unary) names.push_back(name);
  names.push_back("pow");
  names.push_back("atan2");
  auto jitted = jit(all);
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n <= 70; ++n) sizes.push_back(n);
  sizes.push_back(100);
  for (DType d : {DType::Float32, DType::Float64})
    for (double v : {0.5, 0.7853981634}) {
      const Array xs = lax::convert_element_type(Array(v), d), ys = lax::convert_element_type(Array(1.3), d);
      // Eager's value (a one-element array through the same vector variant).
      const std::vector<Array> eager = all(xs, ys);
      for (int64_t n : sizes) {
        Array x = lax::broadcast_in_dim(xs, {n}, {}), y = lax::broadcast_in_dim(ys, {n}, {});
        std::vector<Array> got = jitted(x, y);
        ASSERT_EQ(got.size(), names.size());
        for (size_t k = 0; k < names.size(); ++k) {
          SCOPED_TRACE(names[k] + "(" + std::to_string(v) + ") " + std::string(dtype_name(d)) + " over " + std::to_string(n) +
                       " copies");
          const std::optional<double> inline_value = inline_result(names[k], d, v);
          if (!inline_value) {
            // Bit for bit: tolerance 0, against eager's one value broadcast.
            EXPECT_ALLCLOSE(got[k], lax::broadcast_in_dim(eager[k], {n}, {}), 0, 0);
            continue;
          }
          // Bit for bit at every position against the C++ twin of the inline code...
          const std::vector<double> values = got[k].to_vector<double>();
          for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(std::bit_cast<uint64_t>(values[static_cast<size_t>(i)]), std::bit_cast<uint64_t>(*inline_value))
                << "element " << i << ": " << values[static_cast<size_t>(i)] << " vs " << *inline_value;
          // ...which is within a few ULP of eager's libmvec.
          const double eager_value = eager[k].item<double>();
          EXPECT_LE(ulp_distance(*inline_value, eager_value, d), names[k] == "logistic" ? 6 : 4)
              << *inline_value << " vs eager " << eager_value;
        }
      }
    }
}

TEST(Jit, ZeroSizedArrays) {
  auto f = [](const Array& x, const Array& y) {
    return std::make_tuple(jnp::sin(x) + y, lax::reduce_sum(x, {0}), lax::reduce_max(x, {0}), lax::reduce_min(x, {1}),
                           lax::reduce_prod(x, {0, 1}), jnp::any(x > 0, 0));
  };
  expect_jit_matches_eager(f, jnp::zeros({0, 3}), jnp::ones({3}));
  expect_jit_matches_eager(f, jnp::zeros({3, 0}, DType::Float64), jnp::ones({0}, DType::Float64));
}

TEST(Jit, ArgmaxWithTiesAndNaN) {
  auto f = [](const Array& x) { return std::make_tuple(jnp::argmax(x, 1), jnp::argmin(x, 0), jnp::max(x, 1)); };
  Array x = lax::convert_element_type(Array({{1.0, 3.0, 3.0, -1.0}, {NAN, 2.0, 5.0, 5.0}, {0.0, -0.0, 0.0, 0.0}}),
                                      DType::Float32);
  expect_jit_matches_eager(f, x);
  expect_jit_matches_eager(f, lax::convert_element_type(x, DType::Float64));
}

TEST(Jit, IntegerAndBoolPrograms) {
  auto ints = [](const Array& a, const Array& b) {
    Array c = a * b + 7;
    Array d = lax::rem(c, jnp::where(b == 0, 1, b));  // C remainder, no division by zero
    Array e = jnp::left_shift(a & 15, 2) ^ (b | 3);
    return std::make_tuple(c, d, e, jnp::sum(c, 0), jnp::max(d, 1), -a);
  };
  Array a = randint({6, 11}, -50, 50, 14), b = randint({6, 11}, -9, 9, 15);
  expect_jit_matches_eager(ints, a, b);
  auto bools = [](const Array& a, const Array& b) {
    Array p = a > b, q = a <= 0;
    return std::make_tuple(p & q, p | q, p ^ q, !p, jnp::any(p, 1), jnp::all(q, 0), jnp::where(p, a, b));
  };
  expect_jit_matches_eager(bools, a, b);
  // Every supported integer width, through a conversion and a reduction.
  for (DType d : {DType::Int8, DType::Int16, DType::Int64, DType::UInt8, DType::UInt32}) {
    SCOPED_TRACE(dtype_name(d));
    auto g = [](const Array& x) { return std::make_pair(x * x + x, lax::reduce_max(x, {0})); };
    expect_jit_matches_eager(g, lax::convert_element_type(jnp::abs(a), d));
  }
}

TEST(Jit, ZeroDimensionalArguments) {
  auto f = [](const Array& s, const Array& v) { return std::make_pair(s * s + 1, jnp::sin(s) * v); };
  expect_jit_matches_eager(f, lax::convert_element_type(Array(0.25), DType::Float32), randn({5}, DType::Float32, 16));
  expect_jit_matches_eager(f, lax::convert_element_type(Array(-3.0), DType::Float64),
                           lax::convert_element_type(Array(2.0), DType::Float64));
}

TEST(Jit, CppScalarArgumentsAreWeak) {
  auto f = [](const Array& x, const Array& s) { return x * s + s; };
  auto jf = jit(f);
  Array x32 = randn({4}, DType::Float32, 17);
  Array r = jf(x32, 2.0);
  EXPECT_EQ(r.dtype(), DType::Float32);  // a weak double keeps x's dtype
  EXPECT_FALSE(r.weak_type());
  expect_same_tree(r, f(x32, Array(2.0)));
  // The scalar's value is an argument, not a constant: no retrace for another value.
  Array r3 = jf(x32, 3.0);
  EXPECT_EQ(jf.cache_size(), 1u);
  expect_same_tree(r3, f(x32, Array(3.0)));
  // A C++ int against an int8 array keeps int8.
  Array i8 = lax::convert_element_type(randint({4}, -5, 5, 18), DType::Int8);
  Array ri = jf(i8, 3);
  EXPECT_EQ(ri.dtype(), DType::Int8);
  expect_same_tree(ri, f(i8, Array(3)));
  // Two weak scalars stay weak.
  Array both = jf(1.5, 2.0);
  EXPECT_TRUE(both.weak_type());
  expect_same_tree(both, f(Array(1.5), Array(2.0)));
}

struct Dense {
  Array w, b;
};
JX_TREE_NODE(Dense, w, b)

TEST(Jit, PytreeArgumentsAndResults) {
  Array x = randn({3, 4}, DType::Float32, 19), y = randn({3, 4}, DType::Float32, 20);
  auto pair_fn = [](const std::pair<Array, Array>& p) { return std::make_pair(p.first + p.second, p.first * 2); };
  expect_jit_matches_eager(pair_fn, std::make_pair(x, y));
  auto vec_fn = [](const std::vector<Array>& xs) {
    std::vector<Array> out;
    Array acc = xs[0];
    for (size_t i = 1; i < xs.size(); ++i) out.push_back(acc = acc * xs[i] + 1);
    return out;
  };
  expect_jit_matches_eager(vec_fn, std::vector<Array>{x, y, x, y});
  auto map_fn = [](const std::map<std::string, Array>& m) {
    return std::map<std::string, Array>{{"sum", m.at("a") + m.at("b")}, {"tanh", jnp::tanh(m.at("a"))}};
  };
  expect_jit_matches_eager(map_fn, std::map<std::string, Array>{{"a", x}, {"b", y}});
  auto dense_fn = [](const Dense& p, const Array& in) {
    Dense grads{jnp::tanh(jnp::matmul(in, p.w)) + p.b, p.b * 0.5};
    return std::make_pair(grads, jnp::sum(grads.w));
  };
  Dense p{randn({4, 5}, DType::Float32, 21), randn({5}, DType::Float32, 22)};
  expect_jit_matches_eager(dense_fn, p, x);
}

TEST(Jit, SeveralOutputsInputOutputAndConstantOutput) {
  auto f = [](const Array& x, const Array& y) {
    return std::make_tuple(x, x + y, jnp::ones({2, 2}), y, Array(3.0), jnp::exp(x));
  };
  Array x = randn({5}, DType::Float32, 23), y = randn({5}, DType::Float32, 24);
  expect_jit_matches_eager(f, x, y);
  auto [a, b, c, d, e, g] = jit(f)(x, y);
  EXPECT_ALLCLOSE(a, x, 0, 0);  // an input returned as it is
  EXPECT_ALLCLOSE(c, jnp::ones({2, 2}), 0, 0);
  EXPECT_EQ(e.aval(), Array(3.0).aval());
  EXPECT_EQ(e.item<double>(), 3.0);
  // The same value returned twice, and views of an input returned as outputs.
  auto twice = jit([](const Array& x) {
    Array y = jnp::exp(x);
    return std::make_tuple(y, y, jnp::transpose(x), jnp::transpose(x) * 2);
  });
  Array m = randn({3, 4}, DType::Float32, 54);
  auto [y1, y2, t1, t2] = twice(m);
  EXPECT_ALLCLOSE(y1, jnp::exp(m), 1e-6, 1e-6);
  EXPECT_ALLCLOSE(y2, jnp::exp(m), 1e-6, 1e-6);
  EXPECT_ALLCLOSE(t1, jnp::transpose(m), 0, 0);
  EXPECT_ALLCLOSE(t2, jnp::transpose(m) * 2, 0, 0);
  auto again = twice(m * 3);  // a second run reuses buffers: the first results stay
  EXPECT_ALLCLOSE(y1, jnp::exp(m), 1e-6, 1e-6);
  EXPECT_ALLCLOSE(std::get<0>(again), jnp::exp(m * 3), 1e-6, 1e-6);
  // Only constants: no argument at all.
  auto k = [] { return jnp::arange(6.0) * 2; };
  expect_same_tree(jit(k)(), k());
  // Nothing returned.
  auto none = [](const Array&) { return std::vector<Array>{}; };
  EXPECT_TRUE(jit(none)(x).empty());
}

TEST(Jit, StridedAndBroadcastArgumentViews) {
  auto f = [](const Array& x) { return jnp::exp(x) * 2 + 1; };
  Array base = randn({8, 6}, DType::Float32, 25);
  for (int code : {1, 2, 3, 4}) {
    SCOPED_TRACE("view code " + std::to_string(code));
    Array view = testing::make_test_view(base, code);
    expect_jit_matches_eager(f, view);
  }
}

TEST(Jit, RuntimeCallsMixedWithKernels) {
  // Primitives without a native kernel (sort, cumsum, gather, linear algebra, threefry)
  // run as runtime calls between kernels.
  auto f = [](const Array& x, const Array& idx, const Array& a) {
    Array s = jnp::sort(jnp::sin(x) * 3, 1);
    Array c = jnp::cumsum(s + 1, 1);
    Array g = jnp::take(c, idx, 1);
    Array spd = jnp::matmul(a, jnp::transpose(a)) + 4 * jnp::eye(4);
    Array sol = jnp::linalg::solve(spd, jnp::ones({4}));
    Array noise = random::uniform(random::key(7), {5});
    return std::make_tuple(jnp::exp(g) - 1, sol * 2, noise + jnp::sum(x));
  };
  Array x = randn({3, 5}, DType::Float32, 48), a = randn({4, 4}, DType::Float32, 49);
  Array idx = Array({4, 0, 2, 2});
  expect_jit_matches_eager(f, x, idx, a);
}

TEST(Jit, DtypesWithoutKernelsRunAsRuntimeCalls) {
  auto f = [](const Array& x) { return jnp::sin(x) * x + 1; };
  for (DType d : {DType::Float16, DType::BFloat16, DType::Complex64, DType::Complex128}) {
    SCOPED_TRACE(dtype_name(d));
    Array x = lax::convert_element_type(randn({7}, DType::Float32, 50), d);
    Array want = f(x), got = jit(f)(x);
    EXPECT_EQ(got.aval(), want.aval());
    EXPECT_ALLCLOSE(got, want, testing::default_rtol(d), testing::default_rtol(d));
  }
}

TEST(Jit, OutputsSurviveLaterCalls) {
  // Kernel outputs come from a pool of recycled buffers: what one call returned must not
  // be overwritten by the next call, nor by a later kernel of the same call.
  auto f = jit([](const Array& x) {
    Array a = jnp::exp(x) + 1;            // kernel
    Array s = jnp::sort(a);               // runtime call
    Array b = jnp::sin(s) * 2;            // kernel, same size as a
    Array c = jnp::cumsum(b);             // runtime call
    return std::make_tuple(a, c * 3, b);  // kernel
  });
  Array x1 = randn({50}, DType::Float32, 51), x2 = randn({50}, DType::Float32, 52);
  auto r1 = f(x1);
  auto copy1 = tree::map([](const Array& v) { return v + 0; }, r1);
  for (int i = 0; i < 3; ++i) (void)f(x2);
  auto r2 = f(x2);
  expect_same_tree(r1, copy1, 0, 0);
  auto eager = [](const Array& x) {
    Array a = jnp::exp(x) + 1, b = jnp::sin(jnp::sort(a)) * 2;
    return std::make_tuple(a, jnp::cumsum(b) * 3, b);
  };
  expect_same_tree(r1, eager(x1));
  expect_same_tree(r2, eager(x2));
}

// ---- the compile cache ----

TEST(JitCache, SameSignatureRunsTheCachedProgram) {
  int traces = 0;
  auto jf = jit([&traces](const Array& x) {
    ++traces;
    return x * x;
  });
  Array a = randn({3}, DType::Float32, 26), b = randn({3}, DType::Float32, 27);
  for (int i = 0; i < 4; ++i) EXPECT_ALLCLOSE(jf(i % 2 ? a : b), (i % 2 ? a : b) * (i % 2 ? a : b));
  EXPECT_EQ(traces, 1);
  EXPECT_EQ(jf.cache_size(), 1u);
  // Lowering the same signature reuses the entry too.
  (void)jf.lower(a).as_text();
  EXPECT_EQ(traces, 1);
}

TEST(JitCache, NewShapeDtypeWeakTypeOrStructureRetraces) {
  int traces = 0;
  auto jf = jit([&traces](const std::vector<Array>& xs, const Array& s) {
    ++traces;
    Array acc = s;
    for (const Array& x : xs) acc = acc + x;
    return acc;
  });
  Array x3 = randn({3}, DType::Float32, 28);
  std::vector<Array> two{x3, x3};
  Array r = jf(two, 1.0);
  EXPECT_EQ(traces, 1);
  (void)jf(two, 2.0);  // same weak f64 0-d: a hit
  EXPECT_EQ(traces, 1);
  (void)jf(std::vector<Array>{randn({4}, DType::Float32, 29), randn({4}, DType::Float32, 30)}, 1.0);  // shape
  EXPECT_EQ(traces, 2);
  (void)jf(std::vector<Array>{lax::convert_element_type(x3, DType::Float64), x3}, 1.0);  // dtype
  EXPECT_EQ(traces, 3);
  Array strong = lax::convert_element_type(Array(1.0), DType::Float64);  // same dtype, not weak
  Array rs = jf(two, strong);
  EXPECT_EQ(traces, 4);
  EXPECT_EQ(rs.dtype(), DType::Float64);  // the strong f64 promotes, the weak one did not
  EXPECT_EQ(r.dtype(), DType::Float32);
  (void)jf(std::vector<Array>{x3, x3, x3}, 1.0);  // structure
  EXPECT_EQ(traces, 5);
  EXPECT_EQ(jf.cache_size(), 5u);
  // Every earlier signature is still cached.
  (void)jf(two, 5.0);
  (void)jf(two, strong);
  EXPECT_EQ(traces, 5);
}

TEST(JitCache, StaticArgumentsRetracePerValue) {
  int traces = 0;
  auto power = jit(
      [&traces](const Array& x, int n) {
        ++traces;
        Array r = jnp::ones_like(x);
        for (int i = 0; i < n; ++i) r = r * x;  // a C++ loop over a static value
        return r;
      },
      static_argnums<1>);
  Array x = randn({4}, DType::Float32, 31);
  EXPECT_ALLCLOSE(power(x, 3), x * x * x);
  EXPECT_ALLCLOSE(power(x, 2), x * x);
  EXPECT_EQ(traces, 2);
  EXPECT_ALLCLOSE(power(x, 3), x * x * x);
  EXPECT_EQ(traces, 2);
  EXPECT_EQ(power.cache_size(), 2u);

  int string_traces = 0;
  auto act = jit(
      [&string_traces](const Array& x, const std::string& kind) {
        ++string_traces;
        if (kind == "relu") return jnp::maximum(x, 0);
        if (kind == "tanh") return jnp::tanh(x);
        return x;
      },
      static_argnums<1>);
  EXPECT_ALLCLOSE(act(x, std::string("relu")), jnp::maximum(x, 0));
  EXPECT_ALLCLOSE(act(x, std::string("tanh")), jnp::tanh(x), 1e-6, 1e-6);
  EXPECT_ALLCLOSE(act(x, std::string("relu")), jnp::maximum(x, 0));
  EXPECT_EQ(string_traces, 2);
  // Static arguments may come first, and mix with several dynamic ones.
  auto scaled = jit([](double k, const Array& a, const Array& b) { return a * k + b; }, static_argnums<0>);
  EXPECT_ALLCLOSE(scaled(2.5, x, x), x * 3.5, 1e-6, 1e-6);
  EXPECT_ALLCLOSE(scaled(-1.0, x, x), jnp::zeros_like(x), 0, 0);
  EXPECT_EQ(scaled.cache_size(), 2u);
}

TEST(JitCache, CopiesShareTheCache) {
  int traces = 0;
  auto jf = jit([&traces](const Array& x) {
    ++traces;
    return jnp::cos(x);
  });
  auto copy = jf;
  Array x = randn({6}, DType::Float32, 32);
  (void)jf(x);
  (void)copy(x);
  EXPECT_EQ(traces, 1);
  EXPECT_EQ(copy.cache_size(), 1u);
  (void)copy(randn({7}, DType::Float32, 33));
  EXPECT_EQ(jf.cache_size(), 2u);
  // An independent jit of the same function has its own cache.
  auto other = jit([&traces](const Array& x) {
    ++traces;
    return jnp::cos(x);
  });
  (void)other(x);
  EXPECT_EQ(traces, 3);
}

// ---- captured constants, lowering, compile() ----

TEST(JitLowering, CapturedArraysAreConstants) {
  Array w = lax::convert_element_type(Array({1.0, 2.0, 3.0}), DType::Float32);
  auto f = jit([w](const Array& x) { return x * w; });
  Array x = lax::convert_element_type(Array({4.0, 5.0, 6.0}), DType::Float32);
  EXPECT_ALLCLOSE(f(x), x * w, 0, 0);
  std::string traced = f.lower(x).traced_text();
  // The captured array is a constvar (before the ';'), the argument the only invar.
  EXPECT_TRUE(contains(traced, "lambda a:f32[3]; b:f32[3]. let")) << traced;
  // A capture replaced by another array in a new jit object gives the new values.
  Array w2 = w * 10;
  auto g = jit([w2](const Array& x) { return x * w2; });
  EXPECT_ALLCLOSE(g(x), x * w2, 0, 0);
  // A captured C++ scalar is a literal.
  double k = 0.5;
  auto h = jit([k](const Array& x) { return x * k; });
  std::string ht = h.lower(x).traced_text();
  EXPECT_TRUE(contains(ht, "0.5")) << ht;
  EXPECT_ALLCLOSE(h(x), x * 0.5, 0, 0);
}

TEST(JitLowering, AsTextIsOptimizedTracedTextIsNot) {
  auto f = jit([](const Array& x, const Array& y) { return jnp::sin(x) * 2 + jnp::cos(y) * 2; });
  Array x = randn({64}, DType::Float32, 34), y = randn({64}, DType::Float32, 35);
  auto lowered = f.lower(x, y);
  std::string traced = lowered.traced_text(), optimized = lowered.as_text();
  EXPECT_TRUE(contains(traced, "sin")) << traced;
  EXPECT_TRUE(contains(traced, "cos")) << traced;
  EXPECT_FALSE(contains(traced, "fusion")) << traced;
  EXPECT_TRUE(contains(optimized, "fusion")) << optimized;
  // The elementwise work is inside the fusion: the top-level program (equations indented
  // by 4; a fusion's body by 8) is one fusion equation.
  int top_level = 0;
  std::istringstream lines(optimized);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("    ", 0) == 0 && line.size() > 4 && line[4] != ' ' && contains(line, " = ")) {
      ++top_level;
      EXPECT_TRUE(contains(line, "= fusion[")) << line;
    }
  EXPECT_EQ(top_level, 1) << optimized;
  // The traced text is make_jaxpr's.
  auto plain = [](const Array& x, const Array& y) { return jnp::sin(x) * 2 + jnp::cos(y) * 2; };
  EXPECT_EQ(traced, make_jaxpr(plain)(x, y).str());
  // optimize=false: no merging, but still native fusions (one per equation).
  auto unopt = jit([](const Array& x, const Array& y) { return jnp::sin(x) * 2 + jnp::cos(y) * 2; },
                   JitOptions{.optimize = false});
  std::string u = unopt.lower(x, y).as_text();
  EXPECT_TRUE(contains(u, "fusion")) << u;
}

TEST(JitLowering, CompiledRunsAndChecksItsSignature) {
  auto f = jit([](const Array& x, const Array& y) { return x * y + 1; }, JitOptions{.name = "mul_add"});
  Array x = randn({3}, DType::Float32, 36), y = randn({3}, DType::Float32, 37);
  auto exe = f.lower(x, y).compile();
  EXPECT_ALLCLOSE(exe(x, y), x * y + 1, 0, 0);
  Array x2 = randn({3}, DType::Float32, 38);
  EXPECT_ALLCLOSE(exe(x2, y), x2 * y + 1, 0, 0);
  EXPECT_TRUE(contains(exe.as_text(), "fusion"));
  EXPECT_JX_ERROR(exe(randn({4}, DType::Float32), y), "[jit]", "mul_add", "(f32[3], f32[3])", "f32[4]");
  EXPECT_JX_ERROR(exe(lax::convert_element_type(x, DType::Float64), y), "[jit]", "f64[3]", "(f32[3], f32[3])");
  EXPECT_JX_ERROR(exe(x), "[jit]", "takes 2 array arguments, got 1");
  EXPECT_JX_ERROR(exe(x, Array()), "[jit]", "null");
}

// ---- errors ----

TEST(JitErrors, ConcreteValueRequestedUnderJit) {
  auto f = jit([](const Array& x) {
    if (jnp::sum(x) > 0) return x;
    return -x;
  });
  EXPECT_JX_ERROR(f(randn({3})), "jit", "static argument");
  auto g = jit([](const Array& x) { return Array(x.item<float>()); });
  EXPECT_JX_ERROR(g(randn({1})), "jit");
  // The same branch on a static argument works.
  auto h = jit(
      [](const Array& x, bool negate) {
        if (negate) return -x;
        return x;
      },
      static_argnums<1>);
  Array x = randn({3}, DType::Float32, 39);
  EXPECT_ALLCLOSE(h(x, true), -x, 0, 0);
}

TEST(JitErrors, ShapeErrorsNameThePrimitive) {
  auto f = jit([](const Array& x, const Array& y) { return lax::add(x, y); });
  EXPECT_JX_ERROR(f(randn({3}), randn({4})), "[add]", "f32[3]", "f32[4]");
  auto g = jit([](const Array& a, const Array& b) { return jnp::matmul(a, b); });
  EXPECT_JX_ERROR(g(randn({2, 3}), randn({4, 5})), "3", "4");
  // The failed trace caches nothing; a valid call afterwards works.
  EXPECT_EQ(f.cache_size(), 0u);
  Array a = randn({3}, DType::Float32, 40);
  EXPECT_ALLCLOSE(f(a, a), a + a, 0, 0);
}

TEST(JitErrors, NullArrayArgument) {
  auto f = jit([](const Array& x, const Array& y) { return x + y; });
  EXPECT_JX_ERROR(f(randn({3}), Array()), "[jit]", "argument leaf 1", "null");
  EXPECT_JX_ERROR(f.lower(Array(), randn({3})), "[jit]", "argument leaf 0", "null");
}

TEST(JitErrors, ExceptionInsideTheFunctionPropagates) {
  auto f = jit([](const Array& x) {
    if (x.shape()[0] > 2) throw std::runtime_error("user error");
    return x;
  });
  EXPECT_THROW(f(randn({3})), std::runtime_error);
  // The trace state is clean afterwards: eager and jit still work.
  Array x = randn({2}, DType::Float32, 41);
  EXPECT_ALLCLOSE(f(x), x, 0, 0);
  EXPECT_TRUE((x + 1).is_concrete());
}

// ---- threads ----

TEST(JitThreads, LargeKernelAndConcurrentCallers) {
  // Large enough for the kernel to split over the thread pool.
  auto f = jit([](const Array& x) { return jnp::sin(x) * jnp::exp(-x * x) + x; });
  Array x = randn({1 << 20}, DType::Float32, 42);
  Array want = jnp::sin(x) * jnp::exp(-x * x) + x;
  EXPECT_ALLCLOSE(f(x), want, 1e-5, 1e-6);
  // Large reductions (split over threads along the kept or the reduced axis).
  auto sums = jit([](const Array& x) {
    return std::make_tuple(jnp::sum(x * x, 1), jnp::max(jnp::abs(x), 0), jnp::sum(x));
  });
  Array m = randn({64, 16384}, DType::Float32, 53);
  auto [rows, cols, total] = sums(m);
  EXPECT_ALLCLOSE(rows, jnp::sum(m * m, 1), 1e-5, 1e-3);
  EXPECT_ALLCLOSE(cols, jnp::max(jnp::abs(m), 0), 0, 0);
  EXPECT_ALLCLOSE(total, jnp::sum(m), 1e-5, 0.1);  // |terms| ~ 1, 2^20 of them
  // Several user threads calling the same jitted function (one compiles, all run).
  auto g = jit([](const Array& x) { return jnp::tanh(x) * 3 - x; });
  std::vector<Array> inputs, outputs(4);
  for (int t = 0; t < 4; ++t) inputs.push_back(randn({20000}, DType::Float32, 43 + t));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 5; ++k) outputs[t] = g(inputs[t]);
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_ALLCLOSE(outputs[t], jnp::tanh(inputs[t]) * 3 - inputs[t], 1e-5, 1e-6);
  EXPECT_EQ(g.cache_size(), 1u);
}

TEST(JitThreads, KernelsCompileConcurrently) {
  // Programs of several kernels (a fusion holds at most 256 ops), each traced and
  // compiled by its own user thread at the same time: every compile leases a target
  // machine of its own, and each program's kernels compile concurrently on the pool.
  auto make = [](int k) {
    return [k](const Array& x) {
      Array t = x;
      for (int i = 0; i < 300; ++i) t = jnp::sin(t * (1.0 + 0.001 * k)) + 0.25;
      return t;
    };
  };
  std::vector<Array> inputs, outputs(3);
  for (int t = 0; t < 3; ++t) inputs.push_back(randn({5000}, DType::Float32, 60 + t));
  const int64_t compiles = compiler::codegen::llvm_compile_count();
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      outputs[t] = jit(make(t), {.name = "concurrent" + std::to_string(t), .disk_cache = false})(inputs[t]);
    });
  for (auto& th : threads) th.join();
  EXPECT_GE(compiler::codegen::llvm_compile_count() - compiles, 3 * 2) << "several kernels per program";
  for (int t = 0; t < 3; ++t) EXPECT_ALLCLOSE(outputs[t], make(t)(inputs[t]), 1e-5, 1e-5);
}

// ---- the compile log, dumps, the disk cache ----

TEST(JitEnvironment, CompileLogNamesTheReason) {
  ::testing::internal::CaptureStderr();
  auto f = jit([](const Array& x, const Array& y) { return jnp::sum(x) + jnp::sum(y); }, JitOptions{.name = "logged"});
  (void)f(randn({3}), randn({3}));
  (void)f(randn({3}), randn({3}));
  (void)f(randn({3}), randn({4}));
  auto g = jit([](const Array& x, int n) { return x * n; }, static_argnums<1>, JitOptions{.name = "logged_static"});
  (void)g(randn({2}), 1);
  (void)g(randn({2}), 2);
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(log, "tracing 'logged' for (f32[3], f32[3])")) << log;
  EXPECT_TRUE(contains(log, "first call")) << log;
  EXPECT_TRUE(contains(log, "argument 1 changed from f32[3] to f32[4]")) << log;
  EXPECT_TRUE(contains(log, "compiled 'logged'")) << log;
  EXPECT_TRUE(contains(log, "static arguments changed from (1) to (2)")) << log;
  // One trace and one compile per signature: the cache hit logged nothing.
  size_t traces = 0;
  for (size_t at = log.find("tracing 'logged' "); at != std::string::npos; at = log.find("tracing 'logged' ", at + 1))
    ++traces;
  EXPECT_EQ(traces, 2u) << log;
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(JitEnvironment, DumpWritesPassesFusionDecisionsAndKernels) {
  std::string dir = make_temp_dir("jit_dump");
  ASSERT_FALSE(dir.empty());
  jx::config::set_dump_dir(dir);
  auto f = jit([](const Array& x) { return jnp::sum(jnp::sin(x) * 2 + 0); }, JitOptions{.name = "dumped"});
  Array x = randn({4096}, DType::Float32, 44);
  Array got = f(x);
  jx::config::set_dump_dir("");
  EXPECT_ALLCLOSE(got, jnp::sum(jnp::sin(x) * 2), 1e-5, 1e-3);
  std::vector<std::string> files = files_in(dir);
  std::string listing;
  for (const auto& s : files) listing += s + "\n";
  auto find = [&](auto pred) -> std::string {
    for (const auto& s : files)
      if (pred(fs::path(s))) return s;
    return {};
  };
  std::string traced = find([](const fs::path& p) { return p.filename() == "00-traced.txt"; });
  ASSERT_FALSE(traced.empty()) << listing;
  EXPECT_TRUE(contains(fs::path(traced).parent_path().string(), "dumped")) << listing;
  EXPECT_TRUE(contains(read_text(fs::path(dir) / traced), "sin")) << read_text(fs::path(dir) / traced);
  // At least one pass after the trace (x * 2 + 0 simplifies, fusion changes the program).
  std::string pass = find([](const fs::path& p) {
    std::string n = p.filename().string();
    return n.size() > 3 && std::isdigit(n[0]) && n.rfind("00-", 0) != 0 && p.extension() == ".txt";
  });
  EXPECT_FALSE(pass.empty()) << listing;
  std::string fusion = find([](const fs::path& p) { return p.filename() == "fusion.txt"; });
  ASSERT_FALSE(fusion.empty()) << listing;
  std::string decisions = read_text(fs::path(dir) / fusion);
  EXPECT_TRUE(contains(decisions, "[fusion] fusion.0: ")) << decisions;  // one decision per line
  std::string ll = find([](const fs::path& p) { return p.extension() == ".ll"; });
  std::string s = find([](const fs::path& p) { return p.extension() == ".s"; });
  ASSERT_FALSE(ll.empty()) << listing;
  ASSERT_FALSE(s.empty()) << listing;
  EXPECT_TRUE(contains(read_text(fs::path(dir) / ll), "define")) << ll;
  std::string assembly = read_text(fs::path(dir) / s);
  EXPECT_FALSE(assembly.empty());
  // The sin loop is vectorized: on an AVX-512 host it runs on zmm registers.
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_TRUE(contains(assembly, "zmm")) << assembly.substr(0, 4000);
  }
  fs::remove_all(dir);
  // Without a dump directory nothing is written.
  std::string empty_dir = make_temp_dir("jit_nodump");
  auto g = jit([](const Array& x) { return x * 3; });
  (void)g(x);
  EXPECT_TRUE(files_in(empty_dir).empty());
  fs::remove_all(empty_dir);
}

TEST(JitEnvironment, DiskCacheIsReusedAndSurvivesCorruption) {
  using compiler::codegen::object_cache_stats;
  ASSERT_FALSE(g_cache_dir.empty());
  EXPECT_EQ(jx::config::get().cache_dir, g_cache_dir);
  // A kernel nobody else in this binary compiles (its constants are unique).
  auto make = [] {
    return jit([](const Array& x) { return jnp::cos(x * 1.2345678) * 7.654321 + jnp::exp(x * 0.000123); });
  };
  Array x = randn({300}, DType::Float32, 45);
  Array want = jnp::cos(x * 1.2345678) * 7.654321 + jnp::exp(x * 0.000123);
  std::vector<std::string> before = files_in(g_cache_dir);
  auto s0 = object_cache_stats();
  EXPECT_ALLCLOSE(make()(x), want, 1e-5, 1e-6);
  auto s1 = object_cache_stats();
  std::vector<std::string> after = files_in(g_cache_dir);
  EXPECT_GT(after.size(), before.size()) << "the first compile stores its object code in " << g_cache_dir;
  EXPECT_GT(s1.stores, s0.stores);
  EXPECT_GT(s1.misses, s0.misses);
  // A second jitted object compiles the same program: served from the cache, same values.
  EXPECT_ALLCLOSE(make()(x), want, 1e-5, 1e-6);
  auto s2 = object_cache_stats();
  EXPECT_GT(s2.hits, s1.hits);
  EXPECT_EQ(s2.stores, s1.stores);
  EXPECT_EQ(files_in(g_cache_dir).size(), after.size());
  // Corrupt every cached file: compiling again neither crashes nor gives wrong values,
  // and the entries are rejected (then rewritten).
  for (const auto& f : files_in(g_cache_dir)) {
    std::ofstream out(fs::path(g_cache_dir) / f, std::ios::binary | std::ios::trunc);
    out << "not an object file";
  }
  EXPECT_ALLCLOSE(make()(x), want, 1e-5, 1e-6);
  auto s3 = object_cache_stats();
  EXPECT_GT(s3.rejected, s2.rejected);
  EXPECT_EQ(s3.hits, s2.hits);
  // Truncated to nothing as well.
  for (const auto& f : files_in(g_cache_dir)) fs::resize_file(fs::path(g_cache_dir) / f, 0);
  EXPECT_ALLCLOSE(make()(x), want, 1e-5, 1e-6);
  // A rewritten entry is good again.
  EXPECT_ALLCLOSE(make()(x), want, 1e-5, 1e-6);
  EXPECT_GT(object_cache_stats().hits, s3.hits);
  // disk_cache=false neither reads nor writes the directory.
  auto no_disk = jit([](const Array& x) { return jnp::sin(x * 3.3333) - 1.1111; }, JitOptions{.disk_cache = false});
  size_t n = files_in(g_cache_dir).size();
  auto s4 = object_cache_stats();
  EXPECT_ALLCLOSE(no_disk(x), jnp::sin(x * 3.3333) - 1.1111, 1e-5, 1e-6);
  EXPECT_EQ(files_in(g_cache_dir).size(), n);
  auto s5 = object_cache_stats();
  EXPECT_EQ(s5.stores, s4.stores);
  EXPECT_EQ(s5.misses, s4.misses);
}

}  // namespace
}  // namespace jx
