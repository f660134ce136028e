// jx::numpy::linalg, composed from the jx::lax linear-algebra primitives (lu, qr, eigh,
// svd, cholesky, triangular_solve) and dot_general, so transformations see primitives.
#include "jx/linalg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "jx/numpy/core.h"
#include "numpy/core_util.h"
#include "transforms/custom_jvp.h"

namespace jx::numpy::linalg {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string op_name(std::string_view fn) { return "linalg." + std::string(fn); }

// Bool and integers compute in their float (util::to_inexact); inexact dtypes stay.
DType inexact_of(DType d) { return util::to_inexact(d); }

Array to_dtype(const Array& x, DType d) { return x.dtype() == d ? x : lax::convert_element_type(x, d); }
Array as_inexact(const Array& x) { return to_dtype(x, inexact_of(x.dtype())); }

double eps_of(DType d) {
  switch (real_dtype(d)) {
    case DType::Float64: return std::numeric_limits<double>::epsilon();
    case DType::Float16: return 0.0009765625;
    case DType::BFloat16: return 0.0078125;
    default: return std::numeric_limits<float>::epsilon();
  }
}

// A constant of `dtype` broadcast to `shape` (a zero-stride view, no buffer).
Array constant(DType dtype, double v, const Shape& shape = {}) {
  return lax::broadcast_in_dim(detail::scalar_of(dtype, v), shape, {});
}

void check_matrix(std::string_view fn, const Array& a, bool square) {
  if (a.ndim() < 2)
    detail::fail(op_name(fn), "expects an array of rank >= 2 (a stack of matrices), got shape ",
                 detail::shape_str(a.shape()));
  if (square && a.shape(-1) != a.shape(-2))
    detail::fail(op_name(fn), "expects square matrices in the last two dimensions, got shape ",
                 detail::shape_str(a.shape()));
}

Shape batch_of(const Array& a) { return Shape(a.shape().begin(), a.shape().end() - 2); }

Shape concat(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Array swap_last2(const Array& a) {
  std::vector<int64_t> perm(static_cast<size_t>(a.ndim()));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return lax::transpose(a, perm);
}

// Conjugate transpose of the last two axes.
Array mH(const Array& a) {
  Array t = swap_last2(a);
  return is_complex(t.dtype()) ? lax::conj(t) : t;
}

// Stacked a (..., M, K) @ b (..., K, N) with NumPy batch broadcasting.
Array matmul(const Array& a, const Array& b) {
  const Shape batch = broadcast_shapes({batch_of(a), batch_of(b)}, "linalg.matmul");
  Array ab = broadcast_to(a, concat(batch, {a.shape(-2), a.shape(-1)}));
  Array bb = broadcast_to(b, concat(batch, {b.shape(-2), b.shape(-1)}));
  const int64_t nb = static_cast<int64_t>(batch.size());
  std::vector<int64_t> batch_dims(static_cast<size_t>(nb));
  for (int64_t i = 0; i < nb; ++i) batch_dims[i] = i;
  return lax::dot_general(ab, bb, {{nb + 1}, {nb}, batch_dims, batch_dims});
}

Array eye(int64_t n, DType dtype) {
  Array rows = lax::broadcasted_iota(DType::Int32, {n, n}, 0);
  Array cols = lax::broadcasted_iota(DType::Int32, {n, n}, 1);
  return lax::convert_element_type(lax::eq(rows, cols), dtype);
}

// The main diagonal of (..., N, N) as (..., N): every (N+1)-th element of each matrix.
Array diagonal(const Array& a) {
  const int64_t n = a.shape(-1);
  Shape flat = batch_of(a);
  flat.push_back(n * n);
  Array f = lax::reshape(a, flat);
  std::vector<int64_t> start(flat.size(), 0), limit = flat, strides(flat.size(), 1);
  strides.back() = n + 1;
  return lax::slice(f, start, limit, strides);
}

// Sign of the permutation recorded by LU pivots (..., K): +1 or -1 as `dtype`.
Array pivot_sign(const Array& pivots, DType dtype) {
  const Shape& ps = pivots.shape();
  Array iota = lax::broadcasted_iota(DType::Int32, ps, static_cast<int>(ps.size()) - 1);
  Array swaps = lax::reduce_sum(lax::convert_element_type(lax::ne(pivots, iota), DType::Int32),
                                {static_cast<int64_t>(ps.size()) - 1});
  Array odd = lax::rem(swaps, constant(DType::Int32, 2, swaps.shape()));
  // 1 - 2 * odd
  Array two_odd = lax::mul(lax::convert_element_type(odd, dtype), constant(dtype, 2, swaps.shape()));
  return lax::sub(constant(dtype, 1, swaps.shape()), two_odd);
}

// Rows of b (..., N, K) permuted as LU's `permutation` (..., N): (P b)[i] = b[perm[i]],
// as a product with the one-hot permutation matrix.
Array permute_rows(const Array& perm, const Array& b) {
  const int64_t n = perm.shape(-1);
  Shape ps = perm.shape();
  Shape pm_shape = concat(ps, {n});
  Array p = lax::broadcast_in_dim(perm, pm_shape, [&] {
    std::vector<int64_t> d(ps.size());
    for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<int64_t>(i);
    return d;
  }());
  Array cols = lax::broadcasted_iota(DType::Int32, pm_shape, static_cast<int>(pm_shape.size()) - 1);
  return matmul(lax::convert_element_type(lax::eq(p, cols), b.dtype()), b);
}

Array sum_last(const Array& x) { return lax::reduce_sum(x, {x.ndim() - 1}); }

// v (..., N, K) scaled column-wise by w (..., K).
Array scale_columns(const Array& v, const Array& w) {
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < w.ndim() - 1; ++i) dims.push_back(i);
  dims.push_back(v.ndim() - 1);
  return lax::mul(v, lax::broadcast_in_dim(to_dtype(w, v.dtype()), v.shape(), dims));
}

// Promotes a and b to one inexact dtype.
std::pair<Array, Array> promote_inexact(const Array& a, const Array& b) {
  DType d = inexact_of(result_type({a, b}));
  return {to_dtype(a, d), to_dtype(b, d)};
}

}  // namespace

// ---- solving ----

Array solve(const Array& a_in, const Array& b_in) {
  auto [a, b] = promote_inexact(a_in, b_in);
  check_matrix("solve", a, true);
  const int64_t n = a.shape(-1);
  const bool vector_b = b.ndim() == 1;
  if (b.ndim() == 0 || (vector_b ? b.shape(0) : b.shape(-2)) != n)
    detail::fail(op_name("solve"), "a of shape ", detail::shape_str(a.shape()), " and b of shape ",
                 detail::shape_str(b.shape()), " are incompatible: b must have shape (", n, ",) or (..., ", n,
                 ", K)");
  Array bm = vector_b ? lax::reshape(b, {n, 1}) : b;
  const Shape batch = broadcast_shapes({batch_of(a), batch_of(bm)}, "linalg.solve");
  Array ab = broadcast_to(a, concat(batch, {n, n}));
  Array bb = broadcast_to(bm, concat(batch, {n, bm.shape(-1)}));
  lax::LuResult f = lax::lu(ab);
  Array y = lax::triangular_solve(f.lu, permute_rows(f.permutation, bb), /*left_side=*/true, /*lower=*/true,
                                  false, false, /*unit_diagonal=*/true);
  Array x = lax::triangular_solve(f.lu, y, /*left_side=*/true, /*lower=*/false);
  return vector_b ? lax::reshape(x, concat(batch, {n})) : x;
}

Array inv(const Array& a_in) {
  Array a = as_inexact(a_in);
  check_matrix("inv", a, true);
  const int64_t n = a.shape(-1);
  return solve(a, broadcast_to(eye(n, a.dtype()), a.shape()));
}

namespace {

// det(a) from its LU factorization: U's diagonal product times the permutation's sign.
Array det_value(const Array& a) {
  lax::LuResult f = lax::lu(a);
  return lax::mul(lax::reduce_prod(diagonal(f.lu), {a.ndim() - 2}), pivot_sign(f.pivots, a.dtype()));
}

// Each matrix of `pred` (...) broadcast over (..., N, N).
Array per_matrix(const Array& pred, const Shape& shape) {
  std::vector<int64_t> dims(static_cast<size_t>(pred.ndim()));
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<int64_t>(i);
  return lax::broadcast_in_dim(pred, shape, dims);
}

Array trace(const Array& a) { return sum_last(diagonal(a)); }

// adj(a) for every a, singular or not, by the SVD: a = U S V^H gives
// adj(a) = det(U) det(V^H) V diag(prod_{j != i} s_j) U^H.
Array adjugate_by_svd(const Array& a) {
  const int64_t n = a.shape(-1);
  lax::SvdResult f = lax::svd(a, /*full_matrices=*/false);
  const Shape sq = a.shape();
  std::vector<int64_t> along_last;  // s (..., N) placed along the last axis of (..., N, N)
  for (int64_t i = 0; i < a.ndim() - 2; ++i) along_last.push_back(i);
  along_last.push_back(a.ndim() - 1);
  Array s_j = lax::broadcast_in_dim(f.s, sq, along_last);
  Array on_diagonal = broadcast_to(lax::eq(lax::broadcasted_iota(DType::Int32, {n, n}, 0),
                                           lax::broadcasted_iota(DType::Int32, {n, n}, 1)),
                                   sq);
  Array others = lax::reduce_prod(lax::select_n(on_diagonal, {s_j, constant(s_j.dtype(), 1, sq)}), {a.ndim() - 1});
  Array unitary_dets = lax::mul(det_value(f.u), det_value(f.vh));
  Array adj = matmul(scale_columns(mH(f.vh), others), mH(f.u));
  return lax::mul(adj, per_matrix(unitary_dets, sq));
}

// JAX's derivative of det, the adjugate: d det = tr(adj(a) da). Where some LU pivot is
// zero (a singular), adj(a) comes from the SVD; elsewhere det(a) tr(a^-1 da), from a solve.
// Each branch reads a harmless matrix where it is not taken, so neither its value nor its
// own derivative (in hessians) is NaN there.
std::pair<std::vector<Array>, std::vector<Array>> det_rule(std::span<const Array> primals,
                                                           std::span<const Array> tangents) {
  const Array& a = primals[0];
  const Array& da = tangents[0];
  const int64_t n = a.shape(-1);
  const Shape& sq = a.shape();
  lax::LuResult f = lax::lu(a);
  Array d = diagonal(f.lu);
  Array det = lax::mul(lax::reduce_prod(d, {a.ndim() - 2}), pivot_sign(f.pivots, a.dtype()));
  Array min_pivot = lax::reduce_min(lax::abs(d), {a.ndim() - 2});
  Array singular = lax::eq(min_pivot, constant(min_pivot.dtype(), 0, min_pivot.shape()));
  Array singular_sq = per_matrix(singular, sq);
  Array identity = broadcast_to(eye(n, a.dtype()), sq);
  // diag(1, ..., n): distinct singular values, so the SVD's own derivative is finite.
  Array ramp = lax::convert_element_type(lax::add(lax::broadcasted_iota(DType::Int32, {n, n}, 0),
                                                  constant(DType::Int32, 1, {n, n})),
                                         a.dtype());
  Array distinct = broadcast_to(lax::mul(ramp, eye(n, a.dtype())), sq);
  Array regular_t = lax::mul(det, trace(solve(lax::select_n(singular_sq, {a, identity}), da)));
  Array adj = adjugate_by_svd(lax::select_n(singular_sq, {distinct, a}));
  Array singular_t = trace(matmul(adj, da));
  return {{det}, {lax::select_n(singular, {regular_t, singular_t})}};
}

}  // namespace

Array det(const Array& a_in) {
  Array a = as_inexact(a_in);
  check_matrix("det", a, true);
  if (a.shape(-1) == 0) return det_value(a);
  auto f = [](std::span<const Array> x) { return std::vector<Array>{det_value(x[0])}; };
  return detail::custom_jvp_call("det", f, det_rule, std::span<const Array>(&a, 1))[0];
}

SlogdetResult slogdet(const Array& a_in) {
  Array a = as_inexact(a_in);
  check_matrix("slogdet", a, true);
  lax::LuResult f = lax::lu(a);
  Array d = diagonal(f.lu);
  Array absd = lax::abs(d);  // real dtype
  const DType real = absd.dtype();
  Array unit;
  if (is_complex(a.dtype())) {  // d / |d| (0 where d is 0): the phase has a derivative
    Array is_zero = lax::eq(absd, constant(real, 0, absd.shape()));
    Array safe_abs = lax::select_n(is_zero, {absd, constant(real, 1, absd.shape())});
    unit = lax::div(d, to_dtype(safe_abs, a.dtype()));
    unit = lax::select_n(is_zero, {unit, constant(a.dtype(), 0, unit.shape())});
  } else {
    unit = lax::sign(d);  // a real sign's tangent is exactly zero (d / |d| leaves rounding)
  }
  Array sign = lax::mul(lax::reduce_prod(unit, {a.ndim() - 2}), pivot_sign(f.pivots, a.dtype()));
  return {sign, sum_last(lax::log(absd))};
}

// ---- decompositions ----

Array cholesky(const Array& a_in, bool upper) {
  Array a = as_inexact(a_in);
  check_matrix("cholesky", a, true);
  Array l = lax::cholesky(a);
  return upper ? mH(l) : l;
}

QRResult qr(const Array& a_in, std::string_view mode) {
  Array a = as_inexact(a_in);
  check_matrix("qr", a, false);
  if (mode != "reduced" && mode != "complete" && mode != "r")
    detail::fail(op_name("qr"), "mode must be 'reduced', 'complete' or 'r', got '", mode, "'");
  lax::QrResult f = lax::qr(a, /*full_matrices=*/mode == "complete");
  if (mode == "r") return {Array(), f.r};
  return {f.q, f.r};
}

EighResult eigh(const Array& a_in, std::string_view UPLO) {
  Array a = as_inexact(a_in);
  check_matrix("eigh", a, true);
  if (UPLO != "L" && UPLO != "U") detail::fail(op_name("eigh"), "UPLO must be 'L' or 'U', got '", UPLO, "'");
  lax::EighResult f = lax::eigh(a, /*lower=*/UPLO == "L");
  return {f.eigenvalues, f.eigenvectors};
}

Array eigvalsh(const Array& a, std::string_view UPLO) { return eigh(a, UPLO).eigenvalues; }

SVDResult svd(const Array& a_in, bool full_matrices, bool compute_uv) {
  Array a = as_inexact(a_in);
  check_matrix("svd", a, false);
  lax::SvdResult f = lax::svd(a, full_matrices, compute_uv);
  return {f.u, f.s, f.vh};
}

Array svdvals(const Array& a) { return svd(a, false, false).s; }

// ---- norms ----

namespace {

Array abs_squared(const Array& x) {
  Array ax = lax::abs(x);
  return lax::mul(ax, ax);
}

Array reduce_abs(const Array& ax, const std::vector<int64_t>& axes, bool max) {
  return max ? lax::reduce_max(ax, axes) : lax::reduce_min(ax, axes);
}

// Reinserts reduced axes (sorted ascending) as size 1.
Array keep(const Array& reduced, std::vector<int64_t> axes, bool keepdims) {
  if (!keepdims) return reduced;
  std::sort(axes.begin(), axes.end());
  return lax::expand_dims(reduced, axes);
}

Array vector_norm(const Array& x, std::optional<double> ord, int64_t axis) {
  Array ax = lax::abs(x);
  const DType real = ax.dtype();
  const std::vector<int64_t> axes{axis};
  Shape reduced = x.shape();
  reduced.erase(reduced.begin() + axis);
  if (!ord || *ord == 2) return lax::sqrt(lax::reduce_sum(lax::mul(ax, ax), axes));
  const double p = *ord;
  if (p == kInf) return reduce_abs(ax, axes, true);
  if (p == -kInf) return reduce_abs(ax, axes, false);
  if (p == 0)
    return lax::reduce_sum(lax::convert_element_type(lax::ne(ax, constant(real, 0, ax.shape())), real), axes);
  if (p == 1) return lax::reduce_sum(ax, axes);
  Array powed = lax::pow(ax, constant(real, p, ax.shape()));
  return lax::pow(lax::reduce_sum(powed, axes), constant(real, 1.0 / p, reduced));
}

// Matrix norms over (row, col) axes; `name` is "fro", "nuc" or empty for numeric ords.
Array matrix_norm(const Array& x, std::optional<double> ord, std::string_view name, int64_t row, int64_t col) {
  const std::vector<int64_t> both{std::min(row, col), std::max(row, col)};
  if (name == "fro" || (name.empty() && !ord)) return lax::sqrt(lax::reduce_sum(abs_squared(x), both));
  if (name == "nuc" || (ord && std::abs(*ord) == 2)) {
    // Singular values of the matrices with (row, col) moved last.
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < x.ndim(); ++d)
      if (d != row && d != col) perm.push_back(d);
    perm.push_back(row);
    perm.push_back(col);
    Array s = lax::svd(lax::transpose(x, perm), false, false).s;
    if (name == "nuc") return sum_last(s);
    return *ord > 0 ? lax::reduce_max(s, {s.ndim() - 1}) : lax::reduce_min(s, {s.ndim() - 1});
  }
  if (ord && std::abs(*ord) == 1) {  // max/min column sum
    Array sums = lax::reduce_sum(lax::abs(x), {row});
    return reduce_abs(sums, {col > row ? col - 1 : col}, *ord > 0);
  }
  if (ord && std::abs(*ord) == kInf) {  // max/min row sum
    Array sums = lax::reduce_sum(lax::abs(x), {col});
    return reduce_abs(sums, {row > col ? row - 1 : row}, *ord > 0);
  }
  if (!name.empty()) detail::fail(op_name("norm"), "invalid norm order '", name, "' for matrices");
  detail::fail(op_name("norm"), "invalid norm order ", *ord, " for matrices; use 'fro', 'nuc', 1, -1, 2, -2, inf or -inf");
}

Array norm_impl(const Array& x_in, std::optional<double> ord, std::string_view name, const std::vector<int64_t>& axis,
                bool keepdims) {
  Array x = as_inexact(x_in);
  const int64_t nd = x.ndim();
  std::vector<int64_t> axes;
  for (int64_t a : axis) {
    if (a < -nd || a >= nd)
      detail::fail(op_name("norm"), "axis ", a, " is out of bounds for array of shape ", detail::shape_str(x.shape()));
    axes.push_back(a < 0 ? a + nd : a);
  }
  if (axes.size() == 2 && axes[0] == axes[1])
    detail::fail(op_name("norm"), "duplicate axes ", detail::shape_str(axis));
  if (axes.empty()) {
    if (!ord && name.empty()) {  // the 2-norm of the flattened array
      std::vector<int64_t> all(static_cast<size_t>(nd));
      for (int64_t i = 0; i < nd; ++i) all[i] = i;
      return keep(lax::sqrt(lax::reduce_sum(abs_squared(x), all)), all, keepdims);
    }
    if (nd == 1) axes = {0};
    else if (nd == 2) axes = {0, 1};
    else
      detail::fail(op_name("norm"), "an order needs a 1-D or 2-D array or an explicit axis, got shape ",
                   detail::shape_str(x.shape()));
  }
  if (axes.size() == 1) {
    if (!name.empty()) detail::fail(op_name("norm"), "invalid norm order '", name, "' for vectors");
    return keep(vector_norm(x, ord, axes[0]), axes, keepdims);
  }
  if (axes.size() == 2) return keep(matrix_norm(x, ord, name, axes[0], axes[1]), axes, keepdims);
  detail::fail(op_name("norm"), "axis must name 1 or 2 dimensions, got ", detail::shape_str(axis));
}

}  // namespace

Array norm(const Array& x, std::optional<double> ord, const std::vector<int64_t>& axis, bool keepdims) {
  return norm_impl(x, ord, "", axis, keepdims);
}

Array norm(const Array& x, std::string_view ord, const std::vector<int64_t>& axis, bool keepdims) {
  if (ord != "fro" && ord != "nuc")
    detail::fail(op_name("norm"), "invalid norm order '", ord, "'; named orders are 'fro' and 'nuc'");
  return norm_impl(x, std::nullopt, ord, axis, keepdims);
}

// ---- built on the SVD ----

namespace {

// 1/s where s > cutoff (rcond * max(s) per matrix), else 0; and that mask.
std::pair<Array, Array> inverted_singular_values(const Array& s, double rcond) {
  const DType real = s.dtype();
  Shape keep_shape = s.shape();
  keep_shape.back() = 1;
  Array smax = lax::reshape(lax::reduce_max(s, {s.ndim() - 1}), keep_shape);
  Array cutoff = lax::mul(lax::broadcast_in_dim(smax, s.shape(), [&] {
                            std::vector<int64_t> d(static_cast<size_t>(s.ndim()));
                            for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<int64_t>(i);
                            return d;
                          }()),
                          constant(real, rcond, s.shape()));
  Array keep_mask = lax::gt(s, cutoff);
  Array safe = lax::select_n(keep_mask, {constant(real, 1, s.shape()), s});
  Array inv = lax::div(constant(real, 1, s.shape()), safe);
  return {lax::select_n(keep_mask, {constant(real, 0, s.shape()), inv}), keep_mask};
}

}  // namespace

Array pinv(const Array& a_in, std::optional<double> rcond) {
  Array a = as_inexact(a_in);
  check_matrix("pinv", a, false);
  const int64_t m = a.shape(-2), n = a.shape(-1);
  if (std::min(m, n) == 0) return constant(a.dtype(), 0, concat(batch_of(a), {n, m}));
  const double rc = rcond.value_or(10.0 * static_cast<double>(std::max(m, n)) * eps_of(a.dtype()));
  lax::SvdResult f = lax::svd(a, /*full_matrices=*/false);
  Array s_inv = inverted_singular_values(f.s, rc).first;
  return matmul(scale_columns(mH(f.vh), s_inv), mH(f.u));
}

Array matrix_rank(const Array& a_in, std::optional<double> tol) {
  Array a = as_inexact(a_in);
  check_matrix("matrix_rank", a, false);
  const int64_t m = a.shape(-2), n = a.shape(-1);
  if (std::min(m, n) == 0) return constant(DType::Int32, 0, batch_of(a));
  Array s = lax::svd(a, false, false).s;
  Array above;
  if (tol) above = lax::gt(s, constant(s.dtype(), *tol, s.shape()));
  else above = inverted_singular_values(s, static_cast<double>(std::max(m, n)) * eps_of(a.dtype())).second;
  return sum_last(lax::convert_element_type(above, DType::Int32));
}

Array matrix_power(const Array& a_in, int64_t n) {
  check_matrix("matrix_power", a_in, true);
  Array a = n < 0 ? inv(a_in) : a_in;
  uint64_t e = n < 0 ? static_cast<uint64_t>(-(n + 1)) + 1 : static_cast<uint64_t>(n);
  Array result = broadcast_to(eye(a.shape(-1), a.dtype()), a.shape());
  if (e == 0) return result;
  // Binary exponentiation; the first factor replaces the identity.
  bool first = true;
  Array base = a;
  while (e) {
    if (e & 1) {
      result = first ? base : matmul(result, base);
      first = false;
    }
    e >>= 1;
    if (e) base = matmul(base, base);
  }
  return result;
}

Array matrix_transpose(const Array& a) {
  check_matrix("matrix_transpose", a, false);
  return swap_last2(a);
}

LstsqResult lstsq(const Array& a_in, const Array& b_in, std::optional<double> rcond) {
  auto [a, b] = promote_inexact(a_in, b_in);
  if (a.ndim() != 2)
    detail::fail(op_name("lstsq"), "a must be 2-D, got shape ", detail::shape_str(a.shape()));
  if (b.ndim() < 1 || b.ndim() > 2 || b.shape(0) != a.shape(0))
    detail::fail(op_name("lstsq"), "b must have shape (", a.shape(0), ",) or (", a.shape(0), ", K) for a of shape ",
                 detail::shape_str(a.shape()), ", got ", detail::shape_str(b.shape()));
  const int64_t m = a.shape(0), n = a.shape(1);
  const bool vector_b = b.ndim() == 1;
  Array b2 = vector_b ? lax::reshape(b, {m, 1}) : b;
  const int64_t k = b2.shape(1);
  const double rc = rcond.value_or(static_cast<double>(std::max(m, n)) * eps_of(a.dtype()));
  Array x, rank, s;
  if (std::min(m, n) == 0) {
    x = constant(a.dtype(), 0, {n, k});
    rank = constant(DType::Int32, 0);
    s = constant(real_dtype(a.dtype()), 0, {0});
  } else {
    lax::SvdResult f = lax::svd(a, /*full_matrices=*/false);
    auto [s_inv, mask] = inverted_singular_values(f.s, rc);
    rank = sum_last(lax::convert_element_type(mask, DType::Int32));
    // x = V diag(s_inv) U^H b
    Array uhb = matmul(mH(f.u), b2);                              // (K', k)
    Array scaled = mH(scale_columns(mH(uhb), s_inv));             // rows scaled by s_inv
    x = matmul(mH(f.vh), scaled);                                 // (n, k)
    s = f.s;
  }
  Array resid = lax::sub(b2, matmul(a, x));
  // (k,), and (1,) for a vector b, as JAX gives (NumPy too, for full-rank tall a).
  Array residuals = lax::reduce_sum(abs_squared(resid), {0});
  if (vector_b) x = lax::reshape(x, {n});
  return {x, residuals, rank, s};
}

}  // namespace jx::numpy::linalg
