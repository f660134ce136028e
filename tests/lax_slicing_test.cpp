// jx::lax slicing primitives: slice, dynamic_slice, dynamic_update_slice, pad,
// concatenate. Values are checked against NumPy fixtures (scripts/fixtures/shape.py)
// for every dtype, on contiguous and strided (view) inputs.
#include <functional>
#include <numeric>

#include "core/array_internal.h"
#include "test_util.h"

namespace jx {
namespace {

namespace lax = jx::lax;
using jx::testing::fixture;

using jx::testing::as_dtype;
using jx::testing::kAllDTypes;

// np.arange(n).reshape(shape) as int32, the input every fixture case starts from.
Array arange(const Shape& shape, int32_t scale = 1, int32_t shift = 0) {
  std::vector<int32_t> v(static_cast<size_t>(shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i) * scale + shift;
  return Array(v.data(), shape);
}


bool shares_storage(const Array& a, const Array& b) { return a.impl().storage == b.impl().storage; }

Array i32(int32_t v) { return detail::scalar<int32_t>(v); }

struct SliceCase {
  const char* name;  // fixture tests/fixtures/shape/<name>.npy
  Shape input;
  // Gets the input and a -1 of its dtype (the padding value / negated updates source).
  std::function<Array(const Array&, DType)> op;
  bool view;
};

const std::vector<SliceCase>& slice_cases() {
  static const std::vector<SliceCase> cases = {
      {"slice_basic", {5, 6}, [](const Array& x, DType) { return lax::slice(x, {1, 2}, {4, 6}); }, true},
      {"slice_strided", {5, 6}, [](const Array& x, DType) { return lax::slice(x, {0, 1}, {5, 6}, {2, 3}); }, true},
      {"slice_empty", {5, 6}, [](const Array& x, DType) { return lax::slice(x, {2, 0}, {2, 6}); }, true},
      {"slice_of_transpose_of_broadcast", {3},
       [](const Array& x, DType) {
         Array b = lax::broadcast_in_dim(x, {4, 3}, {1});
         return lax::slice(lax::transpose(b, {1, 0}), {0, 1}, {3, 4}, {2, 1});
       },
       true},
      {"slice_of_slice", {8, 9},
       [](const Array& x, DType) {
         return lax::slice(lax::slice(x, {1, 2}, {8, 9}, {2, 3}), {1, 0}, {4, 3}, {1, 2});
       },
       true},
      {"dynamic_slice_clamped", {5, 6},
       [](const Array& x, DType) { return lax::dynamic_slice(x, {i32(1), Array(int64_t{4})}, {2, 3}); }, true},
      {"dynamic_slice_negative", {5, 6},
       [](const Array& x, DType) { return lax::dynamic_slice(x, {i32(-2), detail::scalar<uint8_t>(2)}, {3, 2}); },
       true},
      {"dynamic_update_slice", {4, 5},
       [](const Array& x, DType dt) {
         return lax::dynamic_update_slice(x, as_dtype(arange({2, 2}, -1, -1), dt), {i32(1), i32(2)});
       },
       false},
      {"dynamic_update_slice_clamped", {4, 5},
       [](const Array& x, DType dt) {
         // The update is a view of a view (transposed twice): same values, strided walk.
         Array u = lax::transpose(as_dtype(arange({2, 2}, -1, -1), dt), {1, 0});
         return lax::dynamic_update_slice(x, lax::transpose(u, {1, 0}), {i32(3), i32(-1)});
       },
       false},
      {"pad_basic", {2, 3},
       [](const Array& x, DType dt) { return lax::pad(x, as_dtype(i32(-1), dt), {{1, 2, 0}, {0, 1, 0}}); }, false},
      {"pad_interior", {2, 3},
       [](const Array& x, DType dt) { return lax::pad(x, as_dtype(i32(-1), dt), {{0, 0, 1}, {1, 1, 2}}); }, false},
      {"pad_negative", {4, 5},
       [](const Array& x, DType dt) { return lax::pad(x, as_dtype(i32(-1), dt), {{-1, -2, 0}, {2, -3, 1}}); },
       false},
      {"pad_of_transpose", {3, 2},
       [](const Array& x, DType dt) {
         return lax::pad(lax::transpose(x, {1, 0}), as_dtype(i32(-1), dt), {{1, -1, 1}, {0, 2, 0}});
       },
       false},
      {"pad_scalar", {}, [](const Array& x, DType dt) { return lax::pad(x, as_dtype(i32(-1), dt), {}); }, false},
      {"pad_crop_all", {3},
       [](const Array& x, DType dt) { return lax::pad(x, as_dtype(i32(-1), dt), {{-3, 0, 0}}); }, false},
      {"concat_axis1", {2, 3},
       [](const Array& x, DType dt) {
         return lax::concatenate({x, as_dtype(arange({2, 1}), dt), as_dtype(arange({2, 2}), dt)}, 1);
       },
       false},
      {"concat_axis0_empty", {2, 3},
       [](const Array& x, DType dt) {
         return lax::concatenate({x, as_dtype(arange({0, 3}), dt), as_dtype(arange({1, 3}), dt)}, -2);
       },
       false},
      {"concat_views", {3, 2},
       [](const Array& x, DType dt) {
         return lax::concatenate({lax::transpose(x, {1, 0}), lax::rev(as_dtype(arange({2, 4}), dt), {1})}, 1);
       },
       false},
  };
  return cases;
}

class SliceFixtureTest : public ::testing::TestWithParam<SliceCase> {};

TEST_P(SliceFixtureTest, MatchesNumPyForEveryDType) {
  const SliceCase& c = GetParam();
  Array expected = fixture(std::string("shape/") + c.name);
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    Array x = as_dtype(arange(c.input), dt);
    Array y = c.op(x, dt);
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_ALLCLOSE(y, as_dtype(expected, dt), 0, 0);
    EXPECT_EQ(shares_storage(x, y), c.view);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, SliceFixtureTest, ::testing::ValuesIn(slice_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- semantics beyond the fixtures ----

TEST(Slice, DefaultStridesAndZeroD) {
  Array x = arange({4});
  EXPECT_EQ(lax::slice(x, {1}, {3}).to_vector<int32_t>(), (std::vector<int32_t>{1, 2}));
  Array s = lax::slice(arange({}), {}, {});
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.item<int32_t>(), 0);
  // A stride that overshoots the limit still yields ceil((limit - start) / stride) items.
  EXPECT_EQ(lax::slice(x, {1}, {4}, {5}).to_vector<int32_t>(), (std::vector<int32_t>{1}));
}

TEST(Slice, EmptyAtTheEndKeepsPointerInside) {
  Array x = arange({3, 4});
  Array e = lax::slice(x, {3, 4}, {3, 4});
  EXPECT_EQ(e.shape(), (Shape{0, 0}));
  EXPECT_EQ(e.impl().offset, 0);
}

TEST(DynamicSlice, ClampsEveryWayAndAcceptsAnyIntegerDType) {
  Array x = arange({6});
  auto at = [&](Array i) { return lax::dynamic_slice(x, {i}, {2}).to_vector<int32_t>(); };
  EXPECT_EQ(at(i32(0)), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(at(i32(4)), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(at(i32(5)), (std::vector<int32_t>{4, 5}));      // clamped to 6 - 2
  EXPECT_EQ(at(i32(-1)), (std::vector<int32_t>{0, 1}));     // clamped to 0 (no wrap-around)
  EXPECT_EQ(at(Array(int64_t{1} << 40)), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(at(detail::scalar<uint32_t>(4000000000u)), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(at(detail::scalar<int8_t>(3)), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(lax::dynamic_slice(x, {i32(3)}, {0}).size(), 0);
  EXPECT_EQ(lax::dynamic_slice(arange({}), {}, {}).item<int32_t>(), 0);
}

TEST(DynamicUpdateSlice, ClampsAndLeavesOperandUntouched) {
  Array x = arange({5});
  Array u = arange({2}, 1, 100);
  Array y = lax::dynamic_update_slice(x, u, {i32(7)});
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 100, 101}));
  EXPECT_EQ(x.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 4}));
  // A broadcast (stride-0) update and an empty update.
  Array b = lax::broadcast_in_dim(i32(9), {3}, {});
  EXPECT_EQ(lax::dynamic_update_slice(x, b, {i32(1)}).to_vector<int32_t>(), (std::vector<int32_t>{0, 9, 9, 9, 4}));
  EXPECT_EQ(lax::dynamic_update_slice(x, arange({0}), {i32(2)}).to_vector<int32_t>(), x.to_vector<int32_t>());
}

TEST(Pad, WeakTypeAndLargePad) {
  Array w = lax::pad(Array(1.5f), Array(0.0f), {});
  EXPECT_TRUE(w.weak_type());
  Array s = lax::pad(detail::scalar<float>(1.5f), Array(0.0f), {});
  EXPECT_FALSE(s.weak_type());
  // Interior padding of a larger array, checked by a hand loop.
  Array x = as_dtype(arange({300, 200}), DType::Float32);
  Array y = lax::pad(x, Array(-1.0f), {{2, -1, 1}, {0, 0, 0}});
  ASSERT_EQ(y.shape(), (Shape{2 + 300 + 299 - 1, 200}));
  auto v = y.to_vector<float>();
  bool ok = true;
  for (int64_t r = 0; r < y.shape(0) && ok; ++r) {
    bool data_row = r >= 2 && (r - 2) % 2 == 0;
    for (int64_t c = 0; c < 200 && ok; ++c)
      ok = v[static_cast<size_t>(r * 200 + c)] == (data_row ? static_cast<float>((r - 2) / 2 * 200 + c) : -1.0f);
  }
  EXPECT_TRUE(ok);
}

TEST(Concatenate, WeakOnlyWhenAllWeakAndSingleOperand) {
  Array w = lax::broadcast_in_dim(Array(1.0f), {2}, {});
  Array s = as_dtype(arange({2}), DType::Float32);
  EXPECT_TRUE(lax::concatenate({w, w}, 0).weak_type());
  EXPECT_FALSE(lax::concatenate({w, s}, 0).weak_type());
  Array one = lax::concatenate({s}, 0);
  EXPECT_EQ(one.to_vector<float>(), s.to_vector<float>());
  EXPECT_FALSE(shares_storage(one, s));
}

TEST(Primitives, RegisteredWithTraits) {
  for (const char* name : {"slice", "dynamic_slice", "dynamic_update_slice", "pad", "concatenate"}) {
    const Primitive* p = find_primitive(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_TRUE(p->has(kShapeOnly)) << name;
    EXPECT_TRUE(p->has(kLinear)) << name;
  }
}

// ---- error messages ----

TEST(Errors, Slice) {
  Array x = arange({3, 4});
  EXPECT_JX_ERROR(lax::slice(x, {0}, {3, 4}), "[slice]", "start_indices (0,)", "(3, 4)");
  EXPECT_JX_ERROR(lax::slice(x, {0, 0}, {3}), "[slice]", "limit_indices (3,)", "(3, 4)");
  EXPECT_JX_ERROR(lax::slice(x, {0, 0}, {3, 4}, {1}), "[slice]", "strides (1,)", "(3, 4)");
  EXPECT_JX_ERROR(lax::slice(x, {-1, 0}, {3, 4}), "[slice]", "non-negative", "(-1, 0)", "(3, 4)");
  EXPECT_JX_ERROR(lax::slice(x, {0, 0}, {3, 5}), "[slice]", "limit_indices (3, 5)", "exceed", "(3, 4)");
  EXPECT_JX_ERROR(lax::slice(x, {2, 0}, {1, 4}), "[slice]", "(2, 0)", "must not exceed", "(1, 4)");
  EXPECT_JX_ERROR(lax::slice(x, {0, 0}, {3, 4}, {1, 0}), "[slice]", "strides (1, 0)", "positive");
  EXPECT_JX_ERROR(lax::slice(x, {0, 0}, {3, 4}, {-1, 1}), "[slice]", "positive");
}

TEST(Errors, DynamicSlice) {
  Array x = arange({3, 4});
  EXPECT_JX_ERROR(lax::dynamic_slice(x, {i32(0)}, {1, 1}), "[dynamic_slice]", "1 start indices", "(3, 4)");
  EXPECT_JX_ERROR(lax::dynamic_slice(x, {i32(0), Array(1.0f)}, {1, 1}), "[dynamic_slice]", "start index 1",
                  "scalar integer", "f32");
  EXPECT_JX_ERROR(lax::dynamic_slice(x, {i32(0), arange({1})}, {1, 1}), "[dynamic_slice]", "i32[1]");
  EXPECT_JX_ERROR(lax::dynamic_slice(x, {i32(0), i32(0)}, {1, 5}), "[dynamic_slice]", "slice_sizes (1, 5)",
                  "(3, 4)");
  EXPECT_JX_ERROR(lax::dynamic_slice(x, {i32(0), i32(0)}, {1}), "[dynamic_slice]", "slice_sizes (1,)");
  EXPECT_JX_ERROR(lax::dynamic_slice(x, {i32(0), i32(0)}, {-1, 1}), "[dynamic_slice]", "(-1, 1)");
}

TEST(Errors, DynamicUpdateSlice) {
  Array x = arange({3, 4});
  EXPECT_JX_ERROR(lax::dynamic_update_slice(x, as_dtype(arange({1, 1}), DType::Float32), {i32(0), i32(0)}),
                  "[dynamic_update_slice]", "dtype", "i32[3,4]", "f32[1,1]");
  EXPECT_JX_ERROR(lax::dynamic_update_slice(x, arange({1}), {i32(0), i32(0)}), "[dynamic_update_slice]", "rank");
  EXPECT_JX_ERROR(lax::dynamic_update_slice(x, arange({4, 1}), {i32(0), i32(0)}), "[dynamic_update_slice]",
                  "(4, 1)", "does not fit", "(3, 4)");
  EXPECT_JX_ERROR(lax::dynamic_update_slice(x, arange({1, 1}), {i32(0)}), "[dynamic_update_slice]",
                  "1 start indices");
  EXPECT_JX_ERROR(lax::dynamic_update_slice(x, arange({1, 1}), {i32(0), Array(true)}), "[dynamic_update_slice]",
                  "scalar integer", "bool");
}

TEST(Errors, Pad) {
  Array x = arange({3, 4});
  EXPECT_JX_ERROR(lax::pad(x, arange({1}), {{0, 0, 0}, {0, 0, 0}}), "[pad]", "padding_value", "i32[1]");
  EXPECT_JX_ERROR(lax::pad(x, Array(0.0f), {{0, 0, 0}, {0, 0, 0}}), "[pad]", "operand's dtype", "f32", "i32[3,4]");
  EXPECT_JX_ERROR(lax::pad(x, i32(0), {{0, 0, 0}}), "[pad]", "padding_config has 1 entries", "(3, 4)");
  EXPECT_JX_ERROR(lax::pad(x, i32(0), {{0, 0, -1}, {0, 0, 0}}), "[pad]", "interior", "-1");
  EXPECT_JX_ERROR(lax::pad(x, i32(0), {{-2, -2, 0}, {0, 0, 0}}), "[pad]", "dimension 0", "(3, 4)", "negative");
}

TEST(Errors, Concatenate) {
  EXPECT_JX_ERROR(lax::concatenate({}, 0), "[concatenate]", "at least one operand");
  EXPECT_JX_ERROR(lax::concatenate({i32(1), i32(2)}, 0), "[concatenate]", "0-d");
  EXPECT_JX_ERROR(lax::concatenate({arange({2, 3}), arange({2, 4})}, 0), "[concatenate]", "dimension 0",
                  "i32[2,3], i32[2,4]");
  EXPECT_JX_ERROR(lax::concatenate({arange({2, 3}), arange({2})}, 1), "[concatenate]", "i32[2,3], i32[2]");
  EXPECT_JX_ERROR(lax::concatenate({arange({2}), as_dtype(arange({2}), DType::Float32)}, 0), "[concatenate]",
                  "same dtype", "i32[2], f32[2]");
  EXPECT_JX_ERROR(lax::concatenate({arange({2}), arange({2})}, 1), "[concatenate]", "axis 1", "(2,)");
}

}  // namespace
}  // namespace jx
