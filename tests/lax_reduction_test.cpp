// jx::lax reductions (reduce_sum/prod/max/min/and/or, argmax/argmin) and cumulative
// ops (cumsum/cumprod/cummax/cummin) against NumPy fixtures from
// scripts/fixtures/reduce.py, plus hand-checked edge cases, accuracy, large
// (parallel, chunked) inputs and error messages.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>

#include "core/array_internal.h"
#include "core/convert.h"
#include "jx/lax.h"
#include "test_util.h"

namespace {

using namespace jx;
using jx::testing::allclose;

using jx::testing::as_dtype;
using jx::testing::make_test_view;

// Row i of an array stacked along a new leading axis.
Array row(const Array& stacked, int64_t i) {
  Shape shape(stacked.shape().begin() + 1, stacked.shape().end());
  std::vector<int64_t> strides(detail::strides(stacked).begin() + 1, detail::strides(stacked).end());
  return detail::make_view(stacked, Aval{shape, stacked.dtype(), false},
                           strides, stacked.impl().offset + i * detail::strides(stacked)[0]);
}

std::vector<int64_t> ints(const Array& a) { return a.to_vector<int64_t>(); }

struct Case {
  std::string name;
  DType dtype;
  Array x;     // the viewed input, in the case's dtype
  std::vector<int64_t> params;  // meta after the view code
};

std::vector<Case> load_cases(const std::string& file) {
  auto arrays = jx::testing::fixture_npz("reduce/" + file);
  std::vector<Case> cases;
  for (const auto& [key, x] : arrays) {
    if (key.size() < 2 || key.substr(key.size() - 2) != ".x") continue;
    std::string name = key.substr(0, key.size() - 2);
    DType dtype = dtype_from_name(name.substr(0, name.find("__")));
    std::vector<int64_t> meta = ints(arrays.at(name + ".meta"));
    Array typed = dtype == DType::BFloat16 ? as_dtype(x, dtype) : x;
    cases.push_back({name, dtype, make_test_view(typed, meta[0]), std::vector<int64_t>(meta.begin() + 1, meta.end())});
  }
  return cases;
}

double rtol_for(DType d) { return is_inexact(d) ? 4 * jx::testing::default_rtol(d) : 0.0; }

// Compares a result in `dtype` against an expectation that may be stored as float32
// (bfloat16 fixtures).
::testing::AssertionResult matches(const Array& got, const Array& want, DType dtype) {
  if (got.dtype() != dtype) return ::testing::AssertionFailure() << "dtype " << got.dtype() << " != " << dtype;
  // Empty results: shapes only (to_vector of an empty array trips UBSan in core's
  // convert_buffer, memcpy to a null pointer).
  if (want.size() == 0) {
    if (got.shape() == want.shape()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "shape " << got.aval().str() << " != " << want.aval().str();
  }
  double rtol = rtol_for(dtype);
  return allclose(got, want, rtol, rtol, /*check_dtype=*/false);
}

struct ReduceOp {
  const char* name;
  std::function<Array(const Array&, const std::vector<int64_t>&)> fn;
  bool (*accepts)(DType);
};

const std::vector<ReduceOp>& reduce_ops() {  // the order of REDUCE_OPS in reduce.py
  static const std::vector<ReduceOp> ops = {
      {"reduce_sum", lax::reduce_sum, [](DType d) { return !is_bool(d); }},
      {"reduce_prod", lax::reduce_prod, [](DType d) { return !is_bool(d); }},
      {"reduce_max", lax::reduce_max, [](DType) { return true; }},
      {"reduce_min", lax::reduce_min, [](DType) { return true; }},
      {"reduce_and", lax::reduce_and, [](DType d) { return is_bool(d) || is_integer(d); }},
      {"reduce_or", lax::reduce_or, [](DType d) { return is_bool(d) || is_integer(d); }},
  };
  return ops;
}

TEST(LaxReduction, MatchesNumPyFixtures) {
  auto arrays = jx::testing::fixture_npz("reduce/reductions");
  auto cases = load_cases("reductions");
  ASSERT_GE(cases.size(), 170u);
  int checked = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Array& out = arrays.at(c.name + ".out");
    for (size_t i = 0; i < reduce_ops().size(); ++i) {
      const ReduceOp& op = reduce_ops()[i];
      SCOPED_TRACE(op.name);
      if (!op.accepts(c.dtype)) {
        const std::string operand = c.x.aval().str();  // "bf16[2,3]"
        EXPECT_JX_ERROR(op.fn(c.x, c.params), op.name, "operand must be", operand.c_str());
        continue;
      }
      Array got = op.fn(c.x, c.params);
      EXPECT_TRUE(matches(got, row(out, static_cast<int64_t>(i)), c.dtype));
      ++checked;
    }
    auto arg = arrays.find(c.name + ".arg");
    if (arg != arrays.end()) {
      EXPECT_ALLCLOSE(lax::argmax(c.x, c.params[0]), row(arg->second, 0), 0, 0);
      EXPECT_ALLCLOSE(lax::argmin(c.x, c.params[0]), row(arg->second, 1), 0, 0);
      checked += 2;
    }
  }
  EXPECT_GT(checked, 800);
}

struct CumulativeOp {
  const char* name;
  std::function<Array(const Array&, int64_t, bool)> fn;
};

TEST(LaxCumulative, MatchesNumPyFixtures) {
  const std::vector<CumulativeOp> ops = {  // CUMULATIVE_OPS in reduce.py
      {"cumsum", lax::cumsum}, {"cumprod", lax::cumprod}, {"cummax", lax::cummax}, {"cummin", lax::cummin}};
  auto arrays = jx::testing::fixture_npz("reduce/cumulative");
  auto cases = load_cases("cumulative");
  ASSERT_GE(cases.size(), 80u);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Array& out = arrays.at(c.name + ".out");
    for (size_t i = 0; i < ops.size(); ++i) {
      for (bool reverse : {false, true}) {
        SCOPED_TRACE(std::string(ops[i].name) + (reverse ? " reverse" : ""));
        Array got = ops[i].fn(c.x, c.params[0], reverse);
        EXPECT_TRUE(matches(got, row(out, static_cast<int64_t>(2 * i + reverse)), c.dtype));
        // Negative axes name the same axis.
        if (!reverse && i == 0) {
          EXPECT_TRUE(matches(ops[i].fn(c.x, c.params[0] - c.x.ndim(), false), row(out, 0), c.dtype));
        }
      }
    }
  }
}

// ---- hand-checked semantics ----

TEST(LaxReduction, EmptyAxesGiveIdentities) {
  Array f = detail::alloc_array(Aval{{2, 0}, DType::Float32, false});
  EXPECT_ALLCLOSE(lax::reduce_sum(f, {1}), Array({0.0, 0.0}));
  EXPECT_ALLCLOSE(lax::reduce_prod(f, {1}), Array({1.0, 1.0}));
  EXPECT_ALLCLOSE(lax::reduce_max(f, {1}), Array({-INFINITY, -INFINITY}));
  EXPECT_ALLCLOSE(lax::reduce_min(f, {1}), Array({INFINITY, INFINITY}));
  Array i = detail::alloc_array(Aval{{0}, DType::Int32, false});
  EXPECT_EQ(lax::reduce_max(i, {0}).item<int32_t>(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(lax::reduce_min(i, {0}).item<int32_t>(), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(lax::reduce_and(i, {0}).item<int32_t>(), -1);
  EXPECT_EQ(lax::reduce_or(i, {0}).item<int32_t>(), 0);
  Array u = detail::alloc_array(Aval{{0}, DType::UInt8, false});
  EXPECT_EQ(lax::reduce_min(u, {0}).item<int64_t>(), 255);
  EXPECT_EQ(lax::reduce_and(u, {0}).item<int64_t>(), 255);
  Array b = detail::alloc_array(Aval{{0}, DType::Bool, false});
  EXPECT_TRUE(lax::reduce_and(b, {0}).item<bool>());
  EXPECT_FALSE(lax::reduce_or(b, {0}).item<bool>());
  EXPECT_FALSE(lax::reduce_max(b, {0}).item<bool>());
  EXPECT_TRUE(lax::reduce_min(b, {0}).item<bool>());
  // Empty output.
  Array e = detail::alloc_array(Aval{{0, 3}, DType::Float64, false});
  EXPECT_EQ(lax::reduce_sum(e, {1}).shape(), Shape({0}));
  EXPECT_EQ(lax::argmax(e, 1).shape(), Shape({0}));
}

TEST(LaxReduction, NaNPropagatesAndArgReductionsPickTheFirstNaN) {
  Array x({1.0, NAN, 3.0, NAN, -INFINITY});
  EXPECT_TRUE(std::isnan(lax::reduce_max(x, {0}).item<float>()));
  EXPECT_TRUE(std::isnan(lax::reduce_min(x, {0}).item<float>()));
  EXPECT_TRUE(std::isnan(lax::reduce_sum(x, {0}).item<float>()));
  EXPECT_EQ(lax::argmax(x, 0).item<int32_t>(), 1);
  EXPECT_EQ(lax::argmin(x, 0).item<int32_t>(), 1);
  Array ties({2.0, 5.0, 5.0, -1.0, -1.0});
  EXPECT_EQ(lax::argmax(ties, 0).item<int32_t>(), 1);
  EXPECT_EQ(lax::argmin(ties, 0).item<int32_t>(), 3);
  EXPECT_EQ(lax::argmax(ties, -1, DType::Int64).dtype(), DType::Int64);
  // Infinities are ordinary extremes.
  Array inf({1.0, INFINITY, -INFINITY, INFINITY});
  EXPECT_EQ(lax::reduce_max(inf, {0}).item<float>(), INFINITY);
  EXPECT_EQ(lax::argmax(inf, 0).item<int32_t>(), 1);
  EXPECT_EQ(lax::argmin(inf, 0).item<int32_t>(), 2);
  // NaN is found in every layout: a column reduction (rows added together) too.
  Array m({{1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0}, {1.0, NAN, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0}});
  auto mx = lax::reduce_max(m, {0}).to_vector<float>();
  EXPECT_TRUE(std::isnan(mx[1]));
  EXPECT_EQ(mx[7], 9.0f);
  auto am = lax::argmax(m, 0).to_vector<int32_t>();
  EXPECT_EQ(am, (std::vector<int32_t>{0, 1, 0, 0, 0, 0, 0, 1}));
}

TEST(LaxReduction, ComplexOrderIsLexicographic) {
  Array z(std::vector<complex64_t>{{1, 2}, {1, 3}, {0, 5}, {1, -1}});
  EXPECT_EQ(lax::reduce_max(z, {0}).item<complex64_t>(), complex64_t(1, 3));
  EXPECT_EQ(lax::reduce_min(z, {0}).item<complex64_t>(), complex64_t(0, 5));
  EXPECT_EQ(lax::argmax(z, 0).item<int32_t>(), 1);
  EXPECT_EQ(lax::argmin(z, 0).item<int32_t>(), 2);
  EXPECT_EQ(lax::reduce_prod(z, {0}).item<complex64_t>(), complex64_t(1, 2) * complex64_t(1, 3) * complex64_t(0, 5) * complex64_t(1, -1));
}

TEST(LaxReduction, IntegerSumsAndProductsWrap) {
  Array x(std::vector<int8_t>{100, 100, 100});
  EXPECT_EQ(lax::reduce_sum(x, {0}).item<int8_t>(), static_cast<int8_t>(300 - 256));
  EXPECT_EQ(lax::reduce_prod(x, {0}).item<int8_t>(), static_cast<int8_t>(1000000 % 256));
  Array big(std::vector<int64_t>{std::numeric_limits<int64_t>::max(), 1});
  EXPECT_EQ(lax::reduce_sum(big, {0}).item<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(lax::cumsum(big, 0).to_vector<int64_t>()[1], std::numeric_limits<int64_t>::min());
  Array u(std::vector<uint32_t>{0xffffffffu, 2});
  EXPECT_EQ(lax::reduce_sum(u, {0}).item<uint32_t>(), 1u);
  EXPECT_EQ(lax::reduce_prod(u, {0}).item<uint32_t>(), 0xfffffffeu);
}

TEST(LaxReduction, BitwiseAndOrOnIntegers) {
  Array x(std::vector<int32_t>{3, 5, 7});
  EXPECT_EQ(lax::reduce_and(x, {0}).item<int32_t>(), 1);
  EXPECT_EQ(lax::reduce_or(x, {0}).item<int32_t>(), 7);
  Array b({true, false, true});
  EXPECT_FALSE(lax::reduce_and(b, {0}).item<bool>());
  EXPECT_TRUE(lax::reduce_or(b, {0}).item<bool>());
}

TEST(LaxReduction, WeakTypesAndShapes) {
  Array w(2.5);  // a weakly typed scalar
  ASSERT_TRUE(w.weak_type());
  EXPECT_TRUE(lax::reduce_sum(w, {}).weak_type());
  EXPECT_TRUE(lax::reduce_max(w, {}).weak_type());
  EXPECT_TRUE(lax::cumsum(lax::reduce_sum(Array({1.0, 2.0}), {}), 0).shape() == Shape({2}));
  Array x({{1, 2, 3}, {4, 5, 6}});
  EXPECT_ALLCLOSE(lax::reduce_sum(x, {-1}), Array({6, 15}));
  EXPECT_EQ(lax::reduce_sum(x, {1, 0}).item<int32_t>(), 21);
  EXPECT_EQ(lax::reduce_sum(x, {1, 0}).shape(), Shape{});
  EXPECT_EQ(lax::argmax(Array({1.0, 2.0}), 0).weak_type(), false);
}

TEST(LaxReduction, Traits) {
  for (const char* name : {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or",
                           "argmax", "argmin"}) {
    const Primitive* p = find_primitive(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_TRUE(p->has(kReduction)) << name;
  }
  EXPECT_TRUE(find_primitive("reduce_sum")->has(kLinear));
  EXPECT_FALSE(find_primitive("reduce_max")->has(kLinear));
  EXPECT_TRUE(find_primitive("argmax")->has(kNotDifferentiable));
  EXPECT_TRUE(find_primitive("cumsum")->has(kLinear));
  EXPECT_FALSE(find_primitive("cumprod")->has(kLinear));
}

// ---- accuracy ----

// The float64 sum of n float32 copies of v, and the float32 ulp there.
void expect_accurate_sum(float got, float v, int64_t n) {
  double exact = static_cast<double>(v) * static_cast<double>(n);
  double ulp = std::nextafter(static_cast<float>(exact), INFINITY) - static_cast<float>(exact);
  EXPECT_LE(std::abs(got - exact), 4 * ulp) << "got " << got << ", exact " << exact;
}

TEST(LaxReductionAccuracy, PairwiseFloat32SumsStayWithinAFewUlps) {
  const int64_t n = 1000000;
  Array x(std::vector<float>(n, 0.1f));
  expect_accurate_sum(lax::reduce_sum(x, {0}).item<float>(), 0.1f, n);
  // Rows reduced along the inner axis (several chunks each).
  auto rows = lax::reduce_sum(lax::reshape(x, {4, n / 4}), {1}).to_vector<float>();
  for (float r : rows) expect_accurate_sum(r, 0.1f, n / 4);
  // Columns: rows added into an accumulator row.
  auto cols = lax::reduce_sum(lax::reshape(x, {n / 16, 16}), {0}).to_vector<float>();
  for (float c : cols) expect_accurate_sum(c, 0.1f, n / 16);
  // Both axes of a 2-d array, and a strided view of every other element.
  expect_accurate_sum(lax::reduce_sum(lax::reshape(x, {1000, 1000}), {0, 1}).item<float>(), 0.1f, n);
  Array every_other = detail::make_view(x, Aval{{n / 2}, DType::Float32, false}, {2}, 0);
  expect_accurate_sum(lax::reduce_sum(every_other, {0}).item<float>(), 0.1f, n / 2);
  // float16 accumulates in float32.
  Array h = as_dtype(Array(std::vector<float>(4096, 0.1f)), DType::Float16);
  EXPECT_NEAR(static_cast<float>(lax::reduce_sum(h, {0}).item<float>()), 409.5f, 0.5f);
}

// ---- large inputs (parallel, chunked, tiled) against plain loops on exact integers ----

Array iota_int(Shape shape) {
  std::vector<int64_t> v(static_cast<size_t>(shape_size(shape)));
  std::iota(v.begin(), v.end(), int64_t{0});
  for (auto& e : v) e = e % 1009 - 500;
  return Array(v, shape);
}

TEST(LaxReductionLarge, EveryLayoutMatchesALoop) {
  const Shape shape = {7, 3000, 5};
  Array x = iota_int(shape);
  auto v = x.to_vector<int64_t>();
  auto at = [&](int64_t i, int64_t j, int64_t k) { return v[(i * shape[1] + j) * shape[2] + k]; };
  // Reduce axis 1 (outer mode over the 5-wide inner rows is too narrow: inner mode).
  auto s1 = lax::reduce_sum(x, {1}).to_vector<int64_t>();
  auto m1 = lax::reduce_max(x, {1}).to_vector<int64_t>();
  auto a1 = lax::argmin(x, 1).to_vector<int64_t>();
  for (int64_t i = 0; i < shape[0]; ++i)
    for (int64_t k = 0; k < shape[2]; ++k) {
      int64_t s = 0, m = INT64_MIN, best = INT64_MAX, bi = 0;
      for (int64_t j = 0; j < shape[1]; ++j) {
        s += at(i, j, k);
        m = std::max(m, at(i, j, k));
        if (at(i, j, k) < best) best = at(i, j, k), bi = j;
      }
      ASSERT_EQ(s1[i * shape[2] + k], s);
      ASSERT_EQ(m1[i * shape[2] + k], m);
      ASSERT_EQ(a1[i * shape[2] + k], bi);
    }
  // Reduce axis 0 of a (7, 15000) view: outer mode, tiles of up to 4096 and a partial last one.
  Array y = lax::reshape(x, {7, 15000});
  auto s0 = lax::reduce_sum(y, {0}).to_vector<int64_t>();
  auto a0 = lax::argmax(y, 0).to_vector<int64_t>();
  auto c0 = lax::cumsum(y, 0, true).to_vector<int64_t>();
  for (int64_t j = 0; j < 15000; ++j) {
    int64_t s = 0, best = INT64_MIN, bi = 0;
    for (int64_t i = 0; i < 7; ++i) {
      s += v[i * 15000 + j];
      if (v[i * 15000 + j] > best) best = v[i * 15000 + j], bi = i;
    }
    ASSERT_EQ(s0[j], s);
    ASSERT_EQ(a0[j], bi);
    ASSERT_EQ(c0[j], s);  // reverse cumsum's first row is the total
  }
  // Many reduced rows (outer mode, several 1024-row chunks) and a long inner reduction.
  Array z = lax::reshape(x, {21000, 5});
  auto sz = lax::reduce_sum(z, {0}).to_vector<int64_t>();
  Array zt = lax::reshape(x, {5, 21000});
  auto szt = lax::reduce_sum(zt, {1}).to_vector<int64_t>();
  for (int64_t k = 0; k < 5; ++k) {
    int64_t s = 0, t = 0;
    for (int64_t i = 0; i < 21000; ++i) s += v[i * 5 + k], t += v[k * 21000 + i];
    EXPECT_EQ(sz[k], s);
    EXPECT_EQ(szt[k], t);
  }
  Array w = lax::reshape(x, {300, 350});
  auto sw = lax::reduce_sum(w, {0}).to_vector<int64_t>();
  for (int64_t j = 0; j < 350; ++j) {
    int64_t s = 0;
    for (int64_t i = 0; i < 300; ++i) s += v[i * 350 + j];
    EXPECT_EQ(sw[j], s);
  }
  // Full reductions, also of a reversed (negative-stride) and a broadcast view.
  int64_t total = std::accumulate(v.begin(), v.end(), int64_t{0});
  EXPECT_EQ(lax::reduce_sum(x, {0, 1, 2}).item<int64_t>(), total);
  EXPECT_EQ(lax::reduce_sum(make_test_view(x, 1), {2, 0, 1}).item<int64_t>(), total);
  EXPECT_EQ(lax::reduce_sum(make_test_view(x, 3), {0, 1, 2, 3}).item<int64_t>(), 3 * total);
  // Cumulative sums along the inner axis of a long line.
  auto cs = lax::cumsum(lax::reshape(x, {105000}), 0).to_vector<int64_t>();
  EXPECT_EQ(cs.back(), total);
}

// ---- errors ----

TEST(LaxReductionErrors, Messages) {
  Array x = detail::alloc_array(Aval{{2, 3}, DType::Float32, false});
  EXPECT_JX_ERROR(lax::reduce_sum(x, {3}), "[reduce_sum] axis 3 is out of bounds for array of shape (2, 3)");
  EXPECT_JX_ERROR(lax::reduce_max(x, {-3}), "[reduce_max] axis -3 is out of bounds for array of shape (2, 3)");
  EXPECT_JX_ERROR(lax::reduce_sum(x, {1, 1}), "[reduce_sum] repeated axis 1", "(2, 3)");
  EXPECT_JX_ERROR(lax::reduce_prod(x, {0, -2}), "[reduce_prod] repeated axis");
  Array b = detail::alloc_array(Aval{{2}, DType::Bool, false});
  EXPECT_JX_ERROR(lax::reduce_sum(b, {0}), "[reduce_sum] operand must be", "bool[2]");
  EXPECT_JX_ERROR(lax::reduce_prod(b, {0}), "[reduce_prod] operand must be", "bool[2]");
  EXPECT_JX_ERROR(lax::reduce_and(x, {0}), "[reduce_and] operand must be bool or integer", "f32[2,3]");
  EXPECT_JX_ERROR(lax::reduce_or(x, {0}), "[reduce_or] operand must be bool or integer", "f32[2,3]");
  EXPECT_JX_ERROR(lax::argmax(x, 2), "[argmax] axis 2 is out of bounds for array of shape (2, 3)");
  EXPECT_JX_ERROR(lax::argmin(x, 0, DType::Float32), "[argmin] index_dtype must be an integer type, got float32");
  Array e = detail::alloc_array(Aval{{2, 0}, DType::Float32, false});
  EXPECT_JX_ERROR(lax::argmax(e, 1), "[argmax] cannot take argmax along axis 1 of shape (2, 0)", "empty");
  EXPECT_JX_ERROR(lax::argmin(e, 1), "[argmin] cannot take argmin along axis 1");
  Array s = detail::scalar<float>(1.0f);
  EXPECT_JX_ERROR(lax::argmax(s, 0), "[argmax] axis 0 is out of bounds for array of shape ()");
  EXPECT_JX_ERROR(lax::reduce_sum(s, {0}), "[reduce_sum] axis 0 is out of bounds for array of shape ()");
  EXPECT_JX_ERROR(lax::cumsum(x, 2), "[cumsum] axis 2 is out of bounds for array of shape (2, 3)");
  EXPECT_JX_ERROR(lax::cummax(s, 0), "[cummax] axis 0 is out of bounds for array of shape ()");
  EXPECT_JX_ERROR(lax::cumsum(b, 0), "[cumsum] operand must be", "bool[2]");
  EXPECT_JX_ERROR(lax::cummin(b, 0), "[cummin] operand must be", "bool[2]");
  // The primitive itself checks its parameters, as a parsed IR would supply them.
  const Primitive* argmax_p = find_primitive("argmax");
  std::vector<Array> in = {x};
  EXPECT_JX_ERROR(bind(*argmax_p, in, {{"axes", std::vector<int64_t>{0, 1}}, {"index_dtype", DType::Int32}}),
                  "[argmax] expects exactly one axis, got axes=(0, 1)");
  EXPECT_JX_ERROR(bind(*find_primitive("reduce_sum"), in, {}), "missing parameter 'axes'");
  EXPECT_JX_ERROR(lax::reduce_sum(Array(), {0}), "");
}

}  // namespace
