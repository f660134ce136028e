// jx::numpy elementwise math against NumPy fixtures (scripts/fixtures/numpy_core.py):
// one table row per function, every fixture row (dtypes x shapes, 0-d, size-0,
// broadcasting) checked for values and for JAX's result dtype.
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "test_util.h"

namespace jnp = jx::numpy;
using jx::Array;

namespace {

using Unary = std::function<Array(const Array&)>;
using Binary = std::function<Array(const Array&, const Array&)>;

const std::map<std::string, Unary>& unary_table() {
  static const std::map<std::string, Unary> t = {
      {"negative", jnp::negative}, {"positive", jnp::positive}, {"abs", jnp::abs},
      {"sign", jnp::sign},         {"exp", jnp::exp},           {"exp2", jnp::exp2},
      {"expm1", jnp::expm1},       {"log", jnp::log},           {"log2", jnp::log2},
      {"log10", jnp::log10},       {"log1p", jnp::log1p},       {"sqrt", jnp::sqrt},
      {"cbrt", jnp::cbrt},         {"square", jnp::square},     {"reciprocal", jnp::reciprocal},
      {"sin", jnp::sin},           {"cos", jnp::cos},           {"tan", jnp::tan},
      {"arcsin", jnp::arcsin},     {"arccos", jnp::arccos},     {"arctan", jnp::arctan},
      {"sinh", jnp::sinh},         {"cosh", jnp::cosh},         {"tanh", jnp::tanh},
      {"arcsinh", jnp::arcsinh},   {"arccosh", jnp::arccosh},   {"arctanh", jnp::arctanh},
      {"deg2rad", jnp::deg2rad},   {"rad2deg", jnp::rad2deg},   {"floor", jnp::floor},
      {"ceil", jnp::ceil},         {"trunc", jnp::trunc},       {"rint", jnp::rint},
      {"sinc", jnp::sinc},         {"isnan", jnp::isnan},       {"isinf", jnp::isinf},
      {"isfinite", jnp::isfinite}, {"signbit", jnp::signbit},   {"logical_not", jnp::logical_not},
      {"nan_to_num", [](const Array& x) { return jnp::nan_to_num(x); }},
  };
  return t;
}

const std::map<std::string, Binary>& binary_table() {
  static const std::map<std::string, Binary> t = {
      {"add", jnp::add},
      {"subtract", jnp::subtract},
      {"multiply", jnp::multiply},
      {"divide", jnp::divide},
      {"floor_divide", jnp::floor_divide},
      {"remainder", jnp::remainder},
      {"fmod", jnp::fmod},
      {"power", jnp::power},
      {"maximum", jnp::maximum},
      {"minimum", jnp::minimum},
      {"fmax", jnp::fmax},
      {"fmin", jnp::fmin},
      {"arctan2", jnp::arctan2},
      {"hypot", jnp::hypot},
      {"logaddexp", jnp::logaddexp},
      {"logaddexp2", jnp::logaddexp2},
      {"equal", jnp::equal},
      {"not_equal", jnp::not_equal},
      {"less", jnp::less},
      {"less_equal", jnp::less_equal},
      {"greater", jnp::greater},
      {"greater_equal", jnp::greater_equal},
      {"logical_and", jnp::logical_and},
      {"logical_or", jnp::logical_or},
      {"logical_xor", jnp::logical_xor},
      {"heaviside", jnp::heaviside},
      {"copysign", jnp::copysign},
      {"bitwise_and", jnp::bitwise_and},
      {"bitwise_or", jnp::bitwise_or},
      {"bitwise_xor", jnp::bitwise_xor},
      {"left_shift", jnp::left_shift},
      {"right_shift", jnp::right_shift},
  };
  return t;
}

const std::map<std::string, Array>& fixtures() {
  static const std::map<std::string, Array> f = jx::testing::fixture_npz("numpy_core/math");
  return f;
}

double rtol_for(jx::DType d) {
  return d == jx::float64 ? 1e-12 : d == jx::float32 ? 1e-5 : d == jx::float16 ? 2e-3 : 0;
}
double atol_for(jx::DType d) {
  return d == jx::float64 ? 1e-13 : d == jx::float32 ? 1e-6 : d == jx::float16 ? 2e-3 : 0;
}

// Row keys "<name>__<case>" of every fixture with an "__out" array.
std::vector<std::string> rows() {
  std::vector<std::string> out;
  for (const auto& [k, v] : fixtures())
    if (k.size() > 5 && k.compare(k.size() - 5, 5, "__out") == 0) out.push_back(k.substr(0, k.size() - 5));
  return out;
}

std::string name_of(const std::string& row) { return row.substr(0, row.find("__")); }

}  // namespace

TEST(NumpyMath, UnaryFixtures) {
  int checked = 0;
  for (const std::string& row : rows()) {
    auto it = unary_table().find(name_of(row));
    if (it == unary_table().end() || fixtures().count(row + "__y")) continue;
    SCOPED_TRACE(row);
    const Array& x = fixtures().at(row + "__x");
    const Array& expected = fixtures().at(row + "__out");
    Array got = it->second(x);
    EXPECT_ALLCLOSE(got, expected, rtol_for(expected.dtype()), atol_for(expected.dtype()));
    if (x.ndim() == 2) {
      // A transposed (non-contiguous) view must give the transposed result.
      EXPECT_ALLCLOSE(jnp::transpose(it->second(jnp::transpose(x))), expected, rtol_for(expected.dtype()),
                      atol_for(expected.dtype()));
    }
    ++checked;
  }
  EXPECT_GT(checked, 150);
}

TEST(NumpyMath, BinaryFixtures) {
  int checked = 0;
  for (const std::string& row : rows()) {
    auto it = binary_table().find(name_of(row));
    if (it == binary_table().end() || !fixtures().count(row + "__y")) continue;
    SCOPED_TRACE(row);
    const Array& x = fixtures().at(row + "__x");
    const Array& y = fixtures().at(row + "__y");
    const Array& expected = fixtures().at(row + "__out");
    EXPECT_ALLCLOSE(it->second(x, y), expected, rtol_for(expected.dtype()), atol_for(expected.dtype()));
    if (x.ndim() == 2 && y.ndim() == 2) {
      EXPECT_ALLCLOSE(jnp::transpose(it->second(jnp::transpose(x), jnp::transpose(y))), expected,
                      rtol_for(expected.dtype()), atol_for(expected.dtype()));
    }
    ++checked;
  }
  EXPECT_GT(checked, 150);
}

TEST(NumpyMath, EveryTableRowHasFixtures) {
  std::set<std::string> seen;
  for (const std::string& row : rows()) seen.insert(name_of(row));
  for (const auto& [name, fn] : unary_table()) EXPECT_TRUE(seen.count(name)) << name;
  for (const auto& [name, fn] : binary_table()) EXPECT_TRUE(seen.count(name)) << name;
}

TEST(NumpyMath, RoundClipWhereIsclose) {
  const auto& f = fixtures();
  EXPECT_ALLCLOSE(jnp::round(f.at("round_dec2__x"), 2), f.at("round_dec2__out"), 1e-6, 1e-6);
  EXPECT_ALLCLOSE(jnp::round(f.at("round_int_dec-1__x"), -1), f.at("round_int_dec-1__out"));
  EXPECT_ALLCLOSE(jnp::around(f.at("round_int_dec-2__x"), -2), f.at("round_int_dec-2__out"));
  EXPECT_ALLCLOSE(jnp::clip(f.at("clip__x"), -5.0, 7.5), f.at("clip__out"));
  EXPECT_ALLCLOSE(jnp::where(f.at("where__c"), f.at("where__x"), f.at("where__y")), f.at("where__out"));
  EXPECT_ALLCLOSE(jnp::isclose(f.at("isclose__a"), f.at("isclose__b")), f.at("isclose__out"));
  EXPECT_ALLCLOSE(jnp::isclose(f.at("isclose__a"), f.at("isclose__b"), 1e-5, 1e-8, true),
                  f.at("isclose_equal_nan__out"));
}

TEST(NumpyMath, HandComputedValues) {
  // Python's % and // semantics on signs, and NumPy's zero-divisor results.
  EXPECT_ALLCLOSE(jnp::remainder(Array({-3, 3, -3, 3}), Array({2, -2, -2, 2})), Array({1, -1, -1, 1}));
  EXPECT_ALLCLOSE(jnp::floor_divide(Array({-3, 3, -3, 3, 7}), Array({2, -2, -2, 2, 0})), Array({-2, -2, 1, 1, 0}));
  EXPECT_ALLCLOSE(jnp::floor_divide(Array({1.0, -1.0}), 0.0), Array({INFINITY, -INFINITY}));
  EXPECT_ALLCLOSE(jnp::remainder(Array({5, -5}), 0), Array({0, 0}));
  EXPECT_ALLCLOSE(jnp::fmod(Array({-3, 3}), Array({2, -2})), Array({-1, 1}));
  EXPECT_ALLCLOSE(Array({-3, 3}) % 2, Array({1, 1}));
  // Integer powers stay integers, exactly.
  EXPECT_ALLCLOSE(jnp::power(Array({2, 3, -2}), Array({10, 3, 3})), Array({1024, 27, -8}));
  EXPECT_ALLCLOSE(jnp::power(Array({2, 1, -1}), Array({-1, -5, -3})), Array({0, 1, -1}));
  EXPECT_ALLCLOSE(jnp::power(Array({1.5f, 2.f}), 2), Array({2.25f, 4.f}));
  EXPECT_ALLCLOSE(jnp::power(Array({4.f}), -1), Array({0.25f}));
  // Bools: + is or, * is and.
  EXPECT_ALLCLOSE(jnp::add(Array({true, false}), Array({true, false})), Array({true, false}));
  EXPECT_ALLCLOSE(jnp::multiply(Array({true, true}), Array({true, false})), Array({true, false}));
  // logaddexp with infinities.
  EXPECT_ALLCLOSE(jnp::logaddexp(Array({-INFINITY, INFINITY, 0.0}), Array({-INFINITY, INFINITY, 0.0})),
                  Array({-INFINITY, INFINITY, static_cast<double>(std::log(2.0))}));
  EXPECT_ALLCLOSE(jnp::hypot(Array({3.0, 0.0, INFINITY}), Array({4.0, 0.0, NAN})), Array({5.0, 0.0, INFINITY}));
  EXPECT_ALLCLOSE(jnp::fmax(Array({NAN, 1.0, NAN}), Array({2.0, NAN, NAN})), Array({2.0, 1.0, NAN}));
  EXPECT_ALLCLOSE(jnp::maximum(Array({NAN, 1.0}), Array({2.0, 3.0})), Array({NAN, 3.0}));
  EXPECT_ALLCLOSE(jnp::right_shift(Array({-8, 8}), 1), Array({-4, 4}));
  EXPECT_ALLCLOSE(jnp::right_shift(Array(std::vector<uint8_t>{255}), Array(std::vector<uint8_t>{4})),
                  Array(std::vector<uint8_t>{15}));
  EXPECT_ALLCLOSE(jnp::invert(Array({0, -1})), Array({-1, 0}));
  EXPECT_ALLCLOSE(~Array({true, false}), Array({false, true}));
  EXPECT_ALLCLOSE(!Array({1.f, 0.f}), Array({false, true}));
  EXPECT_ALLCLOSE(jnp::heaviside(Array({-1.f, 0.f, 2.f, NAN}), 0.5f), Array({0.f, 0.5f, 1.f, NAN}));
  EXPECT_ALLCLOSE(jnp::copysign(Array({1.f, 2.f}), Array({-0.f, 3.f})), Array({-1.f, 2.f}));
  EXPECT_ALLCLOSE(jnp::signbit(Array({-0.f, 0.f, -NAN})), Array({true, false, true}));
  EXPECT_ALLCLOSE(jnp::nan_to_num(Array({NAN, INFINITY, -INFINITY}), 1.0, 2.0, -3.0), Array({1.f, 2.f, -3.f}));
}

// float32 erf: eager runs the polynomial jit kernels inline, so the two agree bit for bit
// everywhere (ramps over every range, the switch points, specials).
TEST(NumpyMath, Float32ErfEagerMatchesJitBitForBit) {
  std::vector<float> v;
  for (int i = -60000; i <= 60000; ++i) v.push_back(static_cast<float>(i) * 1e-4f);  // [-6, 6]
  for (float x : {0.0f, -0.0f, 1.0f, -1.0f, 3.92f, -3.92f, 1e-30f, 1e-45f, INFINITY, -INFINITY, NAN}) {
    v.push_back(x);
    v.push_back(std::nextafter(x, 0.0f));
    v.push_back(std::nextafter(x, 10.0f));
  }
  Array x(v.data(), jx::Shape{static_cast<int64_t>(v.size())});
  auto erf = [](const Array& a) { return jx::lax::erf(a); };
  std::vector<float> eager = erf(x).to_vector<float>(), jitted = jx::jit(erf)(x).to_vector<float>();
  ASSERT_EQ(eager.size(), jitted.size());
  int64_t differ = 0;
  for (size_t i = 0; i < eager.size(); ++i)
    if (std::memcmp(&eager[i], &jitted[i], sizeof(float)) != 0) ++differ;
  EXPECT_EQ(differ, 0);
  // Odd, saturating, accurate: erf(0.5) = 0.5204998778130465.
  EXPECT_EQ(erf(Array(std::vector<float>{-0.0f})).to_vector<float>()[0], 0.0f);
  EXPECT_TRUE(std::signbit(erf(Array(std::vector<float>{-0.0f})).to_vector<float>()[0]));
  EXPECT_EQ(erf(Array(std::vector<float>{INFINITY, -INFINITY})).to_vector<float>(), (std::vector<float>{1.0f, -1.0f}));
  EXPECT_NEAR(erf(Array(std::vector<float>{0.5f})).to_vector<float>()[0], 0.5204998778130465, 1e-7);
}

TEST(NumpyMath, ComplexNumbers) {
  Array z = Array(std::vector<jx::complex64_t>{{3, 4}, {-1, 0}, {0, -2}});
  EXPECT_ALLCLOSE(jnp::abs(z), Array({5.f, 1.f, 2.f}));
  EXPECT_ALLCLOSE(jnp::real(z), Array({3.f, -1.f, 0.f}));
  EXPECT_ALLCLOSE(jnp::imag(z), Array({4.f, 0.f, -2.f}));
  EXPECT_ALLCLOSE(jnp::conj(z), Array(std::vector<jx::complex64_t>{{3, -4}, {-1, 0}, {0, 2}}));
  EXPECT_ALLCLOSE(jnp::angle(z), Array({std::atan2(4.f, 3.f), static_cast<float>(M_PI), static_cast<float>(-M_PI / 2)}),
                  1e-6, 1e-6);
  EXPECT_ALLCLOSE(jnp::angle(Array({-1.f, 1.f}), true), Array({180.f, 0.f}));
  EXPECT_ALLCLOSE(jnp::imag(Array({1.f, 2.f})), Array({0.f, 0.f}));
  Array zn = Array(std::vector<jx::complex64_t>{{NAN, INFINITY}});
  EXPECT_ALLCLOSE(jnp::nan_to_num(zn, 0.0, 1.0), Array(std::vector<jx::complex64_t>{{0, 1}}));
  EXPECT_ALLCLOSE(jnp::isinf(zn), Array({true}));
  EXPECT_ALLCLOSE(jnp::isfinite(zn), Array({false}));
}

TEST(NumpyMath, IntegerInputsToFloatFunctions) {
  // sin(int32) is float32 and sqrt(int64) float64, as in JAX with x64; weak scalars stay weak.
  EXPECT_EQ(jnp::sin(Array({1, 2})).dtype(), jx::float32);
  EXPECT_EQ(jnp::sqrt(Array(std::vector<int64_t>{4})).dtype(), jx::float64);
  EXPECT_EQ(jnp::divide(Array({1}), Array({2})).dtype(), jx::float32);
  EXPECT_TRUE(jnp::sin(Array(2)).weak_type());
  EXPECT_EQ(jnp::floor(Array({1, 2})).dtype(), jx::int32);
  EXPECT_EQ(jnp::rint(Array({1, 2})).dtype(), jx::float32);
  EXPECT_EQ(jnp::reciprocal(Array({2})).dtype(), jx::float32);
  EXPECT_EQ(jnp::square(Array({2})).dtype(), jx::int32);
}

TEST(NumpyMath, HalfPrecision) {
  Array h = jnp::astype(Array({0.5f, 1.f, 2.f}), jx::float16);
  EXPECT_ALLCLOSE(jnp::exp(h), jnp::astype(Array({1.6487213f, 2.7182817f, 7.389056f}), jx::float16), 2e-3, 1e-3);
  Array b = jnp::astype(Array({0.5f, 1.f}), jx::bfloat16);
  EXPECT_EQ(jnp::add(b, 1.0).dtype(), jx::bfloat16);
  EXPECT_EQ(jnp::add(h, Array(std::vector<int64_t>{1, 2, 3})).dtype(), jx::float16);
  EXPECT_ALLCLOSE(jnp::round(jnp::astype(Array({1.234f}), jx::float16), 1), jnp::astype(Array({1.2f}), jx::float16),
                  2e-3, 1e-3);
}

TEST(NumpyMath, Predicates) {
  Array a = Array({1.f, 2.f, NAN});
  EXPECT_TRUE(jnp::allclose(a, a, 1e-5, 1e-8, true));
  EXPECT_FALSE(jnp::allclose(a, a));
  EXPECT_TRUE(jnp::array_equal(Array({1, 2}), Array({1.f, 2.f})));
  EXPECT_FALSE(jnp::array_equal(Array({1, 2}), Array({1, 2, 3})));
  EXPECT_TRUE(jnp::array_equal(a, a, true));
  EXPECT_TRUE(jnp::array_equiv(Array({1, 2}), Array({{1, 2}, {1, 2}})));
  EXPECT_FALSE(jnp::array_equiv(Array({1, 2}), Array({1, 2, 3})));
  EXPECT_TRUE(jnp::allclose(Array({1}), Array({2}), 0, 1));  // integers compare as float, as NumPy
}

TEST(NumpyMath, Errors) {
  EXPECT_JX_ERROR(jnp::add(jnp::zeros({3}), jnp::zeros({4})),
                  "[add] operands could not be broadcast together with shapes (3,) (4,)");
  EXPECT_JX_ERROR(Array({1.f, 2.f}) * Array({1.f, 2.f, 3.f}), "[multiply]", "(2,) (3,)");
  EXPECT_JX_ERROR(jnp::where(Array({true, false}), jnp::zeros({3}), 1.0), "[where]", "(2,) (3,) ()");
  EXPECT_JX_ERROR(jnp::subtract(Array({true}), Array({false})), "[subtract]", "boolean subtract");
  EXPECT_JX_ERROR(-Array({true}), "[negative]", "boolean negative");
  EXPECT_JX_ERROR(jnp::bitwise_and(Array({1.f}), Array({1.f})), "[bitwise_and]", "float32");
  EXPECT_JX_ERROR(jnp::left_shift(Array({1.f}), 1), "[left_shift]", "float32");
  EXPECT_JX_ERROR(jnp::invert(Array({1.5f})), "[invert]", "float32");
  EXPECT_JX_ERROR(jnp::floor_divide(Array({true}), Array({true})), "[floor_divide]", "bool");
  EXPECT_JX_ERROR(jnp::arctan2(Array(std::vector<jx::complex64_t>{{1, 1}}), 1.0), "[arctan2]", "complex");
  EXPECT_JX_ERROR(jnp::add(Array(), Array({1})), "null");
}
