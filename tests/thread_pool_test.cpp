// The thread pool runs several parallel regions at once: regions from different threads
// make progress simultaneously (a region that waits for another region's chunk does not
// deadlock), exceptions stay in their region, and many small concurrent regions each
// cover their range exactly once.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backend/cpu/thread_pool.h"
#include "jx/jx.h"
#include "test_util.h"

namespace jx {
namespace {

using namespace std::chrono_literals;

// Enough workers for four two-chunk regions at once (their callers run a chunk each).
const bool g_threads = [] {
  config::set_num_threads(8);
  return true;
}();

TEST(ThreadPool, CoversTheRangeOnceInChunks) {
  std::vector<std::atomic<int>> hits(100000);
  std::atomic<int> chunks{0};
  cpu::parallel_for(static_cast<int64_t>(hits.size()), 1000, [&](int64_t b, int64_t e) {
    ++chunks;
    for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
  });
  for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
  EXPECT_EQ(chunks.load(), cpu::num_threads());
}

// Each of `regions` threads runs a two-chunk region whose chunks wait until the chunks
// of every region are running at once. With one region at a time (the old pool ran a
// second caller's region inline, as one call) they never are, and the waits time out.
void regions_progress_together(int regions) {
  const int want = 2 * regions;
  std::atomic<int> running{0}, timeouts{0}, calls{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < regions; ++r)
    threads.emplace_back([&] {
      cpu::parallel_for(2, 1, [&](int64_t, int64_t) {
        ++calls;
        ++running;
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        while (running.load() < want && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
        if (running.load() < want) ++timeouts;
      });
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls.load(), want);
  EXPECT_EQ(timeouts.load(), 0) << regions << " regions did not run at the same time";
}

TEST(ThreadPool, TwoRegionsProgressSimultaneously) { regions_progress_together(2); }
TEST(ThreadPool, FourRegionsProgressSimultaneously) { regions_progress_together(4); }

TEST(ThreadPool, ExceptionsStayInTheirRegion) {
  std::atomic<int> failed{0}, passed{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r)
    threads.emplace_back([&, r] {
      std::atomic<int64_t> covered{0};
      try {
        cpu::parallel_for(4000, 100, [&](int64_t b, int64_t e) {
          if (r % 2 == 1 && b == 0) throw std::runtime_error("region " + std::to_string(r));
          covered += e - b;
        });
        if (r % 2 == 0 && covered.load() == 4000) ++passed;
      } catch (const std::runtime_error& e) {
        if (r % 2 == 1 && std::string(e.what()) == "region " + std::to_string(r)) ++failed;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 2);
  EXPECT_EQ(passed.load(), 2);
}

TEST(ThreadPool, NestedCallsRunInline) {
  std::atomic<int64_t> total{0};
  cpu::parallel_for(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) cpu::parallel_for(1000, 10, [&](int64_t bb, int64_t ee) { total += ee - bb; });
  });
  EXPECT_EQ(total.load(), 8000);
}

TEST(ThreadPool, StressManySmallRegions) {
  constexpr int kThreads = 6, kRegions = 2000;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRegions; ++r) {
        const int64_t n = 1 + (r * 7919 + t * 104729) % 257;
        std::vector<int> hits(static_cast<size_t>(n), 0);
        cpu::parallel_for(n, 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
        });
        for (int h : hits)
          if (h != 1) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace jx
