// jx::numpy::linalg against numpy.linalg fixtures (scripts/fixtures/linalg.py): solve,
// inv, det, slogdet, cholesky, qr, eigh, svd, norm, pinv, matrix_rank, matrix_power,
// lstsq; broadcasting, integer promotion, singular and empty inputs, and the errors.
#include <cmath>
#include <limits>

#include "core/array_internal.h"
#include "test_util.h"

namespace jx {
namespace {

namespace la = jx::numpy::linalg;
constexpr double kInf = std::numeric_limits<double>::infinity();

// (..., m, k) @ (..., k, n) in complex128, same batch shape: the test's own product.
std::vector<complex128_t> products(const Array& a, const Array& b) {
  const int64_t m = a.shape(-2), k = a.shape(-1), n = b.shape(-1);
  auto av = a.to_vector<complex128_t>(), bv = b.to_vector<complex128_t>();
  const int64_t batch = m * k == 0 ? 0 : a.size() / (m * k);
  std::vector<complex128_t> c(static_cast<size_t>(batch * m * n));
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j) c[(t * m + i) * n + j] += av[(t * m + i) * k + p] * bv[(t * k + p) * n + j];
  return c;
}

Array c128(const std::vector<complex128_t>& v, Shape shape) { return Array(v.data(), std::move(shape)); }
Array as_c128(const Array& x) { return c128(x.to_vector<complex128_t>(), x.shape()); }

// Conjugate transpose of a stack, in complex128.
Array adjoint(const Array& x) {
  const int64_t m = x.shape(-2), n = x.shape(-1);
  auto v = x.to_vector<complex128_t>();
  std::vector<complex128_t> t(v.size());
  const int64_t batch = m * n == 0 ? 0 : x.size() / (m * n);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) t[b * m * n + j * m + i] = std::conj(v[b * m * n + i * n + j]);
  Shape s = x.shape();
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  return c128(t, s);
}

Array identity_stack(const Shape& batch, int64_t n) {
  std::vector<complex128_t> v;
  const int64_t count = shape_size(batch);
  for (int64_t b = 0; b < count; ++b)
    for (int64_t i = 0; i < n * n; ++i) v.push_back(i % (n + 1) == 0 ? 1.0 : 0.0);
  Shape s = batch;
  s.push_back(n);
  s.push_back(n);
  return c128(v, s);
}

class NumpyLinalgTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { f_ = testing::fixture_npz(std::string("linalg/linalg_") + std::string(dtype_name(GetParam()))); }
  Array get(const std::string& k) { return f_.at(k); }
  bool single() const { return GetParam() == DType::Float32 || GetParam() == DType::Complex64; }
  double tol() const { return single() ? 1e-4 : 1e-10; }
  std::map<std::string, Array> f_;
};

TEST_P(NumpyLinalgTest, Solve) {
  Array x = la::solve(get("gen"), get("b_mat"));
  EXPECT_EQ(x.dtype(), GetParam());
  EXPECT_ALLCLOSE(x, get("solve_mat"), tol(), tol());
  EXPECT_ALLCLOSE(la::solve(get("a0"), get("b_vec")), get("solve_vec"), tol(), tol());
}

TEST_P(NumpyLinalgTest, InvDetSlogdet) {
  EXPECT_ALLCLOSE(la::inv(get("gen")), get("inv"), tol(), tol());
  EXPECT_ALLCLOSE(la::det(get("gen")), get("det"), tol(), tol());
  la::SlogdetResult r = la::slogdet(get("gen"));
  EXPECT_EQ(r.sign.dtype(), GetParam());
  EXPECT_EQ(r.logabsdet.dtype(), real_dtype(GetParam()));
  EXPECT_ALLCLOSE(r.sign, get("sign"), tol(), tol());
  EXPECT_ALLCLOSE(r.logabsdet, get("logdet"), tol(), tol());
}

TEST_P(NumpyLinalgTest, Decompositions) {
  Array l = la::cholesky(get("spd"));
  EXPECT_ALLCLOSE(l, get("cholesky"), tol(), tol());
  EXPECT_ALLCLOSE(as_c128(la::cholesky(get("spd"), /*upper=*/true)), adjoint(get("cholesky")), tol(), tol());
  for (const char* name : {"tall", "wide", "gen"}) {
    Array a = get(name);
    for (const char* mode : {"reduced", "complete"}) {
      la::QRResult qr = la::qr(a, mode);
      EXPECT_ALLCLOSE(c128(products(qr.q, qr.r), a.shape()), as_c128(a), tol(), tol()) << name << " " << mode;
      Shape batch(qr.q.shape().begin(), qr.q.shape().end() - 2), square = batch;
      const int64_t kq = qr.q.shape(-1);
      square.push_back(kq);
      square.push_back(kq);
      EXPECT_ALLCLOSE(c128(products(adjoint(qr.q), qr.q), square), identity_stack(batch, kq), tol(), tol());
    }
    la::QRResult r_only = la::qr(a, "r");
    EXPECT_FALSE(r_only.q.valid());
    EXPECT_EQ(r_only.r.shape(), la::qr(a).r.shape());
  }
  la::EighResult e = la::eigh(get("spd"));
  EXPECT_ALLCLOSE(e.eigenvalues, get("spd_eigvals"), tol(), tol());
  EXPECT_ALLCLOSE(la::eigvalsh(get("spd"), "U"), get("spd_eigvals_upper"), tol(), tol());
  EXPECT_EQ(e.eigenvectors.shape(), get("spd").shape());
  la::SVDResult s = la::svd(get("tall"), false);
  EXPECT_ALLCLOSE(s.s, get("svals_tall"), tol(), tol());
  EXPECT_EQ(s.u.shape(), (Shape{5, 3}));
  EXPECT_EQ(la::svd(get("tall")).u.shape(), (Shape{5, 5}));
  EXPECT_FALSE(la::svd(get("wide"), true, false).u.valid());
  EXPECT_ALLCLOSE(la::svdvals(get("wide")), get("svals_wide"), tol(), tol());
  EXPECT_ALLCLOSE(la::svdvals(get("gen")), get("svals_gen"), tol(), tol());
}

TEST_P(NumpyLinalgTest, VectorNorms) {
  Array v = get("vec");
  const std::pair<const char*, std::optional<double>> cases[] = {
      {"none", std::nullopt}, {"1", 1}, {"2", 2}, {"inf", kInf}, {"minf", -kInf}, {"0", 0}, {"3", 3}, {"half", 0.5}};
  for (const auto& [tag, ord] : cases) {
    Array n = la::norm(v, ord);
    EXPECT_EQ(n.dtype(), real_dtype(GetParam()));
    EXPECT_ALLCLOSE(n, get(std::string("vnorm_") + tag), tol(), tol()) << tag;
  }
}

TEST_P(NumpyLinalgTest, MatrixNorms) {
  Array m = get("mat");
  EXPECT_ALLCLOSE(la::norm(m, "fro"), get("mnorm_fro"), tol(), tol());
  EXPECT_ALLCLOSE(la::norm(m, "nuc"), get("mnorm_nuc"), tol(), tol());
  const std::pair<const char*, std::optional<double>> cases[] = {{"1", 1},     {"m1", -1},      {"2", 2},
                                                                 {"m2", -2},   {"inf", kInf},   {"minf", -kInf},
                                                                 {"none", std::nullopt}};
  for (const auto& [tag, ord] : cases) EXPECT_ALLCLOSE(la::norm(m, ord), get(std::string("mnorm_") + tag), tol(), tol()) << tag;
  Array b = get("batch");  // (2, 3, 4)
  EXPECT_ALLCLOSE(la::norm(b, std::nullopt, {1}), get("bnorm_axis1"), tol(), tol());
  EXPECT_ALLCLOSE(la::norm(b, 1, {-1}, true), get("bnorm_axis_m1_keep"), tol(), tol());
  EXPECT_ALLCLOSE(la::norm(b, "fro", {1, 2}), get("bnorm_mat_fro"), tol(), tol());
  EXPECT_ALLCLOSE(la::norm(b, 2, {2, 1}, true), get("bnorm_mat_2_keep"), tol(), tol());
  EXPECT_ALLCLOSE(la::norm(b), get("bnorm_all"), tol(), tol());
  EXPECT_EQ(la::norm(b, std::nullopt, {}, true).shape(), (Shape{1, 1, 1}));
}

TEST_P(NumpyLinalgTest, PinvRankPowerLstsq) {
  EXPECT_ALLCLOSE(la::pinv(get("tall")), get("pinv_tall"), tol(), tol());
  EXPECT_ALLCLOSE(la::pinv(get("wide")), get("pinv_wide"), tol(), tol());
  EXPECT_ALLCLOSE(la::pinv(get("rank_def")), get("pinv_rank_def"), 10 * tol(), 10 * tol());
  EXPECT_ALLCLOSE(la::matrix_rank(get("rank_def")), get("rank_def_rank"));
  EXPECT_EQ(la::matrix_rank(get("tall")).item<int32_t>(), 3);
  EXPECT_ALLCLOSE(la::matrix_power(get("small"), 0), get("mp0"), tol(), tol());
  EXPECT_ALLCLOSE(la::matrix_power(get("small"), 1), get("mp1"), tol(), tol());
  EXPECT_ALLCLOSE(la::matrix_power(get("small"), 3), get("mp3"), tol(), tol());
  EXPECT_ALLCLOSE(la::matrix_power(get("small"), 5), get("mp5"), tol(), tol());
  EXPECT_ALLCLOSE(la::matrix_power(get("small"), -2), get("mpm2"), tol(), tol());
  la::LstsqResult r = la::lstsq(get("tall"), get("b_tall"));
  EXPECT_ALLCLOSE(r.x, get("lstsq_x"), tol(), tol());
  EXPECT_ALLCLOSE(r.residuals, get("lstsq_resid"), 10 * tol(), 10 * tol());
  EXPECT_ALLCLOSE(r.rank, get("lstsq_rank"));
  EXPECT_ALLCLOSE(r.s, get("lstsq_s"), tol(), tol());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, NumpyLinalgTest,
                         ::testing::Values(DType::Float32, DType::Float64, DType::Complex64, DType::Complex128),
                         [](const ::testing::TestParamInfo<DType>& info) { return std::string(dtype_name(info.param)); });

// ---- promotion, broadcasting, singular and empty inputs ----

TEST(NumpyLinalg, IntegersPromoteToFloat32) {
  auto f = testing::fixture_npz("linalg/linalg_int32");
  Array a = f["a"];
  ASSERT_EQ(a.dtype(), DType::Int32);
  EXPECT_ALLCLOSE(la::det(a), f["det"], 1e-5, 1e-4);
  EXPECT_ALLCLOSE(la::inv(a), f["inv"], 1e-5, 1e-6);
  EXPECT_ALLCLOSE(la::norm(a), f["norm"], 1e-6, 1e-6);
  EXPECT_EQ(la::matrix_power(a, 2).dtype(), DType::Int32);  // positive powers stay integer, as NumPy
  EXPECT_EQ(la::svdvals(a).dtype(), DType::Float32);
}

TEST(NumpyLinalg, SolveBroadcastsBatchDims) {
  Array a(std::vector<double>{4, 1, 0, 1, 3, 1, 0, 1, 2}, {3, 3});
  std::vector<complex128_t> bv;
  for (int i = 0; i < 12; ++i) bv.push_back(static_cast<double>(i % 5) - 1.5);
  Array b = c128(bv, {2, 3, 2});
  Array x = la::solve(a, b);
  ASSERT_EQ(x.shape(), (Shape{2, 3, 2}));
  // a @ x == b for each batch entry (a broadcast).
  auto av = a.to_vector<complex128_t>();
  std::vector<complex128_t> a2(av);
  a2.insert(a2.end(), av.begin(), av.end());
  EXPECT_ALLCLOSE(c128(products(c128(a2, {2, 3, 3}), x), {2, 3, 2}), b, 1e-12, 1e-12);
  // Batch dims of a and b broadcast against each other: (2, 1) x (4,) -> (2, 4).
  Array a_stack = c128(std::vector<complex128_t>(a2.begin(), a2.end()), {2, 1, 3, 3});
  Array b_stack = Array(std::vector<double>(4 * 3 * 1, 1.0), {4, 3, 1});
  EXPECT_EQ(la::solve(a_stack, b_stack).shape(), (Shape{2, 4, 3, 1}));
  // A vector b against a stack of matrices.
  EXPECT_EQ(la::solve(a_stack, Array({1.0, 2.0, 3.0})).shape(), (Shape{2, 1, 3}));
}

TEST(NumpyLinalg, SingularMatrices) {
  Array s(std::vector<double>{1, 2, 2, 4}, {2, 2});
  EXPECT_EQ(la::det(s).item<double>(), 0.0);
  la::SlogdetResult r = la::slogdet(s);
  EXPECT_EQ(r.sign.item<double>(), 0.0);
  EXPECT_EQ(r.logabsdet.item<double>(), -kInf);
  Array inv = la::inv(s);  // no exception: inf/nan as JAX
  EXPECT_EQ(inv.shape(), (Shape{2, 2}));
  EXPECT_EQ(la::matrix_rank(s).item<int32_t>(), 1);
  // An odd permutation flips the determinant's sign.
  Array p(std::vector<double>{0, 1, 1, 0}, {2, 2});
  EXPECT_EQ(la::det(p).item<double>(), -1.0);
  EXPECT_EQ(la::slogdet(p).sign.item<double>(), -1.0);
}

// JAX 0.10.2 (jnp.linalg.lstsq, x64): residuals have shape (1,) for a 1-d b, whatever the
// rank or shape of a.
TEST(NumpyLinalg, LstsqResidualsOfAVectorRightHandSide) {
  la::LstsqResult r = la::lstsq(Array(std::vector<double>{1, 0, 0, 1, 1, 1}, {3, 2}), Array({1.0, 2.0, 4.0}));
  EXPECT_ALLCLOSE(r.residuals, Array(std::vector<double>{1.0 / 3.0}, {1}), 1e-12, 1e-12);
  EXPECT_EQ(r.x.shape(), (Shape{2}));
  r = la::lstsq(Array(std::vector<double>{1, 1, 1, 1, 1, 1}, {3, 2}), Array({1.0, 2.0, 4.0}));  // rank 1
  EXPECT_ALLCLOSE(r.residuals, Array(std::vector<double>{4.666666666666667}, {1}), 1e-12, 1e-12);
  EXPECT_EQ(r.rank.item<int32_t>(), 1);
  r = la::lstsq(Array(std::vector<double>{1, 0, 0, 1}, {2, 2}), Array({1.0, 2.0}));
  EXPECT_EQ(r.residuals.shape(), (Shape{1}));
  r = la::lstsq(Array(std::vector<double>{1, 0, 1, 0, 1, 1, 1, 1, 1}, {3, 3}), Array(std::vector<double>{1, 2, 4, 1, 1, 1}, {3, 2}));
  EXPECT_EQ(r.residuals.shape(), (Shape{2}));
}

// JAX 0.10.2: cholesky of a matrix that is not positive definite is NaN on and below the
// diagonal and keeps zeros above it (upper=True: the transpose).
TEST(NumpyLinalg, CholeskyOfANonPositiveDefiniteMatrix) {
  const double nan = NAN;
  Array l = la::cholesky(Array(std::vector<double>{1, 2, 2, 1}, {2, 2}));
  EXPECT_ALLCLOSE(l, Array(std::vector<double>{nan, 0, nan, nan}, {2, 2}));
  EXPECT_ALLCLOSE(la::cholesky(Array(std::vector<double>{1, 2, 2, 1}, {2, 2}), true),
                  Array(std::vector<double>{nan, nan, 0, nan}, {2, 2}));
  EXPECT_ALLCLOSE(la::cholesky(Array(std::vector<double>{4, 2, 0, 2, 1, 0, 0, 0, 1}, {3, 3})),  // singular PSD
                  Array(std::vector<double>{nan, 0, 0, nan, nan, 0, nan, nan, nan}, {3, 3}));
  // Per matrix in a batch: the positive definite one is unaffected.
  Array batch = la::cholesky(Array(std::vector<double>{1, 2, 2, 1, 2, 0, 0, 2}, {2, 2, 2}));
  EXPECT_ALLCLOSE(batch, Array(std::vector<double>{nan, 0, nan, nan, std::sqrt(2.0), 0, 0, std::sqrt(2.0)}, {2, 2, 2}));
}

TEST(NumpyLinalg, EmptyMatrices) {
  Array e = detail::alloc_array(Aval{{0, 0}, DType::Float32, false});
  EXPECT_EQ(la::det(e).item<float>(), 1.0f);
  EXPECT_EQ(la::slogdet(e).logabsdet.item<float>(), 0.0f);
  EXPECT_EQ(la::inv(detail::alloc_array(Aval{{2, 0, 0}, DType::Float64, false})).shape(), (Shape{2, 0, 0}));
  EXPECT_EQ(la::norm(detail::alloc_array(Aval{{0}, DType::Float32, false})).item<float>(), 0.0f);
  EXPECT_EQ(la::pinv(detail::alloc_array(Aval{{3, 0}, DType::Float32, false})).shape(), (Shape{0, 3}));
  EXPECT_EQ(la::matrix_power(identity_stack({}, 2), 0).shape(), (Shape{2, 2}));
}

// ---- errors ----

TEST(NumpyLinalgErrors, Messages) {
  Array rect(std::vector<float>(6, 1.0f), {2, 3});
  EXPECT_JX_ERROR(la::inv(rect), "[linalg.inv]", "square", "(2, 3)");
  EXPECT_JX_ERROR(la::det(Array({1.0, 2.0})), "[linalg.det]", "rank >= 2", "(2,)");
  EXPECT_JX_ERROR(la::solve(identity_stack({}, 3), Array({1.0, 2.0})), "[linalg.solve]", "(3, 3)", "(2,)");
  EXPECT_JX_ERROR(la::qr(rect, "raw"), "[linalg.qr]", "'raw'");
  EXPECT_JX_ERROR(la::eigh(identity_stack({}, 2), "X"), "[linalg.eigh]", "UPLO", "'X'");
  EXPECT_JX_ERROR(la::norm(rect, 3), "[linalg.norm]", "invalid norm order 3");
  EXPECT_JX_ERROR(la::norm(rect, "nuc", {0}), "[linalg.norm]", "'nuc' for vectors");
  EXPECT_JX_ERROR(la::norm(rect, "max"), "[linalg.norm]", "'max'");
  EXPECT_JX_ERROR(la::norm(identity_stack({2}, 2), 2), "[linalg.norm]", "(2, 2, 2)");
  EXPECT_JX_ERROR(la::norm(rect, std::nullopt, {0, 1, 1}), "[linalg.norm]");
  EXPECT_JX_ERROR(la::norm(rect, std::nullopt, {2}), "[linalg.norm]", "axis 2 is out of bounds");
  EXPECT_JX_ERROR(la::lstsq(identity_stack({2}, 2), Array({1.0, 2.0})), "[linalg.lstsq]", "2-D");
  EXPECT_JX_ERROR(la::lstsq(rect, Array({1.0, 2.0, 3.0})), "[linalg.lstsq]", "(2,) or (2, K)");
  EXPECT_JX_ERROR(la::matrix_power(rect, 2), "[linalg.matrix_power]", "square");
  EXPECT_JX_ERROR(la::cholesky(Array(std::vector<float16_t>(4, float16_t(1.0f)), {2, 2})), "[cholesky]", "f16[2,2]");
}

}  // namespace
}  // namespace jx
