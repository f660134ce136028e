// The collectives contract's error paths on the shared-memory transport (members are
// threads calling the Communicator directly): signature mismatch, timeout naming the
// members that did not arrive, a broken group after it, abort, and values of each op.
#include <gtest/gtest.h>

#include <thread>

#include "collective_checksum.h"
#include "distributed/shared_memory.h"
#include "test_util.h"

namespace jx::detail {
namespace {

std::vector<std::string> names(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back("cpu:" + std::to_string(i));
  return v;
}

CollectiveSignature sig(std::vector<int64_t> shape, DType d = DType::Float32, std::string op = "psum") {
  return CollectiveSignature{.collective = std::move(op), .axis = "i", .dtype = d, .shape = std::move(shape)};
}

// Runs body(rank, comm) on n threads; returns each member's error message ("" if none).
std::vector<std::string> run_members(int n, double timeout_s, const std::function<void(int, Communicator&)>& body) {
  auto group = SharedMemoryGroup::create(names(n), timeout_s);
  std::vector<std::unique_ptr<Communicator>> members;
  for (int r = 0; r < n; ++r) members.push_back(group->member(r));
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r, *members[r]);
      } catch (const Error& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

TEST(SharedMemoryCollectives, EveryOpMatchesItsDefinitionAndReducesInRankOrder) {
  for (int n : {1, 2, 3, 4}) {
    SCOPED_TRACE(n);
    const size_t count = 1001;
    std::vector<std::vector<float>> in(n, std::vector<float>(count * n));
    for (int r = 0; r < n; ++r)
      for (size_t k = 0; k < in[r].size(); ++k) in[r][k] = 1.0f / static_cast<float>(1 + k + 7 * r) + (r == 1 ? 1e7f : 0.f);
    std::vector<std::vector<float>> sum(n, std::vector<float>(count)), gathered(n, std::vector<float>(count * n)),
        scattered(n, std::vector<float>(count)), swapped(n, std::vector<float>(count * n)), ring(n, std::vector<float>(count));
    run_members(n, 10, [&](int r, Communicator& c) {
      c.all_reduce(sig({1001}), ReduceOp::kSum, in[r].data(), sum[r].data(), count);
      c.all_gather(sig({1001}, DType::Float32, "all_gather"), in[r].data(), gathered[r].data(), count * 4);
      c.reduce_scatter(sig({n, 1001}, DType::Float32, "psum_scatter"), ReduceOp::kSum, in[r].data(),
                       scattered[r].data(), count);
      c.all_to_all(sig({n, 1001}, DType::Float32, "all_to_all"), in[r].data(), swapped[r].data(), count * 4);
      std::vector<std::pair<int, int>> pairs;
      for (int k = 0; k < n; ++k) pairs.push_back({k, (k + 1) % n});
      c.permute(sig({1001}, DType::Float32, "ppermute"), pairs, in[r].data(), ring[r].data(), count * 4);
    });
    for (int r = 0; r < n; ++r)
      for (size_t k = 0; k < count; ++k) {
        float fold = in[0][k];
        for (int m = 1; m < n; ++m) fold += in[m][k];  // rank order, float arithmetic
        ASSERT_EQ(sum[r][k], fold);
        float block = in[0][r * count + k];
        for (int m = 1; m < n; ++m) block += in[m][r * count + k];
        ASSERT_EQ(scattered[r][k], block);
        for (int m = 0; m < n; ++m) {
          ASSERT_EQ(gathered[r][m * count + k], in[m][k]);
          ASSERT_EQ(swapped[r][m * count + k], in[m][r * count + k]);
        }
        ASSERT_EQ(ring[r][k], in[(r + n - 1) % n][k]);
      }
  }
}

TEST(SharedMemoryCollectives, InPlaceAllReduce) {
  std::vector<std::vector<double>> v(3, std::vector<double>(100));
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 100; ++k) v[r][k] = r * 100 + k;
  run_members(3, 10, [&](int r, Communicator& c) {
    c.all_reduce(sig({100}, DType::Float64), ReduceOp::kMax, v[r].data(), v[r].data(), 100);
  });
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 100; ++k) ASSERT_EQ(v[r][k], 200 + k);
}

TEST(SharedMemoryCollectives, MismatchNamesBothMembers) {
  float x[4] = {}, y[4] = {};
  auto errors = run_members(2, 10, [&](int r, Communicator& c) {
    c.all_reduce(sig({r == 0 ? 4 : 3}), ReduceOp::kSum, x, y, r == 0 ? 4 : 3);
  });
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("[psum] over axis 'i'"), std::string::npos) << e;
    EXPECT_NE(e.find("cpu:0 has f32[4] but cpu:1 has f32[3]"), std::string::npos) << e;
  }
  errors = run_members(2, 10, [&](int r, Communicator& c) {
    c.all_reduce(sig({4}, r == 0 ? DType::Float32 : DType::Int32, r == 0 ? "psum" : "pmax"), ReduceOp::kSum, x, y, 4);
  });
  EXPECT_NE(errors[1].find("cpu:0 runs psum over 'i' but cpu:1 runs pmax"), std::string::npos) << errors[1];
}

TEST(SharedMemoryCollectives, TimeoutNamesTheMissingMembersAndBreaksTheGroup) {
  float x[1] = {}, y[1] = {};
  auto group = SharedMemoryGroup::create(names(3), 0.2);
  auto m0 = group->member(0), m1 = group->member(1), m2 = group->member(2);
  std::string e0, e1;
  std::thread t([&] {
    try {
      m1->all_reduce(sig({1}), ReduceOp::kSum, x, y, 1);
    } catch (const Error& e) {
      e1 = e.what();
    }
  });
  try {
    m0->all_reduce(sig({1}), ReduceOp::kSum, x, y, 1);
  } catch (const Error& e) {
    e0 = e.what();
  }
  t.join();
  EXPECT_NE(e0.find("[psum] over axis 'i': timed out after 0.2 s waiting for cpu:2"), std::string::npos) << e0;
  EXPECT_NE(e0.find("1 of 3 members did not arrive"), std::string::npos) << e0;
  EXPECT_FALSE(e1.empty());
  // The group is broken now: the late member raises at once.
  EXPECT_JX_ERROR(m2->all_reduce(sig({1}), ReduceOp::kSum, x, y, 1), "[psum] over axis 'i'", "the group is broken");
}

TEST(SharedMemoryCollectives, AbortWakesTheWaitingMembers) {
  float x[1] = {}, y[1] = {};
  auto group = SharedMemoryGroup::create(names(2), 30);
  auto m0 = group->member(0), m1 = group->member(1);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    group->abort("cpu:1 raised: boom");
  });
  EXPECT_JX_ERROR(m0->all_gather(sig({1}, DType::Float32, "all_gather"), x, y, 4), "[all_gather] over axis 'i'",
                  "abandoned because cpu:1 raised: boom");
  t.join();
}

TEST(SharedMemoryCollectives, PermuteRefusesOutOfRangePairs) {
  float x[1] = {}, y[1] = {};
  auto group = SharedMemoryGroup::create(names(1), 1);
  auto m = group->member(0);
  std::vector<std::pair<int, int>> pairs{{0, 3}};
  EXPECT_JX_ERROR(m->permute(sig({1}, DType::Float32, "ppermute"), pairs, x, y, 4), "[ppermute]",
                  "pair (0, 3) is out of range for 1 members");
}

}  // namespace
}  // namespace jx::detail

namespace jx::detail {
namespace {

// Every collective 1000 times over random sizes and dtypes, on 4 and on 3 members (the
// uneven split of reduce-scatter's chunks), finds no corrupt byte.
TEST(SharedMemoryCollectives, ChecksumOfEveryCollectiveOverRandomSizesAndDtypes) {
  for (int n : {4, 3}) {
    SCOPED_TRACE(n);
    auto group = SharedMemoryGroup::create(names(n), 60);
    std::vector<std::unique_ptr<Communicator>> members;
    for (int r = 0; r < n; ++r) members.push_back(group->member(r));
    const int rounds = n == 4 ? 5000 : 1000;
    testing::ChecksumReport report = testing::run_checksum(members, n, rounds, 1234 + n);
    EXPECT_EQ(report.rounds, rounds);
    EXPECT_GT(report.bytes, size_t{1} << 20);
    for (const std::string& f : report.failures) ADD_FAILURE() << f;
  }
}

}  // namespace
}  // namespace jx::detail

namespace jx::detail {
namespace {

// Results of 32 MB and more are streamed out with non-temporal stores: the same values,
// in place and not, at unaligned offsets too.
TEST(SharedMemoryCollectives, LargeAllReduceMatchesTheFold) {
  const int n = 2;
  const size_t count = (size_t{40} << 20) / 4 + 3;
  std::vector<std::vector<float>> in(n, std::vector<float>(count + 1));
  for (int r = 0; r < n; ++r)
    for (size_t k = 0; k < in[r].size(); ++k) in[r][k] = static_cast<float>((k * 7 + r * 13) % 1001) * 0.25f;
  std::vector<std::vector<float>> out(n, std::vector<float>(count + 1, -1.0f));
  std::vector<std::vector<float>> inplace = in;
  run_members(n, 60, [&](int r, Communicator& c) {
    // One element in: both buffers unaligned for 16-byte stores.
    c.all_reduce(sig({static_cast<int64_t>(count)}), ReduceOp::kSum, in[r].data() + 1, out[r].data() + 1, count);
    c.all_reduce(sig({static_cast<int64_t>(count)}), ReduceOp::kSum, inplace[r].data(), inplace[r].data(), count);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(out[r][0], -1.0f);
    for (size_t k = 0; k < count; k += 9973) {
      ASSERT_EQ(out[r][k + 1], in[0][k + 1] + in[1][k + 1]) << "member " << r << " element " << k;
      ASSERT_EQ(inplace[r][k], in[0][k] + in[1][k]) << "member " << r << " element " << k;
    }
    ASSERT_EQ(out[r][count], in[0][count] + in[1][count]);
    ASSERT_EQ(std::memcmp(out[0].data() + 1, out[r].data() + 1, count * 4), 0);
  }
}

}  // namespace
}  // namespace jx::detail
