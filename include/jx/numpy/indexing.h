// jx::numpy indexing helpers: take, nonzero and friends, index grids, searchsorted.
// Array::operator() / operator[] / at() (include/jx/array.h) implement NumPy's indexing
// itself. Everything here lowers to jx::lax (gather, scatter, slice, sort...).
//
// Semantics: NumPy's basic and advanced indexing (where the advanced dims go, index
// broadcasting, ellipsis, new axes, negative and clamped slice bounds). A plain integer
// out of range raises "[index] index 5 is out of bounds for axis 0 with size 3", as
// NumPy (JAX would clamp it). Where JAX differs from NumPy otherwise, jx follows JAX:
//  - integer-array indices out of bounds are clamped by x(idx) and dropped by
//    x.at(idx).set/add/... (NumPy raises); negative ones count from the end once;
//  - x.at(idx).set with repeated indices applies one of the updates (unspecified which);
//    add/mul/min/max accumulate all, as np.add.at and friends;
//  - a boolean mask index needs a concrete mask (its result shape depends on the values);
//    under a transformation it raises and points to jnp::where or nonzero(size=...);
//    a 0-d boolean index (NumPy's x[True]) is refused: use jx::newaxis;
//  - functions whose output size depends on values (nonzero, argwhere, flatnonzero,
//    unique) take a static `size` (padding with `fill_value`), required under jit.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "jx/numpy/core.h"

namespace jx::numpy {

// Elements of `a` at `indices` along `axis` (None flattens). mode "fill" (JAX's default:
// out-of-bounds give fill_value, default NaN / the int minimum / uint maximum / true),
// "clip" (clamped; negatives go to 0 as in NumPy) or "wrap" (modulo). NumPy's "raise"
// is refused: JAX cannot raise on traced indices.
Array take(const Array& a, const Array& indices, std::optional<int64_t> axis = std::nullopt,
           std::string_view mode = "fill", const Array& fill_value = Array());
// out[..., i, ...] = arr[..., indices[..., i, ...], ...] along `axis` (None flattens both);
// indices broadcast against arr in the other dims. Negative indices count from the end;
// out-of-bounds ones follow `mode` ("fill" default, or "clip"), as JAX.
Array take_along_axis(const Array& arr, const Array& indices, std::optional<int64_t> axis = -1,
                      std::string_view mode = "fill", const Array& fill_value = Array());

// Indices of the nonzero elements, one int32 array per dimension (C order). `size` pads
// (with fill_value, default 0; a scalar or one value per dimension) or truncates the
// result; it is optional only on concrete arrays, as in JAX. 0-d input raises (NumPy 2).
std::vector<Array> nonzero(const Array& a, std::optional<int64_t> size = std::nullopt,
                           const Array& fill_value = Array());
// nonzero(a) stacked as an (N, ndim) int32 array; 0-d input gives shape (N, 0).
Array argwhere(const Array& a, std::optional<int64_t> size = std::nullopt, const Array& fill_value = Array());
// Indices of the nonzero elements of ravel(a).
Array flatnonzero(const Array& a, std::optional<int64_t> size = std::nullopt,
                  const Array& fill_value = Array());
// Single-argument where: nonzero(condition). (The three-argument where is elementwise.)
std::vector<Array> where(const Array& condition);
// Slices of `a` along `axis` (None flattens) where the 1-d `condition` is true; a shorter
// condition selects from the first elements, as NumPy. Static `size` as nonzero.
Array compress(const Array& condition, const Array& a, std::optional<int64_t> axis = std::nullopt,
               std::optional<int64_t> size = std::nullopt, const Array& fill_value = Array());

// Index grids (int32), computed from static sizes.
// ndim copies of arange(n): indices of the main diagonal of an n x ... x n array.
std::vector<Array> diag_indices(int64_t n, int64_t ndim = 2);
// diag_indices for a square array `a` (all dimensions equal, ndim >= 2).
std::vector<Array> diag_indices_from(const Array& a);
// Row and column indices of the lower triangle (j <= i + k) of an n x m matrix (m defaults to n).
std::vector<Array> tril_indices(int64_t n, int64_t k = 0, std::optional<int64_t> m = std::nullopt);
// Row and column indices of the upper triangle (j >= i + k).
std::vector<Array> triu_indices(int64_t n, int64_t k = 0, std::optional<int64_t> m = std::nullopt);
std::vector<Array> tril_indices_from(const Array& a, int64_t k = 0);
std::vector<Array> triu_indices_from(const Array& a, int64_t k = 0);
// The grid of indices of an array of shape `dimensions`: shape (ndim, *dimensions).
Array indices(const Shape& dimensions, DType dtype = DType::Int32);

// Insertion points of v into the sorted 1-d `a` keeping it sorted: side "left" gives the
// first such index, "right" the last. NaNs sort last, as NumPy. `sorter` (optional)
// is an argsort of an unsorted `a`. Result int32 of v's shape (binary search by gathers).
Array searchsorted(const Array& a, const Array& v, std::string_view side = "left",
                   const Array& sorter = Array());
// Index of the bin of each x in monotonic (increasing or decreasing) 1-d `bins`.
Array digitize(const Array& x, const Array& bins, bool right = false);

}  // namespace jx::numpy
