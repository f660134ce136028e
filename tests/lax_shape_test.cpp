// jx::lax shape primitives: iota, broadcast_in_dim, broadcast, reshape, transpose,
// squeeze, expand_dims, rev. Values are checked against NumPy fixtures
// (scripts/fixtures/shape.py) for every dtype; views are checked to share storage.
#include <functional>
#include <numeric>

#include "core/array_internal.h"
#include "test_util.h"

namespace jx {
namespace {

namespace lax = jx::lax;
using jx::testing::fixture;

using jx::testing::arange;
using jx::testing::as_dtype;
using jx::testing::kAllDTypes;



bool shares_storage(const Array& a, const Array& b) { return a.impl().storage == b.impl().storage; }

struct ShapeCase {
  const char* name;  // fixture tests/fixtures/shape/<name>.npy
  Shape input;
  std::function<Array(const Array&)> op;
  bool view;  // the result must share the input's storage
};

const std::vector<ShapeCase>& shape_cases() {
  static const std::vector<ShapeCase> cases = {
      {"bid_vec_to_mat", {3}, [](const Array& x) { return lax::broadcast_in_dim(x, {2, 3}, {1}); }, true},
      {"bid_col", {3, 1}, [](const Array& x) { return lax::broadcast_in_dim(x, {3, 4}, {0, 1}); }, true},
      {"bid_middle", {3}, [](const Array& x) { return lax::broadcast_in_dim(x, {2, 3, 4}, {1}); }, true},
      {"bid_scalar", {}, [](const Array& x) { return lax::broadcast_in_dim(x, {2, 3}, {}); }, true},
      {"bid_to_empty", {1, 3}, [](const Array& x) { return lax::broadcast_in_dim(x, {0, 3}, {0, 1}); }, true},
      {"broadcast_leading", {2, 3}, [](const Array& x) { return lax::broadcast(x, {4}); }, true},
      {"reshape_flat", {3, 4}, [](const Array& x) { return lax::reshape(x, {12}); }, true},
      {"reshape_split", {12}, [](const Array& x) { return lax::reshape(x, {2, 2, 3}); }, true},
      {"reshape_of_transpose", {3, 4},
       [](const Array& x) { return lax::reshape(lax::transpose(x, {1, 0}), {12}); }, false},
      {"reshape_of_broadcast", {3},
       [](const Array& x) { return lax::reshape(lax::broadcast_in_dim(x, {4, 3}, {1}), {2, 2, 3}); }, true},
      {"reshape_of_slice", {4, 6},
       [](const Array& x) { return lax::reshape(lax::slice(x, {0, 1}, {4, 5}), {4, 2, 2}); }, true},
      // Reversed rows cannot merge with their columns: NumPy copies here too.
      {"reshape_of_rev", {3, 4}, [](const Array& x) { return lax::reshape(lax::rev(x, {0}), {6, 2}); }, false},
      {"reshape_to_scalar", {1, 1}, [](const Array& x) { return lax::reshape(x, {}); }, true},
      {"reshape_empty", {0, 4}, [](const Array& x) { return lax::reshape(x, {2, 0, 3}); }, true},
      {"transpose_2d", {3, 4}, [](const Array& x) { return lax::transpose(x, {1, 0}); }, true},
      {"transpose_3d", {2, 3, 4}, [](const Array& x) { return lax::transpose(x, {2, 0, 1}); }, true},
      {"transpose_twice", {2, 3, 4},
       [](const Array& x) { return lax::transpose(lax::transpose(x, {1, 2, 0}), {2, 0, 1}); }, true},
      {"transpose_big", {70, 45}, [](const Array& x) { return lax::transpose(x, {-1, -2}); }, true},
      {"squeeze_02", {1, 3, 1, 2}, [](const Array& x) { return lax::squeeze(x, {0, 2}); }, true},
      {"squeeze_last", {3, 1}, [](const Array& x) { return lax::squeeze(x, {-1}); }, true},
      {"expand_dims_03", {3, 4}, [](const Array& x) { return lax::expand_dims(x, {0, 3}); }, true},
      {"expand_dims_neg", {3, 4}, [](const Array& x) { return lax::expand_dims(x, {-1}); }, true},
      {"rev_1", {3, 4}, [](const Array& x) { return lax::rev(x, {1}); }, true},
      {"rev_02", {2, 3, 4}, [](const Array& x) { return lax::rev(x, {0, -1}); }, true},
      {"rev_of_rev_of_slice", {5, 6},
       [](const Array& x) { return lax::rev(lax::rev(lax::slice(x, {1, 0}, {5, 6}, {1, 2}), {0}), {1}); }, true},
  };
  return cases;
}

class ShapeFixtureTest : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(ShapeFixtureTest, MatchesNumPyForEveryDType) {
  const ShapeCase& c = GetParam();
  Array expected = fixture(std::string("shape/") + c.name);
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    Array x = as_dtype(arange(c.input), dt);
    Array y = c.op(x);
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_ALLCLOSE(y, as_dtype(expected, dt), 0, 0);
    EXPECT_EQ(shares_storage(x, y), c.view);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ShapeFixtureTest, ::testing::ValuesIn(shape_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- iota ----

TEST(Iota, MatchesArangeForNumericDTypes) {
  for (DType dt : kAllDTypes) {
    if (dt == DType::Bool) continue;
    SCOPED_TRACE(dtype_name(dt));
    EXPECT_ALLCLOSE(lax::iota(dt, 5), as_dtype(fixture("shape/iota_5"), dt), 0, 0);
    EXPECT_ALLCLOSE(lax::broadcasted_iota(dt, {2, 3, 4}, 1), as_dtype(fixture("shape/broadcasted_iota_234_d1"), dt),
                    0, 0);
    EXPECT_ALLCLOSE(lax::broadcasted_iota(dt, {2, 3}, -2), as_dtype(fixture("shape/broadcasted_iota_23_d0"), dt), 0,
                    0);
  }
}

TEST(Iota, EmptyAndNotWeak) {
  Array e = lax::iota(DType::Float32, 0);
  EXPECT_EQ(e.shape(), Shape{0});
  EXPECT_FALSE(e.weak_type());
  EXPECT_EQ(lax::broadcasted_iota(DType::Int32, {3, 0}, 0).shape(), (Shape{3, 0}));
}

TEST(Iota, Errors) {
  EXPECT_JX_ERROR(lax::iota(DType::Bool, 3), "[iota]", "numeric", "bool");
  EXPECT_JX_ERROR(lax::iota(DType::Int32, -1), "[iota]", "non-negative", "(-1,)");
  EXPECT_JX_ERROR(lax::broadcasted_iota(DType::Int32, {2, 3}, 2), "[iota]", "dimension 2", "(2, 3)");
  EXPECT_JX_ERROR(lax::broadcasted_iota(DType::Int32, {}, 0), "[iota]", "dimension 0", "()");
}

// ---- views: strides, weak types ----

TEST(Views, BroadcastUsesZeroStrides) {
  Array x = arange({3, 1});
  Array y = lax::broadcast_in_dim(x, {2, 3, 4}, {1, 2});
  EXPECT_EQ(detail::strides(y), (std::vector<int64_t>{0, 1, 0}));
}

TEST(Views, RevUsesNegativeStrides) {
  Array y = lax::rev(arange({2, 3}), {1});
  EXPECT_EQ(detail::strides(y), (std::vector<int64_t>{3, -1}));
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{2, 1, 0, 5, 4, 3}));
}

TEST(Views, RevOfEmptyAndScalar) {
  Array e = lax::rev(arange({0, 3}), {0, 1});
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
  EXPECT_EQ(e.size(), 0);
  Array s = lax::rev(arange({}), {});
  EXPECT_EQ(s.item<int32_t>(), 0);
}

TEST(Views, KeepWeakType) {
  Array w = Array(2.5f);  // a weak float32 scalar
  ASSERT_TRUE(w.weak_type());
  Array b = lax::broadcast_in_dim(w, {2, 2}, {});
  EXPECT_TRUE(b.weak_type());
  EXPECT_TRUE(lax::reshape(b, {4}).weak_type());
  EXPECT_TRUE(lax::transpose(b, {1, 0}).weak_type());
  EXPECT_TRUE(lax::expand_dims(w, {0}).weak_type());
  EXPECT_TRUE(lax::squeeze(lax::expand_dims(w, {0}), {0}).weak_type());
  EXPECT_TRUE(lax::rev(b, {0}).weak_type());
  EXPECT_FALSE(lax::reshape(arange({2, 2}), {4}).weak_type());
}

TEST(Views, ReshapeOfNonContiguousCopiesOnlyWhenNeeded) {
  Array x = arange({4, 6});
  // Splitting a strided (sliced) dim is expressible as a view...
  Array s = lax::slice(x, {0, 0}, {4, 6}, {1, 2});
  EXPECT_TRUE(shares_storage(x, lax::reshape(s, {2, 2, 3})));
  Array r = lax::reshape(lax::rev(x, {0}), {4, 3, 2});
  EXPECT_TRUE(shares_storage(x, r));
  EXPECT_EQ(r.to_vector<int32_t>()[0], 18);
  // ...merging a transposed pair is not.
  Array t = lax::transpose(x, {1, 0});
  Array flat = lax::reshape(t, {24});
  EXPECT_FALSE(shares_storage(x, flat));
  EXPECT_TRUE(detail::is_contiguous(flat));
  EXPECT_EQ(flat.to_vector<int32_t>()[1], 6);
}

// The parallel, tiled transpose-copy path on a larger array, checked by a hand loop.
TEST(Views, LargeTransposeCopy) {
  const int64_t rows = 300, cols = 257;
  Array x = arange({rows, cols});
  Array flat = lax::reshape(lax::transpose(x, {1, 0}), {rows * cols});
  auto got = flat.to_vector<int32_t>();
  bool ok = true;
  for (int64_t c = 0; c < cols && ok; ++c)
    for (int64_t r = 0; r < rows && ok; ++r) ok = got[static_cast<size_t>(c * rows + r)] == r * cols + c;
  EXPECT_TRUE(ok);
}

TEST(Primitives, RegisteredWithTraits) {
  for (const char* name : {"broadcast_in_dim", "reshape", "transpose", "squeeze", "expand_dims", "rev"}) {
    const Primitive* p = find_primitive(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_TRUE(p->has(kShapeOnly)) << name;
    EXPECT_TRUE(p->has(kLinear)) << name;
    EXPECT_FALSE(p->has(kElementwise)) << name;
  }
  ASSERT_NE(find_primitive("iota"), nullptr);
}

TEST(Primitives, ParamsUseJaxNames) {
  const Primitive* p = find_primitive("broadcast_in_dim");
  std::vector<Aval> out = p->abstract_eval(
      std::vector<Aval>{Aval{{3}, DType::Float32}},
      Params{{"shape", std::vector<int64_t>{2, 3}}, {"broadcast_dimensions", std::vector<int64_t>{1}}});
  EXPECT_EQ(out[0].str(), "f32[2,3]");
  out = find_primitive("iota")->abstract_eval(
      {}, Params{{"dtype", DType::Int32}, {"shape", std::vector<int64_t>{4}}, {"dimension", int64_t{0}}});
  EXPECT_EQ(out[0].str(), "i32[4]");
}

// ---- error messages ----

TEST(Errors, BroadcastInDim) {
  Array x = arange({3, 1});
  EXPECT_JX_ERROR(lax::broadcast_in_dim(x, {3, 4}, {0}), "[broadcast_in_dim]", "one entry per operand dimension",
                  "(3, 1)");
  EXPECT_JX_ERROR(lax::broadcast_in_dim(x, {3}, {0, 1}), "[broadcast_in_dim]", "fewer dimensions", "(3, 1)", "(3,)");
  EXPECT_JX_ERROR(lax::broadcast_in_dim(x, {3, 4}, {0, 2}), "[broadcast_in_dim]", "out of bounds", "(3, 4)");
  EXPECT_JX_ERROR(lax::broadcast_in_dim(x, {4, 3, 4}, {1, 0}), "[broadcast_in_dim]", "strictly increasing");
  EXPECT_JX_ERROR(lax::broadcast_in_dim(x, {2, 4}, {0, 1}), "[broadcast_in_dim]", "dimension 0 of size 3",
                  "(3, 1)", "(2, 4)");
  EXPECT_JX_ERROR(lax::broadcast_in_dim(x, {3, -1}, {0, 1}), "[broadcast_in_dim]", "non-negative");
  EXPECT_JX_ERROR(lax::broadcast(Array(), {2}), "null");
}

TEST(Errors, Reshape) {
  EXPECT_JX_ERROR(lax::reshape(arange({3, 4}), {5}), "[reshape] cannot reshape (3, 4) into (5,)");
  EXPECT_JX_ERROR(lax::reshape(arange({3, 4}), {-1, 12}), "[reshape]", "non-negative", "(-1, 12)");
}

TEST(Errors, Transpose) {
  EXPECT_JX_ERROR(lax::transpose(arange({3, 4}), {0, 0}), "[transpose]", "(0, 0)", "not a permutation", "(3, 4)");
  EXPECT_JX_ERROR(lax::transpose(arange({3, 4}), {0}), "[transpose]", "(0,)", "(3, 4)");
  EXPECT_JX_ERROR(lax::transpose(arange({3, 4}), {0, 2}), "[transpose]", "(0, 2)");
}

TEST(Errors, Squeeze) {
  EXPECT_JX_ERROR(lax::squeeze(arange({3, 4}), {1}), "[squeeze]", "dimension 1 of size 4", "(3, 4)");
  EXPECT_JX_ERROR(lax::squeeze(arange({3, 1}), {2}), "[squeeze]", "axis 2", "out of bounds", "(3, 1)");
  EXPECT_JX_ERROR(lax::squeeze(arange({1, 1}), {0, -2}), "[squeeze]", "repeated axis");
}

TEST(Errors, ExpandDims) {
  EXPECT_JX_ERROR(lax::expand_dims(arange({3, 4}), {3}), "[expand_dims]", "dimension 3", "rank 3", "(3, 4)");
  EXPECT_JX_ERROR(lax::expand_dims(arange({3}), {0, -3}), "[expand_dims]", "repeated dimension");
}

TEST(Errors, Rev) {
  EXPECT_JX_ERROR(lax::rev(arange({3, 4}), {2}), "[rev]", "axis 2", "(3, 4)");
  EXPECT_JX_ERROR(lax::rev(arange({3, 4}), {1, 1}), "[rev]", "repeated axis");
}

}  // namespace
}  // namespace jx
