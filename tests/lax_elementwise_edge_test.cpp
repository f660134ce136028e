// Elementwise lax primitives: exact integer semantics (wrapping, XLA's defined division
// and shift results), special floating values, libmvec accuracy against float64/long
// double libm under every instruction set, select_n/clamp/convert/bitcast, traits and
// error messages. Value tables against NumPy are in lax_elementwise_test.cpp.
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>

#include "core/array_internal.h"
#include "backend/cpu/vector_math.h"
#include "jx/jx.h"
#include "test_util.h"

namespace jx {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <class T>
Array arr(std::vector<T> v) {
  return Array(v);
}
Array f32(std::vector<double> v) {
  std::vector<float> f(v.begin(), v.end());
  return Array(f);
}
Array f64(std::vector<double> v) { return Array(v); }
Array i32(std::vector<int32_t> v) { return Array(v); }

// Exact comparison (NaN matches NaN) of x with expected values given as doubles.
::testing::AssertionResult exactly(const Array& x, std::vector<double> expected) {
  Array e(expected);
  return testing::allclose(x, lax::convert_element_type(e, x.dtype()), 0, 0);
}

template <class T>
std::vector<T> values(const Array& x) {
  return x.to_vector<T>();
}

// ---- integer semantics ----

TEST(ElementwiseIntegers, DivisionByZeroAndOverflowFollowXla) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  Array x = i32({7, -7, 0, kMin, kMin, 5, -5, 7});
  Array y = i32({0, 0, 0, -1, 1, -2, 2, -1});
  EXPECT_EQ(values<int32_t>(lax::div(x, y)), (std::vector<int32_t>{-1, -1, -1, kMin, kMin, -2, -2, -7}));
  EXPECT_EQ(values<int32_t>(lax::rem(x, y)), (std::vector<int32_t>{7, -7, 0, 0, 0, 1, -1, 0}));

  Array x8 = arr<int8_t>({-128, 100, -128});
  Array y8 = arr<int8_t>({-1, 0, 3});
  EXPECT_EQ(values<int32_t>(lax::div(x8, y8)), (std::vector<int32_t>{-128, -1, -42}));
  EXPECT_EQ(values<int32_t>(lax::rem(x8, y8)), (std::vector<int32_t>{0, 100, -2}));

  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  Array x64 = arr<int64_t>({kMin64, 9});
  Array y64 = arr<int64_t>({-1, 0});
  EXPECT_EQ(values<int64_t>(lax::div(x64, y64)), (std::vector<int64_t>{kMin64, -1}));
  EXPECT_EQ(values<int64_t>(lax::rem(x64, y64)), (std::vector<int64_t>{0, 9}));

  Array xu = arr<uint32_t>({7, 0, 9});
  Array yu = arr<uint32_t>({0, 0, 4});
  EXPECT_EQ(values<uint32_t>(lax::div(xu, yu)), (std::vector<uint32_t>{UINT32_MAX, UINT32_MAX, 2}));
  EXPECT_EQ(values<uint32_t>(lax::rem(xu, yu)), (std::vector<uint32_t>{7, 0, 1}));
  Array xu8 = arr<uint8_t>({7});
  EXPECT_EQ(values<int32_t>(lax::div(xu8, arr<uint8_t>({0}))), (std::vector<int32_t>{255}));
}

TEST(ElementwiseIntegers, FloatRemainderHasTheDividendsSign) {
  EXPECT_TRUE(exactly(lax::rem(f32({5.5f, -5.5f, 5.5f, 1.0f}), f32({2.f, 2.f, -2.f, 0.f})), {1.5, -1.5, 1.5, kNaN}));
}

TEST(ElementwiseIntegers, ShiftsByTheBitWidthOrMoreAreDefined) {
  Array x = i32({1, -1, -8, 5, 3});
  Array s = i32({32, 40, -1, 31, 2});
  EXPECT_EQ(values<int32_t>(lax::shift_left(x, s)), (std::vector<int32_t>{0, 0, 0, std::numeric_limits<int32_t>::min(), 12}));
  EXPECT_EQ(values<int32_t>(lax::shift_right_arithmetic(x, s)), (std::vector<int32_t>{0, -1, -1, 0, 0}));
  EXPECT_EQ(values<int32_t>(lax::shift_right_logical(x, s)), (std::vector<int32_t>{0, 0, 0, 0, 0}));
  EXPECT_EQ(values<int32_t>(lax::shift_right_logical(i32({-1}), i32({1}))), (std::vector<int32_t>{INT32_MAX}));
  EXPECT_EQ(values<int32_t>(lax::shift_right_arithmetic(i32({-5}), i32({1}))), (std::vector<int32_t>{-3}));

  // Unsigned operands shift arithmetically as their signed reading (as XLA).
  Array u = arr<uint8_t>({200, 200, 200, 64});
  Array us = arr<uint8_t>({1, 9, 255, 1});
  EXPECT_EQ(values<int32_t>(lax::shift_right_arithmetic(u, us)), (std::vector<int32_t>{228, 255, 255, 32}));
  EXPECT_EQ(values<int32_t>(lax::shift_right_logical(u, us)), (std::vector<int32_t>{100, 0, 0, 32}));
  EXPECT_EQ(values<int32_t>(lax::shift_left(arr<int8_t>({64, 1}), arr<int8_t>({1, 8}))), (std::vector<int32_t>{-128, 0}));
  EXPECT_EQ(values<int64_t>(lax::shift_left(arr<int64_t>({1}), arr<int64_t>({63}))),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min()}));
}

TEST(ElementwiseIntegers, ArithmeticWrapsAround) {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max(), kMin = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(values<int32_t>(lax::add(i32({kMax}), i32({1}))), (std::vector<int32_t>{kMin}));
  EXPECT_EQ(values<int32_t>(lax::sub(i32({kMin}), i32({1}))), (std::vector<int32_t>{kMax}));
  EXPECT_EQ(values<int32_t>(lax::mul(i32({65536}), i32({65536}))), (std::vector<int32_t>{0}));
  EXPECT_EQ(values<int32_t>(lax::neg(i32({kMin}))), (std::vector<int32_t>{kMin}));
  EXPECT_EQ(values<int32_t>(lax::abs(i32({kMin, -3}))), (std::vector<int32_t>{kMin, 3}));
  EXPECT_EQ(values<int32_t>(lax::mul(arr<int16_t>({300}), arr<int16_t>({300}))), (std::vector<int32_t>{24464}));
  EXPECT_EQ(values<int32_t>(lax::mul(arr<int8_t>({100}), arr<int8_t>({3}))), (std::vector<int32_t>{44}));
  EXPECT_EQ(values<uint32_t>(lax::sub(arr<uint32_t>({0}), arr<uint32_t>({1}))), (std::vector<uint32_t>{UINT32_MAX}));
  EXPECT_EQ(values<uint32_t>(lax::neg(arr<uint32_t>({1}))), (std::vector<uint32_t>{UINT32_MAX}));
  EXPECT_EQ(values<int32_t>(lax::integer_pow(i32({3, 2, -2, 5}), 31)),
            (std::vector<int32_t>{1264544299, kMin, kMin, -2128439731}));
  EXPECT_EQ(values<int64_t>(lax::integer_pow(arr<int64_t>({3}), 40)), (std::vector<int64_t>{-6289078614652622815LL}));
  EXPECT_EQ(values<int32_t>(lax::bitwise_not(i32({0, -1, 5}))), (std::vector<int32_t>{-1, 0, -6}));
  EXPECT_EQ(values<int32_t>(lax::sign(arr<uint8_t>({0, 7}))), (std::vector<int32_t>{0, 1}));
}

// ---- floating special values ----

TEST(ElementwiseFloats, MaxMinPropagateNaN) {
  EXPECT_TRUE(exactly(lax::max(f32({kNaN, 1, 2, -0.0}), f32({1, kNaN, 3, -1})), {kNaN, kNaN, 3, -0.0}));
  EXPECT_TRUE(exactly(lax::min(f64({kNaN, 1, 2}), f64({1, kNaN, 3})), {kNaN, kNaN, 2}));
  // Complex numbers order lexicographically.
  Array a(std::vector<complex64_t>{{1, 2}, {2, 0}, {kNaN, 0}});
  Array b(std::vector<complex64_t>{{1, 3}, {1, 9}, {5, 5}});
  auto mx = lax::max(a, b).to_vector<complex64_t>();
  EXPECT_EQ(mx[0], complex64_t(1, 3));
  EXPECT_EQ(mx[1], complex64_t(2, 0));
  EXPECT_TRUE(std::isnan(mx[2].real()));
  auto mn = lax::min(a, b).to_vector<complex64_t>();
  EXPECT_EQ(mn[0], complex64_t(1, 2));
  EXPECT_EQ(mn[1], complex64_t(1, 9));
  EXPECT_EQ(values<int32_t>(lax::max(Array{true, false}, Array{false, false})), (std::vector<int32_t>{1, 0}));
}

// Max and min of floats are IEEE 754-2019 maximum and minimum, as JAX's (XLA's): +0 is
// above -0 whatever the operands' order, elementwise and in reductions, eager and jitted
// alike. JAX 0.4 gives jnp.maximum(-0., 0.) = jnp.maximum(0., -0.) = 0.0, jnp.minimum of
// either = -0.0, jnp.max([-0., 0.]) = jnp.max([0., -0.]) = 0.0 (NumPy: np.maximum(0., -0.)
// = -0.0, the second of equal values). Long operands reach the vector loops, with the
// odd zero at every lane position.
TEST(ElementwiseFloats, MaxMinTakeIEEESignedZerosAsJax) {
  auto bits_of = [](const Array& x) {
    std::vector<double> v = x.astype(DType::Float64).to_vector<double>();
    std::vector<int> signs;
    for (double e : v) signs.push_back(e == 0 ? (std::signbit(e) ? -1 : 1) : 2);
    return signs;
  };
  auto jit_max = jx::jit([](const Array& a, const Array& b) { return lax::max(a, b); });
  auto jit_min = jx::jit([](const Array& a, const Array& b) { return lax::min(a, b); });
  const cpu::VectorIsa before = cpu::vector_isa();
  for (auto isa : {cpu::VectorIsa::Scalar, cpu::VectorIsa::Avx2, cpu::VectorIsa::Avx512})
  for (DType d : {DType::Float32, DType::Float64}) {
    if (isa > cpu::best_vector_isa()) continue;
    cpu::set_vector_isa(isa);  // eager's run loops in each ISA's vectors (block_extreme.inc)
    SCOPED_TRACE(std::string(dtype_name(d)) + " " + cpu::vector_isa_name(isa));
    const int64_t n = 1000;
    std::vector<double> a(n), b(n);
    for (int64_t i = 0; i < n; ++i) a[i] = (i % 3 == 0) ? -0.0 : 0.0, b[i] = (i % 3 == 0) ? 0.0 : -0.0;
    Array x = Array(a).astype(d), y = Array(b).astype(d);
    for (const Array& m : {lax::max(x, y), lax::max(y, x), jit_max(x, y), jit_max(y, x)})
      EXPECT_EQ(bits_of(m), std::vector<int>(n, 1));
    for (const Array& m : {lax::min(x, y), lax::min(y, x), jit_min(x, y), jit_min(y, x)})
      EXPECT_EQ(bits_of(m), std::vector<int>(n, -1));
    // Reductions: one +0 among -0s (max) or one -0 among +0s (min) at each position.
    auto jit_rmax = jx::jit([](const Array& v) { return lax::reduce_max(v, {1}); });
    auto jit_rmin = jx::jit([](const Array& v) { return lax::reduce_min(v, {1}); });
    for (int64_t len : {2, 7, 33, 300}) {
      std::vector<double> minus(static_cast<size_t>(len * len), -0.0), plus(static_cast<size_t>(len * len), 0.0);
      for (int64_t r = 0; r < len; ++r) minus[r * len + r] = 0.0, plus[r * len + r] = -0.0;
      Array mx = Array(minus, {len, len}).astype(d), mn = Array(plus, {len, len}).astype(d);
      EXPECT_EQ(bits_of(lax::reduce_max(mx, {1})), std::vector<int>(len, 1)) << len;
      EXPECT_EQ(bits_of(jit_rmax(mx)), std::vector<int>(len, 1)) << len;
      EXPECT_EQ(bits_of(lax::reduce_max(mx, {0, 1})), std::vector<int>{1}) << len;
      EXPECT_EQ(bits_of(lax::reduce_min(mn, {1})), std::vector<int>(len, -1)) << len;
      EXPECT_EQ(bits_of(jit_rmin(mn)), std::vector<int>(len, -1)) << len;
      EXPECT_EQ(bits_of(lax::reduce_min(mn, {0, 1})), std::vector<int>{-1}) << len;
    }
    // Running extremes and clamp (min(max(x, lo), hi)).
    EXPECT_EQ(bits_of(lax::cummax(Array(std::vector<double>{-0.0, 0.0, -0.0}).astype(d), 0)), (std::vector<int>{-1, 1, 1}));
    EXPECT_EQ(bits_of(lax::cummin(Array(std::vector<double>{0.0, -0.0, 0.0}).astype(d), 0)), (std::vector<int>{1, -1, -1}));
    EXPECT_EQ(bits_of(lax::clamp(Array(0.0).astype(d), Array(-0.0).astype(d), Array(1.0).astype(d))), std::vector<int>{1});
    // NaN still wins, in either place, at any position of a long run (whose vector loop
    // keeps NaN apart); infinities are values.
    EXPECT_TRUE(std::isnan(lax::reduce_max(Array(std::vector<double>{-0.0, kNaN, 0.0}).astype(d), {0}).item<double>()));
    EXPECT_TRUE(std::isnan(lax::max(Array(-0.0).astype(d), Array(kNaN).astype(d)).item<double>()));
    for (int64_t at : {0, 150, 299, 300}) {
      std::vector<double> run(301);
      for (int64_t i = 0; i < 301; ++i) run[i] = std::sin(double(i));
      run[at] = kNaN;
      EXPECT_TRUE(std::isnan(lax::reduce_max(Array(run).astype(d), {0}).item<double>())) << at;
      EXPECT_TRUE(std::isnan(lax::reduce_min(Array(run).astype(d), {0}).item<double>())) << at;
      run[at] = kInf;
      run[(at + 7) % 301] = -kInf;
      EXPECT_EQ(lax::reduce_max(Array(run).astype(d), {0}).item<double>(), kInf) << at;
      EXPECT_EQ(lax::reduce_min(Array(run).astype(d), {0}).item<double>(), -kInf) << at;
    }
  }
  cpu::set_vector_isa(before);
}

TEST(ElementwiseFloats, RoundingMethodsAndSignedZeros) {
  Array x = f32({0.5, 1.5, 2.5, -0.5, -2.5, kInf, -kInf, kNaN, -0.0, 0.49999997f});
  EXPECT_TRUE(exactly(lax::round(x, lax::RoundingMethod::AwayFromZero), {1, 2, 3, -1, -3, kInf, -kInf, kNaN, -0.0, 0}));
  Array even = lax::round(x, lax::RoundingMethod::ToNearestEven);
  EXPECT_TRUE(exactly(even, {0, 2, 2, -0.0, -2, kInf, -kInf, kNaN, -0.0, 0}));
  EXPECT_TRUE(std::signbit(values<float>(even)[3]));
  EXPECT_TRUE(exactly(lax::floor(f64({-0.5, 0.5, -kInf})), {-1, 0, -kInf}));
  EXPECT_TRUE(exactly(lax::ceil(f64({-0.5, 0.5, kNaN})), {-0.0, 1, kNaN}));
  auto s = values<float>(lax::sign(f32({-0.0, 0.0, kNaN, -3, kInf})));
  EXPECT_TRUE(std::signbit(s[0]) && s[0] == 0);
  EXPECT_TRUE(!std::signbit(s[1]) && s[1] == 0);
  EXPECT_TRUE(std::isnan(s[2]));
  EXPECT_EQ(s[3], -1);
  EXPECT_EQ(s[4], 1);
  auto cs = lax::sign(Array(std::vector<complex64_t>{{0, 0}, {3, 4}})).to_vector<complex64_t>();
  EXPECT_EQ(cs[0], complex64_t(0, 0));
  EXPECT_NEAR(cs[1].real(), 0.6, 1e-7);
  EXPECT_NEAR(cs[1].imag(), 0.8, 1e-7);
}

struct Special {
  const char* op;
  std::function<Array(const Array&)> fn;
  std::vector<double> in, out;
};

// Special inputs of each function, checked in float32 and float64 under every vector
// instruction set (libmvec's special-case paths differ from its main paths).
TEST(ElementwiseFloats, SpecialValuesUnderEveryInstructionSet) {
  const double kPi2 = 1.5707963267948966;
  const double kSub = 1e-40;  // float32 subnormal
  const std::vector<Special> table = {
      {"exp", lax::exp, {-kInf, kInf, kNaN, 0, kSub, -1000}, {0, kInf, kNaN, 1, 1, 0}},
      {"exp2", lax::exp2, {-kInf, kInf, 0, 10}, {0, kInf, 1, 1024}},
      {"expm1", lax::expm1, {-kInf, kInf, -0.0, kSub}, {-1, kInf, -0.0, kSub}},
      {"log", lax::log, {0, -1, kInf, 1, kNaN}, {-kInf, kNaN, kInf, 0, kNaN}},
      {"log1p", lax::log1p, {-1, -2, kInf, -0.0, kSub}, {-kInf, kNaN, kInf, -0.0, kSub}},
      {"sqrt", lax::sqrt, {-0.0, 0, -1, kInf, std::ldexp(1.0, -140)}, {-0.0, 0, kNaN, kInf, std::ldexp(1.0, -70)}},
      {"rsqrt", lax::rsqrt, {0, kInf, 4, -1}, {kInf, 0, 0.5, kNaN}},
      {"cbrt", lax::cbrt, {-8, kInf, -0.0, kNaN}, {-2, kInf, -0.0, kNaN}},
      {"sin", lax::sin, {kInf, -0.0, kNaN, kSub}, {kNaN, -0.0, kNaN, kSub}},
      {"cos", lax::cos, {-kInf, 0, kNaN}, {kNaN, 1, kNaN}},
      {"tan", lax::tan, {kInf, -0.0}, {kNaN, -0.0}},
      {"asin", lax::asin, {1, -1, 2, -0.0}, {kPi2, -kPi2, kNaN, -0.0}},
      {"acos", lax::acos, {1, -2}, {0, kNaN}},
      {"atan", lax::atan, {kInf, -kInf, -0.0}, {kPi2, -kPi2, -0.0}},
      {"sinh", lax::sinh, {kInf, -kInf, -0.0, 1000}, {kInf, -kInf, -0.0, kInf}},
      {"cosh", lax::cosh, {kInf, -kInf, 0}, {kInf, kInf, 1}},
      {"tanh", lax::tanh, {kInf, -kInf, -0.0, kNaN}, {1, -1, -0.0, kNaN}},
      {"asinh", lax::asinh, {kInf, -kInf, -0.0}, {kInf, -kInf, -0.0}},
      {"acosh", lax::acosh, {1, 0.5, kInf}, {0, kNaN, kInf}},
      {"atanh", lax::atanh, {1, -1, 2, -0.0}, {kInf, -kInf, kNaN, -0.0}},
      {"logistic", lax::logistic, {kInf, -kInf, kNaN, 0}, {1, 0, kNaN, 0.5}},
      {"erf", lax::erf, {kInf, -kInf, -0.0, kNaN}, {1, -1, -0.0, kNaN}},
      {"erfc", lax::erfc, {kInf, -kInf, 0}, {0, 2, 1}},
      {"erf_inv", lax::erf_inv, {1, -1, 1.5, -0.0, kNaN}, {kInf, -kInf, kNaN, -0.0, kNaN}},
      {"lgamma", lax::lgamma, {0, -1, 1, 2, kInf, kNaN}, {kInf, kInf, 0, 0, kInf, kNaN}},
      {"digamma", lax::digamma, {0, -1, -2, -kInf, kInf, kNaN}, {kNaN, kNaN, kNaN, kNaN, kInf, kNaN}},
  };
  auto before = cpu::vector_isa();
  for (auto isa : {cpu::VectorIsa::Scalar, cpu::VectorIsa::Avx2, cpu::VectorIsa::Avx512}) {
    if (isa > cpu::best_vector_isa()) continue;
    cpu::set_vector_isa(isa);
    for (const Special& s : table) {
      for (DType d : {DType::Float32, DType::Float64}) {
        SCOPED_TRACE(std::string(s.op) + " " + std::string(dtype_name(d)) + " " + cpu::vector_isa_name(isa));
        Array x = lax::convert_element_type(f64(s.in), d);
        Array y = s.fn(x);
        Array expected = lax::convert_element_type(f64(s.out), d);
        EXPECT_ALLCLOSE(y, expected, 1e-6, 0);
        // Signed zeros must keep their sign.
        auto got = values<double>(y);
        for (size_t i = 0; i < s.out.size(); ++i) {
          if (s.out[i] == 0 && !std::isnan(got[i])) {
            EXPECT_EQ(std::signbit(got[i]), std::signbit(s.out[i])) << "element " << i;
          }
        }
      }
    }
  }
  cpu::set_vector_isa(before);
}

TEST(ElementwiseFloats, PowSpecialCases) {
  auto before = cpu::vector_isa();
  for (auto isa : {cpu::VectorIsa::Scalar, cpu::VectorIsa::Avx2, cpu::VectorIsa::Avx512}) {
    if (isa > cpu::best_vector_isa()) continue;
    cpu::set_vector_isa(isa);
    SCOPED_TRACE(cpu::vector_isa_name(isa));
    EXPECT_TRUE(exactly(lax::pow(f32({-8, 0, kNaN, 1, 2, -2, 0}), f32({1.0 / 3, -1, 0, kNaN, -1, 3, 0})),
                        {kNaN, kInf, 1, 1, 0.5, -8, 1}));
    EXPECT_TRUE(exactly(lax::atan2(f64({0.0, -0.0, 1, 0}), f64({-0.0, -0.0, kInf, 0})),
                        {std::numbers::pi, -std::numbers::pi, 0, 0}));
  }
  cpu::set_vector_isa(before);
  // Integer exponent arrays: exact repeated squaring.
  EXPECT_TRUE(exactly(lax::pow(f32({2, 2, 2, -2, 0}), i32({3, -2, 0, 3, -1})), {8, 0.25, 1, -8, kInf}));
  EXPECT_TRUE(exactly(lax::pow(f64({2}), arr<int64_t>({1023})), {std::ldexp(1.0, 1023)}));
  auto c = lax::pow(Array(std::vector<complex64_t>{{1, 1}}), i32({2})).to_vector<complex64_t>();
  EXPECT_EQ(c[0], complex64_t(0, 2));
  // Complex zero base (as XLA): 0^0 = 1, 0^(positive real) = 0, else NaN.
  Array zero(std::vector<complex128_t>{{0, 0}, {0, 0}, {0, 0}});
  auto z = lax::pow(zero, Array(std::vector<complex128_t>{{0, 0}, {2, 0}, {0, 1}})).to_vector<complex128_t>();
  EXPECT_EQ(z[0], complex128_t(1, 0));
  EXPECT_EQ(z[1], complex128_t(0, 0));
  EXPECT_TRUE(std::isnan(z[2].real()) && std::isnan(z[2].imag()));
}

TEST(ElementwiseFloats, IntegerPow) {
  EXPECT_TRUE(exactly(lax::integer_pow(f32({2, -3, 0.5f, kNaN}), 3), {8, -27, 0.125, kNaN}));
  EXPECT_TRUE(exactly(lax::integer_pow(f32({2, 4, 0}), -2), {0.25, 0.0625, kInf}));
  EXPECT_TRUE(exactly(lax::integer_pow(f64({kNaN, kInf, 0}), 0), {1, 1, 1}));
  EXPECT_TRUE(exactly(lax::integer_pow(f64({2}), 1000), {std::ldexp(1.0, 1000)}));
  EXPECT_TRUE(exactly(lax::integer_pow(lax::convert_element_type(f32({3, 0.5f}), DType::BFloat16), 2), {9, 0.25}));
  auto c = lax::integer_pow(Array(std::vector<complex128_t>{{1, 1}}), 2).to_vector<complex128_t>();
  EXPECT_EQ(c[0], complex128_t(0, 2));
  // Larger than one block (the kernel squares a block at a time).
  std::vector<float> big(1000, 1.5f);
  EXPECT_TRUE(exactly(lax::integer_pow(Array(big), 5), std::vector<double>(1000, 7.59375)));
}

TEST(ElementwiseFloats, NextAfterStepsTheDtypesOwnGrid) {
  Array h0 = lax::convert_element_type(f32({0, 1, 1, -0.0, 65504, kNaN, 1}), DType::Float16);
  Array h1 = lax::convert_element_type(f32({1, 2, 0, -1, kInf, 1, 1}), DType::Float16);
  EXPECT_TRUE(exactly(lax::nextafter(h0, h1), {std::ldexp(1.0, -24), 1 + std::ldexp(1.0, -10),
                                               1 - std::ldexp(1.0, -11), -std::ldexp(1.0, -24), kInf, kNaN, 1}));
  EXPECT_TRUE(std::signbit(values<float>(lax::nextafter(h0, h1))[3]));
  Array b0 = lax::convert_element_type(f32({0, 1, 1}), DType::BFloat16);
  Array b1 = lax::convert_element_type(f32({1, 2, 0}), DType::BFloat16);
  EXPECT_TRUE(exactly(lax::nextafter(b0, b1), {std::ldexp(1.0, -133), 1.0078125, 0.99609375}));
  EXPECT_TRUE(exactly(lax::nextafter(f32({0, 1}), f32({1, 2})), {std::ldexp(1.0, -149), 1 + std::ldexp(1.0, -23)}));
}

TEST(ElementwiseFloats, ComplexParts) {
  Array z(std::vector<complex64_t>{{3, 4}, {-1, 0}});
  Array a = lax::abs(z);
  EXPECT_EQ(a.dtype(), DType::Float32);
  EXPECT_TRUE(exactly(a, {5, 1}));
  EXPECT_TRUE(exactly(lax::real(z), {3, -1}));
  EXPECT_TRUE(exactly(lax::imag(z), {4, 0}));
  EXPECT_EQ(lax::imag(Array(std::vector<complex128_t>{{1, 2}})).dtype(), DType::Float64);
  auto c = lax::conj(z).to_vector<complex64_t>();
  EXPECT_EQ(c[0], complex64_t(3, -4));
  Array cr = lax::conj(f32({2}));
  EXPECT_EQ(cr.dtype(), DType::Complex64);
  EXPECT_TRUE(std::signbit(cr.to_vector<complex64_t>()[0].imag()));
  EXPECT_EQ(lax::conj(f64({2})).dtype(), DType::Complex128);
  auto at = lax::atan2(Array(std::vector<complex128_t>{{1, 0}}), Array(std::vector<complex128_t>{{1, 0}}))
                .to_vector<complex128_t>();
  EXPECT_NEAR(at[0].real(), std::numbers::pi / 4, 1e-15);
  EXPECT_NEAR(at[0].imag(), 0, 1e-15);
  EXPECT_TRUE(exactly(lax::is_finite(f32({1, kInf, -kInf, kNaN, 1e-40})), {1, 0, 0, 0, 1}));
}

// ---- libmvec accuracy ----

// Distance in units in the last place between two finite values of one type.
template <class T>
int64_t ulp_distance(T a, T b) {
  using I = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  auto ordered = [](T v) {
    I i = std::bit_cast<I>(v);
    return i < 0 ? static_cast<int64_t>(std::numeric_limits<I>::min()) - static_cast<int64_t>(i) : static_cast<int64_t>(i);
  };
  int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

template <class T>
std::vector<T> sample_inputs(double lo, double hi, std::mt19937_64& gen) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  std::vector<T> x;
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int i = 0; i < 1500; ++i) x.push_back(static_cast<T>(dist(gen)));
  for (int i = 0; i < 500; ++i) x.push_back(std::bit_cast<T>(static_cast<Bits>(gen())));  // anything at all
  const T lim = std::numeric_limits<T>::max(), tiny = std::numeric_limits<T>::denorm_min();
  for (T v : {T(0), -T(0), T(1), T(-1), lim, -lim, tiny, -tiny, std::numeric_limits<T>::min(),
              std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
              std::numeric_limits<T>::quiet_NaN(), T(0.5), T(-0.5), T(100), T(-100)})
    x.push_back(v);
  return x;
}

// Checks out[i] against ref[i] within max_ulp, NaN for NaN and infinities exactly.
template <class T>
void expect_close_ulps(const std::vector<T>& in, const std::vector<T>& out, const std::vector<T>& ref, int64_t max_ulp,
                       const std::string& what) {
  int bad = 0;
  int64_t worst = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    bool ok;
    if (std::isnan(ref[i])) ok = std::isnan(out[i]);
    else if (std::isinf(ref[i])) ok = out[i] == ref[i];
    else if (std::isnan(out[i]) || std::isinf(out[i])) ok = false;
    else {
      int64_t d = ulp_distance(out[i], ref[i]);
      worst = std::max(worst, d);
      ok = d <= max_ulp;
    }
    if (!ok && bad++ < 5)
      ADD_FAILURE() << what << ": input " << in[i] << " gives " << out[i] << ", expected " << ref[i];
  }
  EXPECT_EQ(bad, 0) << what << " (worst finite error " << worst << " ulp)";
}

struct VecCase {
  cpu::VecOp op;
  const char* name;
  double (*ref)(double);
  long double (*ref_long)(long double);
  double lo, hi;
};

TEST(ElementwiseLibmvec, UnaryMatchesLibmWithinFourUlps) {
  const std::vector<VecCase> cases = {
      {cpu::VecOp::Exp, "exp", ::exp, ::expl, -100, 100},
      {cpu::VecOp::Exp2, "exp2", ::exp2, ::exp2l, -150, 150},
      {cpu::VecOp::Expm1, "expm1", ::expm1, ::expm1l, -20, 20},
      {cpu::VecOp::Log, "log", ::log, ::logl, 0, 1e6},
      {cpu::VecOp::Log1p, "log1p", ::log1p, ::log1pl, -1, 100},
      {cpu::VecOp::Sin, "sin", ::sin, ::sinl, -1e4, 1e4},
      {cpu::VecOp::Cos, "cos", ::cos, ::cosl, -1e4, 1e4},
      {cpu::VecOp::Tan, "tan", ::tan, ::tanl, -10, 10},
      {cpu::VecOp::Asin, "asin", ::asin, ::asinl, -1, 1},
      {cpu::VecOp::Acos, "acos", ::acos, ::acosl, -1, 1},
      {cpu::VecOp::Atan, "atan", ::atan, ::atanl, -50, 50},
      {cpu::VecOp::Sinh, "sinh", ::sinh, ::sinhl, -90, 90},
      {cpu::VecOp::Cosh, "cosh", ::cosh, ::coshl, -90, 90},
      {cpu::VecOp::Tanh, "tanh", ::tanh, ::tanhl, -20, 20},
      {cpu::VecOp::Asinh, "asinh", ::asinh, ::asinhl, -1e4, 1e4},
      {cpu::VecOp::Acosh, "acosh", ::acosh, ::acoshl, 1, 1e4},
      {cpu::VecOp::Atanh, "atanh", ::atanh, ::atanhl, -1, 1},
      {cpu::VecOp::Cbrt, "cbrt", ::cbrt, ::cbrtl, -1e6, 1e6},
      {cpu::VecOp::Erf, "erf", ::erf, ::erfl, -6, 6},
      {cpu::VecOp::Erfc, "erfc", ::erfc, ::erfcl, -6, 12},
  };
  ASSERT_EQ(cases.size(), static_cast<size_t>(cpu::VecOp::kCount));
  auto before = cpu::vector_isa();
  std::mt19937_64 gen(42);
  for (auto isa : {cpu::VectorIsa::Scalar, cpu::VectorIsa::Avx2, cpu::VectorIsa::Avx512}) {
    if (isa > cpu::best_vector_isa()) continue;
    cpu::set_vector_isa(isa);
    for (const VecCase& c : cases) {
      std::string what = std::string(c.name) + " " + cpu::vector_isa_name(isa);
      std::vector<float> xf = sample_inputs<float>(c.lo, c.hi, gen), yf(xf.size()), rf(xf.size());
      cpu::vec_unary(c.op, xf.data(), yf.data(), static_cast<int64_t>(xf.size()));
      for (size_t i = 0; i < xf.size(); ++i) rf[i] = static_cast<float>(c.ref(xf[i]));
      expect_close_ulps(xf, yf, rf, 4, what + " float32");
      std::vector<double> xd = sample_inputs<double>(c.lo, c.hi, gen), yd(xd.size()), rd(xd.size());
      cpu::vec_unary(c.op, xd.data(), yd.data(), static_cast<int64_t>(xd.size()));
      for (size_t i = 0; i < xd.size(); ++i) rd[i] = static_cast<double>(c.ref_long(xd[i]));
      expect_close_ulps(xd, yd, rd, 4, what + " float64");
      // In place, and lengths that leave a partial last vector.
      std::vector<float> inplace(xf.begin(), xf.begin() + 37);
      cpu::vec_unary(c.op, inplace.data(), inplace.data(), 37);
      for (size_t i = 0; i < 37; ++i)
        EXPECT_TRUE(std::bit_cast<uint32_t>(inplace[i]) == std::bit_cast<uint32_t>(yf[i]) ||
                    (std::isnan(inplace[i]) && std::isnan(yf[i])))
            << what << " in place, element " << i;
    }
  }
  cpu::set_vector_isa(before);
}

TEST(ElementwiseLibmvec, BinaryMatchesLibmWithinFourUlps) {
  auto before = cpu::vector_isa();
  std::mt19937_64 gen(7);
  for (auto isa : {cpu::VectorIsa::Scalar, cpu::VectorIsa::Avx2, cpu::VectorIsa::Avx512}) {
    if (isa > cpu::best_vector_isa()) continue;
    cpu::set_vector_isa(isa);
    for (auto op : {cpu::VecOp2::Atan2, cpu::VecOp2::Pow}) {
      std::string what = std::string(op == cpu::VecOp2::Pow ? "pow " : "atan2 ") + cpu::vector_isa_name(isa);
      double lo = op == cpu::VecOp2::Pow ? 0 : -10, hi = 10;
      std::vector<float> af = sample_inputs<float>(lo, hi, gen), bf = sample_inputs<float>(-10, 10, gen);
      std::vector<float> yf(af.size()), rf(af.size());
      cpu::vec_binary(op, af.data(), bf.data(), yf.data(), static_cast<int64_t>(af.size()));
      for (size_t i = 0; i < af.size(); ++i)
        rf[i] = static_cast<float>(op == cpu::VecOp2::Pow ? std::pow(double(af[i]), double(bf[i]))
                                                          : std::atan2(double(af[i]), double(bf[i])));
      expect_close_ulps(af, yf, rf, 4, what + " float32");
      std::vector<double> ad = sample_inputs<double>(lo, hi, gen), bd = sample_inputs<double>(-10, 10, gen);
      std::vector<double> yd(ad.size()), rd(ad.size());
      cpu::vec_binary(op, ad.data(), bd.data(), yd.data(), static_cast<int64_t>(ad.size()));
      for (size_t i = 0; i < ad.size(); ++i)
        rd[i] = static_cast<double>(op == cpu::VecOp2::Pow ? std::pow((long double)ad[i], (long double)bd[i])
                                                           : std::atan2((long double)ad[i], (long double)bd[i]));
      expect_close_ulps(ad, yd, rd, 4, what + " float64");
    }
  }
  cpu::set_vector_isa(before);
}

TEST(ElementwiseLibmvec, ErfInvAndDigammaAreAccurate) {
  for (double x : {0.1, 0.5, 0.9, 0.99, 0.999999, 1 - 1e-15, 1e-300, -0.7}) {
    EXPECT_NEAR(std::erf(cpu::erf_inv(x)), x, 4e-16 * std::max(1.0, std::fabs(x))) << x;
  }
  EXPECT_NEAR(cpu::erf_inv(1 - 1e-15), 5.675915739744712, 1e-13);  // SciPy's erfinv
  EXPECT_NEAR(cpu::erf_inv(0.999999), 3.458910737275499, 1e-14);
  // psi(1) = -EulerGamma, psi(1/2) = -EulerGamma - 2 ln 2, psi(-1/2) = psi(1/2) + 2.
  const double g = 0.57721566490153286061;
  EXPECT_NEAR(cpu::digamma(1.0), -g, 4e-15);
  EXPECT_NEAR(cpu::digamma(0.5), -g - 2 * std::log(2.0), 4e-15);
  EXPECT_NEAR(cpu::digamma(-0.5), -g - 2 * std::log(2.0) + 2, 1e-14);
  EXPECT_NEAR(cpu::digamma(1e6), std::log(1e6) - 0.5e-6, 1e-12);
}

// ---- select_n, clamp, conversions ----

TEST(ElementwiseSelect, BoolAndIntegerPredicates) {
  Array a = f32({1, 2, 3, 4, 5}), b = f32({10, 20, 30, 40, 50}), c = f32({-1, -2, -3, -4, -5});
  EXPECT_TRUE(exactly(lax::select_n(Array{true, false, true, false, false}, {a, b}), {10, 2, 30, 4, 5}));
  // Out-of-range integer predicates clamp to the first or last case.
  EXPECT_TRUE(exactly(lax::select_n(i32({0, 1, 2, 5, -1}), {a, b, c}), {1, 20, -3, -4, 5}));
  EXPECT_TRUE(exactly(lax::select_n(arr<uint8_t>({0, 1, 9, 0, 1}), {a, b}), {1, 20, 30, 4, 50}));
  EXPECT_TRUE(exactly(lax::select_n(i32({0, 0, 0, 0, 0}), {a}), {1, 2, 3, 4, 5}));
  // A scalar predicate picks one whole case.
  EXPECT_TRUE(exactly(lax::select_n(Array(true), {a, b}), {10, 20, 30, 40, 50}));
  EXPECT_TRUE(exactly(lax::select_n(detail::scalar<int32_t>(2), {a, b, c}), {-1, -2, -3, -4, -5}));
  // Strided predicate and cases.
  Array rw = detail::make_view(Array{true, false, true, false, false}, Aval{{5}, DType::Bool}, {-1}, 4);
  Array ra = detail::make_view(a, a.aval(), {-1}, 4);
  EXPECT_TRUE(exactly(lax::select_n(rw, {ra, b}), {5, 4, 30, 2, 50}));
  Array bw = detail::make_view(Array{true}, Aval{{5}, DType::Bool}, {0}, 0);
  EXPECT_TRUE(exactly(lax::select_n(bw, {a, b}), {10, 20, 30, 40, 50}));
  // Element widths 1 to 16 bytes move unchanged.
  auto z = lax::select_n(Array{false, true},
                         {Array(std::vector<complex128_t>{{1, 2}, {3, 4}}), Array(std::vector<complex128_t>{{5, 6}, {7, 8}})})
               .to_vector<complex128_t>();
  EXPECT_EQ(z[0], complex128_t(1, 2));
  EXPECT_EQ(z[1], complex128_t(7, 8));
  EXPECT_EQ(values<int32_t>(lax::select_n(Array{true, false}, {Array{false, false}, Array{true, true}})),
            (std::vector<int32_t>{1, 0}));
  // Weak only when every case is weak.
  EXPECT_TRUE(lax::select_n(Array(true), {Array(1.0f), Array(2.0f)}).weak_type());
  EXPECT_FALSE(lax::select_n(Array(true), {detail::scalar(1.0f), Array(2.0f)}).weak_type());
}

TEST(ElementwiseSelect, ManyCasesLargeAndParallel) {
  const int64_t n = 100000;
  std::vector<int32_t> which(n);
  std::vector<float> c0(n), c1(n), c2(n), c3(n), expected(n);
  for (int64_t i = 0; i < n; ++i) {
    which[i] = static_cast<int32_t>(i % 4);
    c0[i] = i, c1[i] = -i, c2[i] = 2 * i, c3[i] = 0.5f * i;
    float cs[] = {c0[i], c1[i], c2[i], c3[i]};
    expected[i] = cs[i % 4];
  }
  Array out = lax::select_n(Array(which), {Array(c0), Array(c1), Array(c2), Array(c3)});
  EXPECT_EQ(values<float>(out), expected);
}

TEST(ElementwiseClamp, ScalarAndArrayBounds) {
  EXPECT_TRUE(exactly(lax::clamp(detail::scalar(0.0f), f32({kNaN, -1, 0.5, 2}), detail::scalar(1.0f)), {kNaN, 0, 0.5, 1}));
  EXPECT_EQ(values<int32_t>(lax::clamp(i32({0, 5, -3}), i32({-1, 10, 0}), i32({2, 6, -1}))),
            (std::vector<int32_t>{0, 6, -1}));
  EXPECT_EQ(values<int32_t>(lax::clamp(detail::scalar<int32_t>(0), i32({-4, 4}), i32({3, 3}))),
            (std::vector<int32_t>{0, 3}));
  Array x = f64({1, 2, 3, 4});
  Array rx = detail::make_view(x, x.aval(), {-1}, 3);
  EXPECT_TRUE(exactly(lax::clamp(detail::scalar(1.5), rx, detail::scalar(3.5)), {3.5, 3, 2, 1.5}));
  EXPECT_EQ(lax::clamp(detail::scalar(1.5), detail::scalar(9.0), detail::scalar(3.5)).item<double>(), 3.5);
  EXPECT_TRUE(lax::clamp(Array(0.0), Array(2.0), Array(1.0)).weak_type());
}

TEST(ElementwiseConvert, SaturatesAndKeepsNaNDefined) {
  Array x = f32({kNaN, kInf, -kInf, 1e10, -1e10, 3.7, -3.7});
  EXPECT_EQ(values<int32_t>(lax::convert_element_type(x, DType::Int32)),
            (std::vector<int32_t>{0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 3, -3}));
  EXPECT_EQ(values<int32_t>(lax::convert_element_type(x, DType::UInt8)), (std::vector<int32_t>{0, 255, 0, 255, 0, 3, 0}));
  EXPECT_EQ(values<uint32_t>(lax::convert_element_type(f64({-1, 5e9}), DType::UInt32)),
            (std::vector<uint32_t>{0, UINT32_MAX}));
  EXPECT_EQ(values<int32_t>(lax::convert_element_type(i32({300, -1}), DType::UInt8)), (std::vector<int32_t>{44, 255}));
  EXPECT_TRUE(exactly(lax::convert_element_type(f64({1e6, -1e6}), DType::Float16), {kInf, -kInf}));
  // bfloat16 rounds to nearest even.
  EXPECT_TRUE(exactly(lax::convert_element_type(f32({1.00390625f, 1.01171875f}), DType::BFloat16), {1.0, 1.015625}));
  EXPECT_EQ(values<int32_t>(lax::convert_element_type(f32({kNaN, -0.0, 0.1f}), DType::Bool)),
            (std::vector<int32_t>{1, 0, 1}));
  EXPECT_TRUE(exactly(lax::convert_element_type(Array(std::vector<complex64_t>{{2, 5}}), DType::Float64), {2}));
}

TEST(ElementwiseConvert, WeakTypesAndNoOps) {
  Array x = f32({1, 2});
  Array same = lax::convert_element_type(x, DType::Float32);
  EXPECT_EQ(same.id(), x.id());  // nothing to do, nothing bound
  Array w = Array(2.5f);
  ASSERT_TRUE(w.weak_type());
  Array strong = lax::convert_element_type(w, DType::Float32);
  EXPECT_FALSE(strong.weak_type());
  EXPECT_EQ(strong.item<float>(), 2.5f);
  Array weak_out = find_primitive("convert_element_type")
                       ->eval(std::vector<Array>{x}, Params{{"new_dtype", DType::Float64}, {"weak_type", true}})[0];
  EXPECT_TRUE(weak_out.weak_type());
  EXPECT_EQ(weak_out.dtype(), DType::Float64);
}

TEST(ElementwiseBitcast, SameAndDifferentWidths) {
  Array x = f32({1.0f, -2.0f});
  EXPECT_EQ(values<int32_t>(lax::bitcast_convert_type(x, DType::Int32)), (std::vector<int32_t>{0x3f800000, -1073741824}));
  Array bytes = lax::bitcast_convert_type(x, DType::Int8);
  EXPECT_EQ(bytes.shape(), (Shape{2, 4}));
  EXPECT_EQ(values<int32_t>(bytes), (std::vector<int32_t>{0, 0, -128, 63, 0, 0, 0, -64}));
  Array back = lax::bitcast_convert_type(bytes, DType::Float32);
  EXPECT_EQ(back.shape(), (Shape{2}));
  EXPECT_TRUE(exactly(back, {1, -2}));
  Array u8 = arr<uint8_t>({0, 60, 0, 188});
  Array halves = lax::bitcast_convert_type(detail::make_view(u8, Aval{{2, 2}, DType::UInt8}, {2, 1}, 0), DType::Float16);
  EXPECT_EQ(halves.shape(), (Shape{2}));
  EXPECT_TRUE(exactly(halves, {1, -1}));
  Array words = lax::bitcast_convert_type(f64({1.0}), DType::UInt32);
  EXPECT_EQ(words.shape(), (Shape{1, 2}));
  EXPECT_EQ(values<uint32_t>(words), (std::vector<uint32_t>{0, 0x3ff00000}));
  // A strided operand, a 0-d one.
  Array rx = detail::make_view(x, x.aval(), {-1}, 1);
  EXPECT_EQ(values<int32_t>(lax::bitcast_convert_type(rx, DType::Int32)), (std::vector<int32_t>{-1073741824, 0x3f800000}));
  Array scalar_bytes = lax::bitcast_convert_type(detail::scalar(1.0f), DType::UInt8);
  EXPECT_EQ(scalar_bytes.shape(), (Shape{4}));
  EXPECT_EQ(values<int32_t>(scalar_bytes), (std::vector<int32_t>{0, 0, 128, 63}));
  EXPECT_EQ(values<int32_t>(lax::bitcast_convert_type(lax::convert_element_type(f32({1.0f}), DType::BFloat16), DType::Int16)),
            (std::vector<int32_t>{0x3f80}));
}

// ---- traits, weak types, errors ----

TEST(ElementwiseRules, Traits) {
  auto traits = [](const char* name) { return find_primitive(name)->traits(); };
  EXPECT_EQ(traits("add"), kElementwise | kLinear | kCommutative);
  EXPECT_EQ(traits("sub"), kElementwise | kLinear);
  EXPECT_EQ(traits("sin"), kElementwise);
  EXPECT_EQ(traits("eq"), kElementwise | kNotDifferentiable | kCommutative);
  EXPECT_EQ(traits("lt"), kElementwise | kNotDifferentiable);
  EXPECT_EQ(traits("floor"), kElementwise | kNotDifferentiable);
  EXPECT_TRUE(find_primitive("convert_element_type")->has(kLinear));
  EXPECT_TRUE(find_primitive("select_n")->has(kLinear));
  EXPECT_FALSE(find_primitive("select_n")->has(kElementwise));
  EXPECT_FALSE(find_primitive("bitcast_convert_type")->has(kElementwise));
}

TEST(ElementwiseRules, WeakTypes) {
  EXPECT_TRUE(lax::add(Array(1.0f), Array(2.0f)).weak_type());
  EXPECT_FALSE(lax::add(Array(1.0f), detail::scalar(2.0f)).weak_type());
  EXPECT_TRUE(lax::sin(Array(1.0f)).weak_type());
  EXPECT_FALSE(lax::lt(Array(1.0f), Array(2.0f)).weak_type());
  EXPECT_FALSE(lax::is_finite(Array(1.0f)).weak_type());
}

TEST(ElementwiseRules, ShapeAndDtypeErrors) {
  Array a = f32({1, 2, 3}), b = f32({1, 2, 3, 4}), n = i32({1, 2, 3});
  EXPECT_JX_ERROR(lax::add(a, b), "[add] operands must have the same shape", "f32[3]", "f32[4]");
  EXPECT_JX_ERROR(lax::add(a, n), "[add] operands must have the same dtype", "f32[3], i32[3]");
  EXPECT_JX_ERROR(lax::atan2(a, b), "[atan2]", "same shape");
  EXPECT_JX_ERROR(lax::eq(a, n), "[eq]", "same dtype");
  EXPECT_JX_ERROR(lax::sin(n), "[sin] operand must be floating or complex, got i32[3]");
  EXPECT_JX_ERROR(lax::erf(Array(std::vector<complex64_t>{{1, 0}})), "[erf] operand must be floating, got c64[1]");
  EXPECT_JX_ERROR(lax::floor(n), "[floor] operand must be floating");
  EXPECT_JX_ERROR(lax::bitwise_not(a), "[not] operand must be bool or integer, got f32[3]");
  EXPECT_JX_ERROR(lax::shift_left(a, a), "[shift_left] operands must be integer, got f32[3]");
  EXPECT_JX_ERROR(lax::add(Array{true}, Array{false}), "[add] operands must be integer, floating or complex");
  EXPECT_JX_ERROR(lax::abs(arr<uint32_t>({1})), "[abs] operand must be signed integer, floating or complex, got u32[1]");
  EXPECT_JX_ERROR(lax::real(a), "[real] operand must be complex, got f32[3]");
  EXPECT_JX_ERROR(lax::conj(lax::convert_element_type(a, DType::Float16)), "[conj] operand must be float32, float64 or complex");
  EXPECT_JX_ERROR(lax::lt(Array(std::vector<complex64_t>{{1, 0}}), Array(std::vector<complex64_t>{{1, 0}})),
                  "[lt] operands must be bool, integer or floating");
  EXPECT_JX_ERROR(lax::rem(Array(std::vector<complex64_t>{{1, 0}}), Array(std::vector<complex64_t>{{1, 0}})), "[rem]");
  EXPECT_JX_ERROR(lax::nextafter(n, n), "[nextafter] operands must be floating");
  EXPECT_JX_ERROR(lax::pow(n, n), "[pow] base must be floating or complex, got i32[3]");
  EXPECT_JX_ERROR(lax::pow(a, f64({1, 2, 3})), "[pow] exponent must have the base's dtype or an integer dtype");
  EXPECT_JX_ERROR(lax::pow(a, i32({1, 2})), "[pow] operands must have the same shape");
  EXPECT_JX_ERROR(lax::integer_pow(n, -1), "[integer_pow] integers cannot be raised to negative powers, got i32[3] ** -1");
  EXPECT_JX_ERROR(lax::sin(Array()), "null jx::Array");
}

TEST(ElementwiseRules, OperandCountAndParameterErrors) {
  Array a = f32({1, 2, 3});
  EXPECT_JX_ERROR(jx::bind(*find_primitive("add"), std::vector<Array>{a}), "[add] expected 2 operands, got 1");
  EXPECT_JX_ERROR(jx::bind(*find_primitive("sin"), std::vector<Array>{a, a}), "[sin] expected 1 operands, got 2");
  EXPECT_JX_ERROR(jx::bind(*find_primitive("clamp"), std::vector<Array>{a, a}), "[clamp] expected 3 operands, got 2");
  EXPECT_JX_ERROR(jx::bind(*find_primitive("round"), std::vector<Array>{a}, Params{{"rounding_method", int64_t{5}}}),
                  "[round] rounding_method must be 0 (away from zero) or 1 (to nearest even), got 5");
  EXPECT_JX_ERROR(jx::bind(*find_primitive("convert_element_type"), std::vector<Array>{a}), "new_dtype");
}

TEST(ElementwiseRules, SelectClampAndBitcastErrors) {
  Array a = f32({1, 2, 3}), b = f32({1, 2}), w = Array{true, false, true};
  EXPECT_JX_ERROR(lax::select_n(w, {}), "[select_n] expected a predicate and at least one case, got 1 operands");
  EXPECT_JX_ERROR(lax::select_n(a, {a, a}), "[select_n] which must be bool or an integer dtype, got f32[3]");
  EXPECT_JX_ERROR(lax::select_n(w, {a, a, a}), "[select_n] a bool predicate selects between at most 2 cases, got 3");
  EXPECT_JX_ERROR(lax::select_n(w, {a, b}), "[select_n] cases must have the same shape and dtype, got f32[3], f32[2]");
  EXPECT_JX_ERROR(lax::select_n(w, {a, i32({1, 2, 3})}), "[select_n] cases must have the same shape and dtype");
  EXPECT_JX_ERROR(lax::select_n(Array{true, false}, {a, a}),
                  "[select_n] which must be a scalar or have the cases' shape (3,), got bool[2]");
  EXPECT_JX_ERROR(lax::clamp(detail::scalar(0), a, detail::scalar(1.0f)), "[clamp] lo, x and hi must have the same dtype",
                  "i32[], f32[3], f32[]");
  EXPECT_JX_ERROR(lax::clamp(b, a, b), "[clamp] lo must be a scalar or have the shape of x (3,)");
  EXPECT_JX_ERROR(lax::clamp(a, a, b), "[clamp] hi must be a scalar or have the shape of x (3,)");
  EXPECT_JX_ERROR(lax::bitcast_convert_type(a, DType::Bool), "[bitcast_convert_type] does not support bool or complex");
  EXPECT_JX_ERROR(lax::bitcast_convert_type(Array(std::vector<complex64_t>{{1, 0}}), DType::Float64),
                  "[bitcast_convert_type] does not support bool or complex");
  EXPECT_JX_ERROR(lax::bitcast_convert_type(arr<int8_t>({1, 2, 3}), DType::Float32),
                  "[bitcast_convert_type] converting i8[3] to the wider float32 needs a last axis of size 4, got shape (3,)");
  EXPECT_JX_ERROR(lax::bitcast_convert_type(detail::scalar<int8_t>(1), DType::Int16), "needs a last axis of size 2");
}

}  // namespace
}  // namespace jx
