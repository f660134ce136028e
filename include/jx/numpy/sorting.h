// jx::numpy sorting and set operations, built on lax.sort (NaNs sort last, as NumPy).
#pragma once

#include <optional>
#include <vector>

#include "jx/numpy/core.h"

namespace jx::numpy {

// Sorted copy along `axis` (None flattens). `kind` is not offered: lax.sort is a stable
// merge sort either way; `descending` as JAX (NaNs then come first).
Array sort(const Array& a, std::optional<int64_t> axis = -1, bool stable = true, bool descending = false);
// Indices (int32) that sort `a` along `axis` (None flattens); stable by default, as JAX.
// Descending keeps equal elements in their original order.
Array argsort(const Array& a, std::optional<int64_t> axis = -1, bool stable = true, bool descending = false);
// Indirect stable sort by several keys of one shape: the LAST key is the primary one.
Array lexsort(const std::vector<Array>& keys, int64_t axis = -1);
// lexsort of the rows of `keys` (a 1-d array is a single key), as NumPy.
Array lexsort(const Array& keys, int64_t axis = -1);
// NumPy's partition contract (element kth in sorted place, smaller ones before, larger
// after). Like JAX, the result is not NumPy's arbitrary order: jx returns the full sort.
Array partition(const Array& a, int64_t kth, int64_t axis = -1);
// Indices that partition `a` (see partition): here, a stable argsort.
Array argpartition(const Array& a, int64_t kth, int64_t axis = -1);

// unique_all's four outputs (int32 indices): first-occurrence indices, the inverse
// (input's shape when axis is None, as NumPy 2) and counts (0 in padding).
struct UniqueResult {
  Array values, indices, inverse, counts;
};
// Sorted unique elements of ravel(ar), or unique slices along `axis`. NaNs collapse into
// one unless equal_nan is false. Without `size` the input must be concrete; with it the
// output is padded or truncated to `size`, as JAX requires under jit: values pad with
// fill_value (default: the smallest value), indices with the smallest value's index.
Array unique(const Array& ar, std::optional<int64_t> axis = std::nullopt, std::optional<int64_t> size = std::nullopt,
             const Array& fill_value = Array(), bool equal_nan = true);
// NumPy's unique(..., return_index, return_inverse, return_counts) in one call.
UniqueResult unique_all(const Array& ar, std::optional<int64_t> axis = std::nullopt,
                        std::optional<int64_t> size = std::nullopt, const Array& fill_value = Array(),
                        bool equal_nan = true);

}  // namespace jx::numpy
