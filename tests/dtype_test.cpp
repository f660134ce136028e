// DType facts, half-precision conversion and JAX's promotion lattice (hand-checked rows
// taken from JAX's documented promotion table).
#include <cmath>
#include <cstring>

#include "test_util.h"

namespace jx {
namespace {

TEST(DType, NamesAndSizes) {
  EXPECT_EQ(dtype_name(float32), "float32");
  EXPECT_EQ(itemsize(complex128), 16);
  EXPECT_EQ(itemsize(bfloat16), 2);
  EXPECT_EQ(dtype_from_name("uint32"), uint32);
  EXPECT_JX_ERROR(dtype_from_name("float128"), "[dtype]", "float128");
  EXPECT_TRUE(is_inexact(complex64));
  EXPECT_FALSE(is_inexact(int64));
  EXPECT_EQ(real_dtype(complex128), float64);
}

struct PromoRow {
  TypedDType a, b, want;
};

TEST(DType, PromotionLattice) {
  auto S = [](DType d) { return TypedDType{d, false}; };
  auto W = [](DType d) { return TypedDType{d, true}; };
  const PromoRow rows[] = {
      {S(int32), S(uint32), S(int64)},     {S(uint8), S(int8), S(int16)},
      {S(int64), S(float16), S(float16)},  {S(float16), S(bfloat16), S(float32)},
      {S(float32), S(complex64), S(complex64)}, {S(float64), S(complex64), S(complex128)},
      {S(bool_), S(int8), S(int8)},        {S(uint32), S(int64), S(int64)},
      {S(float32), W(float64), S(float32)},  // x_f32 * 2.0 keeps float32
      {S(int32), W(float64), W(float32)},  // int array * 2.0 -> weak default float
      {S(int8), W(int32), S(int8)},        {S(bool_), W(int32), W(int32)},
      {W(float64), W(float64), W(float64)}, {W(int32), W(float64), W(float64)},
      {S(bfloat16), W(float64), S(bfloat16)}, {S(float64), W(complex128), S(complex128)},
      {S(float32), W(complex128), S(complex64)},
  };
  for (const auto& r : rows) {
    for (bool swap : {false, true}) {
      TypedDType got = swap ? promote_types(r.b, r.a) : promote_types(r.a, r.b);
      EXPECT_EQ(got.dtype, r.want.dtype) << dtype_name(r.a.dtype) << (r.a.weak ? "(weak)" : "") << " + "
                                         << dtype_name(r.b.dtype) << (r.b.weak ? "(weak)" : "");
      EXPECT_EQ(got.weak, r.want.weak) << dtype_name(r.a.dtype) << " + " << dtype_name(r.b.dtype);
    }
  }
}

TEST(DType, HalfRoundTrips) {
  // Every finite float16 converts to float and back to the same bits.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float16_t h = float16_t::from_bits(static_cast<uint16_t>(b));
    float f = h;
    if (std::isnan(f)) continue;
    EXPECT_EQ(float16_t(f).bits, b) << b;
  }
  EXPECT_EQ(float16_t(65520.0f).bits, 0x7c00);  // rounds to inf
  EXPECT_EQ(float16_t(1.0f + 1.0f / 2048).bits, 0x3c00);  // tie to even
  EXPECT_EQ(static_cast<float>(float16_t(5.960464477539063e-08f)), 5.960464477539063e-08f);  // smallest subnormal
  EXPECT_EQ(bfloat16_t(1.0f).bits, 0x3f80);
  EXPECT_EQ(static_cast<float>(bfloat16_t(3.140625f)), 3.140625f);
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16_t(std::nanf("")))));
}

TEST(Array, ScalarsAreWeakAndListsUseJaxDefaults) {
  EXPECT_TRUE(Array(2.0).weak_type());
  EXPECT_EQ(Array(2.0).dtype(), float64);
  EXPECT_EQ(Array(2).dtype(), int32);
  EXPECT_FALSE(Array(true).weak_type());
  Array m = {{1.0, 2.0}, {3.0, 4.0}};
  EXPECT_EQ(m.dtype(), float32);
  EXPECT_EQ(m.shape(), (Shape{2, 2}));
  EXPECT_FALSE(m.weak_type());
  Array i = {1, 2, 3};
  EXPECT_EQ(i.dtype(), int32);
  Array v(std::vector<double>{1, 2, 3});
  EXPECT_EQ(v.dtype(), float64);
  Array b = {true, false};
  EXPECT_EQ(b.dtype(), bool_);
  EXPECT_EQ(b.to_vector<int>(), (std::vector<int>{1, 0}));
  EXPECT_JX_ERROR((Array{{1.0, 2.0}, {3.0}}), "ragged");
}

TEST(Array, ItemAndToVectorConvert) {
  Array m = {{1.5, -2.0}, {3.0, 4.0}};
  EXPECT_EQ(m.to_vector<int>(), (std::vector<int>{1, -2, 3, 4}));
  EXPECT_EQ(Array(7).item<double>(), 7.0);
  EXPECT_JX_ERROR(m.item<float>(), "[item]", "(2, 2)");
  EXPECT_JX_ERROR(static_cast<bool>(m), "[bool]", "ambiguous");
  EXPECT_EQ(m.shape(-1), 2);
  EXPECT_JX_ERROR(m.shape(2), "[shape]", "axis 2");
  // float -> int conversion saturates, NaN -> 0 (no UB)
  Array f(std::vector<float>{1e20f, -1e20f, std::nanf("")});
  EXPECT_EQ(f.to_vector<int32_t>(), (std::vector<int32_t>{INT32_MAX, INT32_MIN, 0}));
}

TEST(Array, RawBufferConstruction) {
  const int16_t data[6] = {1, 2, 3, 4, 5, 6};
  Array a(data, Shape{2, 3});
  EXPECT_EQ(a.dtype(), int16);
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_JX_ERROR(Array(static_cast<const void*>(nullptr), Shape{2}, float32), "null data");
  EXPECT_JX_ERROR(Array(data, Shape{-1}), "negative dimension");
  Array empty(data, Shape{0, 3});
  EXPECT_EQ(empty.size(), 0);
}

}  // namespace
}  // namespace jx
