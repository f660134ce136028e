// jx::numpy core: JAX's type promotion table (fixture generated with jax), weak C++
// scalars, broadcasting, asarray/astype, creation defaults and the Array operators.
#include <map>

#include "test_util.h"

namespace jnp = jx::numpy;
using jx::Array;
using jx::DType;

namespace {

constexpr int kDTypes = jx::kNumDTypes;

DType dtype_at(int i) { return static_cast<DType>(i); }

// A 0-d weak scalar of each kind, as C++ literals make them: 1, 1.0, 1i.
Array weak_scalar(int kind) {
  if (kind == 0) return Array(1);
  if (kind == 1) return Array(1.0);
  return Array(jx::complex128_t(0, 1));
}

Array strong_zeros(DType d) { return jnp::zeros({2}, d); }

}  // namespace

TEST(NumpyCore, PromotionTableMatchesJax) {
  auto t = jx::testing::fixture_npz("numpy_core/promotion");
  std::vector<int8_t> table = t.at("promotion_dtype").to_vector<int8_t>();
  std::vector<bool> weak;
  for (int8_t w : t.at("promotion_weak").to_vector<int8_t>()) weak.push_back(w != 0);
  ASSERT_EQ(table.size(), static_cast<size_t>(kDTypes * (kDTypes + 3)));
  int checked = 0;
  for (int i = 0; i < kDTypes; ++i) {
    for (int j = 0; j < kDTypes + 3; ++j) {
      size_t at = static_cast<size_t>(i * (kDTypes + 3) + j);
      DType expected = dtype_at(table[at]);
      Array a = strong_zeros(dtype_at(i));
      Array b = j < kDTypes ? strong_zeros(dtype_at(j)) : weak_scalar(j - kDTypes);
      SCOPED_TRACE(std::string(jx::dtype_name(dtype_at(i))) + " with " +
                   (j < kDTypes ? std::string(jx::dtype_name(dtype_at(j))) : "weak kind " + std::to_string(j - kDTypes)));
      jx::TypedDType r = jnp::result_typed({a, b});
      EXPECT_EQ(r.dtype, expected);
      EXPECT_EQ(r.weak, weak[at]);
      if (j < kDTypes) {
        EXPECT_EQ(jnp::promote_types(dtype_at(i), dtype_at(j)), expected);
      }
      // The operator result has the promoted dtype and weakness too (bools add as or).
      Array sum = a + b;
      EXPECT_EQ(sum.dtype(), expected);
      EXPECT_EQ(sum.weak_type(), weak[at]);
      ++checked;
    }
  }
  EXPECT_EQ(checked, kDTypes * (kDTypes + 3));
}

TEST(NumpyCore, PromotionExamples) {
  Array i32 = jnp::zeros({3}, jx::int32), f32 = jnp::zeros({3}), f16 = jnp::zeros({3}, jx::float16);
  EXPECT_EQ((i32 * 2.0).dtype(), jx::float32);  // int32 array * weak float -> float32 (weak, as JAX)
  EXPECT_TRUE((i32 * 2.0).weak_type());
  EXPECT_EQ((f32 * 2.0).dtype(), jx::float32);  // a weak double does not widen float32
  EXPECT_FALSE((f32 * 2.0).weak_type());
  EXPECT_EQ((f16 + jnp::zeros({3}, jx::int64)).dtype(), jx::float16);
  EXPECT_EQ((jnp::zeros({3}, jx::uint32) + i32).dtype(), jx::int64);
  EXPECT_EQ((jnp::zeros({3}, jx::uint8) + jnp::zeros({3}, jx::int8)).dtype(), jx::int16);
  EXPECT_EQ((jnp::zeros({3}, jx::bfloat16) + f16).dtype(), jx::float32);
  EXPECT_EQ((Array({true}) + Array({true})).dtype(), jx::bool_);
  EXPECT_EQ((Array({true}) + 1).dtype(), jx::int32);
  EXPECT_TRUE((Array({true}) + 1).weak_type());
  EXPECT_EQ((jnp::zeros({3}, jx::int8) + 1000).dtype(), jx::int8);
  EXPECT_EQ((jnp::zeros({3}, jx::complex64) * 2.0).dtype(), jx::complex64);
  EXPECT_EQ((f32 * jx::complex128_t(1, 1)).dtype(), jx::complex64);
  EXPECT_EQ((jnp::zeros({3}, jx::float64) + f32).dtype(), jx::float64);
  // weak + weak: both weak stays weak; jx keeps a C++ double's precision (see dtype.h).
  Array ww = Array(2) + Array(3);
  EXPECT_EQ(ww.dtype(), jx::int32);
  EXPECT_TRUE(ww.weak_type());
  Array wf = Array(2) * Array(0.5);
  EXPECT_EQ(wf.dtype(), jx::float64);
  EXPECT_TRUE(wf.weak_type());
  EXPECT_EQ(wf.item<double>(), 1.0);
  EXPECT_EQ(jnp::result_type({i32, f16}), jx::float16);
  auto promoted = jnp::promote_dtypes({i32, f32, 1});
  EXPECT_EQ(promoted[2].dtype(), jx::float32);
  EXPECT_FALSE(promoted[2].weak_type());
}

TEST(NumpyCore, Broadcasting) {
  EXPECT_EQ(jnp::broadcast_shapes({{3, 1}, {4}, {}}), (jx::Shape{3, 4}));
  EXPECT_EQ(jnp::broadcast_shapes({{0, 1}, {1, 5}}), (jx::Shape{0, 5}));
  EXPECT_EQ(jnp::broadcast_shapes({{2, 1, 3}, {5, 1}}), (jx::Shape{2, 5, 3}));
  Array b = jnp::broadcast_to(Array({1, 2, 3}), {2, 3});
  EXPECT_ALLCLOSE(b, Array({{1, 2, 3}, {1, 2, 3}}));
  auto both = jnp::broadcast_arrays({jnp::reshape(Array({1, 2}), {2, 1}), Array({10, 20, 30})});
  EXPECT_EQ(both[0].shape(), (jx::Shape{2, 3}));
  EXPECT_ALLCLOSE(both[0] + both[1], Array({{11, 21, 31}, {12, 22, 32}}));
  auto pb = jnp::promote_and_broadcast({Array({1, 2}), jnp::reshape(Array({0.5f, 1.5f}), {2, 1})}, "test");
  EXPECT_EQ(pb[0].shape(), (jx::Shape{2, 2}));
  EXPECT_EQ(pb[0].dtype(), jx::float32);
  // Broadcasting a size-0 dimension and a 0-d operand.
  EXPECT_EQ((jnp::zeros({0, 3}) + 1.f).shape(), (jx::Shape{0, 3}));
  EXPECT_EQ((jnp::zeros({}) + jnp::zeros({2, 2})).shape(), (jx::Shape{2, 2}));
  EXPECT_JX_ERROR(jnp::broadcast_shapes({{3}, {4}}, "add"),
                  "[add] operands could not be broadcast together with shapes (3,) (4,)");
  EXPECT_JX_ERROR(jnp::broadcast_shapes({{2, 3}, {3, 2}}), "[broadcast_shapes]", "(2, 3) (3, 2)");
  EXPECT_JX_ERROR(jnp::broadcast_to(jnp::zeros({3}), {4}), "[broadcast_to] cannot broadcast an array of shape (3,)");
  EXPECT_JX_ERROR(jnp::broadcast_to(jnp::zeros({2, 3}), {3}), "[broadcast_to]");
  EXPECT_JX_ERROR(jnp::broadcast_arrays({jnp::zeros({2}), jnp::zeros({3})}), "[broadcast_arrays]");
}

TEST(NumpyCore, AsarrayAstype) {
  Array w = jnp::asarray(2.0);
  EXPECT_EQ(w.dtype(), jx::float32);  // jnp.asarray(2.0): float32, weak
  EXPECT_TRUE(w.weak_type());
  EXPECT_EQ(jnp::asarray(Array(2L)).dtype(), jx::int32);
  EXPECT_EQ(jnp::asarray(2.0, jx::float64).dtype(), jx::float64);
  EXPECT_FALSE(jnp::asarray(2.0, jx::float64).weak_type());
  Array x = Array({1.7f, -2.5f});
  EXPECT_EQ(jnp::asarray(x).id(), x.id());
  EXPECT_ALLCLOSE(jnp::astype(x, jx::int32), Array({1, -2}));
  EXPECT_ALLCLOSE(x.astype(jx::bool_), Array({true, true}));
  EXPECT_ALLCLOSE(jnp::astype(Array({NAN}), jx::int32), Array({0}));
  EXPECT_EQ(jnp::array(std::vector<double>{1, 2}).dtype(), jx::float64);
  EXPECT_EQ(jnp::array(std::vector<double>{1, 2}, jx::float32).dtype(), jx::float32);
  EXPECT_EQ(jnp::array({{1, 2}, {3, 4}}).shape(), (jx::Shape{2, 2}));
  EXPECT_EQ(jnp::array({1.5, 2.5}).dtype(), jx::float32);
  EXPECT_EQ(jnp::array({1, 2}, jx::float16).dtype(), jx::float16);
  EXPECT_EQ(jnp::array(std::vector<int32_t>{1, 2, 3, 4}, jx::Shape{2, 2}).shape(), (jx::Shape{2, 2}));
  EXPECT_EQ(jnp::asarray(std::vector<uint8_t>{1}).dtype(), jx::uint8);
}

TEST(NumpyCore, CreationDefaults) {
  EXPECT_EQ(jnp::zeros({2, 3}).dtype(), jx::float32);
  EXPECT_ALLCLOSE(jnp::ones({2}, jx::int8), Array(std::vector<int8_t>{1, 1}));
  EXPECT_ALLCLOSE(jnp::full({2}, 7), Array({7, 7}));
  EXPECT_TRUE(jnp::full({2}, 7).weak_type());  // as jnp.full(2, 7)
  EXPECT_EQ(jnp::full({2}, 7.5).dtype(), jx::float32);
  EXPECT_EQ(jnp::full({2}, 7.5, jx::float64).dtype(), jx::float64);
  EXPECT_ALLCLOSE(jnp::full({2, 2}, Array({1, 2})), Array({{1, 2}, {1, 2}}));
  EXPECT_EQ(jnp::empty({0, 2}).shape(), (jx::Shape{0, 2}));
  Array x = jnp::zeros({2, 3}, jx::int16);
  EXPECT_EQ(jnp::zeros_like(x).dtype(), jx::int16);
  EXPECT_ALLCLOSE(jnp::ones_like(x, jx::float32), jnp::ones({2, 3}));
  EXPECT_ALLCLOSE(jnp::full_like(x, 3), jnp::full({2, 3}, 3, jx::int16));
  EXPECT_EQ(jnp::empty_like(x, std::nullopt, jx::Shape{4}).shape(), (jx::Shape{4}));
  EXPECT_TRUE(jnp::zeros_like(2.0).weak_type());
  EXPECT_EQ(jnp::zeros({}).shape(), (jx::Shape{}));
  EXPECT_EQ(jnp::arange(5).dtype(), jx::int32);
  EXPECT_EQ(jnp::arange(0.0, 1.0, 0.25).dtype(), jx::float32);
  EXPECT_EQ(jnp::arange(0, 3, 1, jx::float64).dtype(), jx::float64);
  EXPECT_EQ(jnp::linspace(0, 1, 5).dtype(), jx::float32);
  EXPECT_EQ(jnp::linspace(jnp::zeros({}, jx::float64), 1, 5).dtype(), jx::float64);
  EXPECT_EQ(jnp::eye(2).dtype(), jx::float32);
}

TEST(NumpyCore, OperatorsAndMethods) {
  Array a = Array({1.f, 2.f, 3.f});
  EXPECT_ALLCLOSE(a + 1, Array({2.f, 3.f, 4.f}));
  EXPECT_ALLCLOSE(1 - a, Array({0.f, -1.f, -2.f}));
  EXPECT_ALLCLOSE(a * a, Array({1.f, 4.f, 9.f}));
  EXPECT_ALLCLOSE(a / 2, Array({0.5f, 1.f, 1.5f}));
  EXPECT_ALLCLOSE(Array({1, 2}) / Array({2, 4}), Array({0.5f, 0.5f}));
  EXPECT_ALLCLOSE(-a, Array({-1.f, -2.f, -3.f}));
  EXPECT_ALLCLOSE(+a, a);
  EXPECT_ALLCLOSE(a == 2, Array({false, true, false}));
  EXPECT_ALLCLOSE(a != 2, Array({true, false, true}));
  EXPECT_ALLCLOSE(a < 2, Array({true, false, false}));
  EXPECT_ALLCLOSE(a <= 2, Array({true, true, false}));
  EXPECT_ALLCLOSE(a > 2, Array({false, false, true}));
  EXPECT_ALLCLOSE(a >= 2, Array({false, true, true}));
  EXPECT_ALLCLOSE(Array({6, 5}) & 3, Array({2, 1}));
  EXPECT_ALLCLOSE(Array({6, 5}) | 3, Array({7, 7}));
  EXPECT_ALLCLOSE(Array({6, 5}) ^ 3, Array({5, 6}));
  EXPECT_ALLCLOSE(Array({7, -7}) % 3, Array({1, 2}));
  Array b = Array({1, 2});
  b += 1;
  EXPECT_ALLCLOSE(b, Array({2, 3}));
  b -= 1;
  b *= 3;
  EXPECT_ALLCLOSE(b, Array({3, 6}));
  b /= 2;  // true division promotes to float32, as Python rebinding does
  EXPECT_ALLCLOSE(b, Array({1.5f, 3.f}));
  Array m = Array({{1.f, 2.f}, {3.f, 4.f}});
  EXPECT_ALLCLOSE(m.T(), Array({{1.f, 3.f}, {2.f, 4.f}}));
  EXPECT_ALLCLOSE(m.reshape({4}), Array({1.f, 2.f, 3.f, 4.f}));
  EXPECT_ALLCLOSE(m.reshape({-1, 1}).reshape({1, 4}), jnp::reshape(Array({1.f, 2.f, 3.f, 4.f}), {1, 4}));
  EXPECT_EQ(m.astype(jx::float64).dtype(), jx::float64);
  EXPECT_EQ(m.sum().item<float>(), 10.f);
  EXPECT_EQ(m.mean().item<float>(), 2.5f);
  EXPECT_EQ(m.max().item<float>(), 4.f);
  EXPECT_EQ(m.min().item<float>(), 1.f);
  EXPECT_TRUE(static_cast<bool>(m.sum() > 9));
}

TEST(NumpyCore, OperatorErrorsNameTheFunction) {
  Array a = jnp::zeros({2, 3});
  EXPECT_JX_ERROR(a + jnp::zeros({3, 2}), "[add] operands could not be broadcast together with shapes (2, 3) (3, 2)");
  EXPECT_JX_ERROR(a - jnp::zeros({4}), "[subtract]");
  EXPECT_JX_ERROR(a / jnp::zeros({4}), "[divide]");
  EXPECT_JX_ERROR(a % jnp::zeros({4}), "[remainder]");
  EXPECT_JX_ERROR(a < jnp::zeros({4}), "[less]");
  EXPECT_JX_ERROR(a == jnp::zeros({4}), "[equal]");
  EXPECT_JX_ERROR(a & a, "[bitwise_and]", "float32");
  EXPECT_JX_ERROR(~a, "[invert]", "float32");
  EXPECT_JX_ERROR(jnp::result_type({}), "[result_type]");
  EXPECT_JX_ERROR(Array() + a, "null");
}
