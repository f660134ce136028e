// jx::lax::sort against NumPy fixtures (np.sort, stable np.argsort, np.lexsort) from
// scripts/fixtures/reduce.py, plus JAX's order for NaN, signed zeros and complex
// numbers, stability, large parallel inputs and error messages.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

#include "backend/cpu/vqsort/vqsort_loader.h"
#include "core/array_internal.h"
#include "core/convert.h"
#include "jx/lax.h"
#include "test_util.h"

namespace {

using namespace jx;
using jx::testing::allclose;

using jx::testing::as_dtype;
using jx::testing::make_test_view;

// Exact comparison (NaN matches NaN); empty arrays compare shapes only, since
// to_vector of an empty array trips UBSan in core's convert_buffer.
::testing::AssertionResult same_values(const Array& got, const Array& want) {
  if (want.size() == 0) {
    if (got.shape() == want.shape()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "shape " << got.aval().str() << " != " << want.aval().str();
  }
  return allclose(got, want, 0, 0, /*check_dtype=*/false);
}

// int32 indices along `dim`, broadcast over the other dims (what argsort sorts along).
Array index_along(const Shape& shape, int64_t dim) {
  std::vector<int32_t> v(static_cast<size_t>(shape_size(shape)));
  int64_t inner = 1;
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>((static_cast<int64_t>(i) / inner) % shape[dim]);
  return Array(v, shape);
}

TEST(LaxSort, MatchesNumPyFixtures) {
  auto arrays = jx::testing::fixture_npz("reduce/sort");
  int cases = 0;
  for (const auto& [key, stored] : arrays) {
    if (key.size() < 2 || key.substr(key.size() - 2) != ".x") continue;
    const std::string name = key.substr(0, key.size() - 2);
    SCOPED_TRACE(name);
    ++cases;
    const DType dtype = dtype_from_name(name.substr(0, name.find("__")));
    const auto meta = arrays.at(name + ".meta").to_vector<int64_t>();
    Array x = make_test_view(dtype == DType::BFloat16 ? as_dtype(stored, dtype) : stored, meta[0]);
    const int64_t dim = meta[1];
    Array sorted = lax::sort(x, dim);
    EXPECT_EQ(sorted.dtype(), dtype);
    EXPECT_TRUE(same_values(sorted, arrays.at(name + ".sorted")));
    auto both = lax::sort({x, index_along(x.shape(), dim)}, dim, /*is_stable=*/true, /*num_keys=*/1);
    ASSERT_EQ(both.size(), 2u);
    EXPECT_TRUE(same_values(both[0], arrays.at(name + ".sorted")));
    EXPECT_EQ(both[1].dtype(), DType::Int32);
    EXPECT_TRUE(same_values(both[1], arrays.at(name + ".argsort")));
    // Negative dimensions, and an unstable sort still orders the keys.
    EXPECT_TRUE(same_values(lax::sort(x, dim - x.ndim(), false), arrays.at(name + ".sorted")));
  }
  EXPECT_GE(cases, 70);
}

TEST(LaxSort, TwoKeysSortLexicographically) {
  auto arrays = jx::testing::fixture_npz("reduce/sort");
  int cases = 0;
  for (const char* name : {"lexsort__12__dim0", "lexsort__3x8__dim1", "lexsort__8x3__dim0"}) {
    SCOPED_TRACE(name);
    const std::string n = name;
    const int64_t dim = arrays.at(n + ".meta").to_vector<int64_t>()[1];
    for (bool stable : {true, false}) {
      auto out = lax::sort({arrays.at(n + ".k1"), arrays.at(n + ".k2"), arrays.at(n + ".v")}, dim, stable, 2);
      ASSERT_EQ(out.size(), 3u);
      EXPECT_ALLCLOSE(out[0], arrays.at(n + ".k1_sorted"), 0, 0);
      EXPECT_ALLCLOSE(out[1], arrays.at(n + ".k2_sorted"), 0, 0);
      // Ties on both keys (equal pairs, or NaN pairs) may permute the payload when unstable.
      if (stable) {
        EXPECT_ALLCLOSE(out[2], arrays.at(n + ".v_sorted"), 0, 0);
      }
    }
    ++cases;
  }
  EXPECT_EQ(cases, 3);
}

// ---- JAX's total order ----

TEST(LaxSort, NaNsLastZerosEqualAndStable) {
  const float nan = std::nanf(""), neg_nan = -std::nanf("");
  Array x({3.0, nan, -0.0, -INFINITY, neg_nan, 0.0, 1.0, INFINITY, -0.0});
  auto out = lax::sort({x, Array({0, 1, 2, 3, 4, 5, 6, 7, 8})}, 0, true, 1);
  auto v = out[0].to_vector<float>();
  // -inf, the three zeros in input order, 1, 3, inf, then both NaNs in input order.
  EXPECT_EQ(out[1].to_vector<int32_t>(), (std::vector<int32_t>{3, 2, 5, 8, 6, 0, 7, 1, 4}));
  EXPECT_TRUE(std::signbit(v[1]));
  EXPECT_FALSE(std::signbit(v[2]));
  EXPECT_TRUE(std::signbit(v[3]));
  EXPECT_TRUE(std::isnan(v[7]) && std::isnan(v[8]));
  // Single-operand sorts agree.
  auto s = lax::sort(x).to_vector<float>();
  EXPECT_EQ(s[0], -INFINITY);
  EXPECT_EQ(s[6], INFINITY);
  EXPECT_TRUE(std::isnan(s[7]) && std::isnan(s[8]));
}

TEST(LaxSort, ComplexIsLexicographicWithNaNLast) {
  const double nan = std::nan("");
  Array z(std::vector<complex128_t>{{nan, 0}, {1, nan}, {2, 0}, {1, 0}, {-INFINITY, 1}, {1, -1}, {nan, nan}});
  auto got = lax::sort(z).to_vector<complex128_t>();
  // As JAX: (real, imag) keys, each with NaN greatest.
  const std::vector<std::pair<double, double>> want = {{-INFINITY, 1}, {1, -1}, {1, 0}, {1, nan},
                                                       {2, 0},         {nan, 0}, {nan, nan}};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    auto same = [](double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
    EXPECT_TRUE(same(got[i].real(), want[i].first) && same(got[i].imag(), want[i].second)) << "at " << i;
  }
}

TEST(LaxSort, BoolsAndHalves) {
  auto b = lax::sort(Array({true, false, true, false})).to_vector<int32_t>();
  EXPECT_EQ(b, (std::vector<int32_t>{0, 0, 1, 1}));
  Array h = as_dtype(Array({2.5, -1.0, NAN, 0.5}), DType::Float16);
  auto hs = lax::sort(h);
  EXPECT_EQ(hs.dtype(), DType::Float16);
  auto v = hs.to_vector<float>();
  EXPECT_EQ(v[0], -1.0f);
  EXPECT_EQ(v[2], 2.5f);
  EXPECT_TRUE(std::isnan(v[3]));
}

TEST(LaxSort, ShapesAndWeakTypes) {
  Array empty = detail::alloc_array(Aval{{3, 0}, DType::Float32, false});
  EXPECT_EQ(lax::sort(empty, 1).shape(), Shape({3, 0}));
  EXPECT_EQ(lax::sort(empty, 0).shape(), Shape({3, 0}));
  Array one({5.0});
  EXPECT_EQ(lax::sort(one).item<float>(), 5.0f);
  Array w = lax::broadcast(Array(2.0), {3});  // weakly typed
  if (w.weak_type()) {
    EXPECT_TRUE(lax::sort(w).weak_type());
  }
  auto outs = lax::sort({Array({2, 1}), Array({1.5, 2.5}), Array({true, false})}, 0, true, 1);
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[1].to_vector<float>(), (std::vector<float>{2.5f, 1.5f}));
  EXPECT_EQ(outs[2].dtype(), DType::Bool);
  EXPECT_EQ(outs[2].to_vector<int32_t>(), (std::vector<int32_t>{0, 1}));
}

// ---- large inputs: every line against std::stable_sort ----

TEST(LaxSort, ManyLinesInParallelMatchStdSort) {
  const int64_t lines = 300, n = 500;
  std::mt19937 gen(7);
  std::uniform_int_distribution<int> dist(-50, 50);
  std::vector<float> v(static_cast<size_t>(lines * n));
  for (auto& e : v) e = static_cast<float>(dist(gen)) / 4;
  Array x(v, {lines, n});
  auto sorted = lax::sort(x, 1).to_vector<float>();
  // Columns of the transposed layout: dimension 0 of an (n, lines) view.
  Array xt = make_test_view(x, 2);
  auto out = lax::sort({xt, index_along(xt.shape(), 0)}, 0, true, 1);
  auto sorted_t = out[0].to_vector<float>();
  auto perm_t = out[1].to_vector<int32_t>();
  for (int64_t l = 0; l < lines; ++l) {
    std::vector<float> line(v.begin() + l * n, v.begin() + (l + 1) * n);
    std::vector<int32_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return line[a] < line[b]; });
    for (int64_t k = 0; k < n; ++k) {
      ASSERT_EQ(sorted[l * n + k], line[idx[k]]);
      ASSERT_EQ(sorted_t[k * lines + l], line[idx[k]]);
      ASSERT_EQ(perm_t[k * lines + l], idx[k]);
    }
  }
}

// ---- every dtype, long lines (vqsort's recursion, not only its base case) ----

// JAX's order on reals: NaN greatest (all NaNs equal), -0 == 0.
template <class T>
bool jax_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return !std::isnan(a) && (std::isnan(b) || a < b);
  else return a < b;
}
template <class T>
bool same_bits_or_nan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b && std::signbit(a) == std::signbit(b);
  } else {
    return a == b;
  }
}

// Lines of `n` values of C++ type S drawn from a few distinct values and the type's
// extremes (NaN of both signs, ±inf, ±0, subnormals, the largest and smallest finite),
// stored as dtype d (halves and bool hold the values already converted to them). Checked against
// std::stable_sort in JAX's order: stable sorts to the bit (zero signs and NaN positions
// in input order), unstable ones as keys; argsort (a second operand of indices) stably.
template <class S>
void check_against_stable_sort(DType d, int64_t lines, int64_t n, uint32_t seed, bool with_nans = true) {
  SCOPED_TRACE(std::string(dtype_name(d)) + " lines " + std::to_string(lines) + " n " + std::to_string(n) +
               (with_nans ? "" : " no NaNs"));
  std::vector<S> pool;
  using L = std::numeric_limits<S>;
  if constexpr (std::is_floating_point_v<S>) {
    pool = {S(0), -S(0), L::infinity(), -L::infinity(), L::quiet_NaN(), -L::quiet_NaN(), S(1), S(-1), S(0.5),
            S(-2.25), S(3), L::denorm_min(), -L::denorm_min(), L::min(), S(1e4), S(-1e4)};
    if (d == DType::Float32 || d == DType::Float64) pool.insert(pool.end(), {L::max(), L::lowest()});
    if (!with_nans) std::erase_if(pool, [](S e) { return std::isnan(e); });
  } else if (d == DType::Bool) {
    pool = {0, 1};
  } else {
    pool = {L::min(), L::max(), S(0), S(1), S(2), S(L::max() / 2), S(L::min() / 2), S(L::max() - 1)};
  }
  std::mt19937 gen(seed);
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  std::uniform_int_distribution<int> wide(-100000, 100000);
  std::vector<S> v(static_cast<size_t>(lines * n));
  for (auto& e : v) {
    // Half the elements from the pool (many ties), half spread out (a real sort).
    if (gen() % 2 || d == DType::Bool) e = pool[pick(gen)];
    else if constexpr (std::is_floating_point_v<S>) e = static_cast<S>(wide(gen)) / S(64);
    else e = static_cast<S>(static_cast<uint64_t>(wide(gen)) * 2654435761u);
  }
  const bool converted = d == DType::Float16 || d == DType::BFloat16 || d == DType::Bool;
  Array x = converted ? as_dtype(Array(v, {lines, n}), d) : Array(v, {lines, n});
  if (converted) v = x.to_vector<S>();  // the stored values
  ASSERT_EQ(x.dtype(), d);
  const auto sorted_stable = lax::sort(x, 1, true).to_vector<S>();
  const auto sorted = lax::sort(x, 1, false).to_vector<S>();
  auto both = lax::sort({x, index_along(x.shape(), 1)}, 1, true, 1);
  const auto perm = both[1].to_vector<int32_t>();
  const auto perm_values = both[0].to_vector<S>();
  for (int64_t l = 0; l < lines; ++l) {
    const S* line = v.data() + l * n;
    std::vector<int32_t> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return jax_less(line[a], line[b]); });
    for (int64_t k = 0; k < n; ++k) {
      const S want = line[idx[k]];
      const size_t at = static_cast<size_t>(l * n + k);
      ASSERT_TRUE(same_bits_or_nan(sorted_stable[at], want)) << "stable sort, line " << l << " at " << k;
      ASSERT_TRUE(!jax_less(sorted[at], want) && !jax_less(want, sorted[at])) << "sort, line " << l << " at " << k;
      ASSERT_EQ(perm[at], idx[k]) << "argsort, line " << l << " at " << k;
      ASSERT_TRUE(same_bits_or_nan(perm_values[at], want)) << "sorted operand, line " << l << " at " << k;
    }
  }
}

TEST(LaxSort, EveryDTypeMatchesAStableSortOnLongLines) {
  // One line of 70000: sorted in a bucket per thread split by value, or (with NaNs, or
  // few distinct values) in parts on the pool's threads and merged (parallel_sort.h).
  for (auto [lines, n] : {std::pair<int64_t, int64_t>{1, 20000}, {1, 70000}, {3, 4097}, {40, 7}}) {
    check_against_stable_sort<float>(DType::Float32, lines, n, 1);
    check_against_stable_sort<double>(DType::Float64, lines, n, 2);
    check_against_stable_sort<float>(DType::Float16, lines, n, 3);
    check_against_stable_sort<float>(DType::BFloat16, lines, n, 4);
    check_against_stable_sort<int8_t>(DType::Int8, lines, n, 5);
    check_against_stable_sort<int16_t>(DType::Int16, lines, n, 6);
    check_against_stable_sort<int32_t>(DType::Int32, lines, n, 7);
    check_against_stable_sort<int64_t>(DType::Int64, lines, n, 8);
    check_against_stable_sort<uint8_t>(DType::UInt8, lines, n, 9);
    check_against_stable_sort<uint32_t>(DType::UInt32, lines, n, 11);
    check_against_stable_sort<uint8_t>(DType::Bool, lines, n, 13);
    // Without NaNs a long float line goes through sort_by_splitters (zeros of both signs
    // among the ties: a stable sort keeps their order across its buckets).
    check_against_stable_sort<float>(DType::Float32, lines, n, 14, /*with_nans=*/false);
    check_against_stable_sort<double>(DType::Float64, lines, n, 15, /*with_nans=*/false);
    check_against_stable_sort<float>(DType::Float16, lines, n, 16, /*with_nans=*/false);
  }
}

// Two keys (a float primary with ties and NaNs, an int64 secondary with extremes) over
// a long line: lexicographic and stable, against std::stable_sort on the pairs.
TEST(LaxSort, TwoKeysOnALongLineMatchStableSort) {
  const int64_t n = 30000;
  std::mt19937 gen(99);
  std::vector<float> a(n);
  std::vector<int64_t> b(n);
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t r = gen();
    a[i] = r % 17 == 0 ? NAN : r % 13 == 0 ? -0.0f : static_cast<float>(r % 50) - 25;
    b[i] = r % 7 == 0 ? big : r % 11 == 0 ? small : static_cast<int64_t>(gen() % 5) - 2;
  }
  auto out = lax::sort({Array(a), Array(b), index_along({n}, 0)}, 0, true, 2);
  const auto perm = out[2].to_vector<int32_t>();
  std::vector<int32_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t i, int32_t j) {
    if (jax_less(a[i], a[j])) return true;
    if (jax_less(a[j], a[i])) return false;
    return b[i] < b[j];
  });
  EXPECT_EQ(perm, idx);
}

// Highway (vqsort) is a module libjx loads on the first sort, so a process that never
// sorts does not pay its static initializer. ctest runs each test in a process of its
// own; run with the rest of the binary, an earlier test may have sorted already.
TEST(LaxSort, HighwayLoadsOnTheFirstSort) {
  auto loaded = [] {
    void* handle = dlopen("libhwy.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (handle) dlclose(handle);
    return handle != nullptr;
  };
  if (loaded()) GTEST_SKIP() << "an earlier test of this process has sorted";
  Array x(std::vector<float>{3, 1, 2}, {3});
  EXPECT_TRUE(same_values(lax::sort(x), Array(std::vector<float>{1, 2, 3}, {3})));
  EXPECT_TRUE(loaded());
}

// ---- errors ----

TEST(LaxSortErrors, VqsortModuleMessages) {
  EXPECT_JX_ERROR(cpu::load_vqsort_module("/nonexistent/libjx_vqsort.so"),
                  "[sort] cannot load Highway's vqsort module /nonexistent/libjx_vqsort.so: ");
  EXPECT_JX_ERROR(cpu::load_vqsort_module("libz.so.1"),
                  "[sort] libz.so.1 is not jx's vqsort module: it has no jx_vqsort_functions");
}

TEST(LaxSortErrors, Messages) {
  Array a = detail::alloc_array(Aval{{2, 3}, DType::Float32, false});
  Array b = detail::alloc_array(Aval{{3, 2}, DType::Int32, false});
  EXPECT_JX_ERROR(lax::sort({a, b}, 0, true, 1), "[sort] operands must have the same shape, got f32[2,3], i32[3,2]");
  EXPECT_JX_ERROR(lax::sort({a, a}, 0, true, 0), "[sort] num_keys=0 must be between 1 and the number of operands (2)");
  EXPECT_JX_ERROR(lax::sort({a, a}, 0, true, 3), "[sort] num_keys=3 must be between 1 and the number of operands (2)");
  EXPECT_JX_ERROR(lax::sort(std::vector<Array>{}, 0, true, 1), "[sort] needs at least one operand");
  EXPECT_JX_ERROR(lax::sort(a, 2), "[sort] axis 2 is out of bounds for array of shape (2, 3)");
  EXPECT_JX_ERROR(lax::sort(a, -3), "[sort] axis -3 is out of bounds for array of shape (2, 3)");
  EXPECT_JX_ERROR(lax::sort(detail::scalar<float>(1.0f)), "[sort] axis -1 is out of bounds for array of shape ()");
  std::vector<Array> in = {a};
  EXPECT_JX_ERROR(bind(*find_primitive("sort"), in, {{"dimension", int64_t{0}}, {"num_keys", int64_t{1}}}),
                  "missing parameter 'is_stable'");
}

}  // namespace
