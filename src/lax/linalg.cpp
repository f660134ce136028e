// Linear-algebra primitives on batches of matrices (..., m, n): triangular_solve and the
// decompositions cholesky, lu, qr, eigh and svd: their rules. Their CPU kernels (BLAS
// trsm, LAPACK; a numerical failure gives NaN outputs, as in JAX):
// src/backend/cpu/kernels/linalg.cpp.
#include <algorithm>
#include <numeric>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "lax/ad_rules.h"
#include "lax/batch_rules.h"
#include "lax/linalg_params.h"
#include "lax/rules.h"

namespace jx::lax {
extern const Primitive triangular_solve_p, cholesky_p, lu_p, qr_p, eigh_p, svd_p;
namespace {

using linalg_params::batch_shape;

bool is_lapack_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Complex64 || d == DType::Complex128;
}

// Validates a batch of matrices; `square` requires m == n.
void check_matrices(const char* op, const Aval& a, bool square, const char* what = "operand") {
  if (a.ndim() < 2)
    detail::fail(op, what, " must be a batch of matrices (rank >= 2), got ", a.str());
  if (!is_lapack_dtype(a.dtype))
    detail::fail(op, what, " must be float32, float64, complex64 or complex128, got ", a.str());
  if (square && a.shape[a.ndim() - 1] != a.shape[a.ndim() - 2])
    detail::fail(op, what, " must be a batch of square matrices, got shape ", detail::shape_str(a.shape));
}

Shape with_tail(Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail);
  return s;
}

// ---- triangular_solve ----

constexpr const char* kTri = "triangular_solve";

std::vector<Aval> triangular_solve_abstract_eval(std::span<const Aval> in, const Params& p) {
  rules::check_arity(kTri, in, 2);
  const Aval& a = in[0];
  const Aval& b = in[1];
  check_matrices(kTri, a, true, "a");
  check_matrices(kTri, b, false, "b");
  if (a.dtype != b.dtype) detail::fail(kTri, "a and b must have the same dtype, got ", a.str(), " and ", b.str());
  if (a.ndim() != b.ndim() || batch_shape(a) != batch_shape(b))
    detail::fail(kTri, "a and b must have the same batch dimensions, got shapes ", detail::shape_str(a.shape),
                 " and ", detail::shape_str(b.shape));
  const bool left = p.get_bool("left_side");
  const int64_t m = a.shape.back();
  const int64_t solved = left ? b.shape[b.ndim() - 2] : b.shape.back();
  if (solved != m)
    detail::fail(kTri, "a of shape ", detail::shape_str(a.shape), " does not match b of shape ",
                 detail::shape_str(b.shape), " with left_side=", left ? "True" : "False");
  return {Aval{b.shape, b.dtype, rules::all_weak(in)}};
}

// ---- cholesky ----

std::vector<Aval> cholesky_abstract_eval(std::span<const Aval> in, const Params&) {
  rules::check_arity("cholesky", in, 1);
  check_matrices("cholesky", in[0], true);
  return {Aval{in[0].shape, in[0].dtype, false}};
}

// ---- lu ----

std::vector<Aval> lu_abstract_eval(std::span<const Aval> in, const Params&) {
  rules::check_arity("lu", in, 1);
  check_matrices("lu", in[0], false);
  const Shape batch = batch_shape(in[0]);
  const int64_t m = in[0].shape[in[0].ndim() - 2], n = in[0].shape.back();
  return {Aval{in[0].shape, in[0].dtype, false}, Aval{with_tail(batch, {std::min(m, n)}), DType::Int32, false},
          Aval{with_tail(batch, {m}), DType::Int32, false}};
}

// ---- qr ----

std::vector<Aval> qr_abstract_eval(std::span<const Aval> in, const Params& p) {
  rules::check_arity("qr", in, 1);
  check_matrices("qr", in[0], false);
  const bool full = p.get_bool("full_matrices");
  const Shape batch = batch_shape(in[0]);
  const int64_t m = in[0].shape[in[0].ndim() - 2], n = in[0].shape.back(), k = std::min(m, n);
  return {Aval{with_tail(batch, {m, full ? m : k}), in[0].dtype, false},
          Aval{with_tail(batch, {full ? m : k, n}), in[0].dtype, false}};
}

// ---- eigh ----

std::vector<Aval> eigh_abstract_eval(std::span<const Aval> in, const Params&) {
  rules::check_arity("eigh", in, 1);
  check_matrices("eigh", in[0], true);
  const int64_t n = in[0].shape.back();
  return {Aval{in[0].shape, in[0].dtype, false},
          Aval{with_tail(batch_shape(in[0]), {n}), real_dtype(in[0].dtype), false}};
}

// ---- svd ----

std::vector<Aval> svd_abstract_eval(std::span<const Aval> in, const Params& p) {
  rules::check_arity("svd", in, 1);
  check_matrices("svd", in[0], false);
  const bool full = p.get_bool("full_matrices"), compute_uv = p.get_bool("compute_uv");
  const Shape batch = batch_shape(in[0]);
  const int64_t m = in[0].shape[in[0].ndim() - 2], n = in[0].shape.back(), k = std::min(m, n);
  std::vector<Aval> out{Aval{with_tail(batch, {k}), real_dtype(in[0].dtype), false}};
  if (compute_uv) {
    out.push_back(Aval{with_tail(batch, {m, full ? m : k}), in[0].dtype, false});
    out.push_back(Aval{with_tail(batch, {full ? n : k, n}), in[0].dtype, false});
  }
  return out;
}

std::vector<Array> bind_one(const Primitive& p, const Array& x, const Params& params = {}) {
  std::vector<Array> in{x};
  return jx::bind(p, in, params);
}

// ---- transformation rules: matrix helpers built from lax calls (so they compose) ----

int64_t rows_of(const Array& x) { return x.shape()[x.ndim() - 2]; }
int64_t cols_of(const Array& x) { return x.shape().back(); }

// Swaps the last two dims (a view).
Array mT(const Array& x) {
  std::vector<int64_t> perm(static_cast<size_t>(x.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return transpose(x, perm);
}
Array conj_if_complex(const Array& x) { return is_complex(x.dtype()) ? conj(x) : x; }
Array mH(const Array& x) { return conj_if_complex(mT(x)); }

// Batched matrix product over shared leading dims.
Array mm(const Array& a, const Array& b) {
  const int64_t nb = a.ndim() - 2;
  std::vector<int64_t> batch(static_cast<size_t>(nb));
  std::iota(batch.begin(), batch.end(), 0);
  return dot_general(a, b, DotDimensionNumbers{{nb + 1}, {nb}, batch, batch});
}

using ad::full_like;
using ad::scalar_like;

// Bool mask over x's last two dims: col - row <= k (lower) or col - row >= k (upper).
Array band_mask(const Array& x, int64_t k, bool lower) {
  const Shape s = x.shape();
  const int nd = static_cast<int>(s.size());
  Array diff = sub(broadcasted_iota(DType::Int32, s, nd - 1), broadcasted_iota(DType::Int32, s, nd - 2));
  Array kk = broadcast_in_dim(detail::scalar_of(DType::Int32, static_cast<double>(k)), s, {});
  return lower ? le(diff, kk) : ge(diff, kk);
}
Array tril(const Array& x, int64_t k = 0) { return select_n(band_mask(x, k, true), {full_like(x, 0), x}); }
Array triu(const Array& x, int64_t k = 0) { return select_n(band_mask(x, k, false), {full_like(x, 0), x}); }

// An m x n identity of x's dtype, broadcast over x's batch dims (with x's last two
// dims replaced).
Array eye_like(const Array& x, int64_t m, int64_t n, DType dtype) {
  Shape s(x.shape().begin(), x.shape().end() - 2);
  s.push_back(m);
  s.push_back(n);
  const int nd = static_cast<int>(s.size());
  Array is_diag = eq(broadcasted_iota(DType::Int32, s, nd - 2), broadcasted_iota(DType::Int32, s, nd - 1));
  return convert_element_type(is_diag, dtype);
}
// The diagonal of a batch of square matrices: (..., n).
Array diagonal(const Array& x) {
  return reduce_sum(mul(x, eye_like(x, rows_of(x), cols_of(x), x.dtype())), {x.ndim() - 1});
}
// A vector (..., n) as a row (..., 1, n) broadcast to (..., rows, n) and as a column.
Array as_rows(const Array& v, int64_t rows) {
  Shape s = v.shape();
  s.insert(s.end() - 1, rows);
  std::vector<int64_t> dims(static_cast<size_t>(v.ndim()));
  std::iota(dims.begin(), dims.end(), 0);
  dims.back() = v.ndim();
  return broadcast_in_dim(v, s, dims);
}
Array as_cols(const Array& v, int64_t cols) {
  Shape s = v.shape();
  s.push_back(cols);
  std::vector<int64_t> dims(static_cast<size_t>(v.ndim()));
  std::iota(dims.begin(), dims.end(), 0);
  return broadcast_in_dim(v, s, dims);
}
Array to_dtype(const Array& x, DType d) { return x.dtype() == d ? x : convert_element_type(x, d); }
// Slice of the last two dims [r0, r1) x [c0, c1).
Array slice_matrix(const Array& x, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0);
  std::vector<int64_t> limit(x.shape().begin(), x.shape().end());
  start[start.size() - 2] = r0;
  start.back() = c0;
  limit[limit.size() - 2] = r1;
  limit.back() = c1;
  return slice(x, start, limit);
}
// Pads the last two dims with zeros after (rows, cols).
Array pad_matrix(const Array& x, int64_t rows, int64_t cols) {
  if (rows == 0 && cols == 0) return x;
  std::vector<PadDim> cfg(static_cast<size_t>(x.ndim()));
  cfg[cfg.size() - 2].hi = rows;
  cfg.back().hi = cols;
  return pad(x, scalar_like(x, 0), cfg);
}

// op(x) for triangular_solve's transpose_a / conjugate_a.
Array apply_op(const Array& x, bool transpose_a, bool conjugate_a) {
  Array y = transpose_a ? mT(x) : x;
  return conjugate_a ? conj_if_complex(y) : y;
}

Params tri_params(bool left, bool lower, bool transpose_a, bool conjugate_a, bool unit) {
  return Params{{"left_side", left}, {"lower", lower}, {"transpose_a", transpose_a}, {"conjugate_a", conjugate_a},
                {"unit_diagonal", unit}};
}
Array tri_solve(const Array& a, const Array& b, const Params& p) {
  return jx::bind(triangular_solve_p, std::vector<Array>{a, b}, p)[0];
}

// x = op(a)^-1 b (or b op(a)^-1): dx = solve(a, t_b) - solve(a, op(t_a) x) (left) or
// - solve(a, x op(t_a)) (right), t_a masked to the triangle the solve reads.
JvpResult triangular_solve_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& p) {
  const Array& a = primals[0];
  const Array x = tri_solve(a, primals[1], p);
  Array t;
  if (tangents[1].valid()) t = tri_solve(a, tangents[1], p);
  if (tangents[0].valid()) {
    const bool lower = p.get_bool("lower"), unit = p.get_bool("unit_diagonal");
    const int64_t k = unit ? (lower ? -1 : 1) : 0;
    Array ta = lower ? tril(tangents[0], k) : triu(tangents[0], k);
    Array op_ta = apply_op(ta, p.get_bool("transpose_a"), p.get_bool("conjugate_a"));
    Array rhs = p.get_bool("left_side") ? mm(op_ta, x) : mm(x, op_ta);
    t = ad::add_tangents(t, neg(tri_solve(a, rhs, p)));
  }
  return {{x}, {t}};
}

std::vector<Array> triangular_solve_transpose(std::span<const Array> cts, std::span<const TransposeOperand> ops,
                                              const Params& p) {
  if (ops[0].is_linear())
    detail::fail(kTri, "is linear only in b, but the matrix a ", ops[0].aval.str(), " depends on the tangent");
  std::vector<Array> out(2);
  if (!cts[0].valid()) return out;
  Params q = p;
  q.set("transpose_a", !p.get_bool("transpose_a"));
  out[1] = tri_solve(ops[0].value, cts[0], q);
  return out;
}

// Decompositions and solves batch over leading dims: the batch axis moves to the front.
Params same_params(const Params& p, std::span<const Aval>) { return p; }

// L = chol(A): dL = L phi(L^-1 dA L^-H), phi = lower triangle with halved diagonal;
// dA symmetrized first (as JAX).
JvpResult cholesky_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params&) {
  Array l = bind_one(cholesky_p, primals[0])[0];
  Array sym = mul(add(tangents[0], mH(tangents[0])), full_like(tangents[0], 0.5));
  Array tmp = tri_solve(l, sym, tri_params(false, true, true, true, false));  // sym L^-H
  Array inner = tri_solve(l, tmp, tri_params(true, true, false, false, false));  // L^-1 sym L^-H
  const int64_t n = cols_of(l);
  Array eye = eye_like(l, n, n, l.dtype());
  Array half_diag = mul(eye, full_like(eye, 0.5));
  Array phi = mul(tril(inner), sub(full_like(l, 1), half_diag));
  return {{l}, {mm(l, phi)}};
}

// JAX's _lu_jvp_rule: with P A = L U, x = P dA; la = L^-1 x; lau = la U^-1;
// dLU = L tril(lau, -1) + triu(lau) U.
JvpResult lu_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params&) {
  std::vector<Array> out = bind_one(lu_p, primals[0]);
  const Array& lu_m = out[0];
  const int64_t m = rows_of(lu_m), n = cols_of(lu_m), k = std::min(m, n);
  const DType dt = lu_m.dtype();
  // The permutation as a one-hot matrix P[i, j] = (perm[i] == j).
  const Array& perm = out[2];
  Shape ps = perm.shape();
  ps.push_back(m);
  const int nd = static_cast<int>(ps.size());
  std::vector<int64_t> pdims(static_cast<size_t>(perm.ndim()));
  std::iota(pdims.begin(), pdims.end(), 0);
  Array pmat = convert_element_type(eq(broadcast_in_dim(perm, ps, pdims), broadcasted_iota(DType::Int32, ps, nd - 1)), dt);
  Array x = mm(pmat, tangents[0]);
  Array l = add(pad_matrix(tril(slice_matrix(lu_m, 0, m, 0, k), -1), 0, m - k), eye_like(lu_m, m, m, dt));
  Array u = pad_matrix(triu(slice_matrix(lu_m, 0, k, 0, n)), n - k, 0);
  if (n > k) u = add(u, sub(eye_like(lu_m, n, n, dt), pad_matrix(eye_like(lu_m, k, n, dt), n - k, 0)));
  Array la = tri_solve(l, x, tri_params(true, true, false, false, true));
  Array lau = tri_solve(u, la, tri_params(false, false, false, false, false));
  Array dlu = add(mm(l, tril(lau, -1)), mm(triu(lau), u));
  return {out, {dlu, Array(), Array()}};
}

// JAX's qr_jvp_rule (reduced QR of a tall or square matrix).
JvpResult qr_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& p) {
  const Array& a = primals[0];
  const int64_t m = rows_of(a), n = cols_of(a);
  if (m < n || (p.get_bool("full_matrices") && m != n))
    detail::fail("qr", "differentiation is implemented only for m >= n with full_matrices=False (or square "
                 "matrices), got ", a.aval().str(), " with full_matrices=", p.get_bool("full_matrices") ? "True" : "False");
  std::vector<Array> out = bind_one(qr_p, a, p);
  const Array &q = out[0], &r = out[1];
  Array dx_rinv = tri_solve(r, tangents[0], tri_params(false, false, false, false, false));
  Array qt_dx_rinv = mm(mH(q), dx_rinv);
  Array lower = tril(qt_dx_rinv, -1);
  Array d_omega = sub(lower, mH(lower));  // skew-Hermitian
  if (is_complex(a.dtype())) {
    Array imag_part = sub(qt_dx_rinv, to_dtype(real(qt_dx_rinv), a.dtype()));
    d_omega = add(d_omega, mul(eye_like(a, n, n, a.dtype()), imag_part));
  }
  Array dq = add(mm(q, sub(d_omega, qt_dx_rinv)), dx_rinv);
  Array dr = mm(sub(qt_dx_rinv, d_omega), r);
  return {out, {dq, dr}};
}

// JAX's eigh_jvp_rule: dw = real(diag(V^H dA V)), dV = V (F o (V^H dA V)) with
// F_ij = 1 / (w_j - w_i) off the diagonal and 0 on it.
JvpResult eigh_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& p) {
  std::vector<Array> out = bind_one(eigh_p, primals[0], p);
  const Array &v = out[0], &w = out[1];
  const int64_t n = cols_of(v);
  Array vdav = mm(mm(mH(v), tangents[0]), v);
  Array eye_w = eye_like(v, n, n, w.dtype());
  Array f = sub(div(full_like(eye_w, 1), add(eye_w, sub(as_rows(w, n), as_cols(w, n)))), eye_w);
  Array dv = mm(v, mul(to_dtype(f, v.dtype()), vdav));
  Array dw = diagonal(vdav);
  if (is_complex(dw.dtype())) dw = real(dw);
  return {out, {dv, dw}};
}

// JAX's svd_jvp_rule (reduced matrices; singular values only without compute_uv).
JvpResult svd_jvp(std::span<const Array> primals, std::span<const Array> tangents, const Params& p) {
  const Array& a = primals[0];
  const bool compute_uv = p.get_bool("compute_uv");
  if (compute_uv && p.get_bool("full_matrices") && rows_of(a) != cols_of(a))
    detail::fail("svd", "differentiation is not implemented for full_matrices=True with compute_uv=True on "
                 "non-square matrices, got ", a.aval().str());
  std::vector<Array> full = bind_one(svd_p, a, Params{{"compute_uv", true}, {"full_matrices", false}});
  const Array &s = full[0], &u = full[1], &vt = full[2];
  const DType dt = a.dtype();
  const Array& da = tangents[0];
  const Array ut = mH(u), v = mH(vt);
  Array ds_mat = mm(mm(ut, da), v);
  Array ds = diagonal(ds_mat);
  if (is_complex(ds.dtype())) ds = real(ds);
  std::vector<Array> primal_out = compute_uv ? std::vector<Array>{s, u, vt} : std::vector<Array>{s};
  if (!compute_uv) return {primal_out, {ds}};
  const int64_t k = s.shape().back(), m = rows_of(a), n = cols_of(a);
  Array s_row = as_rows(s, k), s_col = as_cols(s, k);
  Array s_diffs = mul(add(s_row, s_col), sub(s_row, s_col));
  Array eye_s = eye_like(s_row, k, k, s.dtype());
  Array f = to_dtype(sub(div(full_like(eye_s, 1), add(s_diffs, eye_s)), eye_s), dt);
  Array dss = mul(to_dtype(s_row, dt), ds_mat);
  Array sds = mul(to_dtype(s_col, dt), ds_mat);
  Array s_zeros = convert_element_type(eq(s, full_like(s, 0)), s.dtype());
  Array s_inv = sub(div(full_like(s, 1), add(s, s_zeros)), s_zeros);
  Array s_inv_mat = to_dtype(mul(as_rows(s_inv, k), eye_s), dt);
  Array du_dv_diag = mul(mul(sub(ds_mat, mH(ds_mat)), full_like(ds_mat, 0.5)), s_inv_mat);
  Array du = mm(u, add(mul(f, add(dss, mH(dss))), du_dv_diag));
  Array dv = mm(v, mul(f, add(sds, mH(sds))));
  if (m > n) {
    Array dav = mm(da, v);
    du = add(du, div(sub(dav, mm(u, mm(ut, dav))), to_dtype(as_rows(s, m), dt)));
  }
  if (n > m) {
    Array dahu = mm(mH(da), u);
    dv = add(dv, div(sub(dahu, mm(v, mm(vt, dahu))), to_dtype(as_rows(s, n), dt)));
  }
  return {primal_out, {ds, du, mH(dv)}};
}

}  // namespace

const Primitive triangular_solve_p("triangular_solve",
                                   {.traits = kLinear,  // in b only
                                    .abstract_eval = triangular_solve_abstract_eval,
                                    .jvp = triangular_solve_jvp,
                                    .transpose = triangular_solve_transpose,
                                    .batch = batch_rules::leading_batch(triangular_solve_p, same_params)});
const Primitive cholesky_p("cholesky", {.abstract_eval = cholesky_abstract_eval,
                                        .jvp = cholesky_jvp,
                                        .batch = batch_rules::leading_batch(cholesky_p, same_params)});
const Primitive lu_p("lu", {.traits = 0,
                            .num_outputs = 3,
                            .abstract_eval = lu_abstract_eval,
                            .jvp = lu_jvp,
                            .batch = batch_rules::leading_batch(lu_p, same_params)});
const Primitive qr_p("qr", {.traits = 0,
                            .num_outputs = 2,
                            .abstract_eval = qr_abstract_eval,
                            .jvp = qr_jvp,
                            .batch = batch_rules::leading_batch(qr_p, same_params)});
const Primitive eigh_p("eigh", {.traits = 0,
                                .num_outputs = 2,
                                .abstract_eval = eigh_abstract_eval,
                                .jvp = eigh_jvp,
                                .batch = batch_rules::leading_batch(eigh_p, same_params)});
// One output (s) without compute_uv, three (s, u, vh) with it.
const Primitive svd_p("svd", {.traits = 0,
                              .num_outputs = -1,
                              .abstract_eval = svd_abstract_eval,
                              .jvp = svd_jvp,
                              .batch = batch_rules::leading_batch(svd_p, same_params)});

Array triangular_solve(const Array& a, const Array& b, bool left_side, bool lower, bool transpose_a,
                       bool conjugate_a, bool unit_diagonal) {
  return bind1(triangular_solve_p, {a, b},
               Params{{"left_side", left_side},
                      {"lower", lower},
                      {"transpose_a", transpose_a},
                      {"conjugate_a", conjugate_a},
                      {"unit_diagonal", unit_diagonal}});
}

Array cholesky(const Array& x) { return bind1(cholesky_p, {x}); }

LuResult lu(const Array& x) {
  auto out = bind_one(lu_p, x);
  return {out[0], out[1], out[2]};
}

QrResult qr(const Array& x, bool full_matrices) {
  auto out = bind_one(qr_p, x, Params{{"full_matrices", full_matrices}});
  return {out[0], out[1]};
}

EighResult eigh(const Array& x, bool lower) {
  auto out = bind_one(eigh_p, x, Params{{"lower", lower}});
  return {out[0], out[1]};
}

SvdResult svd(const Array& x, bool full_matrices, bool compute_uv) {
  auto out = bind_one(svd_p, x, Params{{"full_matrices", full_matrices}, {"compute_uv", compute_uv}});
  if (!compute_uv) return {Array(), out[0], Array()};
  return {out[1], out[0], out[2]};
}

}  // namespace jx::lax
