// Walking strided operands: the loop nest every CPU kernel on views stands on.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "jx/array.h"

namespace jx::cpu {

// A shape with K operands' element strides, simplified: size-1 dims dropped and
// adjacent dims merged wherever every operand is contiguous across them. Kernels then
// loop over few, long runs.
template <size_t K>
struct StridedLoop {
  std::vector<int64_t> shape;                       // collapsed, outermost first
  std::array<std::vector<int64_t>, K> strides;      // per operand, per collapsed dim

  StridedLoop(const Shape& full_shape, const std::array<const std::vector<int64_t>*, K>& full_strides) {
    for (size_t d = 0; d < full_shape.size(); ++d) {
      if (full_shape[d] == 1) continue;
      bool merge = !shape.empty();
      for (size_t k = 0; k < K && merge; ++k)
        merge = strides[k].back() == (*full_strides[k])[d] * full_shape[d];
      if (merge) {
        shape.back() *= full_shape[d];
        for (size_t k = 0; k < K; ++k) strides[k].back() = (*full_strides[k])[d];
      } else {
        shape.push_back(full_shape[d]);
        for (size_t k = 0; k < K; ++k) strides[k].push_back((*full_strides[k])[d]);
      }
    }
    if (shape.empty()) {  // a single element
      shape.push_back(1);
      for (size_t k = 0; k < K; ++k) strides[k].push_back(0);
    }
  }

  int ndim() const { return static_cast<int>(shape.size()); }
  int64_t inner_size() const { return shape.back(); }
  int64_t outer_size() const {
    int64_t n = 1;
    for (size_t d = 0; d + 1 < shape.size(); ++d) n *= shape[d];
    return n;
  }

  // Calls run(offsets, n, inner_strides) for outer rows [begin, end): offsets are each
  // operand's element offset of the row start.
  template <class F>
  void for_rows(int64_t begin, int64_t end, F&& run) const {
    const int nd = ndim();
    std::array<int64_t, K> inner;
    for (size_t k = 0; k < K; ++k) inner[k] = strides[k][nd - 1];
    // Odometer over the outer dims, started at `begin`.
    std::vector<int64_t> idx(static_cast<size_t>(nd > 1 ? nd - 1 : 0), 0);
    std::array<int64_t, K> off{};
    int64_t rem = begin;
    for (int d = nd - 2; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
      for (size_t k = 0; k < K; ++k) off[k] += idx[d] * strides[k][d];
    }
    for (int64_t row = begin; row < end; ++row) {
      run(off, shape[nd - 1], inner);
      for (int d = nd - 2; d >= 0; --d) {
        ++idx[d];
        for (size_t k = 0; k < K; ++k) off[k] += strides[k][d];
        if (idx[d] < shape[d]) break;
        for (size_t k = 0; k < K; ++k) off[k] -= shape[d] * strides[k][d];
        idx[d] = 0;
      }
    }
  }
};

}  // namespace jx::cpu
