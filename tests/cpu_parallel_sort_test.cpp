// sort_in_parts (src/backend/cpu/parallel_sort.h): a line cut into parts, each sorted on a
// thread, merged pairwise with the merge split at equal output positions. Checked against
// std::stable_sort for every part count up to more than the pool's threads (odd counts
// leave a run unmerged for a round), with many ties (stability: keys compared alone,
// their original positions kept beside them) and lines shorter than the part count.
// sort_by_splitters (the same header): a line cut by value into a bucket per part, checked
// the same way, and its refusals (few distinct values, a chunk its inspector refuses)
// leave the output untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "backend/cpu/parallel_sort.h"
#include "backend/cpu/thread_pool.h"

namespace jx::cpu {
namespace {

struct Keyed {
  int32_t key;
  int32_t position;
  bool operator==(const Keyed&) const = default;
};

std::vector<Keyed> random_line(size_t n, int distinct, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> dist(0, distinct - 1);
  std::vector<Keyed> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = {dist(gen), static_cast<int32_t>(k)};
  return v;
}

TEST(ParallelSort, EveryPartCountMatchesAStableSort) {
  auto by_key = [](const Keyed& a, const Keyed& b) { return a.key < b.key; };
  auto stable_part = [&](Keyed* first, size_t count) { std::stable_sort(first, first + count, by_key); };
  for (size_t n : {0, 1, 2, 3, 7, 1000, 100003}) {
    for (int distinct : {1, 3, 1000, 1 << 30}) {
      std::vector<Keyed> want = random_line(n, distinct, static_cast<uint32_t>(n * 31 + distinct));
      const std::vector<Keyed> input = want;
      std::stable_sort(want.begin(), want.end(), by_key);
      for (int parts : {1, 2, 3, 4, 5, 8, 9}) {
        SCOPED_TRACE("n " + std::to_string(n) + " distinct " + std::to_string(distinct) + " parts " +
                     std::to_string(parts));
        std::vector<Keyed> got = input;
        sort_in_parts(got.data(), got.size(), parts, by_key, stable_part);
        ASSERT_EQ(got, want);
      }
    }
  }
}

TEST(ParallelSort, SplittersMatchAStableSortOrRefuseWritingNothing) {
  auto by_key = [](const Keyed& a, const Keyed& b) { return a.key < b.key; };
  const Keyed untouched{-1, -1};
  for (size_t n : {0, 1, 100, 1000, 100003}) {
    for (int distinct : {1, 3, 1000, 1 << 30}) {
      std::vector<Keyed> want = random_line(n, distinct, static_cast<uint32_t>(n * 17 + distinct));
      const std::vector<Keyed> input = want;
      std::stable_sort(want.begin(), want.end(), by_key);
      for (int parts : {2, 3, 4, 5, 8}) {
        SCOPED_TRACE("n " + std::to_string(n) + " distinct " + std::to_string(distinct) + " parts " +
                     std::to_string(parts));
        std::vector<Keyed> got(n, untouched);
        std::vector<int> sorted_count(static_cast<size_t>(parts), 0);
        std::atomic<size_t> inspected = 0;
        const bool sorted = sort_by_splitters(
            n, parts, [&](size_t k) { return input[k]; }, got.data(), by_key,
            [&](size_t lo, size_t hi) { return inspected += hi - lo, true; },
            [&](Keyed* first, size_t count) { std::stable_sort(first, first + count, by_key); });
        if (!sorted) {
          ASSERT_EQ(got, std::vector<Keyed>(n, untouched));
          // Refused only where a bucket would be too full or the line too short to cut.
          ASSERT_TRUE(distinct <= 3 || n < 64 * static_cast<size_t>(parts));
          continue;
        }
        ASSERT_EQ(inspected.load(), n);  // every chunk seen once
        ASSERT_EQ(got, want);
      }
    }
  }
  // A chunk the inspector refuses: nothing written.
  std::vector<Keyed> input = random_line(100000, 1 << 30, 5), got(input.size(), untouched);
  EXPECT_FALSE(sort_by_splitters(
      input.size(), 2, [&](size_t k) { return input[k]; }, got.data(), by_key,
      [](size_t lo, size_t) { return lo > 0; }, [](Keyed*, size_t) {}));
  EXPECT_EQ(got, std::vector<Keyed>(input.size(), untouched));
}

TEST(ParallelSort, PartsFollowTheLineLengthAndThePool) {
  EXPECT_EQ(sort_parts(0), 1);
  EXPECT_EQ(sort_parts(kMinSortPart), 1);
  EXPECT_EQ(sort_parts(2 * kMinSortPart), std::min(2, num_threads()));
  EXPECT_EQ(sort_parts(1000 * kMinSortPart), num_threads());
  // Inside a chunk of the pool (where the other threads sort lines of their own): one part.
  std::vector<int> inside(2, -1);
  parallel_for(2, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) inside[k] = in_parallel_chunk() ? sort_parts(1000 * kMinSortPart) : 1;
  });
  EXPECT_EQ(inside, std::vector<int>(2, 1));
}

}  // namespace
}  // namespace jx::cpu
