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
#include <atomic>
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

// Sorts the n elements load(0), ..., load(n - 1) into dst[0, n) on `parts` threads with
// no merge (a sample sort). parts - 1 splitters from an evenly spaced sample of the line
// cut its values into parts buckets; one pass counts each chunk's elements per bucket
// (inspect(begin, end) sees each chunk there first and may refuse the line), one moves
// every element to its bucket's place in dst (stably: chunks in order, each in order),
// and each bucket is sorted by sort_bucket(first, count) on a thread of its own. The
// line is read twice and written once, against sort_in_parts's read and write of the
// line per merge round (a branch-free merge step costs about twice a move), its scratch
// buffer and its copy back; a caller whose elements need converting on the way into dst
// (kernels/sort.cpp's floats as integers) gets that pass for free. Returns false, having
// written nothing, where inspect refused a chunk or a bucket would hold more than 5/4 of
// its share (a line of few distinct values): the caller sorts another way then.
template <class T, class Load, class Less, class Inspect, class SortBucket>
bool sort_by_splitters(size_t n, int parts, const Load& load, T* dst, const Less& less, const Inspect& inspect,
                       const SortBucket& sort_bucket) {
  if (parts < 2 || n < static_cast<size_t>(parts) * 64) return false;
  const size_t buckets = static_cast<size_t>(parts), samples = 256 * buckets;
  std::vector<T> sample(samples), splitters(buckets - 1);
  for (size_t s = 0; s < samples; ++s)  // the middle of each of `samples` equal stretches
    sample[s] = load(static_cast<size_t>((static_cast<unsigned __int128>(2 * s + 1) * n) / (2 * samples)));
  std::sort(sample.begin(), sample.end(), less);
  for (size_t j = 0; j + 1 < buckets; ++j) splitters[j] = sample[(j + 1) * samples / buckets];
  std::vector<size_t> chunk(buckets + 1);
  for (size_t q = 0; q <= buckets; ++q) chunk[q] = n / buckets * q + std::min(q, n % buckets);

  // at_least[q * buckets + j]: the elements of chunk q not below splitter j, one
  // branch-free (vectorizable) count per splitter; bucket b holds those not below
  // splitter b - 1 and below splitter b.
  std::vector<size_t> at_least(buckets * buckets, 0);
  std::atomic<bool> refused = false;
  parallel_for(parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      const size_t lo = chunk[q], hi = chunk[q + 1];
      if (!inspect(lo, hi)) refused = true;
      at_least[q * buckets] = hi - lo;
      for (size_t j = 0; j + 1 < buckets; ++j) {
        size_t count = 0;
        for (size_t k = lo; k < hi; ++k) count += !less(load(k), splitters[j]);
        at_least[q * buckets + j + 1] = count;
      }
    }
  });
  if (refused) return false;
  auto in_bucket = [&](size_t q, size_t b) {
    return at_least[q * buckets + b] - (b + 1 < buckets ? at_least[q * buckets + b + 1] : 0);
  };
  // start[q * buckets + b]: where chunk q's elements of bucket b go in dst.
  std::vector<size_t> start(buckets * buckets), bucket_start(buckets + 1, 0);
  for (size_t b = 0; b < buckets; ++b) {
    size_t at = bucket_start[b];
    for (size_t q = 0; q < buckets; ++q) {
      start[q * buckets + b] = at;
      at += in_bucket(q, b);
    }
    bucket_start[b + 1] = at;
    if (at - bucket_start[b] > n / buckets + n / (4 * buckets)) return false;
  }

  parallel_for(parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin; q < end; ++q) {
      const size_t lo = chunk[q], hi = chunk[q + 1];
      if (buckets == 2) {
        // Two write cursors in registers, the store's address picked by a mask: GCC
        // makes `up ? high : low` a branch, mispredicted on every other element of
        // data in random order (the pass took 2.5 ms of a 10^6-float sort's 9.6).
        uintptr_t low = reinterpret_cast<uintptr_t>(dst + start[q * 2]);
        uintptr_t high = reinterpret_cast<uintptr_t>(dst + start[q * 2 + 1]);
        const T splitter = splitters[0];
        for (size_t k = lo; k < hi; ++k) {
          const T v = load(k);
          const uintptr_t up = !less(v, splitter), mask = 0 - up;
          *reinterpret_cast<T*>((high & mask) | (low & ~mask)) = v;
          high += up * sizeof(T);
          low += (1 - up) * sizeof(T);
        }
        continue;
      }
      std::vector<T*> cursor(buckets);
      for (size_t b = 0; b < buckets; ++b) cursor[b] = dst + start[q * buckets + b];
      for (size_t k = lo; k < hi; ++k) {
        const T v = load(k);
        size_t b = 0;
        for (const T& s : splitters) b += !less(v, s);
        *cursor[b]++ = v;
      }
    }
  });
  parallel_for(parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) sort_bucket(dst + bucket_start[b], bucket_start[b + 1] - bucket_start[b]);
  });
  return true;
}

}  // namespace jx::cpu
