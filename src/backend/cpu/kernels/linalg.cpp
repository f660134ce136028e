// CPU kernels of the linear-algebra primitives (their rules: src/lax/linalg.cpp):
// triangular_solve (BLAS trsm) and the LAPACK decompositions cholesky, lu, qr, eigh and
// svd. Each batch entry is factored independently; a numerical failure (not positive
// definite, no convergence, NaN input) turns that entry's outputs into NaN instead of
// raising, as JAX does, since the failure depends on values, not shapes.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu/blas.h"
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/thread_pool.h"
#include "core/array_internal.h"
#include "lax/linalg_params.h"

namespace jx::cpu {
namespace {

using lax::linalg_params::batch_shape;

// Calls f.template operator()<T>() for the four LAPACK dtypes.
template <class F>
void dispatch_lapack(DType d, F&& f) {
  switch (d) {
    case DType::Float32: f.template operator()<float>(); return;
    case DType::Float64: f.template operator()<double>(); return;
    case DType::Complex64: f.template operator()<complex64_t>(); return;
    case DType::Complex128: f.template operator()<complex128_t>(); return;
    default: throw Error(detail::cat("[linalg] unsupported dtype ", dtype_name(d)));
  }
}

template <class T>
using real_t = decltype(std::abs(T{}));

template <class T>
void fill_nan(T* p, int64_t n) {
  using R = real_t<T>;
  std::fill(p, p + n, T(std::numeric_limits<R>::quiet_NaN()));
}

// Writes the m x n "identity" (ones on the main diagonal).
template <class T>
void set_eye(T* p, int64_t m, int64_t n) {
  std::fill(p, p + m * n, T(0));
  for (int64_t i = 0; i < std::min(m, n); ++i) p[i * n + i] = T(1);
}

// Runs body(b) for every batch entry; small matrices are spread over threads (LAPACK
// and BLAS only thread large problems themselves).
template <class F>
void for_each_matrix(int64_t batch, int64_t n, F&& body) {
  const int64_t cost = std::max<int64_t>(1, n * n * n);
  if (batch > 1 && cost < (int64_t{1} << 18)) {
    cpu::parallel_for(batch, std::max<int64_t>(1, cpu::kParallelGrain / cost), [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; ++b) body(b);
    });
  } else {
    for (int64_t b = 0; b < batch; ++b) body(b);
  }
}

// A fresh contiguous copy of x (the LAPACK routines overwrite their input).
Array fresh_copy(const Array& x) {
  Array out = detail::alloc_array(Aval{x.shape(), x.dtype(), false});
  x.copy_to(detail::mutable_data<void>(out), x.dtype());
  return out;
}

std::vector<Array> make_outputs(std::span<const Aval> avals) {
  std::vector<Array> outs;
  for (const Aval& a : avals) outs.push_back(detail::alloc_array(a));
  return outs;
}

// ---- triangular_solve ----

std::vector<Array> triangular_solve_impl(std::span<const Array> in, const Params& p, std::span<const Aval> out_avals) {
  Array x = fresh_copy(in[1]);
  if (x.size() == 0) return {x};
  const bool left = p.get_bool("left_side"), lower = p.get_bool("lower");
  const bool transpose = p.get_bool("transpose_a"), conjugate = p.get_bool("conjugate_a");
  const bool unit = p.get_bool("unit_diagonal");
  Array a = detail::contiguous(in[0]);
  const int64_t m = a.shape().back();
  const int64_t rows = x.shape()[x.ndim() - 2], cols = x.shape().back();
  const int64_t batch = shape_size(batch_shape(x.aval()));
  dispatch_lapack(x.dtype(), [&]<class T>() {
    const T* ap = detail::data<T>(a);
    std::vector<T> conj_a;
    // BLAS has op(A) = conj(A)^T but not conj(A) alone: conjugate a copy instead.
    if constexpr (is_complex_v<T>) {
      if (conjugate && !transpose) {
        conj_a.assign(ap, ap + a.size());
        for (T& v : conj_a) v = std::conj(v);
        ap = conj_a.data();
      }
    }
    const cpu::Op op = !transpose ? cpu::Op::None : (conjugate ? cpu::Op::ConjTranspose : cpu::Op::Transpose);
    T* xp = detail::mutable_data<T>(x);
    for_each_matrix(batch, m, [&](int64_t b) {
      cpu::trsm<T>(left, lower, op, unit, rows, cols, ap + b * m * m, m, xp + b * rows * cols, cols);
    });
  });
  return {detail::with_weak_type(x, out_avals[0].weak_type)};
}

// ---- cholesky ----

std::vector<Array> cholesky_impl(std::span<const Array> in, const Params&, std::span<const Aval>) {
  Array l = fresh_copy(in[0]);
  if (l.size() == 0) return {l};
  const int64_t n = l.shape().back();
  const int64_t batch = l.size() / (n * n);
  dispatch_lapack(l.dtype(), [&]<class T>() {
    T* base = detail::mutable_data<T>(l);
    for_each_matrix(batch, n, [&](int64_t b) {
      T* a = base + b * n * n;
      // Not positive definite: NaN on and below the diagonal, zeros above, as JAX gives.
      if (cpu::potrf<T>(true, n, a, n) != 0) fill_nan(a, n * n);
      for (int64_t i = 0; i < n; ++i) std::fill(a + i * n + i + 1, a + (i + 1) * n, T(0));
    });
  });
  return {l};
}

// ---- lu ----

std::vector<Array> lu_impl(std::span<const Array> in, const Params&, std::span<const Aval> out_avals) {
  Array lu = fresh_copy(in[0]);
  std::vector<Array> outs = make_outputs(out_avals.subspan(1));
  const int64_t m = lu.shape()[lu.ndim() - 2], n = lu.shape().back(), k = std::min(m, n);
  const int64_t batch = shape_size(batch_shape(lu.aval()));
  int32_t* pivots = detail::mutable_data<int32_t>(outs[0]);
  int32_t* perm = detail::mutable_data<int32_t>(outs[1]);
  dispatch_lapack(lu.dtype(), [&]<class T>() {
    T* base = detail::mutable_data<T>(lu);
    for_each_matrix(batch, std::max(m, n), [&](int64_t b) {
      T* a = base + b * m * n;
      int32_t* piv = pivots + b * k;
      int32_t* pm = perm + b * m;
      for (int64_t i = 0; i < m; ++i) pm[i] = static_cast<int32_t>(i);
      int info = k == 0 ? 0 : cpu::getrf<T>(m, n, a, n, piv);
      if (info < 0) {  // NaN input: no factorization, identity pivots
        fill_nan(a, m * n);
        for (int64_t i = 0; i < k; ++i) piv[i] = static_cast<int32_t>(i);
        return;
      }
      // info > 0 means an exactly singular U: still a valid factorization.
      for (int64_t i = 0; i < k; ++i) {
        piv[i] -= 1;  // LAPACK counts from 1
        std::swap(pm[i], pm[piv[i]]);
      }
    });
  });
  return {lu, outs[0], outs[1]};
}

// ---- qr ----

std::vector<Array> qr_impl(std::span<const Array> in, const Params&, std::span<const Aval> out_avals) {
  std::vector<Array> outs = make_outputs(out_avals);
  Array a_in = detail::contiguous(in[0]);
  const int64_t m = a_in.shape()[a_in.ndim() - 2], n = a_in.shape().back(), k = std::min(m, n);
  const int64_t q_cols = outs[0].shape().back(), r_rows = outs[1].shape()[outs[1].ndim() - 2];
  const int64_t batch = shape_size(batch_shape(a_in.aval()));
  dispatch_lapack(a_in.dtype(), [&]<class T>() {
    const T* src = detail::data<T>(a_in);
    T* q_base = detail::mutable_data<T>(outs[0]);
    T* r_base = detail::mutable_data<T>(outs[1]);
    for_each_matrix(batch, std::max(m, n), [&](int64_t b) {
      T* q = q_base + b * m * q_cols;
      T* r = r_base + b * r_rows * n;
      if (k == 0) {
        set_eye(q, m, q_cols);
        std::fill(r, r + r_rows * n, T(0));
        return;
      }
      std::vector<T> a(src + b * m * n, src + (b + 1) * m * n), tau(static_cast<size_t>(k));
      int info = cpu::geqrf<T>(m, n, a.data(), n, tau.data());
      if (info == 0) {
        for (int64_t i = 0; i < r_rows; ++i)
          for (int64_t j = 0; j < n; ++j) r[i * n + j] = j >= i ? a[i * n + j] : T(0);
        // The reflectors sit below the diagonal of a's first k columns.
        std::fill(q, q + m * q_cols, T(0));
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < std::min(n, q_cols); ++j) q[i * q_cols + j] = a[i * n + j];
        info = cpu::orgqr<T>(m, q_cols, k, q, q_cols, tau.data());
      }
      if (info != 0) {
        fill_nan(q, m * q_cols);
        fill_nan(r, r_rows * n);
      }
    });
  });
  return outs;
}

// ---- eigh ----

std::vector<Array> eigh_impl(std::span<const Array> in, const Params& p, std::span<const Aval> out_avals) {
  Array v = fresh_copy(in[0]);
  Array w = detail::alloc_array(out_avals[1]);
  const bool lower = p.get_bool("lower");
  const int64_t n = v.shape().back();
  if (v.size() == 0) return {v, w};
  const int64_t batch = v.size() / (n * n);
  dispatch_lapack(v.dtype(), [&]<class T>() {
    using R = real_t<T>;
    T* v_base = detail::mutable_data<T>(v);
    R* w_base = detail::mutable_data<R>(w);
    for_each_matrix(batch, n, [&](int64_t b) {
      T* a = v_base + b * n * n;
      R* ev = w_base + b * n;
      if (cpu::syevd<T, R>(lower, n, a, n, ev) != 0) {
        fill_nan(a, n * n);
        fill_nan(ev, n);
      }
    });
  });
  return {v, w};
}

// ---- svd ----

std::vector<Array> svd_impl(std::span<const Array> in, const Params& p, std::span<const Aval> out_avals) {
  std::vector<Array> outs = make_outputs(out_avals);
  const bool compute_uv = p.get_bool("compute_uv"), full = p.get_bool("full_matrices");
  Array a_in = detail::contiguous(in[0]);
  const int64_t m = a_in.shape()[a_in.ndim() - 2], n = a_in.shape().back(), k = std::min(m, n);
  const int64_t u_cols = compute_uv ? outs[1].shape().back() : 0;
  const int64_t vt_rows = compute_uv ? outs[2].shape()[outs[2].ndim() - 2] : 0;
  const int64_t batch = shape_size(batch_shape(a_in.aval()));
  const char jobz = compute_uv ? (full ? 'A' : 'S') : 'N';
  dispatch_lapack(a_in.dtype(), [&]<class T>() {
    using R = real_t<T>;
    const T* src = detail::data<T>(a_in);
    R* s_base = detail::mutable_data<R>(outs[0]);
    T* u_base = compute_uv ? detail::mutable_data<T>(outs[1]) : nullptr;
    T* vt_base = compute_uv ? detail::mutable_data<T>(outs[2]) : nullptr;
    for_each_matrix(batch, std::max(m, n), [&](int64_t b) {
      R* s = s_base + b * k;
      T* u = compute_uv ? u_base + b * m * u_cols : nullptr;
      T* vt = compute_uv ? vt_base + b * vt_rows * n : nullptr;
      if (k == 0) {
        if (compute_uv) {
          set_eye(u, m, u_cols);
          set_eye(vt, vt_rows, n);
        }
        return;
      }
      std::vector<T> a(src + b * m * n, src + (b + 1) * m * n);
      T dummy[1];
      int info = cpu::gesdd<T, R>(jobz, m, n, a.data(), n, s, compute_uv ? u : dummy,
                                  compute_uv ? std::max<int64_t>(1, u_cols) : 1, compute_uv ? vt : dummy,
                                  compute_uv ? n : std::max<int64_t>(1, n));
      if (info != 0) {
        fill_nan(s, k);
        if (compute_uv) {
          fill_nan(u, m * u_cols);
          fill_nan(vt, vt_rows * n);
        }
      }
    });
  });
  return outs;
}

}  // namespace

void add_linalg_kernels(detail::KernelTable& table) {
  table.add("triangular_solve", triangular_solve_impl);
  table.add("cholesky", cholesky_impl);
  table.add("lu", lu_impl);
  table.add("qr", qr_impl);
  table.add("eigh", eigh_impl);
  table.add("svd", svd_impl);
}

}  // namespace jx::cpu
