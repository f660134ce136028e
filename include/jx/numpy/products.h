// jx::numpy products: matmul, dot, einsum and friends, lowered to lax.dot_general
// (outer and kron to broadcasting multiplies). Operands are promoted to a common dtype
// first (JAX's rules). C++ has no `@`: use jnp::matmul.
#pragma once

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "jx/numpy/core.h"

namespace jx::numpy {

// NumPy's matmul: batch dims broadcast, a 1-d operand gains (then loses) a unit dim;
// 0-d operands raise (use multiply).
Array matmul(const Array& a, const Array& b);
// NumPy's dot: a scalar operand multiplies; else sums over a's last axis and b's
// second-to-last (its only one when 1-d); output a.shape[:-1] + b's other dims.
Array dot(const Array& a, const Array& b);
// Flattened dot product, conjugating a (complex); sizes must match.
Array vdot(const Array& a, const Array& b);
// Sum over the last axes of a and b (a scalar operand multiplies).
Array inner(const Array& a, const Array& b);
// Outer product of the flattened operands: shape (a.size, b.size).
Array outer(const Array& a, const Array& b);
// Sum over the last `axes` dims of a and the first `axes` dims of b.
Array tensordot(const Array& a, const Array& b, int64_t axes = 2);
// Sum over a's dims `axes.first` paired with b's dims `axes.second`.
Array tensordot(const Array& a, const Array& b, const std::pair<std::vector<int64_t>, std::vector<int64_t>>& axes);
// Kronecker product: block (i, j) is a[i, j] * b; ranks are padded with leading 1s.
Array kron(const Array& a, const Array& b);
// Cross product of 2- or 3-vectors along axisa/axisb, result vectors along axisc
// (`axis`, when given, sets all three). Two 2-vectors give the z component only.
Array cross(const Array& a, const Array& b, int64_t axisa = -1, int64_t axisb = -1, int64_t axisc = -1,
            std::optional<int64_t> axis = std::nullopt);

// Einstein summation: "ij,jk->ik", implicit output ("ij,jk": labels seen once, sorted),
// "..." broadcasting dims, repeated labels for diagonals and traces ("ii->i", "ii").
// Contractions run pairwise left to right as lax.dot_general; size-1 dims broadcast.
Array einsum(std::string_view subscripts, const std::vector<Array>& operands);
template <class... More>
Array einsum(std::string_view subscripts, const Array& first, const More&... more) {
  return einsum(subscripts, std::vector<Array>{first, Array(more)...});
}

}  // namespace jx::numpy
