// jx::numpy shape manipulation: reshape, transpose, joining, splitting, tiling, padding,
// flips and diagonals, built on lax's data-movement primitives.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jx/numpy/core.h"

namespace jx::numpy {

// New shape with the same size; one dimension may be -1 (inferred).
Array reshape(const Array& x, const Shape& shape);
// The flattened array (row-major).
Array ravel(const Array& x);
// Same as ravel (jnp.ndarray.flatten).
Array flatten(const Array& x);
// Permutes axes (reverses them when `axes` is absent).
Array transpose(const Array& x, const std::optional<std::vector<int64_t>>& axes = std::nullopt);
// Matrix transpose of the last two axes.
Array matrix_transpose(const Array& x);
// Moves axes `source` to positions `destination`; the others keep their order.
Array moveaxis(const Array& x, const std::vector<int64_t>& source, const std::vector<int64_t>& destination);
Array moveaxis(const Array& x, int64_t source, int64_t destination);
// Swaps two axes.
Array swapaxes(const Array& x, int64_t axis1, int64_t axis2);
// Removes size-1 axes (all of them, or the given ones, which must have size 1).
Array squeeze(const Array& x, const Axes& axis = {});
// Inserts size-1 axes at the given positions of the result.
Array expand_dims(const Array& x, const Axes& axis);
// Views with at least 1, 2 or 3 dimensions (NumPy's placement of the new axes).
Array atleast_1d(const Array& x);
Array atleast_2d(const Array& x);
Array atleast_3d(const Array& x);

// Joins along an existing axis (axis none: flattens first). Dtypes are promoted.
Array concatenate(const std::vector<Array>& xs, std::optional<int64_t> axis = 0);
// Joins same-shaped arrays along a new axis.
Array stack(const std::vector<Array>& xs, int64_t axis = 0);
// Joins horizontally (axis 1; axis 0 for 1-d), vertically (axis 0 of atleast_2d) and
// depth-wise (axis 2 of atleast_3d).
Array hstack(const std::vector<Array>& xs);
Array vstack(const std::vector<Array>& xs);
Array dstack(const std::vector<Array>& xs);
// 1-d arrays become columns of a 2-d array.
Array column_stack(const std::vector<Array>& xs);

// Splits into `sections` equal parts (raises when the axis does not divide evenly).
std::vector<Array> split(const Array& x, int64_t sections, int64_t axis = 0);
// Splits at the given indices along `axis`.
std::vector<Array> split(const Array& x, const std::vector<int64_t>& indices, int64_t axis = 0);
// As split, but `sections` need not divide the axis: the first parts are one longer.
std::vector<Array> array_split(const Array& x, int64_t sections, int64_t axis = 0);
std::vector<Array> array_split(const Array& x, const std::vector<int64_t>& indices, int64_t axis = 0);
std::vector<Array> hsplit(const Array& x, int64_t sections);
std::vector<Array> vsplit(const Array& x, int64_t sections);

// Repeats the whole array `reps` times along each axis.
Array tile(const Array& x, const std::vector<int64_t>& reps);
// Repeats each element `repeats` times along `axis` (of the flattened array when none).
Array repeat(const Array& x, int64_t repeats, std::optional<int64_t> axis = std::nullopt);
// Per-element repeat counts (one per element along the axis).
Array repeat(const Array& x, const std::vector<int64_t>& repeats, std::optional<int64_t> axis = std::nullopt);
// Array-valued repeat counts; they may be traced when total_repeat_length (the static output
// length along the axis, as in JAX) is given; surplus output repeats the last element, a
// shortfall truncates.
Array repeat(const Array& x, const Array& repeats, std::optional<int64_t> axis,
             std::optional<int64_t> total_repeat_length);

// Reverses the order of elements along the given axes (all when none).
Array flip(const Array& x, const Axes& axis = {});
Array fliplr(const Array& x);
Array flipud(const Array& x);
// Rolls elements by `shift` along `axis` (of the flattened array when none).
Array roll(const Array& x, int64_t shift, std::optional<int64_t> axis = std::nullopt);
Array roll(const Array& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& axes);
// Rotates by 90 degrees k times in the plane of `axes` (from the first towards the second).
Array rot90(const Array& x, int64_t k = 1, std::pair<int64_t, int64_t> axes = {0, 1});

// Padding widths: one (before, after) pair per axis, or one pair (or one number) for all.
struct PadWidth {
  std::vector<std::pair<int64_t, int64_t>> widths;
  PadWidth(int64_t n) : widths{{n, n}} {}  // NOLINT
  PadWidth(int n) : widths{{n, n}} {}      // NOLINT
  PadWidth(int64_t before, int64_t after) : widths{{before, after}} {}
  PadWidth(std::pair<int64_t, int64_t> p) : widths{p} {}  // NOLINT
  PadWidth(std::vector<std::pair<int64_t, int64_t>> w) : widths(std::move(w)) {}  // NOLINT
  PadWidth(std::initializer_list<std::pair<int64_t, int64_t>> w) : widths(w) {}  // NOLINT
};
// NumPy's pad with mode "constant" (constant_values), "edge", "reflect", "symmetric",
// "wrap" or "empty" (zeros, as JAX).
Array pad(const Array& x, const PadWidth& pad_width, const std::string& mode = "constant",
          const Array& constant_values = 0);

// The diagonal with `offset` of the (axis1, axis2) planes, as a new last axis.
Array diagonal(const Array& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1);
// 1-d input: a 2-d array with v on diagonal k. 2-d input: its k-th diagonal.
Array diag(const Array& v, int64_t k = 0);
// A 2-d array with the flattened input on diagonal k.
Array diagflat(const Array& v, int64_t k = 0);
// Sum along diagonals (sum's accumulator dtypes).
Array trace(const Array& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1,
            std::optional<DType> dtype = std::nullopt);
// jnp.copy: arrays are immutable, so the same value (no data is copied).
Array copy(const Array& x);
// Flat indices from per-axis index arrays (mode "raise": concrete out-of-range indices raise).
Array ravel_multi_index(const std::vector<Array>& multi_index, const Shape& dims);

}  // namespace jx::numpy
