// jx::lax: one function per primitive (JAX's jax.lax). Operands must already agree in
// shape and dtype where the primitive requires it; jx::numpy adds broadcasting and
// type promotion on top. Every function here goes through jx::bind.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "jx/array.h"
#include "jx/primitive.h"

namespace jx::lax {

// ---- elementwise unary ----
Array neg(const Array& x);
Array abs(const Array& x);  // complex -> its real dtype
Array sign(const Array& x);
Array floor(const Array& x);
Array ceil(const Array& x);
enum class RoundingMethod { AwayFromZero = 0, ToNearestEven = 1 };
Array round(const Array& x, RoundingMethod method = RoundingMethod::AwayFromZero);
Array exp(const Array& x);
Array exp2(const Array& x);
Array log(const Array& x);
Array log1p(const Array& x);
Array expm1(const Array& x);
Array sqrt(const Array& x);
Array rsqrt(const Array& x);
Array cbrt(const Array& x);
Array sin(const Array& x);
Array cos(const Array& x);
Array tan(const Array& x);
Array asin(const Array& x);
Array acos(const Array& x);
Array atan(const Array& x);
Array sinh(const Array& x);
Array cosh(const Array& x);
Array tanh(const Array& x);
Array asinh(const Array& x);
Array acosh(const Array& x);
Array atanh(const Array& x);
Array logistic(const Array& x);
Array erf(const Array& x);
Array erfc(const Array& x);
Array erf_inv(const Array& x);
Array lgamma(const Array& x);
Array digamma(const Array& x);
Array is_finite(const Array& x);  // -> bool
Array bitwise_not(const Array& x);  // lax.not_: logical not on bool, ~ on integers
Array real(const Array& x);
Array imag(const Array& x);
Array conj(const Array& x);

// ---- elementwise binary (same shape and dtype) ----
Array add(const Array& x, const Array& y);
Array sub(const Array& x, const Array& y);
Array mul(const Array& x, const Array& y);
Array div(const Array& x, const Array& y);  // integers round toward zero, as C
Array rem(const Array& x, const Array& y);  // C fmod: sign of x
Array pow(const Array& x, const Array& y);
Array integer_pow(const Array& x, int64_t y);
Array max(const Array& x, const Array& y);  // NaN-propagating
Array min(const Array& x, const Array& y);
Array atan2(const Array& x, const Array& y);
Array nextafter(const Array& x, const Array& y);
// lax.polygamma: the m-th derivative of digamma at x (m integer-valued >= 0, else NaN);
// float32/float64, m and x of one dtype and shape.
Array polygamma(const Array& m, const Array& x);
// lax.zeta: the Hurwitz zeta function sum_k (q + k)^-x (x > 1, else NaN; x = 1 is inf).
Array zeta(const Array& x, const Array& q);
Array bitwise_and(const Array& x, const Array& y);  // lax.and_
Array bitwise_or(const Array& x, const Array& y);
Array bitwise_xor(const Array& x, const Array& y);
Array shift_left(const Array& x, const Array& y);
Array shift_right_arithmetic(const Array& x, const Array& y);
Array shift_right_logical(const Array& x, const Array& y);
Array eq(const Array& x, const Array& y);  // comparisons -> bool
Array ne(const Array& x, const Array& y);
Array lt(const Array& x, const Array& y);
Array le(const Array& x, const Array& y);
Array gt(const Array& x, const Array& y);
Array ge(const Array& x, const Array& y);

// cases[which[i]][i]; `which` is bool (two cases) or int32.
Array select_n(const Array& which, const std::vector<Array>& cases);
Array clamp(const Array& lo, const Array& x, const Array& hi);

// ---- types ----
// weak_type marks the result weakly typed (jnp uses it to keep JAX's weak-type rules).
Array convert_element_type(const Array& x, DType dtype, bool weak_type = false);
// Reinterprets bits; a narrower target adds a trailing axis, a wider one consumes it.
Array bitcast_convert_type(const Array& x, DType dtype);

// ---- shapes and data movement ----
// Conventions: negative axes count from the end wherever an argument names axes (the
// primitive's parameters hold them normalized). Results that are pure re-indexings of
// the operand are zero-copy views sharing its storage (broadcast_in_dim, reshape where
// strides allow, transpose, squeeze, expand_dims, rev, slice, dynamic_slice) and keep
// its weak_type; the rest write fresh arrays.

// [0, 1, ..., size-1] of `dtype` (any numeric dtype; not bool).
Array iota(DType dtype, int64_t size);
// An array of `shape` whose value at index i is i[dimension] (primitive `iota` with
// parameters dtype, shape, dimension; iota(d, n) is broadcasted_iota(d, {n}, 0)).
Array broadcasted_iota(DType dtype, const Shape& shape, int dimension);
// Operand dim i becomes output dim broadcast_dimensions[i] (strictly increasing); each
// operand dim must be 1 or equal the output size there. Other output dims are new.
// A view with stride 0 along every broadcast dim.
Array broadcast_in_dim(const Array& x, const Shape& shape, const std::vector<int64_t>& broadcast_dimensions);
Array broadcast(const Array& x, const Shape& leading_sizes);  // prepends dims
// Row-major reshape (no -1 inference: jnp's job). A view whenever the operand's strides
// allow it (NumPy's rule: always for contiguous input), otherwise a contiguous copy.
Array reshape(const Array& x, const Shape& new_sizes);
// Output dim i is operand dim permutation[i]. A view.
Array transpose(const Array& x, const std::vector<int64_t>& permutation);
// Removes the listed dims, which must have size 1. A view.
Array squeeze(const Array& x, const std::vector<int64_t>& dimensions);
// Inserts size-1 dims; `dimensions` are positions in the result. A view.
Array expand_dims(const Array& x, const std::vector<int64_t>& dimensions);
// Reverses the listed dims. A view with negative strides.
Array rev(const Array& x, const std::vector<int64_t>& dimensions);
// x[start:limit:stride] per dim, with 0 <= start <= limit <= dim and stride > 0 (no
// negative steps here: rev them). `strides` defaults to all ones. A view.
Array slice(const Array& x, const std::vector<int64_t>& start_indices,
            const std::vector<int64_t>& limit_indices, const std::vector<int64_t>& strides = {});
// A window of `slice_sizes` starting at `start_indices`: one 0-d integer array per dim
// (any integer dtypes), operands so they can be traced. XLA's semantics: each start is
// clamped to [0, dim - size] so the window stays in bounds; it never raises and negative
// starts are NOT wrapped around (unlike jax.lax.dynamic_slice's Python wrapper, which
// adds dim to negatives first; callers wanting that normalize before calling). A view.
Array dynamic_slice(const Array& x, const std::vector<Array>& start_indices, const Shape& slice_sizes);
// A copy of x with `update` (same dtype and rank, no larger) written at the start
// indices, clamped exactly as in dynamic_slice.
Array dynamic_update_slice(const Array& x, const Array& update, const std::vector<Array>& start_indices);
struct PadDim {
  int64_t lo = 0, hi = 0, interior = 0;  // lo/hi may be negative (cropping)
};
// lax.pad: per dim, `interior` padding values between elements, then lo before and hi
// after (negative lo/hi crop). padding_value is a 0-d array of x's dtype. The primitive's
// padding_config parameter is flat: (lo, hi, interior) for dim 0, then dim 1, ...
Array pad(const Array& x, const Array& padding_value, const std::vector<PadDim>& config);
// Joins arrays of one dtype and rank whose shapes agree except along `dimension`.
Array concatenate(const std::vector<Array>& xs, int64_t dimension);

// XLA gather/scatter with JAX's dimension numbers; the index vector is the last axis of
// `indices` (any integer dtype): indices has shape (*batch, N), one N-vector per window.
// The primitives' parameters are the dnums fields by name, slice_sizes, and
// mode = 'clip' | 'fill' | 'promise_in_bounds'.
//
// Modes. Clip: each start is clamped to [0, dim - window size] (never out of bounds).
// FillOrDrop: a window that does not fit entirely (any start < 0 or > dim - window
// size) reads as fill_value in gather, and is skipped as a whole in scatter.
// PromiseInBounds: the caller promises in-bounds starts; jx clamps in gather and drops
// in scatter, so a broken promise is never unsafe.
enum class GatherScatterMode { Clip, FillOrDrop, PromiseInBounds };
// gather: out has rank len(batch) + len(offset_dims).
//  - start_index_map[k]: the operand dim that index-vector component k indexes (N entries).
//  - slice_sizes: the window size in every operand dim (0 <= size <= dim).
//  - collapsed_slice_dims (sorted): operand dims of window size 1 dropped from the output.
//  - offset_dims (sorted): the output positions of the remaining (uncollapsed) window
//    dims, in operand order. The batch dims of indices fill the other output positions,
//    in order.
// out[b..., o...] = operand[start(indices[b..., :]) + o placed on the uncollapsed dims].
// NumPy equivalents for x of shape (R, C):
//   x[idx] (idx int of shape (*B,)):   indices idx[..., None], offset_dims={len(B)},
//       collapsed_slice_dims={0}, start_index_map={0}, slice_sizes={1, C}
//   x[:, idx]:                         indices idx[..., None], offset_dims={0},
//       collapsed_slice_dims={1}, start_index_map={1}, slice_sizes={R, 1}
//   x[i, j] (i, j of shape (*B,)):     indices stack([i, j], -1), offset_dims={},
//       collapsed_slice_dims={0, 1}, start_index_map={0, 1}, slice_sizes={1, 1}
// Negative indices are not wrapped here (jnp normalizes them first). fill_value (used
// only in FillOrDrop mode, any dtype, converted) defaults as in JAX: NaN for inexact
// dtypes, the minimum of a signed type, the maximum of an unsigned type, true for bool.
struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map;
};
Array gather(const Array& operand, const Array& indices, const GatherDimensionNumbers& dnums,
             const Shape& slice_sizes, GatherScatterMode mode = GatherScatterMode::Clip,
             const Array& fill_value = Array());
// scatter: the inverse layout of gather. updates (the operand's dtype) has rank
// len(batch) + len(update_window_dims).
//  - update_window_dims (sorted): the updates dims forming each window; they map in
//    order onto the operand dims not in inserted_window_dims. The other updates dims are
//    the batch dims and must equal indices' batch shape, in order.
//  - inserted_window_dims (sorted): operand dims where the window has size 1 and no
//    updates dim (the scatter analogue of collapsed_slice_dims).
//  - scatter_dims_to_operand_dims[k]: the operand dim index-vector component k indexes.
// NumPy equivalents, x of shape (R, C): x.at[idx].op(u) with u of shape (*B, C):
// indices idx[..., None], update_window_dims={len(B)}, inserted_window_dims={0},
// scatter_dims_to_operand_dims={0}; x.at[i, j].op(u) with u of shape (*B,): indices
// stack([i, j], -1), update_window_dims={}, inserted_window_dims={0, 1},
// scatter_dims_to_operand_dims={0, 1}.
// Updates apply sequentially in row-major batch order, so results are deterministic:
// with repeated indices, scatter (set) keeps the last update and scatter_add sums in
// order (np.add.at). Integer add/mul wrap; min/max propagate NaN; on bool, add/max are
// `or` and mul/min are `and`. The operand is never modified; the result is fresh.
struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
};
// Out-of-bounds updates are dropped (FillOrDrop) unless mode is Clip.
Array scatter(const Array& operand, const Array& indices, const Array& updates,
              const ScatterDimensionNumbers& dnums, GatherScatterMode mode = GatherScatterMode::FillOrDrop);
Array scatter_add(const Array& operand, const Array& indices, const Array& updates,
                  const ScatterDimensionNumbers& dnums, GatherScatterMode mode = GatherScatterMode::FillOrDrop);
Array scatter_mul(const Array& operand, const Array& indices, const Array& updates,
                  const ScatterDimensionNumbers& dnums, GatherScatterMode mode = GatherScatterMode::FillOrDrop);
Array scatter_min(const Array& operand, const Array& indices, const Array& updates,
                  const ScatterDimensionNumbers& dnums, GatherScatterMode mode = GatherScatterMode::FillOrDrop);
Array scatter_max(const Array& operand, const Array& indices, const Array& updates,
                  const ScatterDimensionNumbers& dnums, GatherScatterMode mode = GatherScatterMode::FillOrDrop);

// ---- reductions ----
Array reduce_sum(const Array& x, const std::vector<int64_t>& axes);
Array reduce_prod(const Array& x, const std::vector<int64_t>& axes);
Array reduce_max(const Array& x, const std::vector<int64_t>& axes);
Array reduce_min(const Array& x, const std::vector<int64_t>& axes);
Array reduce_and(const Array& x, const std::vector<int64_t>& axes);
Array reduce_or(const Array& x, const std::vector<int64_t>& axes);
// First index of the max/min along `axis` (NaN counts as the max, as NumPy).
Array argmax(const Array& x, int64_t axis, DType index_dtype = DType::Int32);
Array argmin(const Array& x, int64_t axis, DType index_dtype = DType::Int32);
Array cumsum(const Array& x, int64_t axis, bool reverse = false);
Array cumprod(const Array& x, int64_t axis, bool reverse = false);
Array cummax(const Array& x, int64_t axis, bool reverse = false);
Array cummin(const Array& x, int64_t axis, bool reverse = false);
// Sorts all operands along `dimension` by the first `num_keys` operands
// (lexicographically); NaNs sort to the end. Returns the permuted operands.
std::vector<Array> sort(const std::vector<Array>& operands, int64_t dimension = -1,
                        bool is_stable = true, int num_keys = 1);
Array sort(const Array& x, int64_t dimension = -1, bool is_stable = true);

// ---- linear algebra ----
struct DotDimensionNumbers {
  std::vector<int64_t> lhs_contracting, rhs_contracting, lhs_batch, rhs_batch;
};
// Output dims: batch, lhs free, rhs free.
Array dot_general(const Array& lhs, const Array& rhs, const DotDimensionNumbers& dnums,
                  std::optional<DType> preferred_element_type = std::nullopt);
Array dot(const Array& lhs, const Array& rhs);  // vector/matrix products of rank <= 2

struct ConvDimensionNumbers {
  // Each spec lists dimension indices: lhs (batch, feature, spatial...),
  // rhs (out feature, in feature, spatial...), out (batch, feature, spatial...).
  std::vector<int64_t> lhs_spec, rhs_spec, out_spec;
};
Array conv_general_dilated(const Array& lhs, const Array& rhs, const std::vector<int64_t>& window_strides,
                           const std::vector<std::pair<int64_t, int64_t>>& padding,
                           const std::vector<int64_t>& lhs_dilation = {},
                           const std::vector<int64_t>& rhs_dilation = {},
                           const std::optional<ConvDimensionNumbers>& dimension_numbers = std::nullopt,
                           int64_t feature_group_count = 1, int64_t batch_group_count = 1);

// Solves op(a) x = b (left_side) or x op(a) = b, a triangular; batched over leading dims.
Array triangular_solve(const Array& a, const Array& b, bool left_side = false, bool lower = false,
                       bool transpose_a = false, bool conjugate_a = false, bool unit_diagonal = false);
// Lower Cholesky factor; NaNs where the matrix is not positive definite (as JAX).
Array cholesky(const Array& x);
// LAPACK-backed decompositions, batched over leading dims.
struct LuResult {
  Array lu, pivots, permutation;
};
LuResult lu(const Array& x);
struct QrResult {
  Array q, r;
};
QrResult qr(const Array& x, bool full_matrices = true);
struct EighResult {
  Array eigenvectors, eigenvalues;  // ascending eigenvalues
};
EighResult eigh(const Array& x, bool lower = true);
struct SvdResult {
  Array u, s, vh;  // s descending; u and vh empty when compute_uv is false
};
SvdResult svd(const Array& x, bool full_matrices = true, bool compute_uv = true);

// ---- PRNG ----
// The Threefry-2x32 block cipher (20 rounds) on uint32 operands of one shape.
std::pair<Array, Array> threefry2x32(const Array& key0, const Array& key1, const Array& x0, const Array& x1);

}  // namespace jx::lax
