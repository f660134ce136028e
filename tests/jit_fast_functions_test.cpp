// The inline sin, cos, tan, log, log1p, expm1 and tanh of src/math/fast_functions.h, float32 and
// float64, each compiled in a loop through the jit's ORC session exactly as kernels emit
// them (fast_math.h, emit_fast_function), against:
//   - a reference: double for float32, long double for float64, over 2^18 inputs (random
//     values over each function's ranges, random bit patterns, edge cases): max ULP within
//     the bound documented in scalar_ops.cpp's table;
//   - the C++ twin (math::fast_function_scalar), bit for bit at every input: the vector
//     body, the scalar remainder and the rare path compute what the twin computes;
//   - libm's special values exactly (NaN, ±inf, ±0 with its sign, log's domain);
//   - the rare path: arguments beyond the reduction's range (and infinities) get eager's
//     libmvec result wherever they sit in a vector, next to ordinary ones;
//   - the optimized IR: the loop is vectorized and calls nothing but the rare path.
// JX_FAST_MATH_SAMPLES=<n> changes the number of random inputs (for measuring).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "backend/cpu/vector_math.h"
#include "jit/codegen/fast_math.h"
#include "jit/codegen/llvm_session.h"
#include "math/fast_functions.h"
#include "ulp.h"

namespace jx::compiler::codegen {
namespace {

using math::FastFunction;

size_t sample_count() {
  if (const char* s = std::getenv("JX_FAST_MATH_SAMPLES")) return static_cast<size_t>(std::strtoull(s, nullptr, 10));
  return size_t{1} << 18;
}

template <class T>
using Ref = jx::testing::UlpReference<T>;

template <class T>
Ref<T> reference(FastFunction f, Ref<T> x) {
  if constexpr (std::is_same_v<Ref<T>, double>) {
    switch (f) {
      case FastFunction::Sin: return std::sin(x);
      case FastFunction::Cos: return std::cos(x);
      case FastFunction::Tan: return std::tan(x);
      case FastFunction::Log: return std::log(x);
      case FastFunction::Log1p: return std::log1p(x);
      case FastFunction::Expm1: return std::expm1(x);
      case FastFunction::Tanh: return std::tanh(x);
    }
  } else {
    switch (f) {
      case FastFunction::Sin: return sinl(x);
      case FastFunction::Cos: return cosl(x);
      case FastFunction::Tan: return tanl(x);
      case FastFunction::Log: return logl(x);
      case FastFunction::Log1p: return log1pl(x);
      case FastFunction::Expm1: return expm1l(x);
      case FastFunction::Tanh: return tanhl(x);
    }
  }
  return 0;
}

cpu::VecOp vec_op(FastFunction f) {
  switch (f) {
    case FastFunction::Sin: return cpu::VecOp::Sin;
    case FastFunction::Cos: return cpu::VecOp::Cos;
    case FastFunction::Tan: return cpu::VecOp::Tan;
    case FastFunction::Log: return cpu::VecOp::Log;
    case FastFunction::Log1p: return cpu::VecOp::Log1p;
    case FastFunction::Expm1: return cpu::VecOp::Expm1;
    case FastFunction::Tanh: return cpu::VecOp::Tanh;
  }
  return cpu::VecOp::Sin;
}

// Eager's libmvec result for one element under `isa`: what the rare path computes.
template <class T>
T eager(FastFunction f, cpu::VectorIsa isa, T x) {
  T y;
  cpu::vec_unary(vec_op(f), isa, &x, &y, 1);
  return y;
}

template <class T>
T twin(FastFunction f, cpu::VectorIsa isa, T x) {
  return math::fast_function_scalar<T>(f, x, [&](T v) { return eager<T>(f, isa, v); });
}

using jx::testing::ulp_error;

template <class T>
bool same_bits(T a, T b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<typename math::FloatTraits<T>::Bits>(a) ==
                                                 std::bit_cast<typename math::FloatTraits<T>::Bits>(b);
}

struct Range {
  double lo, hi;
  bool log_scale = false;  // uniform in log|x| with a random sign
};

std::vector<Range> ranges(FastFunction f, bool f64) {
  switch (f) {
    case FastFunction::Sin:
    case FastFunction::Cos:
    case FastFunction::Tan:
      return {{-10, 10}, {-1e4, 1e4}, {1e-30, f64 ? 1e9 : 3e5, true}, {1e5, f64 ? 1e300 : 1e38, true}};
    case FastFunction::Log: return {{0.5, 2}, {f64 ? 1e-300 : 1e-37, f64 ? 1e300 : 1e37, true}};
    case FastFunction::Log1p: return {{-0.999, 10}, {1e-12, 1e-2, true}, {10, f64 ? 1e300 : 1e37, true}};
    case FastFunction::Expm1: return {{-1, 1}, {1e-12, 1, true}, {f64 ? -40.0 : -30.0, f64 ? 709.0 : 88.7}};
    case FastFunction::Tanh: return {{-1, 1}, {-25, 25}, {1e-12, 1, true}, {0.3, 0.7}};
  }
  return {};
}

// The bound asserted (max ULP); the measured maxima are in scalar_ops.cpp's table.
double bound(FastFunction f) {
  switch (f) {
    case FastFunction::Sin: return 2.5;
    case FastFunction::Cos: return 3.0;  // near 0, where cos is sin(r) for r near pi/2
    case FastFunction::Tan: return 4.0;
    case FastFunction::Log: return 1.5;
    case FastFunction::Log1p: return 2.0;
    case FastFunction::Expm1: return 2.5;
    case FastFunction::Tanh: return 3.0;  // 2.46 (float64) over 4 million inputs
  }
  return 0;
}

template <class T>
std::vector<T> inputs(FastFunction f) {
  const bool f64 = std::is_same_v<T, double>;
  constexpr T inf = std::numeric_limits<T>::infinity();
  std::vector<T> x = {T(0), -T(0), inf, -inf, std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::denorm_min(),
                      -std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::min(), std::numeric_limits<T>::max(),
                      -std::numeric_limits<T>::max(), T(1), T(-1), T(0.5), T(-0.5), T(1e-8), T(-1e-8)};
  for (int k = -64; k <= 64; ++k) x.push_back(static_cast<T>(k * 1.5707963267948966));
  const double limit = math::FloatTraits<T>::kTrigFastLimit;
  for (double v : {limit, std::nextafter(limit, 0.0), std::nextafter(limit, 1e300)}) x.push_back(T(v)), x.push_back(T(-v));
  std::mt19937_64 rng(20261205u + static_cast<unsigned>(f));
  std::uniform_real_distribution<double> u(0, 1);
  std::uniform_int_distribution<uint64_t> bits;
  const std::vector<Range> rs = ranges(f, f64);
  const size_t n = sample_count();
  for (size_t i = 0; i < n; ++i) {
    if (i % 8 == 7) {  // any bit pattern: every exponent, NaNs and infinities included
      x.push_back(std::bit_cast<T>(static_cast<typename math::FloatTraits<T>::Bits>(bits(rng))));
      continue;
    }
    const Range& r = rs[i % rs.size()];
    double v = r.log_scale ? std::exp(std::log(r.lo) + u(rng) * (std::log(r.hi) - std::log(r.lo))) * ((rng() & 1) ? -1 : 1)
                           : r.lo + u(rng) * (r.hi - r.lo);
    x.push_back(static_cast<T>(v));
  }
  return x;
}

template <class T>
std::vector<T> run(const FastMathLoop& loop, const std::vector<T>& x) {
  std::vector<T> y(x.size());
  loop.run(x.data(), y.data(), static_cast<int64_t>(x.size()));
  return y;
}

template <class T>
void check_function(FastFunction f) {
  const bool f64 = std::is_same_v<T, double>;
  const char* dtype = f64 ? "float64" : "float32";
  const cpu::VectorIsa isa = cpu::vector_isa();
  FastMathLoop loop = compile_fast_function_loop(f, f64, isa, false);
  const std::vector<T> x = inputs<T>(f);
  const std::vector<T> y = run(loop, x);
  double worst = 0;
  T worst_x = 0;
  size_t differing = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = ulp_error<T>(y[i], reference<T>(f, static_cast<Ref<T>>(x[i])));
    if (e > worst) worst = e, worst_x = x[i];
    const T want = twin<T>(f, isa, x[i]);
    if (!same_bits(want, y[i]) && differing++ < 5)
      ADD_FAILURE() << math::fast_function_name(f) << " " << dtype << "(" << x[i] << "): kernel " << y[i] << ", twin " << want;
  }
  std::printf("[fast] %-6s %s max %.3f ULP at x = %a (%zu inputs, isa %s)\n", math::fast_function_name(f), dtype, worst,
              static_cast<double>(worst_x), x.size(), cpu::vector_isa_name(isa));
  EXPECT_EQ(differing, 0u) << math::fast_function_name(f) << " " << dtype;
  EXPECT_LE(worst, bound(f)) << math::fast_function_name(f) << " " << dtype << " at x = " << worst_x;
}

class FastFunctions : public ::testing::TestWithParam<FastFunction> {};

TEST_P(FastFunctions, Float32WithinBoundAndEqualToTwin) { check_function<float>(GetParam()); }
TEST_P(FastFunctions, Float64WithinBoundAndEqualToTwin) { check_function<double>(GetParam()); }

template <class T>
T one(const FastMathLoop& loop, T v) {
  T r;
  loop.run(&v, &r, 1);
  return r;
}

template <class T>
void check_special_values() {
  const bool f64 = std::is_same_v<T, double>;
  constexpr T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T tiny = std::numeric_limits<T>::denorm_min();
  auto loop = [&](FastFunction f) { return compile_fast_function_loop(f, f64, cpu::vector_isa(), false); };
  for (FastFunction f : math::kFastFunctions) {
    FastMathLoop l = loop(f);
    SCOPED_TRACE(math::fast_function_name(f));
    EXPECT_TRUE(std::isnan(one(l, nan)));
    if (f != FastFunction::Cos && f != FastFunction::Log) {  // odd near 0: f(±0) = ±0, f(tiny) = tiny
      EXPECT_TRUE(same_bits(one(l, T(0)), T(0)));
      EXPECT_TRUE(same_bits(one(l, -T(0)), -T(0)));
      EXPECT_EQ(one(l, tiny), tiny);
      EXPECT_EQ(one(l, -tiny), -tiny);
    }
  }
  FastMathLoop cos = loop(FastFunction::Cos), sin = loop(FastFunction::Sin), tan = loop(FastFunction::Tan);
  EXPECT_EQ(one(cos, T(0)), T(1));
  EXPECT_EQ(one(cos, -T(0)), T(1));
  for (const FastMathLoop* l : {&sin, &cos, &tan}) {
    EXPECT_TRUE(std::isnan(one(*l, inf)));
    EXPECT_TRUE(std::isnan(one(*l, -inf)));
  }
  FastMathLoop log = loop(FastFunction::Log);
  EXPECT_EQ(one(log, T(1)), T(0));
  EXPECT_FALSE(std::signbit(one(log, T(1))));
  EXPECT_EQ(one(log, T(0)), -inf);
  EXPECT_EQ(one(log, -T(0)), -inf);
  EXPECT_EQ(one(log, inf), inf);
  EXPECT_TRUE(std::isnan(one(log, T(-1))));
  EXPECT_TRUE(std::isnan(one(log, -tiny)));
  EXPECT_TRUE(std::isnan(one(log, -inf)));
  EXPECT_LE(ulp_error<T>(one(log, tiny), reference<T>(FastFunction::Log, tiny)), 1.0);  // subnormals scale first
  FastMathLoop log1p = loop(FastFunction::Log1p);
  EXPECT_EQ(one(log1p, T(-1)), -inf);
  EXPECT_EQ(one(log1p, inf), inf);
  EXPECT_TRUE(std::isnan(one(log1p, T(-2))));
  EXPECT_TRUE(std::isnan(one(log1p, -inf)));
  FastMathLoop expm1 = loop(FastFunction::Expm1);
  EXPECT_EQ(one(expm1, inf), inf);
  EXPECT_EQ(one(expm1, -inf), T(-1));
  EXPECT_EQ(one(expm1, T(-1000)), T(-1));
  EXPECT_EQ(one(expm1, T(f64 ? 710 : 89)), inf);
  FastMathLoop tanh = loop(FastFunction::Tanh);
  EXPECT_EQ(one(tanh, inf), T(1));
  EXPECT_EQ(one(tanh, -inf), T(-1));
  EXPECT_EQ(one(tanh, std::numeric_limits<T>::max()), T(1));
  // Around the clamp and where tanh first rounds to 1: the reference's rounding exactly.
  for (double v : {9.0, 9.01, 9.02, 10.0, 19.0, 19.06, 19.1, 22.0, 23.0}) {
    const T t = static_cast<T>(v);
    EXPECT_LE(ulp_error<T>(one(tanh, t), reference<T>(FastFunction::Tanh, t)), bound(FastFunction::Tanh)) << v;
    EXPECT_TRUE(same_bits(one(tanh, -t), -one(tanh, t))) << v;
  }
  // Just below the overflow threshold, where 2^n is not a T: finite and accurate.
  const T top = f64 ? T(709.78) : T(88.72);
  EXPECT_TRUE(std::isfinite(one(expm1, top)));
  EXPECT_LE(ulp_error<T>(one(expm1, top), reference<T>(FastFunction::Expm1, top)), bound(FastFunction::Expm1));
}

TEST(FastFunctionsSpecialValues, Float32) { check_special_values<float>(); }
TEST(FastFunctionsSpecialValues, Float64) { check_special_values<double>(); }

// One argument the fast path leaves to the rare path (a huge one for sin, cos and tan,
// zero, a negative or a subnormal for log, -1 and below for log1p, past the overflow
// threshold for expm1, and NaN and infinities for all) among ordinary ones, at every
// position of a 64-element buffer (vector lanes and remainder alike): it gets eager's
// libmvec result, its neighbours the inline polynomial's, and both equal the twin.
template <class T>
void check_rare_path(FastFunction f, T rare_argument) {
  const bool f64 = std::is_same_v<T, double>;
  const cpu::VectorIsa isa = cpu::vector_isa();
  FastMathLoop loop = compile_fast_function_loop(f, f64, isa, false);
  const bool positive = f == FastFunction::Log || f == FastFunction::Log1p;
  for (size_t at = 0; at < 64; ++at) {
    std::vector<T> x(64);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>(0.1 * static_cast<double>(i) + (positive ? 0.05 : -3.0));
    x[at] = rare_argument;
    const std::vector<T> y = run(loop, x);
    ASSERT_TRUE(same_bits(y[at], eager<T>(f, isa, x[at])))
        << math::fast_function_name(f) << "(" << rare_argument << ") at " << at << ": " << y[at];
    for (size_t i = 0; i < x.size(); ++i) ASSERT_TRUE(same_bits(y[i], twin<T>(f, isa, x[i]))) << i;
  }
}

template <class T>
void check_rare_paths() {
  constexpr T inf = std::numeric_limits<T>::infinity();
  const T nan = std::numeric_limits<T>::quiet_NaN(), sub = std::numeric_limits<T>::denorm_min();
  const T huge = std::is_same_v<T, double> ? T(1e22) : T(1e30);
  for (FastFunction f : {FastFunction::Sin, FastFunction::Cos, FastFunction::Tan})
    for (T v : {huge, -huge, inf, -inf, nan}) check_rare_path<T>(f, v);
  for (T v : {T(0), -T(0), T(-1), sub, inf, -inf, nan}) check_rare_path<T>(FastFunction::Log, v);
  for (T v : {T(-1), T(-2), inf, -inf, nan}) check_rare_path<T>(FastFunction::Log1p, v);
  for (T v : {T(1000), inf, nan}) check_rare_path<T>(FastFunction::Expm1, v);
}

TEST(FastFunctionsRarePath, Float32GetsEagersResultAtEveryPosition) { check_rare_paths<float>(); }
TEST(FastFunctionsRarePath, Float64GetsEagersResultAtEveryPosition) { check_rare_paths<double>(); }

// The optimized loop runs on vectors (where the host has them) and calls nothing but the
// rare path: the scalar remainder's jx_vm_*_rare and, behind a branch, libmvec's variant.
TEST_P(FastFunctions, LoopVectorizesAndCallsOnlyTheRarePath) {
  const FastFunction f = GetParam();
  for (bool f64 : {false, true}) {
    FastMathLoop loop = compile_fast_function_loop(f, f64, cpu::vector_isa(), true);
    if (cpu::vector_isa() != cpu::VectorIsa::Scalar) {
      EXPECT_NE(loop.ir.find(f64 ? " x double>" : " x float>"), std::string::npos)
          << "not vectorized:\n" << loop.ir.substr(0, 3000);
    }
    static const std::regex call(R"(\bcall\b[^@\n]*@([A-Za-z0-9_.$]+))");
    for (std::sregex_iterator it(loop.ir.begin(), loop.ir.end(), call), end; it != end; ++it) {
      const std::string name = (*it)[1].str();
      if (name.rfind("llvm.", 0) == 0) continue;
      // After inlining: eager's jx_vm_<fn>_* for the scalar remainder, libmvec's
      // _ZGV*_<fn> variant for vectors, each behind its rare-condition branch.
      const std::string fn = math::fast_function_name(f);
      const bool rare = name.rfind("jx_vm_" + fn + "_", 0) == 0 ||
                        (name.rfind("_ZGV", 0) == 0 && name.find("v_" + fn) != std::string::npos);
      EXPECT_TRUE(rare) << "unexpected call of " << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, FastFunctions, ::testing::ValuesIn(math::kFastFunctions),
                         [](const auto& info) { return std::string(math::fast_function_name(info.param)); });

}  // namespace
}  // namespace jx::compiler::codegen
