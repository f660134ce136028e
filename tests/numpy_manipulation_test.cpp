// jx::numpy shape manipulation and creation routines against NumPy fixtures
// (scripts/fixtures/numpy_core.py) and hand-computed values.
#include <map>

#include "test_util.h"

namespace jnp = jx::numpy;
using jx::Array;

namespace {

const std::map<std::string, Array>& fixtures() {
  static const std::map<std::string, Array> f = jx::testing::fixture_npz("numpy_core/manipulation");
  return f;
}
const Array& fx(const std::string& key) {
  auto it = fixtures().find(key);
  if (it == fixtures().end()) throw std::runtime_error("missing fixture " + key);
  return it->second;
}

// Values and shape only: NumPy's integer defaults (int64) differ from jx's (int32).
::testing::AssertionResult same_values(const Array& a, const Array& b) {
  return jx::testing::allclose(a, b, 1e-6, 1e-6, /*check_dtype=*/false);
}
#define EXPECT_SAME_VALUES(a, b) EXPECT_TRUE(same_values(a, b))

}  // namespace

TEST(NumpyManipulation, PadModes) {
  const Array& v = fx("v5");
  const Array& m = fx("m3x4");
  for (std::string mode : {"constant", "edge", "reflect", "symmetric", "wrap"}) {
    for (auto [lo, hi] : std::vector<std::pair<int64_t, int64_t>>{{1, 2}, {5, 7}, {0, 3}}) {
      std::string key = "pad_" + mode + "_" + std::to_string(lo) + "_" + std::to_string(hi);
      SCOPED_TRACE(key);
      EXPECT_SAME_VALUES(jnp::pad(v, {lo, hi}, mode), fx(key + "_v"));
      EXPECT_SAME_VALUES(jnp::pad(m, {{lo, hi}, {hi, lo}}, mode), fx(key + "_m"));
      // Non-contiguous input: a transposed view.
      EXPECT_SAME_VALUES(jnp::pad(jnp::transpose(jnp::transpose(m)), {{lo, hi}, {hi, lo}}, mode), fx(key + "_m"));
    }
  }
  EXPECT_SAME_VALUES(jnp::pad(m, 2, "constant", -1.5), fx("pad_constant_cv"));
  EXPECT_EQ(jnp::pad(m, 1).dtype(), jx::float32);
}

TEST(NumpyManipulation, TileRepeatRollRot) {
  const Array& v = fx("v5");
  const Array& m = fx("m3x4");
  EXPECT_SAME_VALUES(jnp::tile(v, {2}), fx("tile_2"));
  EXPECT_SAME_VALUES(jnp::tile(m, {2, 1, 3}), fx("tile_2_1_3"));
  EXPECT_SAME_VALUES(jnp::repeat(m, 2), fx("repeat_2"));
  EXPECT_SAME_VALUES(jnp::repeat(m, 3, 1), fx("repeat_3_ax1"));
  EXPECT_SAME_VALUES(jnp::repeat(m, std::vector<int64_t>{2, 0, 1}, 0), fx("repeat_per_ax0"));
  EXPECT_SAME_VALUES(jnp::repeat(m, Array({2, 0, 1}), 0, std::nullopt), fx("repeat_per_ax0"));
  EXPECT_SAME_VALUES(jnp::repeat(m, Array({2, 0, 1}), 0, 3), fx("repeat_per_ax0"));
  // A longer total repeats the last element; a shorter one truncates (as JAX).
  EXPECT_SAME_VALUES(jnp::repeat(Array({1, 2}), Array({1, 1}), 0, 4), Array({1, 2, 2, 2}));
  EXPECT_SAME_VALUES(jnp::repeat(Array({1, 2}), Array({2, 2}), 0, 3), Array({1, 1, 2}));
  for (int k : {-1, 0, 1, 2, 3, 5}) {
    std::string key = "rot90_" + std::string(k < 0 ? "m" : "") + std::to_string(std::abs(k));
    EXPECT_SAME_VALUES(jnp::rot90(m, k), fx(key)) << key;
  }
  for (int s : {1, -2, 7}) {
    std::string base = "roll_" + std::string(s < 0 ? "m" : "") + std::to_string(std::abs(s));
    EXPECT_SAME_VALUES(jnp::roll(m, s), fx(base + "_none")) << base;
    EXPECT_SAME_VALUES(jnp::roll(m, s, 1), fx(base + "_ax1")) << base;
  }
}

TEST(NumpyManipulation, DiagonalsAndTriangles) {
  const Array& m = fx("m3x4");
  const Array& v = fx("v5");
  const Array& t = fx("t2x3x4");
  for (int k : {-2, -1, 0, 1, 3, 5}) {
    std::string suffix = std::string(k < 0 ? "m" : "") + std::to_string(std::abs(k));
    EXPECT_SAME_VALUES(jnp::diagonal(m, k), fx("diagonal_" + suffix)) << k;
    EXPECT_SAME_VALUES(jnp::diag(v, k), fx("diag_v_" + suffix)) << k;
  }
  EXPECT_SAME_VALUES(jnp::diagonal(t, 1, 1, 2), fx("diagonal_t_1_2_1"));
  EXPECT_SAME_VALUES(jnp::diagonal(t, 0, 0, 2), fx("diagonal_t_0_0_2"));
  EXPECT_SAME_VALUES(jnp::trace(t, 0, 1, 2), fx("trace_t_0_1_2"));
  EXPECT_SAME_VALUES(jnp::moveaxis(t, 0, -1), fx("moveaxis_0_m1"));
  EXPECT_SAME_VALUES(jnp::moveaxis(t, std::vector<int64_t>{0, 1}, std::vector<int64_t>{2, 1}), fx("moveaxis_01_21"));
  for (int k : {-1, 0, 2}) {
    std::string suffix = std::string(k < 0 ? "m" : "") + std::to_string(std::abs(k));
    EXPECT_SAME_VALUES(jnp::tril(m, k), fx("tril_" + suffix));
    EXPECT_SAME_VALUES(jnp::triu(m, k), fx("triu_" + suffix));
  }
  EXPECT_ALLCLOSE(jnp::trace(jnp::ones({2, 2}, jx::int8)), jnp::asarray(Array(2)));
  EXPECT_SAME_VALUES(jnp::diagflat(Array({{1, 2}})), Array({{1, 0}, {0, 2}}));
}

TEST(NumpyManipulation, Creation) {
  EXPECT_ALLCLOSE(jnp::linspace(0, 1, 5), fx("linspace_0_1_5"));
  EXPECT_ALLCLOSE(jnp::linspace(2.0, 3.0, 7, false), fx("linspace_2_3_7_noend"));
  EXPECT_ALLCLOSE(jnp::linspace(0, 10, 4, true, jx::int32), fx("linspace_int"));
  EXPECT_ALLCLOSE(jnp::linspace(-1.0, 1.0, 9, true, jx::float64), fx("linspace_f64"), 1e-15, 1e-15);
  EXPECT_ALLCLOSE(jnp::linspace(Array({0.f, 1.f}), Array({1.f, 3.f}), 5), fx("linspace_arr"));
  EXPECT_ALLCLOSE(jnp::linspace(Array({0.f, 1.f}), Array({1.f, 3.f}), 5, true, std::nullopt, 1), fx("linspace_arr_ax1"));
  auto [samples, step] = jnp::linspace_retstep(0, 1, 5);
  EXPECT_ALLCLOSE(samples, fx("linspace_0_1_5"));
  EXPECT_ALLCLOSE(step, Array(0.25f).astype(jx::float32));
  EXPECT_ALLCLOSE(jnp::logspace(0, 2, 5), fx("logspace_0_2_5"), 1e-6, 1e-6);
  EXPECT_ALLCLOSE(jnp::logspace(0, 4, 5, true, 2.0), fx("logspace_base2"), 1e-6, 1e-6);
  EXPECT_ALLCLOSE(jnp::geomspace(1, 1000, 4), fx("geomspace_1_1000_4"), 1e-6, 1e-6);
  EXPECT_ALLCLOSE(jnp::arange(0.0, 1.0, 0.1), fx("arange_0_1_01"));
  EXPECT_ALLCLOSE(jnp::arange(-3, 10, 3), fx("arange_m3_10_3"));
  EXPECT_ALLCLOSE(jnp::arange(5, 0, -1), fx("arange_5_0_m1"));
  EXPECT_ALLCLOSE(jnp::arange(4), Array({0, 1, 2, 3}));
  EXPECT_ALLCLOSE(jnp::arange(3, jx::float64), Array(std::vector<double>{0, 1, 2}));
  EXPECT_EQ(jnp::arange(10, 0).size(), 0);
  EXPECT_ALLCLOSE(jnp::eye(3, 4, 1), fx("eye_3_4_1"));
  EXPECT_ALLCLOSE(jnp::eye(4, 3, -2), fx("eye_4_3_m2"));
  EXPECT_ALLCLOSE(jnp::tri(3, 5, 1), fx("tri_3_5_1"));
  EXPECT_ALLCLOSE(jnp::identity(2, jx::int32), Array({{1, 0}, {0, 1}}));
  EXPECT_EQ(jnp::linspace(0, 1, 0).size(), 0);
  EXPECT_ALLCLOSE(jnp::linspace(3, 4, 1), Array({3.f}));
}

TEST(NumpyManipulation, Meshgrid) {
  auto xy = jnp::meshgrid({Array({1, 2, 3}), Array({4, 5})});
  EXPECT_ALLCLOSE(xy[0], Array({{1, 2, 3}, {1, 2, 3}}));
  EXPECT_ALLCLOSE(xy[1], Array({{4, 4, 4}, {5, 5, 5}}));
  auto ij = jnp::meshgrid({Array({1, 2, 3}), Array({4, 5})}, "ij");
  EXPECT_ALLCLOSE(ij[0], Array({{1, 1}, {2, 2}, {3, 3}}));
  EXPECT_ALLCLOSE(ij[1], Array({{4, 5}, {4, 5}, {4, 5}}));
  auto three = jnp::meshgrid({Array({1, 2}), Array({3, 4, 5}), Array({6})});
  EXPECT_EQ(three[2].shape(), (jx::Shape{3, 2, 1}));
}

TEST(NumpyManipulation, ReshapeTransposeSqueeze) {
  Array x = jnp::arange(24).reshape({2, 3, 4});
  EXPECT_EQ(jnp::reshape(x, {4, -1}).shape(), (jx::Shape{4, 6}));
  EXPECT_EQ(jnp::ravel(x).shape(), (jx::Shape{24}));
  EXPECT_EQ(jnp::transpose(x).shape(), (jx::Shape{4, 3, 2}));
  EXPECT_EQ(x.T().shape(), (jx::Shape{4, 3, 2}));
  EXPECT_ALLCLOSE(jnp::transpose(jnp::reshape(jnp::arange(6), {1, 2, 3}), std::vector<int64_t>{2, 0, 1}),
                  Array(std::vector<int32_t>{0, 3, 1, 4, 2, 5}, {3, 1, 2}));
  EXPECT_EQ(jnp::swapaxes(x, 0, 2).shape(), (jx::Shape{4, 3, 2}));
  EXPECT_EQ(jnp::moveaxis(x, -1, 0).shape(), (jx::Shape{4, 2, 3}));
  Array s = jnp::zeros({1, 3, 1});
  EXPECT_EQ(jnp::squeeze(s).shape(), (jx::Shape{3}));
  EXPECT_EQ(jnp::squeeze(s, 2).shape(), (jx::Shape{1, 3}));
  EXPECT_EQ(jnp::expand_dims(jnp::zeros({3}), {0, 2}).shape(), (jx::Shape{1, 3, 1}));
  EXPECT_EQ(jnp::expand_dims(jnp::zeros({3}), -1).shape(), (jx::Shape{3, 1}));
  EXPECT_EQ(jnp::atleast_1d(Array(1.f)).shape(), (jx::Shape{1}));
  EXPECT_EQ(jnp::atleast_2d(jnp::zeros({3})).shape(), (jx::Shape{1, 3}));
  EXPECT_EQ(jnp::atleast_3d(jnp::zeros({3})).shape(), (jx::Shape{1, 3, 1}));
  EXPECT_EQ(jnp::atleast_3d(jnp::zeros({2, 3})).shape(), (jx::Shape{2, 3, 1}));
  EXPECT_EQ(jnp::reshape(jnp::zeros({0, 3}), {-1, 3}).shape(), (jx::Shape{0, 3}));
  EXPECT_EQ(jnp::matrix_transpose(x).shape(), (jx::Shape{2, 4, 3}));
  EXPECT_ALLCLOSE(jnp::reshape(Array({1, 2, 3, 4}), {2, 2}), Array({{1, 2}, {3, 4}}));
  EXPECT_ALLCLOSE(jnp::transpose(Array({{1, 2}, {3, 4}})), Array({{1, 3}, {2, 4}}));
}

TEST(NumpyManipulation, JoinAndSplit) {
  Array a = Array({{1, 2}, {3, 4}});
  Array b = Array({{5.f, 6.f}});
  Array c = jnp::concatenate({a, b});
  EXPECT_ALLCLOSE(c, Array({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}}));  // int32 + float32 -> float32
  EXPECT_ALLCLOSE(jnp::concatenate({a, a}, 1), Array({{1, 2, 1, 2}, {3, 4, 3, 4}}));
  EXPECT_ALLCLOSE(jnp::concatenate({a, Array({7})}, std::nullopt), Array({1, 2, 3, 4, 7}));
  EXPECT_ALLCLOSE(jnp::stack({Array({1, 2}), Array({3, 4})}, 1), Array({{1, 3}, {2, 4}}));
  EXPECT_ALLCLOSE(jnp::stack({Array({1, 2}), Array({3, 4})}, -1), Array({{1, 3}, {2, 4}}));
  EXPECT_ALLCLOSE(jnp::hstack({Array({1, 2}), Array({3})}), Array({1, 2, 3}));
  EXPECT_ALLCLOSE(jnp::hstack({a, a}), Array({{1, 2, 1, 2}, {3, 4, 3, 4}}));
  EXPECT_ALLCLOSE(jnp::vstack({Array({1, 2}), Array({3, 4})}), a);
  EXPECT_EQ(jnp::dstack({Array({1, 2}), Array({3, 4})}).shape(), (jx::Shape{1, 2, 2}));
  EXPECT_ALLCLOSE(jnp::column_stack({Array({1, 2}), Array({3, 4})}), Array({{1, 3}, {2, 4}}));
  auto parts = jnp::split(jnp::arange(6), 3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_ALLCLOSE(parts[2], Array({4, 5}));
  auto at = jnp::split(jnp::arange(6), std::vector<int64_t>{1, 4});
  ASSERT_EQ(at.size(), 3u);
  EXPECT_ALLCLOSE(at[1], Array({1, 2, 3}));
  auto uneven = jnp::array_split(jnp::arange(7), 3);
  ASSERT_EQ(uneven.size(), 3u);
  EXPECT_ALLCLOSE(uneven[0], Array({0, 1, 2}));
  EXPECT_ALLCLOSE(uneven[2], Array({5, 6}));
  auto cols = jnp::hsplit(a, 2);
  EXPECT_ALLCLOSE(cols[1], jnp::reshape(Array({2, 4}), {2, 1}));
  EXPECT_ALLCLOSE(jnp::flip(a), Array({{4, 3}, {2, 1}}));
  EXPECT_ALLCLOSE(jnp::fliplr(a), Array({{2, 1}, {4, 3}}));
  EXPECT_ALLCLOSE(jnp::flipud(a), Array({{3, 4}, {1, 2}}));
  EXPECT_ALLCLOSE(jnp::ravel_multi_index({Array({0, 1, 2}), Array({1, 0, 3})}, {3, 4}), Array({1, 4, 11}));
  EXPECT_ALLCLOSE(jnp::copy(a), a);
  EXPECT_ALLCLOSE(jnp::broadcast_to(Array({1, 2}), {2, 2}), Array({{1, 2}, {1, 2}}));
}

TEST(NumpyManipulation, Errors) {
  Array x = jnp::zeros({3, 4});
  EXPECT_JX_ERROR(jnp::reshape(x, {5}), "[reshape] cannot reshape array of shape (3, 4) (size 12) into shape (5,)");
  EXPECT_JX_ERROR(jnp::reshape(x, {-1, -1}), "[reshape] can only specify one unknown dimension");
  EXPECT_JX_ERROR(jnp::reshape(x, {5, -1}), "[reshape] cannot reshape");
  EXPECT_JX_ERROR(x.reshape({7}), "[reshape]");
  EXPECT_JX_ERROR(jnp::transpose(x, std::vector<int64_t>{0}), "[transpose] axes don't match array");
  EXPECT_JX_ERROR(jnp::transpose(x, std::vector<int64_t>{0, 0}), "[transpose] repeated axis 0");
  EXPECT_JX_ERROR(jnp::squeeze(x, 0), "[squeeze] cannot select an axis to squeeze out which has size not equal to one");
  EXPECT_JX_ERROR(jnp::expand_dims(x, 4), "[expand_dims] axis 4 is out of bounds");
  EXPECT_JX_ERROR(jnp::concatenate({}), "[concatenate] need at least one array");
  EXPECT_JX_ERROR(jnp::concatenate({x, jnp::zeros({3, 5})}, 0),
                  "[concatenate] all the input array dimensions except for the concatenation axis must match exactly, "
                  "but along dimension 1, the array at index 0 has size 4 and the array at index 1 has size 5");
  EXPECT_JX_ERROR(jnp::concatenate({x, jnp::zeros({3})}), "[concatenate] all the input arrays must have the same number");
  EXPECT_JX_ERROR(jnp::concatenate({Array(1.f), Array(2.f)}), "[concatenate] zero-dimensional arrays cannot be concatenated");
  EXPECT_JX_ERROR(jnp::stack({x, jnp::zeros({4, 3})}), "[stack] all input arrays must have the same shape");
  EXPECT_JX_ERROR(jnp::split(x, 3, 1), "[split] array split does not result in an equal division");
  EXPECT_JX_ERROR(jnp::split(x, 0), "[split] number of sections must be larger than 0");
  EXPECT_JX_ERROR(jnp::tile(x, {-1}), "[tile] negative repetition count -1");
  EXPECT_JX_ERROR(jnp::repeat(x, -1), "[repeat] repeats may not contain negative values");
  EXPECT_JX_ERROR(jnp::repeat(x, std::vector<int64_t>{1, 2}, 0), "[repeat]", "(3,)");
  EXPECT_JX_ERROR(jnp::repeat(x, Array({1.5f}), 0, std::nullopt), "[repeat] repeats must be integers");
  EXPECT_JX_ERROR(jnp::fliplr(jnp::zeros({3})), "[fliplr] input must be at least 2-d");
  EXPECT_JX_ERROR(jnp::rot90(x, 1, {1, 1}), "[rot90] axes must be different");
  EXPECT_JX_ERROR(jnp::rot90(jnp::zeros({3})), "[rot90] input must be at least 2-d");
  EXPECT_JX_ERROR(jnp::pad(x, 1, "median"), "[pad] unimplemented padding mode 'median'");
  EXPECT_JX_ERROR(jnp::pad(x, {-1, 0}), "[pad] index can't contain negative values");
  EXPECT_JX_ERROR(jnp::pad(x, {{1, 1}, {1, 1}, {1, 1}}), "[pad] pad_width has 3 entries for an array of shape (3, 4)");
  EXPECT_JX_ERROR(jnp::pad(jnp::zeros({0}), 1, "reflect"), "[pad] can't extend empty axis 0");
  EXPECT_JX_ERROR(jnp::diagonal(jnp::zeros({3})), "[diagonal] input must be at least 2-d");
  EXPECT_JX_ERROR(jnp::diagonal(x, 0, 1, -1), "[diagonal] axis1 and axis2 cannot be the same");
  EXPECT_JX_ERROR(jnp::diag(jnp::zeros({2, 2, 2})), "[diag] input must be 1-d or 2-d");
  EXPECT_JX_ERROR(jnp::moveaxis(x, std::vector<int64_t>{0}, std::vector<int64_t>{0, 1}),
                  "[moveaxis] source and destination must have the same number of elements");
  EXPECT_JX_ERROR(jnp::swapaxes(x, 0, 2), "[swapaxes] axis 2 is out of bounds for array of shape (3, 4)");
  EXPECT_JX_ERROR(jnp::broadcast_to(x, {4, 4}), "[broadcast_to] cannot broadcast an array of shape (3, 4) to shape (4, 4)");
  EXPECT_JX_ERROR(jnp::tril(jnp::zeros({3})), "[tril] input must be at least 2-d");
  EXPECT_JX_ERROR(jnp::meshgrid({x}, "xz"), "[meshgrid] valid values for indexing are 'xy' and 'ij'");
  EXPECT_JX_ERROR(jnp::zeros({-1}), "[zeros] negative dimensions are not allowed");
  EXPECT_JX_ERROR(jnp::eye(-1), "[eye] negative dimensions are not allowed");
  EXPECT_JX_ERROR(jnp::arange(0, 5, 0), "[arange] step must be nonzero");
  EXPECT_JX_ERROR(jnp::linspace(0, 1, -1), "[linspace] number of samples, -1, must be non-negative");
  EXPECT_JX_ERROR(jnp::ravel_multi_index({Array({3})}, {3}), "[ravel_multi_index] invalid entry 3");
  EXPECT_JX_ERROR(jnp::geomspace(0, 1, 3), "[geomspace] geometric sequence cannot include zero");
}
