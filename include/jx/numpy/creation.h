// jx::numpy array creation: array, zeros/ones/full, arange, linspace, eye, meshgrid, tri.
// Without a dtype, floating values become float32 and integers int32 (JAX's defaults).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jx/numpy/core.h"

namespace jx::numpy {

// jnp.array(x, dtype): a copy of x (arrays are immutable, so x itself) in `dtype`; a weak
// C++ scalar takes its kind's default dtype (2.0 -> float32) as jnp.array(2.0) does.
// Also takes nested initializer lists: jnp::array({{1., 2.}, {3., 4.}}).
Array array(const Array& x, std::optional<DType> dtype = std::nullopt);
// From a std::vector of a C++ element type (vector<double> gives float64 unless `dtype`).
template <Element T>
Array array(const std::vector<T>& v, std::optional<DType> dtype = std::nullopt) {
  return array(Array(v), dtype);
}
// From a row-major std::vector and a shape.
template <Element T>
Array array(const std::vector<T>& v, const Shape& shape, std::optional<DType> dtype = std::nullopt) {
  return array(Array(v, shape), dtype);
}
template <Element T>
Array asarray(const std::vector<T>& v, std::optional<DType> dtype = std::nullopt) {
  return array(Array(v), dtype);
}

// Arrays of `shape` filled with 0, 1 or `fill_value` (float32 unless `dtype`).
Array zeros(const Shape& shape, DType dtype = DType::Float32);
Array ones(const Shape& shape, DType dtype = DType::Float32);
// jnp.empty: jx arrays are never uninitialized, so this is zeros (as in JAX).
Array empty(const Shape& shape, DType dtype = DType::Float32);
// Without `dtype` the fill value's dtype (a weak scalar's default: 2.0 -> float32, weak).
Array full(const Shape& shape, const Array& fill_value, std::optional<DType> dtype = std::nullopt);

// Arrays like x (its shape and dtype unless given); weakness is kept when dtype is not given.
Array zeros_like(const Array& x, std::optional<DType> dtype = std::nullopt,
                 std::optional<Shape> shape = std::nullopt);
Array ones_like(const Array& x, std::optional<DType> dtype = std::nullopt,
                std::optional<Shape> shape = std::nullopt);
Array empty_like(const Array& x, std::optional<DType> dtype = std::nullopt,
                 std::optional<Shape> shape = std::nullopt);
Array full_like(const Array& x, const Array& fill_value, std::optional<DType> dtype = std::nullopt,
                std::optional<Shape> shape = std::nullopt);

// Evenly spaced values in [0, stop) or [start, stop) by `step`. The dtype is int32 when
// every argument is an integer, float32 when any is floating, unless `dtype` is given.
// Arguments must be concrete (the length is static).
Array arange(const Array& stop, std::optional<DType> dtype = std::nullopt);
Array arange(const Array& start, const Array& stop, const Array& step = 1,
             std::optional<DType> dtype = std::nullopt);

// `num` samples from start to stop (inclusive when `endpoint`), along a new axis `axis`
// when start/stop are arrays. Integer dtypes take the floor, as jnp.linspace does.
Array linspace(const Array& start, const Array& stop, int64_t num = 50, bool endpoint = true,
               std::optional<DType> dtype = std::nullopt, int64_t axis = 0);
// linspace(..., retstep=True): the samples and the spacing between them.
std::pair<Array, Array> linspace_retstep(const Array& start, const Array& stop, int64_t num = 50,
                                         bool endpoint = true, std::optional<DType> dtype = std::nullopt,
                                         int64_t axis = 0);
// base ** linspace(start, stop, num, endpoint).
Array logspace(const Array& start, const Array& stop, int64_t num = 50, bool endpoint = true,
               double base = 10.0, std::optional<DType> dtype = std::nullopt, int64_t axis = 0);
// base ** start to base ** stop, as a geometric progression.
Array geomspace(const Array& start, const Array& stop, int64_t num = 50, bool endpoint = true,
                std::optional<DType> dtype = std::nullopt, int64_t axis = 0);

// N x M (M defaults to N) with ones on diagonal k.
Array eye(int64_t N, std::optional<int64_t> M = std::nullopt, int64_t k = 0, DType dtype = DType::Float32);
// The n x n identity matrix.
Array identity(int64_t n, DType dtype = DType::Float32);
// Ones at and below diagonal k of an N x M matrix.
Array tri(int64_t N, std::optional<int64_t> M = std::nullopt, int64_t k = 0, DType dtype = DType::Float32);
// The lower (upper) triangle of the last two axes, zero elsewhere. Needs ndim >= 2 (as JAX;
// NumPy would broadcast a 1-d input to 2-d).
Array tril(const Array& m, int64_t k = 0);
Array triu(const Array& m, int64_t k = 0);
// Coordinate grids from 1-d vectors (inputs are flattened). indexing "xy" (Cartesian,
// the default) swaps the first two output axes; "ij" is matrix indexing.
std::vector<Array> meshgrid(const std::vector<Array>& xs, const std::string& indexing = "xy");

}  // namespace jx::numpy
