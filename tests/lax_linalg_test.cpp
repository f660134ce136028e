// triangular_solve, cholesky, lu, qr, eigh and svd. Decompositions are checked through
// reconstruction and invariants (A = Q R with Q orthonormal, P A = L U, A V = V diag(w),
// U S V^H = A, L L^H = A), and against NumPy only where the result is unique
// (eigenvalues, singular values, the Cholesky factor). Fixtures: scripts/fixtures/linalg.py.
#include <cmath>
#include <random>

#include "core/array_internal.h"
#include "test_util.h"

namespace jx {
namespace {

// A dense complex128 matrix: the test's own arithmetic, independent of jx.
struct Mat {
  int64_t rows = 0, cols = 0;
  std::vector<complex128_t> v;
  Mat(int64_t r, int64_t c) : rows(r), cols(c), v(static_cast<size_t>(r * c)) {}
  complex128_t& operator()(int64_t i, int64_t j) { return v[i * cols + j]; }
  complex128_t operator()(int64_t i, int64_t j) const { return v[i * cols + j]; }
};

Mat operator*(const Mat& a, const Mat& b) {
  Mat c(a.rows, b.cols);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t p = 0; p < a.cols; ++p)
      for (int64_t j = 0; j < b.cols; ++j) c(i, j) += a(i, p) * b(p, j);
  return c;
}

Mat adjoint(const Mat& a) {
  Mat t(a.cols, a.rows);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) t(j, i) = std::conj(a(i, j));
  return t;
}

Mat eye(int64_t m, int64_t n) {
  Mat e(m, n);
  for (int64_t i = 0; i < std::min(m, n); ++i) e(i, i) = 1;
  return e;
}

double max_abs(const Mat& a) {
  double m = 0;
  for (auto x : a.v) m = std::max(m, std::abs(x));
  return m;
}

// max |a - b| <= tol * max(1, max |b|)
::testing::AssertionResult near(const Mat& a, const Mat& b, double tol) {
  if (a.rows != b.rows || a.cols != b.cols)
    return ::testing::AssertionFailure() << "shape " << a.rows << "x" << a.cols << " vs " << b.rows << "x" << b.cols;
  double worst = 0;
  for (size_t i = 0; i < a.v.size(); ++i) worst = std::max(worst, std::abs(a.v[i] - b.v[i]));
  if (!(worst <= tol * std::max(1.0, max_abs(b))))
    return ::testing::AssertionFailure() << "max difference " << worst << " (tol " << tol << ")";
  return ::testing::AssertionSuccess();
}

// The matrices of a stack (..., m, n).
std::vector<Mat> matrices(const Array& x) {
  const int64_t m = x.shape(-2), n = x.shape(-1);
  auto flat = x.to_vector<complex128_t>();
  const int64_t count = (m * n == 0) ? 0 : x.size() / (m * n);
  std::vector<Mat> out;
  for (int64_t b = 0; b < count; ++b) {
    Mat a(m, n);
    std::copy(flat.begin() + b * m * n, flat.begin() + (b + 1) * m * n, a.v.begin());
    out.push_back(std::move(a));
  }
  return out;
}

Mat diag(const std::vector<complex128_t>& d, int64_t m, int64_t n) {
  Mat out(m, n);
  for (size_t i = 0; i < d.size(); ++i) out(static_cast<int64_t>(i), static_cast<int64_t>(i)) = d[i];
  return out;
}

Array of_dtype(const std::vector<complex128_t>& v, Shape shape, DType dtype) {
  Array c(v.data(), std::move(shape));
  Array out = detail::alloc_array(Aval{c.shape(), dtype, false});
  c.copy_to(detail::mutable_data<void>(out), dtype);
  return out;
}

Array random_array(Shape shape, DType dtype, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist;
  std::vector<complex128_t> v(static_cast<size_t>(shape_size(shape)));
  for (auto& e : v) e = complex128_t(dist(gen), is_complex(dtype) ? dist(gen) : 0.0);
  return of_dtype(v, std::move(shape), dtype);
}

bool all_nan(const Array& x) {
  for (auto v : x.to_vector<complex128_t>())
    if (!std::isnan(v.real())) return false;
  return true;
}

class LinalgTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { f_ = testing::fixture_npz(std::string("linalg/linalg_") + std::string(dtype_name(GetParam()))); }
  Array get(const std::string& k) { return f_.at(k); }
  // Tolerance for reconstructions of O(1) matrices.
  double tol() const { return (GetParam() == DType::Float32 || GetParam() == DType::Complex64) ? 2e-5 : 1e-12; }
  std::map<std::string, Array> f_;
};

// ---- cholesky ----

TEST_P(LinalgTest, CholeskyMatchesNumpyAndReconstructs) {
  Array a = get("spd");
  Array l = lax::cholesky(a);
  EXPECT_EQ(l.dtype(), GetParam());
  EXPECT_ALLCLOSE(l, get("cholesky"), 10 * tol(), 10 * tol());
  auto as = matrices(a);
  auto ls = matrices(l);
  for (size_t b = 0; b < ls.size(); ++b) {
    EXPECT_TRUE(near(ls[b] * adjoint(ls[b]), as[b], 10 * tol()));
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = i + 1; j < 4; ++j) EXPECT_EQ(ls[b](i, j), complex128_t(0));
  }
}

TEST_P(LinalgTest, CholeskyOfNonPositiveDefiniteIsNan) {
  // Entry 0 of the batch is not positive definite, entry 1 is. As JAX: NaN on and below
  // the diagonal, zeros above it.
  Array a = get("spd");
  auto v = a.to_vector<complex128_t>();
  v[0] = -1.0;
  Array l = lax::cholesky(of_dtype(v, a.shape(), GetParam()));
  auto ls = matrices(l);
  const Mat& bad = ls[0];
  for (int64_t i = 0; i < bad.rows; ++i)
    for (int64_t j = 0; j < bad.cols; ++j) {
      if (j <= i) EXPECT_TRUE(std::isnan(bad(i, j).real())) << i << ", " << j;
      else EXPECT_EQ(bad(i, j), complex128_t(0)) << i << ", " << j;
    }
  EXPECT_TRUE(near(ls[1], matrices(get("cholesky"))[1], 10 * tol()));
}

// ---- triangular_solve ----

// op(A) of the triangle triangular_solve reads.
Mat effective_a(const Mat& a, bool lower, bool transpose, bool conjugate, bool unit) {
  Mat t(a.rows, a.cols);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) {
      bool in = lower ? j <= i : j >= i;
      complex128_t x = i == j && unit ? complex128_t(1) : (in ? a(i, j) : complex128_t(0));
      if (conjugate) x = std::conj(x);
      if (transpose) t(j, i) = x;
      else t(i, j) = x;
    }
  return t;
}

TEST_P(LinalgTest, TriangularSolveAllOptions) {
  const DType dt = GetParam();
  Array a = get("gen");  // (2, 3, 4, 4), full: only one triangle must be read
  Array b_left = random_array({2, 3, 4, 3}, dt, 1), b_right = random_array({2, 3, 3, 4}, dt, 2);
  auto as = matrices(a);
  for (int mask = 0; mask < 32; ++mask) {
    const bool left = mask & 1, lower = mask & 2, transpose = mask & 4, conjugate = mask & 8, unit = mask & 16;
    const Array& b = left ? b_left : b_right;
    Array x = lax::triangular_solve(a, b, left, lower, transpose, conjugate, unit);
    ASSERT_EQ(x.shape(), b.shape());
    auto xs = matrices(x), bs = matrices(b);
    for (size_t i = 0; i < xs.size(); ++i) {
      Mat op = effective_a(as[i], lower, transpose, conjugate, unit);
      EXPECT_TRUE(near(left ? op * xs[i] : xs[i] * op, bs[i], 100 * tol()))
          << "left=" << left << " lower=" << lower << " transpose=" << transpose << " conjugate=" << conjugate
          << " unit=" << unit;
    }
  }
}

// ---- lu ----

void check_lu(const Array& a, double tol) {
  lax::LuResult f = lax::lu(a);
  const int64_t m = a.shape(-2), n = a.shape(-1), k = std::min(m, n);
  EXPECT_EQ(f.pivots.dtype(), DType::Int32);
  EXPECT_EQ(f.permutation.dtype(), DType::Int32);
  auto lus = matrices(f.lu), as = matrices(a);
  auto piv = f.pivots.to_vector<int32_t>(), perm = f.permutation.to_vector<int32_t>();
  for (size_t b = 0; b < lus.size(); ++b) {
    Mat l(m, k), u(k, n), pa(m, n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < k; ++j) l(i, j) = i == j ? complex128_t(1) : (j < i ? lus[b](i, j) : complex128_t(0));
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = i; j < n; ++j) u(i, j) = lus[b](i, j);
    // The permutation is the pivots' row swaps applied to the identity.
    std::vector<int32_t> p(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) p[i] = static_cast<int32_t>(i);
    for (int64_t i = 0; i < k; ++i) std::swap(p[i], p[piv[b * k + i]]);
    for (int64_t i = 0; i < m; ++i) {
      EXPECT_EQ(p[i], perm[b * m + i]);
      for (int64_t j = 0; j < n; ++j) pa(i, j) = as[b](perm[b * m + i], j);
    }
    EXPECT_TRUE(near(l * u, pa, tol));
    // Partial pivoting bounds |L|; complex LAPACK picks pivots by |re| + |im|, so sqrt(2).
    const double bound = is_complex(a.dtype()) ? std::sqrt(2.0) : 1.0;
    for (auto x : l.v) EXPECT_LE(std::abs(x), bound + 1e-6);
  }
}

TEST_P(LinalgTest, LuReconstructsSquareAndRectangular) {
  check_lu(get("gen"), 10 * tol());
  check_lu(get("tall"), 10 * tol());
  check_lu(get("wide"), 10 * tol());
}

TEST_P(LinalgTest, LuOfSingularMatrixDoesNotFail) {
  Array z = of_dtype(std::vector<complex128_t>(9, 0.0), {3, 3}, GetParam());
  lax::LuResult f = lax::lu(z);
  EXPECT_EQ(f.lu.to_vector<double>(), std::vector<double>(9, 0.0));
  check_lu(get("rank_def"), 10 * tol());
}

// ---- qr ----

void check_qr(const Array& a, bool full, double tol) {
  lax::QrResult f = lax::qr(a, full);
  const int64_t m = a.shape(-2), n = a.shape(-1), k = std::min(m, n);
  EXPECT_EQ(f.q.shape(-1), full ? m : k);
  EXPECT_EQ(f.r.shape(-2), full ? m : k);
  auto qs = matrices(f.q), rs = matrices(f.r), as = matrices(a);
  for (size_t b = 0; b < qs.size(); ++b) {
    EXPECT_TRUE(near(adjoint(qs[b]) * qs[b], eye(qs[b].cols, qs[b].cols), tol));
    EXPECT_TRUE(near(qs[b] * rs[b], as[b], tol));
    for (int64_t i = 0; i < rs[b].rows; ++i)
      for (int64_t j = 0; j < std::min(i, n); ++j) EXPECT_EQ(rs[b](i, j), complex128_t(0));
  }
}

TEST_P(LinalgTest, QrFullAndReduced) {
  for (bool full : {true, false}) {
    check_qr(get("gen"), full, 10 * tol());
    check_qr(get("tall"), full, 10 * tol());
    check_qr(get("wide"), full, 10 * tol());
  }
}

// ---- eigh ----

void check_eigh(const Array& a, const Array& read_as, const lax::EighResult& f, const Array& want_w, double tol) {
  EXPECT_EQ(f.eigenvalues.dtype(), real_dtype(a.dtype()));
  EXPECT_ALLCLOSE(f.eigenvalues, want_w, tol, tol);
  auto vs = matrices(f.eigenvectors), as = matrices(read_as);
  auto w = f.eigenvalues.to_vector<complex128_t>();
  const int64_t n = a.shape(-1);
  for (size_t b = 0; b < vs.size(); ++b) {
    std::vector<complex128_t> wb(w.begin() + b * n, w.begin() + (b + 1) * n);
    EXPECT_TRUE(near(as[b] * vs[b], vs[b] * diag(wb, n, n), tol));
    EXPECT_TRUE(near(adjoint(vs[b]) * vs[b], eye(n, n), tol));
    for (int64_t i = 1; i < n; ++i) EXPECT_LE(wb[i - 1].real(), wb[i].real());
  }
}

TEST_P(LinalgTest, EighReadsOneTriangle) {
  Array a = get("spd");
  const double t = 100 * tol();
  check_eigh(a, a, lax::eigh(a, /*lower=*/true), get("spd_eigvals"), t);
  // Garbage in the triangle that is not read.
  auto v = a.to_vector<complex128_t>();
  auto lower_garbage = v, upper_garbage = v;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        if (j < i) lower_garbage[b * 16 + i * 4 + j] = 99.0;
        if (j > i) upper_garbage[b * 16 + i * 4 + j] = -99.0;
      }
  check_eigh(a, a, lax::eigh(of_dtype(lower_garbage, a.shape(), GetParam()), false), get("spd_eigvals_upper"), t);
  check_eigh(a, a, lax::eigh(of_dtype(upper_garbage, a.shape(), GetParam()), true), get("spd_eigvals"), t);
}

// ---- svd ----

void check_svd(const Array& a, bool full, const Array& want_s, double tol) {
  lax::SvdResult f = lax::svd(a, full, true);
  const int64_t m = a.shape(-2), n = a.shape(-1), k = std::min(m, n);
  EXPECT_EQ(f.s.dtype(), real_dtype(a.dtype()));
  EXPECT_ALLCLOSE(f.s, want_s, tol, tol);
  EXPECT_EQ(f.u.shape(-1), full ? m : k);
  EXPECT_EQ(f.vh.shape(-2), full ? n : k);
  auto us = matrices(f.u), vs = matrices(f.vh), as = matrices(a);
  auto s = f.s.to_vector<complex128_t>();
  for (size_t b = 0; b < us.size(); ++b) {
    std::vector<complex128_t> sb(s.begin() + b * k, s.begin() + (b + 1) * k);
    for (int64_t i = 1; i < k; ++i) EXPECT_GE(sb[i - 1].real(), sb[i].real());
    EXPECT_TRUE(near(us[b] * diag(sb, us[b].cols, vs[b].rows) * vs[b], as[b], tol));
    EXPECT_TRUE(near(adjoint(us[b]) * us[b], eye(us[b].cols, us[b].cols), tol));
    EXPECT_TRUE(near(vs[b] * adjoint(vs[b]), eye(vs[b].rows, vs[b].rows), tol));
  }
  lax::SvdResult values = lax::svd(a, full, /*compute_uv=*/false);
  EXPECT_FALSE(values.u.valid());
  EXPECT_FALSE(values.vh.valid());
  EXPECT_ALLCLOSE(values.s, want_s, tol, tol);
}

TEST_P(LinalgTest, SvdFullAndReduced) {
  for (bool full : {true, false}) {
    check_svd(get("gen"), full, get("svals_gen"), 100 * tol());
    check_svd(get("tall"), full, get("svals_tall"), 100 * tol());
    check_svd(get("wide"), full, get("svals_wide"), 100 * tol());
  }
}

// ---- NaN input, sizes 0 ----

TEST_P(LinalgTest, NanInputGivesNanWithoutRaising) {
  const DType dt = GetParam();
  std::vector<complex128_t> v(9, 1.0);
  v[4] = std::numeric_limits<double>::quiet_NaN();
  Array a = of_dtype(v, {3, 3}, dt);
  // cholesky: NaN from the NaN pivot on (JAX's LAPACK keeps the first column, as
  // [[1, 0, 0], [1, nan, 0], [1, nan, nan]]), zeros above the diagonal.
  auto l = lax::cholesky(a).to_vector<complex128_t>();
  for (int i : {4, 7, 8}) EXPECT_TRUE(std::isnan(l[i].real())) << i;
  for (int i : {1, 2, 5}) EXPECT_EQ(l[i], complex128_t(0)) << i;
  EXPECT_TRUE(all_nan(lax::eigh(a).eigenvalues));
  EXPECT_TRUE(all_nan(lax::svd(a).s));
  EXPECT_TRUE(all_nan(lax::svd(a, false, false).s));
  EXPECT_TRUE(all_nan(lax::qr(a).r));
  EXPECT_TRUE(all_nan(lax::lu(a).lu));
}

TEST_P(LinalgTest, SizeZero) {
  const DType dt = GetParam();
  Array empty_batch = detail::alloc_array(Aval{{0, 3, 3}, dt, false});
  EXPECT_EQ(lax::cholesky(empty_batch).shape(), (Shape{0, 3, 3}));
  EXPECT_EQ(lax::lu(empty_batch).pivots.shape(), (Shape{0, 3}));
  EXPECT_EQ(lax::eigh(empty_batch).eigenvalues.shape(), (Shape{0, 3}));
  EXPECT_EQ(lax::svd(empty_batch).vh.shape(), (Shape{0, 3, 3}));
  EXPECT_EQ(lax::qr(empty_batch).r.shape(), (Shape{0, 3, 3}));
  Array b = detail::alloc_array(Aval{{0, 3, 2}, dt, false});
  EXPECT_EQ(lax::triangular_solve(empty_batch, b, true).shape(), (Shape{0, 3, 2}));
  Array m00 = detail::alloc_array(Aval{{2, 0, 0}, dt, false});
  EXPECT_EQ(lax::cholesky(m00).shape(), (Shape{2, 0, 0}));
  EXPECT_EQ(lax::eigh(m00).eigenvalues.shape(), (Shape{2, 0}));
  Array tall0 = detail::alloc_array(Aval{{3, 0}, dt, false});
  lax::QrResult q = lax::qr(tall0, true);
  EXPECT_TRUE(near(matrices(q.q)[0], eye(3, 3), 0));
  EXPECT_EQ(q.r.shape(), (Shape{3, 0}));
  lax::SvdResult s = lax::svd(tall0, true);
  EXPECT_EQ(s.s.shape(), (Shape{0}));
  EXPECT_TRUE(near(matrices(s.u)[0], eye(3, 3), 0));
  EXPECT_EQ(s.vh.shape(), (Shape{0, 0}));
  lax::LuResult l = lax::lu(detail::alloc_array(Aval{{0, 4}, dt, false}));
  EXPECT_EQ(l.pivots.shape(), (Shape{0}));
  EXPECT_EQ(l.permutation.shape(), (Shape{0}));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, LinalgTest,
                         ::testing::Values(DType::Float32, DType::Float64, DType::Complex64, DType::Complex128),
                         [](const ::testing::TestParamInfo<DType>& info) { return std::string(dtype_name(info.param)); });

// ---- strided input and batching of many small matrices ----

TEST(Linalg, StridedInputAndLargeBatch) {
  // 40 transposed 3x3 SPD matrices: the primitives must read the logical values.
  Array g = random_array({40, 3, 3}, DType::Float64, 7);
  auto gs = matrices(g);
  std::vector<complex128_t> spd;
  for (const Mat& m : gs) {
    Mat s = m * adjoint(m);
    for (int64_t i = 0; i < 3; ++i) s(i, i) += 3.0;
    spd.insert(spd.end(), s.v.begin(), s.v.end());
  }
  Array a = of_dtype(spd, {40, 3, 3}, DType::Float64);
  Array at = detail::make_view(a, a.aval(), {9, 1, 3}, 0);  // transpose of each (symmetric: same values)
  Array l = lax::cholesky(at);
  auto ls = matrices(l), as = matrices(a);
  for (size_t b = 0; b < ls.size(); ++b) EXPECT_TRUE(near(ls[b] * adjoint(ls[b]), as[b], 1e-12));
}

// ---- errors ----

TEST(LinalgErrors, ShapesAndDtypes) {
  Array rect = random_array({3, 4}, DType::Float32, 1);
  EXPECT_JX_ERROR(lax::cholesky(rect), "[cholesky]", "square matrices", "(3, 4)");
  EXPECT_JX_ERROR(lax::eigh(rect), "[eigh]", "square matrices", "(3, 4)");
  Array ints = Array(std::vector<int32_t>(9, 1), {3, 3});
  EXPECT_JX_ERROR(lax::lu(ints), "[lu]", "float32, float64, complex64 or complex128", "i32[3,3]");
  EXPECT_JX_ERROR(lax::svd(random_array({3, 3}, DType::Float16, 1)), "[svd]", "f16[3,3]");
  EXPECT_JX_ERROR(lax::qr(random_array({3}, DType::Float32, 1)), "[qr]", "rank >= 2", "f32[3]");
  Array a = random_array({2, 3, 3}, DType::Float32, 2);
  EXPECT_JX_ERROR(lax::triangular_solve(a, random_array({2, 4, 2}, DType::Float32, 3), true), "[triangular_solve]",
                  "(2, 3, 3)", "(2, 4, 2)", "left_side=True");
  EXPECT_JX_ERROR(lax::triangular_solve(a, random_array({3, 3, 2}, DType::Float32, 3), true), "[triangular_solve]",
                  "same batch dimensions");
  EXPECT_JX_ERROR(lax::triangular_solve(a, random_array({2, 3, 3}, DType::Float64, 3), true), "[triangular_solve]",
                  "same dtype", "f32[2,3,3]", "f64[2,3,3]");
  EXPECT_JX_ERROR(lax::triangular_solve(rect, rect), "[triangular_solve]", "a must be a batch of square matrices");
}

}  // namespace
}  // namespace jx
