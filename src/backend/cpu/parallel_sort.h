// Sorting one long line on every thread of the pool: the line is cut into parts, each
// part sorted on a thread of its own, and the sorted parts merged pairwise, every merge
// round one parallel_for over output positions split evenly among the threads (each
// chunk finds where its outputs start in the two inputs by a binary search: the "merge
// path"), so a round costs one read and one write of the line, shared by all threads.
// The sort kernels (kernels/sort.cpp) call it with vqsort for a part; the merge is
// stable (ties take the left part first), so parts sorted stably give a stable whole.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cpu/thread_pool.h"

namespace jx::cpu {

// Elements a part should hold at least. On the 2-core Zen 1, float32 lines split in two
// sorted faster from 4096 elements up while the pool's workers spin (16384: 0.16 -> 0.12
// ms); a worker woken from sleep costs 5-30 us (thread_pool.cpp), which a line of 2^15
// (0.33 ms sorted whole) hardly feels.
inline constexpr size_t kMinSortPart = size_t{1} << 14;

// Parts to cut a line of n elements into: one per thread, none shorter than
// kMinSortPart, and one (no split) inside a chunk of the pool, whose threads are busy
// with the other chunks.
inline int sort_parts(size_t n) {
  if (in_parallel_chunk()) return 1;
  return static_cast<int>(std::clamp<size_t>(n / kMinSortPart, 1, static_cast<size_t>(num_threads())));
}

namespace parallel_sort_detail {

// How many of a[0, na) are among the first k elements of the stable merge of a and b (a
// taken first on ties): the smallest i with a[i] after b[k - i - 1].
template <class T, class Less>
size_t merge_split(const T* a, size_t na, const T* b, size_t nb, size_t k, const Less& less) {
  size_t lo = k > nb ? k - nb : 0, hi = std::min(k, na);
  while (lo < hi) {
    const size_t i = lo + (hi - lo) / 2, j = k - i;  // i < na and j >= 1 here
    if (!less(b[j - 1], a[i])) lo = i + 1;             // a[i] comes before b[j - 1]: i is too small
    else hi = i;
  }
  return lo;
}

// One merge in progress: a[i, i_end) and b[j, j_end) into out.
template <class T>
struct MergeCursor {
  const T *a, *b;
  size_t i, i_end, j, j_end;
  T* out;

  bool both_left() const { return i < i_end && j < j_end; }
  // One element, stably; branch-free (a select and two adds) because the comparisons
  // of a merge are as unpredictable as the data.
  template <class Less>
  void step(const Less& less) {
    const bool take_b = less(b[j], a[i]);
    *out++ = take_b ? b[j] : a[i];
    j += take_b;
    i += !take_b;
  }
  template <class Less>
  void finish(const Less& less) {
    while (both_left()) step(less);
    out = std::copy(a + i, a + i_end, out);
    out = std::copy(b + j, b + j_end, out);
  }
};

// Chains a merge range is cut into (see merge_range).
inline constexpr int kMergeChains = 2;

// Merges the stable merge's outputs [k0, k1) of a[0, na) and b[0, nb) into out. Each
// element's step waits on the one before (its load's index is the last comparison's
// outcome), so the range is cut into kMergeChains pieces that step together in one loop:
// independent chains, several elements in flight per cycle.
template <class T, class Less>
void merge_range(const T* a, size_t na, const T* b, size_t nb, size_t k0, size_t k1, T* out, const Less& less) {
  std::array<MergeCursor<T>, kMergeChains> chains;
  size_t k = k0, i = merge_split(a, na, b, nb, k0, less);
  for (int c = 0; c < kMergeChains; ++c) {
    const size_t k_end = k0 + (k1 - k0) * (c + 1) / kMergeChains;
    const size_t i_end = merge_split(a, na, b, nb, k_end, less);
    chains[c] = {a, b, i, i_end, k - i, k_end - i_end, out + (k - k0)};
    k = k_end;
    i = i_end;
  }
  auto all_left = [&] {
    bool all = true;
    for (const auto& chain : chains) all &= chain.both_left();
    return all;
  };
  while (all_left())
    for (auto& chain : chains) chain.step(less);
  for (auto& chain : chains) chain.finish(less);
}

}  // namespace parallel_sort_detail

// Sorts p[0, n) by `less` in `parts` parts (sort_parts(n), or any count for tests):
// sort_part(T* first, size_t count) sorts a part and runs on pool threads (several at
// once, so it must hold its own scratch). The merge needs a second buffer of n elements.
template <class T, class Less, class SortPart>
void sort_in_parts(T* p, size_t n, int parts, const Less& less, const SortPart& sort_part) {
  parts = static_cast<int>(std::min<size_t>(static_cast<size_t>(std::max(parts, 1)), std::max<size_t>(n, 1)));
  if (parts == 1) {
    sort_part(p, n);
    return;
  }
  std::vector<size_t> bounds(static_cast<size_t>(parts) + 1);
  for (int q = 0; q <= parts; ++q) bounds[q] = n / parts * q + std::min<size_t>(q, n % parts);
  parallel_for(parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) sort_part(p + bounds[q], bounds[q + 1] - bounds[q]);
  });
  std::unique_ptr<T[]> scratch(new T[n]);
  T *src = p, *dst = scratch.get();
  const int64_t grain = static_cast<int64_t>((n + num_threads() - 1) / num_threads());
  while (bounds.size() > 2) {
    // Runs (bounds[2r], bounds[2r + 2]) merge into one; an odd last run is copied.
    parallel_for(static_cast<int64_t>(n), grain, [&](int64_t begin, int64_t end) {
      for (size_t r = 0; r + 1 < bounds.size(); r += 2) {
        const size_t lo = bounds[r], hi = bounds[std::min(r + 2, bounds.size() - 1)];
        const size_t k0 = std::max<size_t>(lo, begin), k1 = std::min<size_t>(hi, end);
        if (k0 >= k1) continue;
        if (r + 2 >= bounds.size()) {  // the odd run
          std::copy(src + k0, src + k1, dst + k0);
          continue;
        }
        const T *a = src + lo, *b = src + bounds[r + 1];
        const size_t na = bounds[r + 1] - lo, nb = hi - bounds[r + 1];
        parallel_sort_detail::merge_range(a, na, b, nb, k0 - lo, k1 - lo, dst + k0, less);
      }
    });
    std::vector<size_t> merged;
    for (size_t r = 0; r < bounds.size(); r += 2) merged.push_back(bounds[r]);
    if (merged.back() != n) merged.push_back(n);
    bounds = std::move(merged);
    std::swap(src, dst);
  }
  if (src != p) {
    parallel_for(static_cast<int64_t>(n), grain, [&](int64_t begin, int64_t end) {
      std::copy(src + begin, src + end, p + begin);
    });
  }
}

}  // namespace jx::cpu
