// sort_in_parts (src/backend/cpu/parallel_sort.h): a line cut into parts, each sorted on a
// thread, merged pairwise with the merge split at equal output positions. Checked against
// std::stable_sort for every part count up to more than the pool's threads (odd counts
// leave a run unmerged for a round), with many ties (stability: keys compared alone,
// their original positions kept beside them) and lines shorter than the part count.
#include <gtest/gtest.h>

#include <algorithm>
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
