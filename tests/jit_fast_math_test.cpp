// The inline float32 exp / tanh / erf of src/jit/codegen/fast_math.h, each compiled in a
// loop through the jit's ORC session: max error against a float64 reference (glibc's
// double exp / tanh / erf) over 2^20 inputs (random values over each function's ranges,
// random bit patterns over all floats, subnormals, plus edge cases) within the documented
// bounds, libm's special cases exactly, and the optimized loop vectorized at 512 bits
// with no calls left (the point of emitting the math inline); float64 exp likewise.
// Every kernel result must also equal, bit for bit, the C++ twin (exp_f32_scalar, ...),
// the one eager can call to agree exactly with kernels.
// JX_FAST_MATH_SAMPLES=<n> changes the number of random inputs (for measuring).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "jit/codegen/fast_math.h"
#include "jit/codegen/llvm_session.h"

namespace jx::compiler::codegen {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kMinSub = std::numeric_limits<float>::denorm_min();
constexpr float kMinNormal = std::numeric_limits<float>::min();
constexpr float kMax = std::numeric_limits<float>::max();

size_t sample_count() {
  if (const char* s = std::getenv("JX_FAST_MATH_SAMPLES")) return static_cast<size_t>(std::strtoull(s, nullptr, 10));
  return size_t{1} << 20;
}

// Error of y in units of the float32 ULP at the exact value ref (2^-149 for subnormals).
// A result that rounds to ±inf must be that inf exactly: infinite error otherwise.
double ulp_error(float y, double ref) {
  if (std::isnan(ref)) return std::isnan(y) ? 0.0 : kInf;
  const float rounded = static_cast<float>(ref);
  if (std::isinf(rounded) || std::isinf(y)) return y == rounded ? 0.0 : kInf;
  const int e = ref == 0 ? -126 : std::max(std::ilogb(ref), -126);
  return std::fabs(static_cast<double>(y) - ref) / std::ldexp(1.0, e - 23);
}

struct Case {
  FastMathFunction function;
  const char* name;
  double (*reference)(double);
  double max_ulp;       // the bound asserted
  float low, high;      // the range where the function is not constant
};

// Inputs: edge cases, then thirds of uniform over [low, high], uniform over [-1, 1], and
// random bit patterns (every float, NaN and inf included), then subnormals.
std::vector<float> inputs(const Case& c) {
  std::vector<float> x = {0.0f, -0.0f, kInf, -kInf, kNaN, -kNaN, kMinSub, -kMinSub, kMinNormal, -kMinNormal,
                          kMax, -kMax, 1e-30f, -1e-30f, 1.0f, -1.0f, 0.625f, -0.625f, 3.92f, -3.92f, 3.9192f,
                          88.72f, 88.7228f, 88.72283f, 88.72284f, 88.8f, 89.0f, -87.33f, -87.34f, -100.0f,
                          -103.97f, -103.972f, -103.98f, -104.0f, -150.0f, 9.0f, -9.0f, 100.0f, -100.0f};
  for (float v = c.low; v <= c.high; v = std::nextafter(v, kInf) + (c.high - c.low) / 4096) x.push_back(v);
  // Every float around the switch points and the overflow / underflow thresholds.
  for (float center : {0.625f, 1.0f, 3.92f, 4.0f, 9.02f, 88.7228f, -87.3365f, -103.972f, -88.7f})
    for (float v = center, k = 0; k < 512; ++k, v = std::nextafter(v, kInf)) x.push_back(v), x.push_back(-v);
  std::mt19937 rng(20260529u + static_cast<unsigned>(c.function));
  std::uniform_real_distribution<float> range(c.low, c.high), unit(-1.0f, 1.0f);
  std::uniform_int_distribution<uint32_t> bits;
  const size_t n = sample_count();
  for (size_t i = 0; i < n; ++i) {
    switch (i % 4) {
      case 0: x.push_back(range(rng)); break;
      case 1: x.push_back(unit(rng)); break;
      case 2: x.push_back(std::bit_cast<float>(bits(rng))); break;
      default: x.push_back(std::bit_cast<float>(bits(rng) & 0x807fffffu)); break;  // subnormal
    }
  }
  return x;
}

class FastMath : public ::testing::TestWithParam<Case> {};

TEST_P(FastMath, ErrorWithinBoundAndSpecialCasesExact) {
  const Case& c = GetParam();
  FastMathLoop loop = compile_fast_math_loop(c.function, false);
  std::vector<float> x = inputs(c);
  std::vector<float> y(x.size());
  loop.run(x.data(), y.data(), static_cast<int64_t>(x.size()));
  double worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = ulp_error(y[i], c.reference(static_cast<double>(x[i])));
    if (e > worst) worst = e, worst_x = x[i];
  }
  std::printf("%s: max error %.3f ULP at x = %a (%zu inputs)\n", c.name, worst, static_cast<double>(worst_x), x.size());
  // The C++ twin computes the same bits everywhere (vector body and scalar remainder alike).
  float (*twin)(float) = c.function == FastMathFunction::Exp    ? exp_f32_scalar
                         : c.function == FastMathFunction::Tanh ? tanh_f32_scalar
                                                                : erf_f32_scalar;
  size_t differing = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = twin(x[i]);
    if (std::bit_cast<uint32_t>(want) != std::bit_cast<uint32_t>(y[i]) && !(std::isnan(want) && std::isnan(y[i]))) {
      if (differing++ < 5) ADD_FAILURE() << c.name << "(" << x[i] << "): kernel " << y[i] << ", C++ twin " << want;
    }
  }
  EXPECT_EQ(differing, 0u);
  EXPECT_LE(worst, c.max_ulp) << c.name << " at x = " << worst_x;

  // Special cases, to the bit.
  auto one = [&](float v) {
    float r;
    loop.run(&v, &r, 1);
    return r;
  };
  auto same_bits = [](float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); };
  EXPECT_TRUE(std::isnan(one(kNaN)));
  EXPECT_TRUE(std::isnan(one(-kNaN)));
  switch (c.function) {
    case FastMathFunction::Exp:
      EXPECT_TRUE(same_bits(one(-kInf), 0.0f));
      EXPECT_EQ(one(kInf), kInf);
      EXPECT_EQ(one(0.0f), 1.0f);
      EXPECT_EQ(one(-0.0f), 1.0f);
      EXPECT_EQ(one(88.73f), kInf);
      EXPECT_EQ(one(1000.0f), kInf);
      EXPECT_TRUE(same_bits(one(-104.0f), 0.0f));
      EXPECT_TRUE(same_bits(one(-1000.0f), 0.0f));
      EXPECT_EQ(one(-103.9f), static_cast<float>(std::exp(-103.9)));  // the smallest subnormals
      EXPECT_EQ(one(-103.2f), static_cast<float>(std::exp(-103.2)));
      break;
    case FastMathFunction::Tanh:
    case FastMathFunction::Erf:
      EXPECT_EQ(one(kInf), 1.0f);
      EXPECT_EQ(one(-kInf), -1.0f);
      EXPECT_EQ(one(100.0f), 1.0f);
      EXPECT_EQ(one(-100.0f), -1.0f);
      EXPECT_TRUE(same_bits(one(0.0f), 0.0f));
      EXPECT_TRUE(same_bits(one(-0.0f), -0.0f));
      if (c.function == FastMathFunction::Tanh) {  // tanh(x) = x for tiny x: P(0) = Q(0) = 1
        for (float v : {kMinSub, -kMinSub, kMinNormal, 1e-20f, -1e-20f, 1e-4f}) {
          EXPECT_EQ(one(v), v) << v;
        }
      }
      // Odd to the bit, and never past ±1 (a rational's rounding could overshoot near the
      // clamp; the result is clamped), over every input of the accuracy sweep.
      for (size_t i = 0; i < x.size(); ++i) {
        if (std::isnan(x[i])) continue;
        ASSERT_TRUE(std::fabs(y[i]) <= 1.0f) << c.name << "(" << x[i] << ") = " << y[i];
        ASSERT_TRUE(same_bits(one(-x[i]), -y[i])) << c.name << " at " << x[i];
      }
      break;
    case FastMathFunction::ExpF64: break;  // its own test below
  }
}

// The emitted math is plain vector arithmetic: the loop vectorizes at 512 bits and calls
// nothing but LLVM intrinsics (llvm.fma, llvm.fabs, ...).
TEST_P(FastMath, LoopVectorizesWithoutCalls) {
  const Case& c = GetParam();
  FastMathLoop loop = compile_fast_math_loop(c.function, true);
  const bool host_avx512 = host_target().features.find("+avx512f") != std::string::npos;
  if (host_avx512) {
    EXPECT_NE(loop.ir.find("<16 x float>"), std::string::npos) << loop.ir;
  }
  std::istringstream lines(loop.ir);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("call ") == std::string::npos) continue;
    EXPECT_NE(line.find("@llvm."), std::string::npos) << "a call left in the loop: " << line;
  }
}

// float64 exp against long double expl (64-bit mantissa) over 2^20 inputs: max 2 ULP
// (measured 0.5x), subnormal results, overflow and the special cases exact.
double ulp_error_f64(double y, long double ref) {
  if (std::isnan(ref)) return std::isnan(y) ? 0.0 : kInf;
  const double rounded = static_cast<double>(ref);
  if (std::isinf(rounded) || std::isinf(y)) return y == rounded ? 0.0 : kInf;
  const int e = ref == 0 ? -1022 : std::max(std::ilogb(ref), -1022);
  return static_cast<double>(std::fabs(static_cast<long double>(y) - ref) / std::ldexp(1.0L, e - 52));
}

TEST(FastMathF64, ExpErrorWithinBoundAndSpecialCasesExact) {
  FastMathLoop loop = compile_fast_math_loop(FastMathFunction::ExpF64, false);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> x = {0.0, -0.0, inf, -inf, std::nan(""), 1.0, -1.0, 709.78, 709.7827, 709.79, 710.0,
                           -708.4, -708.5, -744.4, -745.1, -745.2, -746.0, -800.0, 1e-300, -1e-300, 5e-324};
  std::mt19937_64 rng(20260529u);
  std::uniform_real_distribution<double> range(-746.0, 710.0), unit(-1.0, 1.0);
  std::uniform_int_distribution<uint64_t> bits;
  const size_t n = sample_count();
  for (size_t i = 0; i < n; ++i) {
    switch (i % 3) {
      case 0: x.push_back(range(rng)); break;
      case 1: x.push_back(unit(rng)); break;
      default: x.push_back(std::bit_cast<double>(bits(rng))); break;
    }
  }
  std::vector<double> y(x.size());
  loop.run(x.data(), y.data(), static_cast<int64_t>(x.size()));
  double worst = 0, worst_x = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = ulp_error_f64(y[i], std::exp(static_cast<long double>(x[i])));
    if (e > worst) worst = e, worst_x = x[i];
  }
  std::printf("exp f64: max error %.3f ULP at x = %a (%zu inputs)\n", worst, worst_x, x.size());
  EXPECT_LE(worst, 2.0) << "at x = " << worst_x;
  size_t differing = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = exp_f64_scalar(x[i]);
    if (std::bit_cast<uint64_t>(want) != std::bit_cast<uint64_t>(y[i]) && !(std::isnan(want) && std::isnan(y[i]))) {
      if (differing++ < 5) ADD_FAILURE() << "exp(" << x[i] << "): kernel " << y[i] << ", C++ twin " << want;
    }
  }
  EXPECT_EQ(differing, 0u);
  auto one = [&](double v) {
    double r;
    loop.run(&v, &r, 1);
    return r;
  };
  EXPECT_TRUE(std::isnan(one(std::nan(""))));
  EXPECT_EQ(std::bit_cast<uint64_t>(one(-inf)), 0u);
  EXPECT_EQ(one(inf), inf);
  EXPECT_EQ(one(710.0), inf);
  EXPECT_EQ(one(0.0), 1.0);
  EXPECT_EQ(std::bit_cast<uint64_t>(one(-746.0)), 0u);
  EXPECT_EQ(one(-745.0), std::exp(-745.0));  // the smallest subnormal
  EXPECT_EQ(one(-740.0), std::exp(-740.0));
}

TEST(FastMathF64, LoopVectorizesWithoutCalls) {
  FastMathLoop loop = compile_fast_math_loop(FastMathFunction::ExpF64, true);
  if (host_target().features.find("+avx512f") != std::string::npos) {
    EXPECT_NE(loop.ir.find("<8 x double>"), std::string::npos) << loop.ir;
  }
  std::istringstream lines(loop.ir);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("call ") == std::string::npos) continue;
    EXPECT_NE(line.find("@llvm."), std::string::npos) << "a call left in the loop: " << line;
  }
}

// exp computes a vector of usual inputs (|x| <= 87, one scaling by 2^n) on its fast path
// and recomputes the whole vector on its full-range path when one lane is beyond that
// (overflow, subnormal results, NaN, inf): every lane of such a vector, at every lane
// position of a 512-bit vector, is the C++ twin's bits, and the bounds' neighbours too.
template <class T, class Twin>
void expect_rare_lanes_exact(const FastMathLoop& loop, Twin twin, std::vector<T> rare, T bound) {
  for (T v = bound, k = 0; k < 4; ++k, v = std::nextafter(v, T(1000))) rare.push_back(v), rare.push_back(-v);
  for (T v = bound, k = 0; k < 4; ++k, v = std::nextafter(v, T(0))) rare.push_back(v), rare.push_back(-v);
  constexpr size_t kLanes = 64 / sizeof(T);
  std::mt19937 rng(20261206u);
  std::uniform_real_distribution<T> usual(-bound, bound);
  std::vector<T> x, y;
  for (T v : rare)
    for (size_t lane = 0; lane < kLanes; ++lane)
      for (size_t i = 0; i < kLanes; ++i) x.push_back(i == lane ? v : usual(rng));
  y.resize(x.size());
  loop.run(x.data(), y.data(), static_cast<int64_t>(x.size()));
  size_t differing = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const T want = twin(x[i]);
    if (std::memcmp(&want, &y[i], sizeof(T)) != 0 && !(std::isnan(want) && std::isnan(y[i])))
      if (differing++ < 5)
        ADD_FAILURE() << "exp(" << x[i] << ") beside exp(" << x[i / kLanes * kLanes + (i % kLanes == 0)] << "): kernel "
                      << y[i] << ", C++ twin " << want;
  }
  EXPECT_EQ(differing, 0u);
}

TEST(FastMathExp, RareLanesAndTheirNeighboursExact) {
  expect_rare_lanes_exact<float>(compile_fast_math_loop(FastMathFunction::Exp, false), exp_f32_scalar,
                                 {88.5f, 88.72f, 88.8f, 100.0f, kInf, -kInf, kNaN, -87.5f, -100.0f, -103.9f, -150.0f},
                                 87.0f);
  const double inf = std::numeric_limits<double>::infinity();
  expect_rare_lanes_exact<double>(compile_fast_math_loop(FastMathFunction::ExpF64, false), exp_f64_scalar,
                                  {709.5, 709.78, 710.0, inf, -inf, std::nan(""), -708.5, -740.0, -745.0, -800.0},
                                  708.0);
}

double ref_exp(double x) { return std::exp(x); }
double ref_tanh(double x) { return std::tanh(x); }
double ref_erf(double x) { return std::erf(x); }

INSTANTIATE_TEST_SUITE_P(Functions, FastMath,
                         ::testing::Values(Case{FastMathFunction::Exp, "exp", ref_exp, 2.0, -104.0f, 89.0f},
                                           Case{FastMathFunction::Tanh, "tanh", ref_tanh, 5.5, -9.5f, 9.5f},
                                           Case{FastMathFunction::Erf, "erf", ref_erf, 6.5, -4.5f, 4.5f}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace jx::compiler::codegen
