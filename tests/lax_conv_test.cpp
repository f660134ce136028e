// conv_general_dilated against the explicit-loop NumPy reference of
// scripts/fixtures/linalg.py (itself checked there against jax.lax and scipy.signal),
// plus strided operands, half precision, size 0 and the errors.
#include "core/array_internal.h"
#include "test_util.h"

namespace jx {
namespace {

std::vector<int64_t> ints(const Array& a) { return a.to_vector<int64_t>(); }

struct ConvArgs {
  std::vector<int64_t> strides;
  std::vector<std::pair<int64_t, int64_t>> padding;
  std::vector<int64_t> lhs_dilation, rhs_dilation;
  lax::ConvDimensionNumbers dn;
  int64_t feature_groups = 1, batch_groups = 1;
};

ConvArgs args_from(std::map<std::string, Array>& f) {
  ConvArgs a;
  a.strides = ints(f["window_strides"]);
  auto pads = ints(f["padding"]);
  for (size_t i = 0; i + 1 < pads.size(); i += 2) a.padding.push_back({pads[i], pads[i + 1]});
  a.lhs_dilation = ints(f["lhs_dilation"]);
  a.rhs_dilation = ints(f["rhs_dilation"]);
  a.dn = {ints(f["lhs_spec"]), ints(f["rhs_spec"]), ints(f["out_spec"])};
  a.feature_groups = ints(f["feature_group_count"])[0];
  a.batch_groups = ints(f["batch_group_count"])[0];
  return a;
}

Array conv(const Array& lhs, const Array& rhs, const ConvArgs& a) {
  return lax::conv_general_dilated(lhs, rhs, a.strides, a.padding, a.lhs_dilation, a.rhs_dilation, a.dn,
                                   a.feature_groups, a.batch_groups);
}

// The same values stored column-major: a non-contiguous view.
Array column_major(const Array& x) {
  if (x.ndim() < 2) return x;
  Shape rev(x.shape().rbegin(), x.shape().rend());
  Array buf = detail::alloc_array(Aval{rev, x.dtype(), false});
  std::vector<int64_t> perm;
  for (int64_t d = x.ndim() - 1; d >= 0; --d) perm.push_back(d);
  // buf[j_{n-1}, ..., j_0] = x[j_0, ..., j_{n-1}]: write x through a reversed-stride view.
  std::vector<int64_t> st = detail::contiguous_strides(x.shape()), rst(st.rbegin(), st.rend());
  Array xt = detail::make_view(detail::contiguous(x), Aval{rev, x.dtype(), false}, rst, 0);
  xt.copy_to(detail::mutable_data<void>(buf), x.dtype());
  std::vector<int64_t> bst = detail::contiguous_strides(rev), view_strides(bst.rbegin(), bst.rend());
  return detail::make_view(buf, x.aval(), view_strides, 0);
}

double tol_for(DType d) { return (d == DType::Float64 || d == DType::Complex128) ? 1e-12 : 2e-5; }

class ConvFixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvFixtureTest, MatchesLoopReference) {
  auto f = testing::fixture_npz("linalg/conv_" + GetParam());
  ConvArgs a = args_from(f);
  const double tol = tol_for(f["out"].dtype());
  EXPECT_ALLCLOSE(conv(f["lhs"], f["rhs"], a), f["out"], tol, tol);
  EXPECT_ALLCLOSE(conv(column_major(f["lhs"]), column_major(f["rhs"]), a), f["out"], tol, tol);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ConvFixtureTest,
                         ::testing::Values("1d_f32", "2d_nchw_f32", "2d_nhwc_lhs_dilated_f64", "feature_groups_f32",
                                           "batch_groups_f32", "3d_f32", "1d_c64", "2d_int32", "negative_pad_f64",
                                           "out_spec_permuted_f32"));

TEST(Conv, DefaultsAreNchwUnitDilation) {
  // 1-D: [1 2 3 4] * [1 1] = [3 5 7]
  Array x = Array({1.0, 2.0, 3.0, 4.0}).reshape({1, 1, 4});
  Array w = Array({1.0, 1.0}).reshape({1, 1, 2});
  Array out = lax::conv_general_dilated(x, w, {1}, {{0, 0}});
  EXPECT_EQ(out.shape(), (Shape{1, 1, 3}));
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{3, 5, 7}));
}

TEST(Conv, NoSpatialDimsIsAMatrixProduct) {
  Array x(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});  // (N, C)
  Array w(std::vector<double>{1, 0, 1, 0, 1, 0}, {2, 3});  // (O, I)
  Array out = lax::conv_general_dilated(x, w, {}, {});
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{4, 2, 10, 5}));
}

TEST(Conv, HalfPrecisionAndIntegers) {
  for (DType dt : {DType::Float16, DType::BFloat16, DType::Int8, DType::Int64}) {
    Array x = Array(std::vector<double>{1, 2, 3, 4, 5}, {1, 1, 5}).astype(dt);
    Array w = Array(std::vector<double>{1, -1}, {1, 1, 2}).astype(dt);
    Array out = lax::conv_general_dilated(x, w, {2}, {{1, 0}});  // padded [0 1 2 3 4 5]
    EXPECT_EQ(out.dtype(), dt);
    EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{-1, -1, -1}));
  }
}

TEST(Conv, SizeZero) {
  Array x = detail::alloc_array(Aval{{0, 2, 5}, DType::Float32, false});
  Array w = detail::alloc_array(Aval{{3, 2, 2}, DType::Float32, false});
  EXPECT_EQ(lax::conv_general_dilated(x, w, {1}, {{0, 0}}).shape(), (Shape{0, 3, 4}));
  // A window larger than the input: no output positions.
  Array x1 = Array(std::vector<float>{1, 2}, {1, 1, 2});
  Array w1 = Array(std::vector<float>{1, 1, 1}, {1, 1, 3});
  EXPECT_EQ(lax::conv_general_dilated(x1, w1, {1}, {{0, 0}}).shape(), (Shape{1, 1, 0}));
  // No input channels: every output is an empty sum.
  Array x0 = detail::alloc_array(Aval{{1, 0, 3}, DType::Float64, false});
  Array w0 = detail::alloc_array(Aval{{2, 0, 2}, DType::Float64, false});
  Array z = lax::conv_general_dilated(x0, w0, {1}, {{0, 0}});
  EXPECT_EQ(z.shape(), (Shape{1, 2, 2}));
  EXPECT_EQ(z.to_vector<double>(), std::vector<double>(4, 0.0));
}

// ---- errors ----

TEST(ConvErrors, BadDimensionNumbers) {
  Array x = detail::alloc_array(Aval{{1, 2, 5, 5}, DType::Float32, false});
  Array w = detail::alloc_array(Aval{{3, 2, 2, 2}, DType::Float32, false});
  lax::ConvDimensionNumbers bad{{0, 1, 2, 2}, {0, 1, 2, 3}, {0, 1, 2, 3}};
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w, {1, 1}, {{0, 0}, {0, 0}}, {}, {}, bad), "[conv_general_dilated]",
                  "lhs_spec=(0, 1, 2, 2)", "must be a permutation");
  lax::ConvDimensionNumbers short_spec{{0, 1, 2, 3}, {0, 1, 2}, {0, 1, 2, 3}};
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w, {1, 1}, {{0, 0}, {0, 0}}, {}, {}, short_spec),
                  "[conv_general_dilated]", "rhs_spec=(0, 1, 2)");
}

TEST(ConvErrors, ShapesAndParameters) {
  Array x = detail::alloc_array(Aval{{1, 4, 5, 5}, DType::Float32, false});
  Array w = detail::alloc_array(Aval{{3, 3, 2, 2}, DType::Float32, false});
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w, {1, 1}, {{0, 0}, {0, 0}}), "[conv_general_dilated]",
                  "lhs feature dimension (4)", "rhs input feature dimension (3)");
  Array w2 = detail::alloc_array(Aval{{3, 2, 2, 2}, DType::Float32, false});
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w2, {1, 1}, {{0, 0}, {0, 0}}, {}, {}, std::nullopt, 2),
                  "must be a multiple of feature_group_count (2)");
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w2, {1}, {{0, 0}, {0, 0}}), "window_strides must have 2 entries");
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w2, {0, 1}, {{0, 0}, {0, 0}}), "window_strides must be positive");
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w2, {1, 1}, {{0, 0}}), "padding");
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w2, {1, 1}, {{0, 0}, {0, 0}}, {0, 1}), "lhs_dilation must be positive");
  Array w3 = detail::alloc_array(Aval{{3, 4, 2}, DType::Float32, false});
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w3, {1, 1}, {{0, 0}, {0, 0}}), "same rank", "f32[1,4,5,5]",
                  "f32[3,4,2]");
  Array x_batch = detail::alloc_array(Aval{{3, 4, 5, 5}, DType::Float32, false});
  Array w4 = detail::alloc_array(Aval{{4, 4, 2, 2}, DType::Float32, false});
  EXPECT_JX_ERROR(lax::conv_general_dilated(x_batch, w4, {1, 1}, {{0, 0}, {0, 0}}, {}, {}, std::nullopt, 1, 2),
                  "lhs batch dimension (3) must be a multiple of batch_group_count (2)");
}

TEST(ConvErrors, Dtypes) {
  Array x = detail::alloc_array(Aval{{1, 1, 4}, DType::Float32, false});
  Array w = detail::alloc_array(Aval{{1, 1, 2}, DType::Float64, false});
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w, {1}, {{0, 0}}), "[conv_general_dilated]", "same dtype",
                  "f32[1,1,4]", "f64[1,1,2]");
  Array xb = detail::alloc_array(Aval{{1, 1, 4}, DType::Bool, false});
  Array wb = detail::alloc_array(Aval{{1, 1, 2}, DType::Bool, false});
  EXPECT_JX_ERROR(lax::conv_general_dilated(xb, wb, {1}, {{0, 0}}), "[conv_general_dilated]", "bool[1,1,4]");
}

}  // namespace
}  // namespace jx
