// jx::numpy::linalg: NumPy's numpy.linalg on jx arrays (users write jnp::linalg::solve).
// Every function works on stacks of matrices (..., M, N), broadcasting batch dims as
// NumPy does. Integer and bool inputs are promoted to float32, JAX's default float.
// As in JAX, singular or non-positive-definite inputs give inf/NaN results rather than
// raising; shape and dtype errors raise jx::Error.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "jx/array.h"

namespace jx::numpy::linalg {

// x with a @ x = b. b is a vector (N,) when b.ndim == 1, else a stack (..., N, K)
// (NumPy 2's rule).
Array solve(const Array& a, const Array& b);
Array inv(const Array& a);
Array det(const Array& a);
struct SlogdetResult {
  Array sign, logabsdet;  // sign has a's dtype (|sign| = 1, or 0 when singular); logabsdet is real
};
SlogdetResult slogdet(const Array& a);

// Lower factor L with a = L L^H (upper: U = L^H). Only the lower triangle is read.
Array cholesky(const Array& a, bool upper = false);
struct QRResult {
  Array q, r;  // q is null for mode "r"
};
// mode: "reduced" (q: (..., M, K), r: (..., K, N), K = min(M, N)), "complete"
// (q: (..., M, M), r: (..., M, N)) or "r".
QRResult qr(const Array& a, std::string_view mode = "reduced");
struct EighResult {
  Array eigenvalues, eigenvectors;  // ascending real eigenvalues; eigenvectors as columns
};
// UPLO: which triangle ("L" or "U") is read.
EighResult eigh(const Array& a, std::string_view UPLO = "L");
Array eigvalsh(const Array& a, std::string_view UPLO = "L");
struct SVDResult {
  Array u, s, vh;  // s descending; u and vh are null when compute_uv is false
};
SVDResult svd(const Array& a, bool full_matrices = true, bool compute_uv = true);
Array svdvals(const Array& a);

// Vector or matrix norm. ord: nullopt (2-norm / Frobenius), any p (inf and -inf
// included, as std::numeric_limits<double>::infinity()), or for matrices 1, -1, 2, -2,
// inf, -inf. axis: empty means all axes for ord = nullopt, else the whole 1-D or 2-D
// array; one axis for a vector norm, two for a matrix norm.
Array norm(const Array& x, std::optional<double> ord = std::nullopt, const std::vector<int64_t>& axis = {},
           bool keepdims = false);
// Matrix norms by name: "fro" or "nuc".
Array norm(const Array& x, std::string_view ord, const std::vector<int64_t>& axis = {}, bool keepdims = false);

// Moore-Penrose pseudo-inverse; singular values at or below rcond * max(s) are dropped.
// Default rcond: 10 * max(M, N) * eps (JAX's).
Array pinv(const Array& a, std::optional<double> rcond = std::nullopt);
// Number of singular values above tol (default: max(s) * max(M, N) * eps), as int32.
Array matrix_rank(const Array& a, std::optional<double> tol = std::nullopt);
// a @ a @ ... (n times); n = 0 gives the identity, n < 0 powers of inv(a).
Array matrix_power(const Array& a, int64_t n);
// Swaps the last two axes.
Array matrix_transpose(const Array& a);

struct LstsqResult {
  Array x, residuals, rank, s;
};
// Least-squares solution of a x = b for a 2-D a (M, N) and b (M,) or (M, K), by SVD.
// Default rcond: max(M, N) * eps. As JAX (numpy_resid=False), residuals are always the
// squared 2-norms of b - a x per column, whatever the rank.
LstsqResult lstsq(const Array& a, const Array& b, std::optional<double> rcond = std::nullopt);

}  // namespace jx::numpy::linalg
