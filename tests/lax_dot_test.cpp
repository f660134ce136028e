// dot_general and dot: NumPy einsum fixtures (scripts/fixtures/linalg.py) on contiguous
// and strided operands, hand-computed integer/bool/half cases, sizes 0 and the errors.
#include <complex>
#include <random>

#include "core/array_internal.h"
#include "test_util.h"

namespace jx {
namespace {

using lax::DotDimensionNumbers;

std::vector<int64_t> ints(const Array& a) { return a.to_vector<int64_t>(); }

// How a test operand is laid out in memory; the logical values never change.
enum class Layout { Contiguous, ColumnMajor, Reversed, Padded };

// A view of a fresh buffer holding x's values in the given layout.
Array relayout(const Array& x, Layout layout) {
  if (layout == Layout::Contiguous || x.ndim() == 0 || x.size() == 0) return x;
  const Shape& shape = x.shape();
  const int nd = x.ndim();
  std::vector<int64_t> strides(nd);
  int64_t storage = 0, offset = 0;
  if (layout == Layout::ColumnMajor || layout == Layout::Reversed) {
    strides = detail::contiguous_strides(shape);
    storage = x.size();
    if (layout == Layout::ColumnMajor) {
      int64_t acc = 1;
      for (int d = 0; d < nd; ++d) {
        strides[d] = acc;
        acc *= shape[d];
      }
    } else {  // every dim reversed: negative strides from the last element
      for (int d = 0; d < nd; ++d) {
        offset += (shape[d] - 1) * strides[d];
        strides[d] = -strides[d];
      }
    }
  } else {  // Padded: gaps of 3 elements after each innermost run
    int64_t acc = 1;
    for (int d = nd - 1; d >= 0; --d) {
      strides[d] = acc;
      acc *= shape[d] + (d == nd - 1 ? 3 : 0);
    }
    storage = acc;
  }
  Array buf = detail::alloc_array(Aval{{storage}, x.dtype(), false});
  std::memset(detail::mutable_data<void>(buf), 0, static_cast<size_t>(buf.nbytes()));
  Array view = detail::make_view(buf, x.aval(), strides, offset);
  Array src = detail::contiguous(x);
  dispatch_dtype(x.dtype(), [&]<class T>() {
    const T* s = detail::data<T>(src);
    T* base = detail::mutable_data<T>(buf);
    std::vector<int64_t> idx(nd, 0);
    for (int64_t i = 0; i < x.size(); ++i) {
      int64_t off = offset;
      for (int d = 0; d < nd; ++d) off += idx[d] * strides[d];
      base[off] = s[i];
      for (int d = nd - 1; d >= 0; --d) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
  });
  return view;
}

double tol_for(DType d) {
  switch (d) {
    case DType::Float32:
    case DType::Complex64: return 2e-5;
    case DType::Float64:
    case DType::Complex128: return 1e-12;
    default: return 0;
  }
}

// ---- fixtures ----

struct FixtureLayout {
  std::string name;
  Layout lhs, rhs;
};

class DotFixtureTest : public ::testing::TestWithParam<FixtureLayout> {};

TEST_P(DotFixtureTest, MatchesEinsum) {
  const auto& param = GetParam();
  auto f = testing::fixture_npz("linalg/dot_" + param.name);
  DotDimensionNumbers dn{ints(f["lhs_contracting"]), ints(f["rhs_contracting"]), ints(f["lhs_batch"]),
                         ints(f["rhs_batch"])};
  Array lhs = relayout(f["lhs"], param.lhs), rhs = relayout(f["rhs"], param.rhs);
  Array out = lax::dot_general(lhs, rhs, dn);
  const double tol = tol_for(out.dtype());
  EXPECT_ALLCLOSE(out, f["out"], tol, tol);
}

std::vector<FixtureLayout> fixture_layouts() {
  const char* names[] = {"mm_f32",      "mv_f64",        "vv_c64", "bmm_c128", "multi_contract_f32", "transposed_f64",
                         "outer_f32",   "two_batch_c64", "int32",  "batch_int64"};
  std::vector<FixtureLayout> out;
  for (const char* n : names) {
    out.push_back({n, Layout::Contiguous, Layout::Contiguous});
    out.push_back({n, Layout::ColumnMajor, Layout::Reversed});
    out.push_back({n, Layout::Reversed, Layout::Padded});
    out.push_back({n, Layout::Padded, Layout::ColumnMajor});
  }
  return out;
}

std::string layout_case_name(const ::testing::TestParamInfo<FixtureLayout>& info) {
  static const char* names[] = {"contig", "colmajor", "reversed", "padded"};
  return info.param.name + "_" + names[static_cast<int>(info.param.lhs)] + "_" +
         names[static_cast<int>(info.param.rhs)];
}

INSTANTIATE_TEST_SUITE_P(Fixtures, DotFixtureTest, ::testing::ValuesIn(fixture_layouts()), layout_case_name);

// ---- against a plain loop: larger, batched and broadcast operands ----

// Row-major (batch, m, k) x (batch, k, n) in complex128.
std::vector<complex128_t> loop_bmm(const std::vector<complex128_t>& a, const std::vector<complex128_t>& b,
                                   int64_t batch, int64_t m, int64_t k, int64_t n) {
  std::vector<complex128_t> c(static_cast<size_t>(batch * m * n));
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        complex128_t acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += a[(t * m + i) * k + p] * b[(t * k + p) * n + j];
        c[(t * m + i) * n + j] = acc;
      }
  return c;
}

Array random_array(Shape shape, DType dtype, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<complex128_t> v(static_cast<size_t>(shape_size(shape)));
  for (auto& e : v) e = complex128_t(dist(gen), is_complex(dtype) ? dist(gen) : 0.0);
  Array c128(v.data(), shape);
  Array out = detail::alloc_array(Aval{shape, dtype, false});
  c128.copy_to(detail::mutable_data<void>(out), dtype);
  return out;
}

Array from_c128(const std::vector<complex128_t>& v, Shape shape, DType dtype) {
  Array c(v.data(), std::move(shape));
  Array out = detail::alloc_array(Aval{c.shape(), dtype, false});
  c.copy_to(detail::mutable_data<void>(out), dtype);
  return out;
}

TEST(DotGeneral, LargeMatricesUseBlasThreads) {
  for (DType dt : {DType::Float32, DType::Float64, DType::Complex64, DType::Complex128}) {
    Array a = random_array({70, 130}, dt, 1), b = random_array({130, 90}, dt, 2);
    auto want = loop_bmm(a.to_vector<complex128_t>(), b.to_vector<complex128_t>(), 1, 70, 130, 90);
    Array out = lax::dot(a, b);
    EXPECT_ALLCLOSE(out, from_c128(want, {70, 90}, dt), 1e-4, 1e-4);
  }
}

TEST(DotGeneral, ManySmallBatchesRunInParallel) {
  Array a = random_array({64, 5, 6}, DType::Float64, 3), b = random_array({64, 6, 7}, DType::Float64, 4);
  auto want = loop_bmm(a.to_vector<complex128_t>(), b.to_vector<complex128_t>(), 64, 5, 6, 7);
  Array out = lax::dot_general(a, b, {{2}, {1}, {0}, {0}});
  EXPECT_ALLCLOSE(out, from_c128(want, {64, 5, 7}, DType::Float64), 1e-12, 1e-12);
}

TEST(DotGeneral, BroadcastBatchOperandHasZeroStride) {
  Array a2 = random_array({3, 4}, DType::Float32, 5);
  Array b = random_array({2, 4, 5}, DType::Float32, 6);
  // a2 repeated along a new leading batch dim without copying.
  Array a = detail::make_view(a2, Aval{{2, 3, 4}, DType::Float32, false}, {0, 4, 1}, 0);
  Array out = lax::dot_general(a, b, {{2}, {1}, {0}, {0}});
  auto av = a.to_vector<complex128_t>();
  auto want = loop_bmm(av, b.to_vector<complex128_t>(), 2, 3, 4, 5);
  EXPECT_ALLCLOSE(out, from_c128(want, {2, 3, 5}, DType::Float32), 1e-5, 1e-5);
  // A broadcast inside a matrix (stride 0 on a contracting dim) must be packed first.
  Array row = random_array({4}, DType::Float64, 7);
  Array bcast = detail::make_view(row, Aval{{3, 4}, DType::Float64, false}, {0, 1}, 0);
  Array col = detail::make_view(row, Aval{{4, 3}, DType::Float64, false}, {1, 0}, 0);
  auto want2 = loop_bmm(bcast.to_vector<complex128_t>(), col.to_vector<complex128_t>(), 1, 3, 4, 3);
  EXPECT_ALLCLOSE(lax::dot(bcast, col), from_c128(want2, {3, 3}, DType::Float64), 1e-12, 1e-12);
}

// ---- integer, bool and half precision ----

TEST(DotGeneral, IntegerProductsWrapLikeXla) {
  Array a(std::vector<int8_t>{100, 100}, {1, 2});
  Array b(std::vector<int8_t>{2, 1}, {2, 1});
  Array out = lax::dot(a, b);
  EXPECT_EQ(out.dtype(), DType::Int8);
  EXPECT_EQ(out.item<int64_t>(), 44);  // 300 mod 256
  Array wide = lax::dot_general(a, b, {{1}, {0}, {}, {}}, DType::Int32);
  EXPECT_EQ(wide.dtype(), DType::Int32);
  EXPECT_EQ(wide.item<int64_t>(), 300);
  Array big(std::vector<int32_t>{2000000000, 2000000000}, {2});
  EXPECT_EQ(lax::dot(big, Array(std::vector<int32_t>{1, 1}, {2})).item<int32_t>(),
            static_cast<int32_t>(static_cast<uint32_t>(4000000000u)));
  Array u(std::vector<uint32_t>{3, 4}, {2});
  EXPECT_EQ(lax::dot(u, u).item<int64_t>(), 25);
}

TEST(DotGeneral, BoolIsOrOfAnds) {
  Array a({true, false, true, false}), b({false, false, true, true});
  Array m = detail::make_view(a, Aval{{2, 2}, DType::Bool, false}, {2, 1}, 0);
  Array n = detail::make_view(b, Aval{{2, 2}, DType::Bool, false}, {2, 1}, 0);
  Array out = lax::dot(m, n);  // [[1,0],[1,0]] @ [[0,0],[1,1]]
  EXPECT_EQ(out.dtype(), DType::Bool);
  EXPECT_EQ(out.to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 0}));
  Array out2 = lax::dot(n, m);  // [[0,0],[1,1]] @ [[1,0],[1,0]]
  EXPECT_EQ(out2.to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 1, 0}));
}

TEST(DotGeneral, HalfPrecisionAccumulatesInFloat32) {
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    // 256 + 1 + ... is not representable step by step in bf16, but is after one rounding.
    Array a = from_c128(std::vector<complex128_t>(64, 1.0), {1, 64}, dt);
    Array b = from_c128(std::vector<complex128_t>(64, 1.0), {64, 1}, dt);
    Array out = lax::dot(a, b);
    EXPECT_EQ(out.dtype(), dt);
    EXPECT_EQ(out.item<float>(), 64.0f);
    Array f32 = lax::dot_general(a, b, {{1}, {0}, {}, {}}, DType::Float32);
    EXPECT_EQ(f32.dtype(), DType::Float32);
    EXPECT_EQ(f32.item<float>(), 64.0f);
  }
  Array x = random_array({3, 5}, DType::Float16, 8), y = random_array({5, 4}, DType::Float16, 9);
  auto want = loop_bmm(x.to_vector<complex128_t>(), y.to_vector<complex128_t>(), 1, 3, 5, 4);
  EXPECT_ALLCLOSE(lax::dot(x, y), from_c128(want, {3, 4}, DType::Float16), 2e-3, 2e-3);
}

TEST(DotGeneral, PreferredElementTypeWidensFloat) {
  Array a = random_array({2, 3}, DType::Float32, 10), b = random_array({3, 2}, DType::Float32, 11);
  Array out = lax::dot_general(a, b, {{1}, {0}, {}, {}}, DType::Float64);
  EXPECT_EQ(out.dtype(), DType::Float64);
  auto want = loop_bmm(a.to_vector<complex128_t>(), b.to_vector<complex128_t>(), 1, 2, 3, 2);
  EXPECT_ALLCLOSE(out, from_c128(want, {2, 2}, DType::Float64), 1e-12, 1e-12);
  Array i = lax::dot_general(Array(std::vector<int32_t>{1, 2}), Array(std::vector<int32_t>{3, 4}), {{0}, {0}, {}, {}},
                             DType::Float32);
  EXPECT_EQ(i.dtype(), DType::Float32);
  EXPECT_EQ(i.item<float>(), 11.0f);
}

// ---- shapes: 0-d, size 0 ----

TEST(DotGeneral, ScalarsAndOuterProducts) {
  Array out = lax::dot_general(detail::scalar<float>(3.0f), detail::scalar<float>(4.0f), {});
  EXPECT_EQ(out.shape(), Shape{});
  EXPECT_EQ(out.item<float>(), 12.0f);
  EXPECT_FALSE(out.weak_type());
  Array weak = lax::dot_general(Array(2.0), Array(5.0), {});
  EXPECT_TRUE(weak.weak_type());
}

TEST(DotGeneral, SizeZero) {
  Array e03 = detail::alloc_array(Aval{{0, 3}, DType::Float32, false});
  Array out = lax::dot(e03, random_array({3, 4}, DType::Float32, 12));
  EXPECT_EQ(out.shape(), (Shape{0, 4}));
  // An empty contraction gives zeros, for BLAS and loop dtypes alike.
  for (DType dt : {DType::Float32, DType::Complex128, DType::Int32, DType::BFloat16}) {
    Array a = detail::alloc_array(Aval{{3, 0}, dt, false}), b = detail::alloc_array(Aval{{0, 2}, dt, false});
    Array z = lax::dot(a, b);
    EXPECT_EQ(z.shape(), (Shape{3, 2}));
    EXPECT_EQ(z.to_vector<double>(), std::vector<double>(6, 0.0));
  }
  Array b0 = detail::alloc_array(Aval{{0, 2, 3}, DType::Float64, false});
  Array b1 = detail::alloc_array(Aval{{0, 3, 5}, DType::Float64, false});
  EXPECT_EQ(lax::dot_general(b0, b1, {{2}, {1}, {0}, {0}}).shape(), (Shape{0, 2, 5}));
}

TEST(Dot, VectorAndMatrixCombinations) {
  Array v({1.0, 2.0}), m({{1.0, 2.0}, {3.0, 4.0}});
  EXPECT_EQ(lax::dot(v, v).item<float>(), 5.0f);
  EXPECT_EQ(lax::dot(m, v).to_vector<float>(), (std::vector<float>{5, 11}));
  EXPECT_EQ(lax::dot(v, m).to_vector<float>(), (std::vector<float>{7, 10}));
  EXPECT_EQ(lax::dot(m, m).to_vector<float>(), (std::vector<float>{7, 10, 15, 22}));
}

// ---- errors ----

TEST(DotGeneralErrors, ContractingSizesDiffer) {
  Array a = random_array({3, 4}, DType::Float32, 1), b = random_array({5, 6}, DType::Float32, 2);
  EXPECT_JX_ERROR(lax::dot_general(a, b, {{1}, {0}, {}, {}}), "[dot_general]", "contracting dimensions",
                  "(3, 4) and (5, 6)");
  EXPECT_JX_ERROR(lax::dot(a, b), "[dot_general]", "(3, 4) and (5, 6)");
}

TEST(DotGeneralErrors, BadDimensionNumbers) {
  Array a = random_array({2, 3, 4}, DType::Float32, 1), b = random_array({3, 4, 5}, DType::Float32, 2);
  EXPECT_JX_ERROR(lax::dot_general(a, b, {{2}, {1}, {0}, {0}}), "[dot_general]", "batch dimensions",
                  "(2, 3, 4) and (3, 4, 5)");
  EXPECT_JX_ERROR(lax::dot_general(a, b, {{3}, {0}, {}, {}}), "[dot_general]", "lhs dimension 3 is out of bounds",
                  "(2, 3, 4)");
  EXPECT_JX_ERROR(lax::dot_general(a, b, {{1}, {-1}, {}, {}}), "[dot_general]", "rhs dimension -1");
  EXPECT_JX_ERROR(lax::dot_general(a, b, {{1, 2}, {0}, {}, {}}), "[dot_general]", "must have the same length");
  EXPECT_JX_ERROR(lax::dot_general(a, b, {{1}, {0}, {1}, {0}}), "[dot_general]", "lhs dimension 1 is repeated");
  EXPECT_JX_ERROR(lax::dot_general(a, b, {{}, {}, {0}, {}}), "[dot_general]", "lhs_batch_dimensions (0,)");
}

TEST(DotGeneralErrors, DtypeMismatch) {
  Array a = random_array({2, 3}, DType::Float32, 1), b = random_array({3, 2}, DType::Float64, 2);
  EXPECT_JX_ERROR(lax::dot(a, b), "[dot_general]", "same dtype", "f32[2,3]", "f64[3,2]");
  EXPECT_JX_ERROR(lax::dot_general(a, a, {{1}, {1}, {}, {}}, DType::Int32), "[dot_general]",
                  "preferred_element_type int32 is incompatible with float32");
  EXPECT_JX_ERROR(lax::dot_general(a, a, {{1}, {1}, {}, {}}, DType::Complex64), "[dot_general]", "incompatible");
}

TEST(DotErrors, RankAbove2) {
  Array a = random_array({2, 3, 4}, DType::Float32, 1);
  EXPECT_JX_ERROR(lax::dot(a, a), "[dot]", "rank 1 or 2", "f32[2,3,4]");
  EXPECT_JX_ERROR(lax::dot(Array(1.0), Array(1.0)), "[dot]", "rank 1 or 2");
}

}  // namespace
}  // namespace jx
