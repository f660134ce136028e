// jx::lax gather and scatter (set, add, mul, min, max) against NumPy oracles (fancy
// indexing, np.add.at and friends, loops for windows; scripts/fixtures/shape.py, where
// JAX's lax.gather/scatter cross-check them), for every dtype, several index dtypes,
// contiguous and strided operands, every mode. Plus hand-checked large cases that take
// the parallel paths, and the error messages.
#include <cmath>
#include <limits>
#include <numeric>

#include "core/array_internal.h"
#include "test_util.h"

namespace jx {
namespace {

namespace lax = jx::lax;
using jx::testing::fixture;
using Mode = lax::GatherScatterMode;

using jx::testing::arange;
using jx::testing::as_dtype;
using jx::testing::kAllDTypes;



// The same values as `a`, but held as a view with negative strides: the data reversed
// (reversing every axis of a row-major array reverses its flat order), then lax::rev.
Array strided_copy(const Array& a) {
  if (a.ndim() == 0) return a;
  Array flat = as_dtype(a, a.dtype());
  std::vector<unsigned char> bytes(static_cast<size_t>(flat.nbytes()) + 1);
  flat.copy_to(bytes.data(), a.dtype());
  const auto w = static_cast<size_t>(a.itemsize());
  std::vector<unsigned char> rev(bytes.size());
  for (size_t i = 0; i < static_cast<size_t>(a.size()); ++i)
    std::memcpy(&rev[i * w], &bytes[(static_cast<size_t>(a.size()) - 1 - i) * w], w);
  std::vector<int64_t> all(static_cast<size_t>(a.ndim()));
  std::iota(all.begin(), all.end(), 0);
  return lax::rev(Array(rev.data(), a.shape(), a.dtype()), all);
}

bool all_nonnegative(const Array& indices) {
  for (int64_t v : indices.to_vector<int64_t>())
    if (v < 0) return false;
  return true;
}

// Index dtypes to run each case with: signed always, unsigned when the values allow.
std::vector<DType> index_dtypes(const Array& indices) {
  std::vector<DType> out = {DType::Int32, DType::Int64, DType::Int8};
  if (all_nonnegative(indices)) out.push_back(DType::UInt32);
  return out;
}

// ---- gather ----

struct GatherCase {
  const char* name;  // fixtures shape/gather_<name>_{indices,expected}.npy
  Shape operand;
  lax::GatherDimensionNumbers dnums;
  Shape slice_sizes;
  Mode mode = Mode::Clip;
  std::optional<int32_t> fill = std::nullopt;
};

const std::vector<GatherCase>& gather_cases() {
  static const std::vector<GatherCase> cases = {
      {"take_rows", {5, 4}, {{1}, {0}, {0}}, {1, 4}},
      {"take_cols", {5, 4}, {{0}, {1}, {1}}, {5, 1}},
      {"take_points", {5, 4}, {{}, {0, 1}, {0, 1}}, {1, 1}},
      {"take_points_swapped", {5, 4}, {{}, {0, 1}, {1, 0}}, {1, 1}},
      {"windows", {6, 5}, {{1, 2}, {}, {0, 1}}, {2, 3}},
      {"batch_in_middle", {4, 5, 6}, {{0, 2}, {1}, {1}}, {4, 1, 6}},
      {"partial_slice", {4, 5, 6}, {{0, 2}, {1}, {1}}, {2, 1, 3}},
      {"clip_rows", {5, 4}, {{1}, {0}, {0}}, {1, 4}, Mode::Clip},
      {"fill_rows", {5, 4}, {{1}, {0}, {0}}, {1, 4}, Mode::FillOrDrop, -1},
      {"fill_windows", {6, 5}, {{1, 2}, {}, {0, 1}}, {2, 3}, Mode::FillOrDrop, -7},
      {"clip_windows", {6, 5}, {{1, 2}, {}, {0, 1}}, {2, 3}, Mode::Clip},
      {"empty_indices", {5, 4}, {{1}, {0}, {0}}, {1, 4}},
      {"scalar_operand", {}, {{}, {}, {}}, {}},
      {"batch_2d_points", {5, 4}, {{}, {0, 1}, {0, 1}}, {1, 1}},
  };
  return cases;
}

class GatherFixtureTest : public ::testing::TestWithParam<GatherCase> {};

TEST_P(GatherFixtureTest, MatchesNumPyForEveryDType) {
  const GatherCase& c = GetParam();
  const std::string prefix = std::string("shape/gather_") + c.name;
  Array indices = fixture(prefix + "_indices");
  Array expected = fixture(prefix + "_expected");
  Array fill = c.fill ? Array(*c.fill) : Array();
  for (DType dt : kAllDTypes) {
    for (DType it : index_dtypes(indices)) {
      for (bool strided : {false, true}) {
        SCOPED_TRACE(detail::cat(dtype_name(dt), " indices ", dtype_name(it), strided ? " strided" : ""));
        Array x = as_dtype(arange(c.operand), dt);
        Array idx = as_dtype(indices, it);
        if (strided) {
          x = strided_copy(x);
          idx = strided_copy(idx);
        }
        Array y = lax::gather(x, idx, c.dnums, c.slice_sizes, c.mode, fill);
        EXPECT_EQ(y.dtype(), dt);
        EXPECT_ALLCLOSE(y, as_dtype(expected, dt), 0, 0);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, GatherFixtureTest, ::testing::ValuesIn(gather_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

const lax::GatherDimensionNumbers kRows{{1}, {0}, {0}};

TEST(Gather, DefaultFillValuesFollowJax) {
  auto row1 = [&](DType dt) {
    return lax::gather(as_dtype(arange({3, 2}), dt), lax::reshape(Array({1, 9}), {2, 1}), kRows, {1, 2},
                       Mode::FillOrDrop);
  };
  auto f = row1(DType::Float32).to_vector<float>();
  EXPECT_EQ(f[0], 2.0f);
  EXPECT_TRUE(std::isnan(f[2]) && std::isnan(f[3]));
  EXPECT_TRUE(std::isnan(row1(DType::Float16).to_vector<float>()[3]));
  EXPECT_TRUE(std::isnan(row1(DType::BFloat16).to_vector<float>()[3]));
  EXPECT_TRUE(std::isnan(row1(DType::Complex64).to_vector<complex64_t>()[3].real()));
  EXPECT_EQ(row1(DType::Int32).to_vector<int32_t>()[3], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(row1(DType::Int8).to_vector<int8_t>()[3], std::numeric_limits<int8_t>::min());
  EXPECT_EQ(row1(DType::UInt8).to_vector<uint8_t>()[3], 255);
  EXPECT_EQ(row1(DType::UInt32).to_vector<uint32_t>()[3], std::numeric_limits<uint32_t>::max());
  auto b = row1(DType::Bool).to_vector<uint8_t>();
  EXPECT_EQ(b[2], 1);
  EXPECT_EQ(b[3], 1);
  // A fill_value of another dtype is converted to the operand's.
  Array g = lax::gather(as_dtype(arange({3, 2}), DType::Int32), lax::reshape(Array({1, 9}), {2, 1}), kRows, {1, 2},
                        Mode::FillOrDrop, Array(2.75));
  EXPECT_EQ(g.to_vector<int32_t>(), (std::vector<int32_t>{2, 3, 2, 2}));
}

TEST(Gather, PromiseInBoundsClampsLikeClip) {
  Array x = arange({5, 4});
  Array idx = lax::reshape(Array({-3, 7, 2}), {3, 1});
  EXPECT_ALLCLOSE(lax::gather(x, idx, kRows, {1, 4}, Mode::PromiseInBounds), lax::gather(x, idx, kRows, {1, 4}), 0,
                  0);
}

TEST(Gather, KeepsWeakTypeAndIgnoresFillOutsideFillMode) {
  Array w = lax::broadcast_in_dim(Array(1.5f), {3}, {});
  Array idx = lax::reshape(Array({0, 2}), {2, 1});
  lax::GatherDimensionNumbers points{{}, {0}, {0}};
  EXPECT_TRUE(lax::gather(w, idx, points, {1}).weak_type());
  EXPECT_EQ(lax::gather(w, idx, points, {1}, Mode::Clip, Array(7.0f)).to_vector<float>(),
            (std::vector<float>{1.5f, 1.5f}));
}

// Deterministic pseudo-random indices in [lo, hi).
std::vector<int32_t> lcg_indices(size_t n, int32_t lo, int32_t hi, uint32_t seed) {
  std::vector<int32_t> out(n);
  uint32_t s = seed;
  for (auto& v : out) {
    s = s * 1664525u + 1013904223u;
    v = lo + static_cast<int32_t>((s >> 8) % static_cast<uint32_t>(hi - lo));
  }
  return out;
}

// Large enough to split across threads; checked by a hand loop.
TEST(Gather, LargeRowAndPointGathers) {
  const int64_t rows = 20000, cols = 16, n = 50000;
  Array x = as_dtype(arange({rows, cols}), DType::Float32);
  auto rid = lcg_indices(static_cast<size_t>(n), -5, static_cast<int32_t>(rows + 5), 1);
  Array y = lax::gather(x, Array(rid, {n, 1}), kRows, {1, cols});
  auto v = y.to_vector<float>();
  bool ok = true;
  for (int64_t i = 0; i < n && ok; ++i) {
    int64_t r = std::clamp<int64_t>(rid[static_cast<size_t>(i)], 0, rows - 1);
    for (int64_t c = 0; c < cols && ok; ++c) ok = v[static_cast<size_t>(i * cols + c)] == static_cast<float>(r * cols + c);
  }
  EXPECT_TRUE(ok);
  // Points from a transposed (strided) operand, one element per index vector.
  Array xt = lax::transpose(x, {1, 0});  // (cols, rows)
  auto pr = lcg_indices(static_cast<size_t>(2 * n), 0, static_cast<int32_t>(cols), 2);
  auto pc = lcg_indices(static_cast<size_t>(n), 0, static_cast<int32_t>(rows), 3);
  std::vector<int32_t> pts(static_cast<size_t>(2 * n));
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    pts[2 * i] = pr[i];
    pts[2 * i + 1] = pc[i];
  }
  auto p = lax::gather(xt, Array(pts, {n, 2}), {{}, {0, 1}, {0, 1}}, {1, 1}).to_vector<float>();
  ok = true;
  for (size_t i = 0; i < static_cast<size_t>(n) && ok; ++i)
    ok = p[i] == static_cast<float>(static_cast<int64_t>(pc[i]) * cols + pts[2 * i]);
  EXPECT_TRUE(ok);
}

// ---- scatter ----

enum class Kind { Set, Add, Mul, Min, Max };

struct ScatterCase {
  const char* name;  // fixtures shape/scatter_<name>_{operand,indices,updates,expected}.npy
  Kind kind;
  lax::ScatterDimensionNumbers dnums;
  Mode mode = Mode::FillOrDrop;
};

Array run_scatter(Kind kind, const Array& x, const Array& idx, const Array& upd, const lax::ScatterDimensionNumbers& d,
                  Mode mode) {
  switch (kind) {
    case Kind::Set: return lax::scatter(x, idx, upd, d, mode);
    case Kind::Add: return lax::scatter_add(x, idx, upd, d, mode);
    case Kind::Mul: return lax::scatter_mul(x, idx, upd, d, mode);
    case Kind::Min: return lax::scatter_min(x, idx, upd, d, mode);
    case Kind::Max: return lax::scatter_max(x, idx, upd, d, mode);
  }
  return Array();
}

const lax::ScatterDimensionNumbers kRowUpdates{{1}, {0}, {0}};
const lax::ScatterDimensionNumbers kPointUpdates{{}, {0, 1}, {0, 1}};
const lax::ScatterDimensionNumbers kWindowUpdates{{1, 2}, {}, {0, 1}};

const std::vector<ScatterCase>& scatter_cases() {
  static const std::vector<ScatterCase> cases = {
      {"add_rows", Kind::Add, kRowUpdates},
      {"mul_rows", Kind::Mul, kRowUpdates},
      {"min_rows", Kind::Min, kRowUpdates},
      {"max_rows", Kind::Max, kRowUpdates},
      {"set_rows", Kind::Set, kRowUpdates},
      {"add_points", Kind::Add, kPointUpdates},
      {"max_points", Kind::Max, kPointUpdates},
      {"set_windows_fill", Kind::Set, kWindowUpdates, Mode::FillOrDrop},
      {"add_windows_fill", Kind::Add, kWindowUpdates, Mode::FillOrDrop},
      {"set_windows_clip", Kind::Set, kWindowUpdates, Mode::Clip},
      {"add_windows_clip", Kind::Add, kWindowUpdates, Mode::Clip},
      {"add_rows_drop", Kind::Add, kRowUpdates, Mode::FillOrDrop},
      {"add_rows_clip", Kind::Add, kRowUpdates, Mode::Clip},
      {"add_cols", Kind::Add, {{0}, {1}, {1}}},
      {"add_empty", Kind::Add, kRowUpdates},
  };
  return cases;
}

class ScatterFixtureTest : public ::testing::TestWithParam<ScatterCase> {};

TEST_P(ScatterFixtureTest, MatchesNumPyForEveryDType) {
  const ScatterCase& c = GetParam();
  const std::string prefix = std::string("shape/scatter_") + c.name;
  Array operand = fixture(prefix + "_operand");
  Array indices = fixture(prefix + "_indices");
  Array updates = fixture(prefix + "_updates");
  Array expected = fixture(prefix + "_expected");
  for (DType dt : kAllDTypes) {
    for (DType it : index_dtypes(indices)) {
      for (bool strided : {false, true}) {
        SCOPED_TRACE(detail::cat(dtype_name(dt), " indices ", dtype_name(it), strided ? " strided" : ""));
        Array x = as_dtype(operand, dt), u = as_dtype(updates, dt), idx = as_dtype(indices, it);
        if (strided) {
          x = strided_copy(x);
          u = strided_copy(u);
          idx = strided_copy(idx);
        }
        Array before = as_dtype(x, dt);
        Array y = run_scatter(c.kind, x, idx, u, c.dnums, c.mode);
        EXPECT_EQ(y.dtype(), dt);
        EXPECT_ALLCLOSE(y, as_dtype(expected, dt), 0, 0);
        EXPECT_ALLCLOSE(x, before, 0, 0);  // the operand is never modified
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ScatterFixtureTest, ::testing::ValuesIn(scatter_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Scatter, PromiseInBoundsDropsOutOfBoundsWindows) {
  Array x = arange({5, 3});
  Array idx = lax::reshape(Array({-1, 5, 2}), {3, 1});
  Array u = lax::broadcast_in_dim(Array(100), {3, 3}, {});
  Array want = lax::scatter_add(x, idx, u, kRowUpdates, Mode::FillOrDrop);
  EXPECT_ALLCLOSE(lax::scatter_add(x, idx, u, kRowUpdates, Mode::PromiseInBounds), want, 0, 0);
  EXPECT_EQ(want.to_vector<int32_t>()[6], 106);
  EXPECT_EQ(want.to_vector<int32_t>()[0], 0);
}

TEST(Scatter, MinMaxPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Array x = Array(std::vector<float>{1.0f, nan, 3.0f, 4.0f});
  Array idx = lax::reshape(Array({1, 2, 3}), {3, 1});
  Array u = Array(std::vector<float>{5.0f, nan, 0.0f});
  lax::ScatterDimensionNumbers d{{}, {0}, {0}};
  auto mx = lax::scatter_max(x, idx, u, d).to_vector<float>();
  EXPECT_EQ(mx[0], 1.0f);
  EXPECT_TRUE(std::isnan(mx[1]) && std::isnan(mx[2]));
  EXPECT_EQ(mx[3], 4.0f);
  auto mn = lax::scatter_min(x, idx, u, d).to_vector<float>();
  EXPECT_TRUE(std::isnan(mn[1]) && std::isnan(mn[2]));
  EXPECT_EQ(mn[3], 0.0f);
}

TEST(Scatter, IntegerArithmeticWraps) {
  lax::ScatterDimensionNumbers d{{}, {0}, {0}};
  Array idx = lax::reshape(Array({0, 0}), {2, 1});
  Array x8 = Array(std::vector<int8_t>{127, 0});
  EXPECT_EQ(lax::scatter_add(x8, idx, Array(std::vector<int8_t>{1, 1}), d).to_vector<int32_t>()[0], -127);
  Array x32 = Array(std::vector<int32_t>{std::numeric_limits<int32_t>::max()});
  Array one = lax::reshape(Array({0}), {1, 1});
  EXPECT_EQ(lax::scatter_add(x32, one, Array(std::vector<int32_t>{1}), d).to_vector<int32_t>()[0],
            std::numeric_limits<int32_t>::min());
  Array x64 = Array(std::vector<int64_t>{int64_t{1} << 62});
  EXPECT_EQ(lax::scatter_mul(x64, one, Array(std::vector<int64_t>{4}), d).to_vector<int64_t>()[0], 0);
}

TEST(Scatter, KeepsOperandWeakTypeAndBroadcastUpdates) {
  Array w = lax::broadcast_in_dim(Array(1.0f), {4}, {});
  Array idx = lax::reshape(Array({3, 0, 3}), {3, 1});
  Array u = lax::broadcast_in_dim(Array(2.0f), {3}, {});
  Array y = lax::scatter_add(w, idx, u, {{}, {0}, {0}});
  EXPECT_TRUE(y.weak_type());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3.0f, 1.0f, 1.0f, 5.0f}));
}

TEST(Scatter, LargeScatterAddWithDuplicates) {
  const int64_t size = 1000, n = 200000;
  Array x = as_dtype(arange({size}), DType::Int64);
  auto id = lcg_indices(static_cast<size_t>(n), -10, static_cast<int32_t>(size + 10), 4);
  std::vector<int64_t> upd(static_cast<size_t>(n));
  std::iota(upd.begin(), upd.end(), 1);
  Array y = lax::scatter_add(x, Array(id, {n, 1}), Array(upd), {{}, {0}, {0}});
  std::vector<int64_t> want(static_cast<size_t>(size));
  std::iota(want.begin(), want.end(), 0);
  for (size_t i = 0; i < id.size(); ++i)
    if (id[i] >= 0 && id[i] < size) want[static_cast<size_t>(id[i])] += upd[i];
  EXPECT_EQ(y.to_vector<int64_t>(), want);
  // Set with duplicates: the last update for an index wins.
  Array s = lax::scatter(x, Array(id, {n, 1}), Array(upd), {{}, {0}, {0}});
  std::iota(want.begin(), want.end(), 0);
  for (size_t i = 0; i < id.size(); ++i)
    if (id[i] >= 0 && id[i] < size) want[static_cast<size_t>(id[i])] = upd[i];
  EXPECT_EQ(s.to_vector<int64_t>(), want);
}

TEST(Primitives, RegisteredWithTraitsAndModeParam) {
  for (const char* name : {"gather", "scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"})
    ASSERT_NE(find_primitive(name), nullptr) << name;
  EXPECT_TRUE(find_primitive("gather")->has(kLinear));
  EXPECT_TRUE(find_primitive("scatter_add")->has(kLinear));
  EXPECT_FALSE(find_primitive("scatter_max")->has(kLinear));
  Params p{{"offset_dims", std::vector<int64_t>{1}},       {"collapsed_slice_dims", std::vector<int64_t>{0}},
           {"start_index_map", std::vector<int64_t>{0}},   {"slice_sizes", std::vector<int64_t>{1, 4}},
           {"mode", std::string("fill")}};
  std::vector<Aval> in = {Aval{{5, 4}, DType::Float32}, Aval{{7, 1}, DType::Int32}};
  EXPECT_EQ(find_primitive("gather")->abstract_eval(in, p)[0].str(), "f32[7,4]");
  p.set("mode", std::string("wrap"));
  EXPECT_JX_ERROR(find_primitive("gather")->abstract_eval(in, p), "[gather]", "unknown mode 'wrap'");
}

// ---- error messages ----

TEST(Errors, Gather) {
  Array x = arange({5, 4});
  Array idx = lax::reshape(Array({1, 2}), {2, 1});
  EXPECT_JX_ERROR(lax::gather(x, as_dtype(idx, DType::Float32), kRows, {1, 4}), "[gather]", "integer dtype",
                  "f32[2,1]", "i32[5,4]");
  EXPECT_JX_ERROR(lax::gather(x, Array(1), kRows, {1, 4}), "[gather]", "at least one axis");
  EXPECT_JX_ERROR(lax::gather(x, idx, {{2}, {0}, {0}}, {1, 4}), "[gather]", "offset_dims (2,)", "out of range");
  EXPECT_JX_ERROR(lax::gather(x, idx, {{0, 0}, {}, {0}}, {5, 4}), "[gather]", "offset_dims", "repeats");
  EXPECT_JX_ERROR(lax::gather(x, idx, {{}, {1, 0}, {0}}, {1, 1}), "[gather]", "collapsed_slice_dims", "sorted");
  EXPECT_JX_ERROR(lax::gather(x, idx, {{1}, {2}, {0}}, {1, 4}), "[gather]", "collapsed_slice_dims (2,)");
  EXPECT_JX_ERROR(lax::gather(x, idx, {{1}, {0}, {0, 1}}, {1, 4}), "[gather]", "start_index_map (0, 1)",
                  "last axis of indices, of size 1");
  EXPECT_JX_ERROR(lax::gather(x, lax::reshape(Array({1, 2}), {1, 2}), {{}, {0, 1}, {0, 0}}, {1, 1}), "[gather]",
                  "start_index_map (0, 0)", "repeats");
  EXPECT_JX_ERROR(lax::gather(x, idx, kRows, {1}), "[gather]", "slice_sizes (1,)", "one entry per operand");
  EXPECT_JX_ERROR(lax::gather(x, idx, kRows, {1, 5}), "[gather]", "slice_sizes (1, 5)", "i32[5,4]");
  EXPECT_JX_ERROR(lax::gather(x, idx, kRows, {2, 4}), "[gather]", "slice size 1", "(2, 4)");
  // An empty index vector still gathers one window per batch position: sizes are checked.
  Array none = as_dtype(arange({3, 0}), DType::Int32);
  EXPECT_JX_ERROR(lax::gather(arange({2}), none, {{1}, {}, {}}, {5}), "[gather]", "slice_sizes (5,)");
  EXPECT_EQ(lax::gather(arange({2}), as_dtype(arange({0, 1}), DType::Int32), {{1}, {}, {0}}, {5}).shape(),
            (Shape{0, 5}));
  EXPECT_JX_ERROR(lax::gather(x, idx, {{}, {0}, {0}}, {1, 4}), "[gather]", "offset dimension or collapsed");
  EXPECT_JX_ERROR(lax::gather(x, idx, kRows, {1, 4}, Mode::FillOrDrop, arange({2})), "[gather]", "fill_value",
                  "i32[2]");
}

TEST(Errors, Scatter) {
  Array x = arange({5, 3});
  Array idx = lax::reshape(Array({1, 2}), {2, 1});
  Array u = arange({2, 3});
  EXPECT_JX_ERROR(lax::scatter(x, as_dtype(idx, DType::Float32), u, kRowUpdates), "[scatter]", "integer dtype",
                  "f32[2,1]");
  EXPECT_JX_ERROR(lax::scatter_add(x, idx, as_dtype(u, DType::Float32), kRowUpdates), "[scatter_add]",
                  "operand's dtype", "i32[5,3]", "f32[2,3]");
  EXPECT_JX_ERROR(lax::scatter_mul(x, idx, arange({2}), kRowUpdates), "[scatter_mul]", "update_window_dims (1,)",
                  "out of range");
  EXPECT_JX_ERROR(lax::scatter_min(x, idx, arange({2, 3, 1}), kRowUpdates), "[scatter_min]", "rank 2");
  EXPECT_JX_ERROR(lax::scatter_max(x, idx, u, {{1}, {}, {0}}), "[scatter_max]", "cover the operand's rank 2");
  EXPECT_JX_ERROR(lax::scatter(x, idx, u, {{1}, {0}, {0, 1}}), "[scatter]", "scatter_dims_to_operand_dims (0, 1)");
  EXPECT_JX_ERROR(lax::scatter(x, idx, arange({2, 4}), kRowUpdates), "[scatter]", "size 4", "exceeds");
  EXPECT_JX_ERROR(lax::scatter(x, idx, arange({3, 3}), kRowUpdates), "[scatter]", "batch axes of indices (2,)");
  EXPECT_JX_ERROR(lax::scatter(x, idx, u, {{1}, {3}, {0}}), "[scatter]", "inserted_window_dims (3,)");
  EXPECT_JX_ERROR(lax::scatter(x, Array(0), u, kRowUpdates), "[scatter]", "at least one axis");
}

}  // namespace
}  // namespace jx
