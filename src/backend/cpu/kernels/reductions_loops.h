// Loop helpers shared by the CPU kernels of reductions, cumulative ops and sort
// (src/backend/cpu/kernels/{reductions,cumulative,sort}.cpp); the monoids they combine
// with are in src/lax/reduction_ops.h.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include "backend/cpu/strided.h"

namespace jx::cpu::reduction_loops {

// Ops with a combine_vector on GCC/Clang vector extensions (portable across targets):
// float sums and products keep their accumulators in registers, and float max/min
// get vector selects where the auto-vectorizer turns their NaN-propagating ternaries
// into branches.
template <class Op>
concept VectorSelect = requires { requires Op::kVectorSelect; };
template <class Op>
concept Pairwise = requires { requires Op::kPairwise; };

// acc[j] = combine(acc[j], p[j]) for j < n.
template <class Op, class T>
inline void combine_row(typename Op::Acc* acc, const T* p, int64_t n) {
  using Acc = typename Op::Acc;
  int64_t j = 0;
  if constexpr (VectorSelect<Op> && std::is_same_v<T, Acc>) {
    using V [[gnu::vector_size(16)]] = Acc;
    constexpr int64_t kLanes = 16 / sizeof(Acc);
    for (; j + kLanes <= n; j += kLanes) {
      V a, v;
      std::memcpy(&a, acc + j, sizeof(V));
      std::memcpy(&v, p + j, sizeof(V));
      a = Op::combine_vector(a, v);
      std::memcpy(acc + j, &a, sizeof(V));
    }
  }
  for (; j < n; ++j) acc[j] = Op::combine(acc[j], Op::load(p[j]));
}

// combine over p[0..n) for the VectorSelect ops, accumulating in registers (for the
// Pairwise ops, callers keep n small).
template <class Op>
inline typename Op::Acc reduce_contiguous_vector(const typename Op::Acc* p, int64_t n) {
  using Acc = typename Op::Acc;
  using V [[gnu::vector_size(16)]] = Acc;
  constexpr int64_t kLanes = 16 / sizeof(Acc);
  V a0 = V{} + Op::identity(), a1 = a0;
  int64_t i = 0;
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    V v0, v1;
    std::memcpy(&v0, p + i, sizeof(V));
    std::memcpy(&v1, p + i + kLanes, sizeof(V));
    a0 = Op::combine_vector(a0, v0);
    a1 = Op::combine_vector(a1, v1);
  }
  a0 = Op::combine_vector(a0, a1);
  Acc r = Op::identity();
  for (int64_t l = 0; l < kLanes; ++l) r = Op::combine(r, a0[l]);
  for (; i < n; ++i) r = Op::combine(r, p[i]);
  return r;
}

// A growable scratch array of accumulators (std::vector<bool> is not an array of bool).
template <class A>
class Scratch {
 public:
  explicit Scratch(int64_t n = 0) { grow(n); }
  // Makes room for n elements, keeping the current ones.
  void grow(int64_t n) {
    if (n <= size_) return;
    std::unique_ptr<A[]> bigger(new A[static_cast<size_t>(n)]());
    std::copy(data_.get(), data_.get() + size_, bigger.get());
    data_ = std::move(bigger);
    size_ = n;
  }
  A* data() { return data_.get(); }
  A& operator[](int64_t i) { return data_[static_cast<size_t>(i)]; }

 private:
  std::unique_ptr<A[]> data_;
  int64_t size_ = 0;
};

// Each operand's element offset of the first element of `row` of a collapsed loop
// (rows run over all dims but the innermost, row-major).
template <size_t K>
std::array<int64_t, K> row_offset(const cpu::StridedLoop<K>& loop, int64_t row) {
  std::array<int64_t, K> off{};
  for (int d = loop.ndim() - 2; d >= 0; --d) {
    int64_t i = row % loop.shape[d];
    row /= loop.shape[d];
    for (size_t k = 0; k < K; ++k) off[k] += i * loop.strides[k][d];
  }
  return off;
}

// Steps through a collapsed loop element by element from a linear start index; the
// row offsets are recomputed only when a row ends, so a step is an add. The loop must
// be non-empty.
template <size_t K>
class LoopCursor {
 public:
  LoopCursor(const cpu::StridedLoop<K>& loop, int64_t start) : loop_(loop), cols_(loop.inner_size()) {
    row_ = start / cols_;
    col_ = start % cols_;
    seek();
  }
  const std::array<int64_t, K>& offsets() const { return off_; }
  int64_t offset(size_t k = 0) const { return off_[k]; }
  void next() {
    if (++col_ == cols_) {
      ++row_;
      col_ = 0;
      seek();
    } else {
      for (size_t k = 0; k < K; ++k) off_[k] += loop_.strides[k].back();
    }
  }

 private:
  void seek() {
    off_ = row_offset(loop_, row_);
    for (size_t k = 0; k < K; ++k) off_[k] += col_ * loop_.strides[k].back();
  }
  const cpu::StridedLoop<K>& loop_;
  int64_t cols_, row_ = 0, col_ = 0;
  std::array<int64_t, K> off_{};
};

// Calls run(offset, n, stride) for the contiguous-in-index runs that cover linear
// elements [begin, end) of a one-operand loop.
template <class F>
void for_runs(const cpu::StridedLoop<1>& loop, int64_t begin, int64_t end, F&& run) {
  const int64_t cols = loop.inner_size(), stride = loop.strides[0].back();
  int64_t row = begin / cols, col = begin % cols;
  while (begin < end) {
    int64_t n = std::min(cols - col, end - begin);
    run(row_offset(loop, row)[0] + col * stride, n, stride);
    begin += n;
    ++row;
    col = 0;
  }
}

// Combines each half of [0, n) recursively, in place: partials[0] ends up holding the
// pairwise combination of all n, so rounding error grows with log n.
template <class Op>
void combine_pairwise(typename Op::Acc* partials, int64_t n, int64_t stride = 1) {
  for (int64_t step = 1; step < n; step *= 2)
    for (int64_t i = 0; i + step < n; i += 2 * step)
      partials[i * stride] = Op::combine(partials[i * stride], partials[(i + step) * stride]);
}

}  // namespace jx::cpu::reduction_loops
