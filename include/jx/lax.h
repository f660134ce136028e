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
Array convert_element_type(const Array& x, DType dtype);
// Reinterprets bits; a narrower target adds a trailing axis, a wider one consumes it.
Array bitcast_convert_type(const Array& x, DType dtype);

// ---- shapes and data movement ----
Array iota(DType dtype, int64_t size);
Array broadcasted_iota(DType dtype, const Shape& shape, int dimension);
// Operand dim i becomes output dim broadcast_dimensions[i].
Array broadcast_in_dim(const Array& x, const Shape& shape, const std::vector<int64_t>& broadcast_dimensions);
Array broadcast(const Array& x, const Shape& leading_sizes);  // prepends dims
Array reshape(const Array& x, const Shape& new_sizes);
Array transpose(const Array& x, const std::vector<int64_t>& permutation);
Array squeeze(const Array& x, const std::vector<int64_t>& dimensions);
Array expand_dims(const Array& x, const std::vector<int64_t>& dimensions);
Array rev(const Array& x, const std::vector<int64_t>& dimensions);
Array slice(const Array& x, const std::vector<int64_t>& start_indices,
            const std::vector<int64_t>& limit_indices, const std::vector<int64_t>& strides = {});
// Start indices are scalar integer arrays, clamped so the slice stays in bounds (as XLA).
Array dynamic_slice(const Array& x, const std::vector<Array>& start_indices, const Shape& slice_sizes);
Array dynamic_update_slice(const Array& x, const Array& update, const std::vector<Array>& start_indices);
struct PadDim {
  int64_t lo = 0, hi = 0, interior = 0;  // lo/hi may be negative (cropping)
};
Array pad(const Array& x, const Array& padding_value, const std::vector<PadDim>& config);
Array concatenate(const std::vector<Array>& xs, int64_t dimension);

// XLA gather/scatter with JAX's dimension numbers; the index vector is the last axis of
// `indices`.
enum class GatherScatterMode { Clip, FillOrDrop, PromiseInBounds };
struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map;
};
Array gather(const Array& operand, const Array& indices, const GatherDimensionNumbers& dnums,
             const Shape& slice_sizes, GatherScatterMode mode = GatherScatterMode::Clip,
             const Array& fill_value = Array());
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
