// pmap, shard_map and the collectives across processes: the programs of pmap_test.cpp,
// run by CTest under `mpirun -np 4` (one device per process: the MPI transport) and
// `mpirun -np 2` with two devices each (the hierarchical one). Every process builds the
// same global input from a seed, feeds its own devices' slices and checks its own
// results against the definition evaluated on the whole input, so the oracle never
// goes through a transport. The error tests come last: the timeout test breaks the
// groups it uses, as a real timeout would.
#include <gtest/gtest.h>

#include "collective_cases.h"
#include "collective_checksum.h"
#include "distributed/hierarchical.h"
#include "jx/test_util.h"
#include "test_util.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;
using testing::Case;
using testing::cases;
using testing::stacked_shape;
using testing::randn;

int64_t global_count() { return device_count(); }
int64_t local_count() { return local_device_count(); }
// This process's rows of a stacked global value.
Array mine(const Array& global) {
  const int64_t l = local_count(), p = process_index();
  return global(Slice{p * l, (p + 1) * l});
}

TEST(Mpi, DevicesAreGlobalAndLocal) {
  ASSERT_GT(process_count(), 1) << "run this binary under mpirun";
  EXPECT_EQ(global_count(), process_count() * local_count());
  const std::vector<Device> all = devices(), local = local_devices();
  for (size_t k = 0; k < all.size(); ++k) {
    EXPECT_EQ(all[k].id(), static_cast<int64_t>(k));
    EXPECT_EQ(all[k].process_index(), static_cast<int>(k / static_cast<size_t>(local_count())));
  }
  for (const Device& d : local) EXPECT_EQ(d.process_index(), process_index());
  const Device remote = all[static_cast<size_t>(((process_index() + 1) % process_count()) * local_count())];
  const std::string remote_name = remote.str();
  EXPECT_JX_ERROR(device_put(jnp::ones({2}), remote), "[device_put]", remote_name.c_str(), "belongs to process");
  EXPECT_JX_ERROR(distributed::initialize(), "[distributed.initialize]", "already called");
}

TEST(Mpi, EveryCollectiveMatchesItsDefinition) {
  const int64_t n = global_count();
  for (const Case& c : cases(n)) {
    SCOPED_TRACE(c.name);
    const Shape shape = stacked_shape(c, n);
    Array x = randn(shape, DType::Float32, 7);
    Array expected = mine(c.def(x));
    auto f = c.per_device;
    Array by_pmap = pmap([f](const Array& r) { return f(r); }, {.axis_name = "i"})(mine(x));
    EXPECT_ALLCLOSE(by_pmap, expected, 1e-5, 1e-5);
    Array by_jit_pmap = jit(pmap([f](const Array& r) { return f(r); }, {.axis_name = "i"}))(mine(x));
    EXPECT_ALLCLOSE(by_jit_pmap, expected, 1e-5, 1e-5);
  }
}

TEST(Mpi, ReductionsAreBitForBitTheInProcessOnes) {
  // psum folds in device order on every transport: the float32 sum of values of mixed
  // magnitude is exactly the one vmap computes in one process.
  const int64_t n = global_count();
  Array x = randn({n, 1000}, DType::Float32, 21) * jnp::exp(randn({n, 1000}, DType::Float32, 22) * 4.0f);
  Array in_process = vmap([](const Array& r) { return lax::psum(r, "i"); }, {.axis_name = "i"})(x);
  Array across = pmap([](const Array& r) { return lax::psum(r, "i"); }, {.axis_name = "i"})(mine(x));
  EXPECT_TRUE(jnp::array_equal(across, mine(in_process)));
  // A large operand takes the reduce-scatter path.
  Array big = randn({n, 300000}, DType::Float32, 23);
  Array big_in = vmap([](const Array& r) { return lax::psum(r, "i"); }, {.axis_name = "i"})(big);
  Array big_across = pmap([](const Array& r) { return lax::psum(r, "i"); }, {.axis_name = "i"})(mine(big));
  EXPECT_TRUE(jnp::array_equal(big_across, mine(big_in)));
}

TEST(Mpi, GradientsThroughCollectivesMatchOneProcess) {
  const int64_t n = global_count();
  for (const Case& c : cases(n)) {
    if (c.name == "axis_index") continue;
    SCOPED_TRACE(c.name);
    const Shape shape = stacked_shape(c, n);
    Array x = randn(shape, DType::Float32, 3);
    auto f = c.per_device;
    auto g = [f](const Array& r) { return jnp::sin(f(r * r)); };
    // Reverse mode across processes: d(sum of every process's outputs)/d(my inputs).
    Array across = grad([&](const Array& v) { return jnp::sum(pmap(g, {.axis_name = "i"})(v)); })(mine(x));
    Array one = grad([&](const Array& v) { return jnp::sum(vmap(g, {.axis_name = "i"})(v)); })(x);
    EXPECT_ALLCLOSE(across, mine(one), 1e-4, 1e-5);
    // grad inside pmap, and forward mode.
    auto inner = [f](const Array& r) { return jnp::sum(jnp::sin(f(r * r))); };
    EXPECT_ALLCLOSE(pmap(grad(inner), {.axis_name = "i"})(mine(x)), mine(vmap(grad(inner), {.axis_name = "i"})(x)),
                    1e-4, 1e-5);
    Array t = randn(shape, DType::Float32, 4);
    auto [y1, dy1] = jvp(pmap(g, {.axis_name = "i"}), std::tuple{mine(x)}, std::tuple{mine(t)});
    auto [y2, dy2] = jvp(vmap(g, {.axis_name = "i"}), std::tuple{x}, std::tuple{t});
    EXPECT_ALLCLOSE(dy1, mine(dy2), 1e-4, 1e-5);
  }
}

TEST(Mpi, DataParallelGradientIsTheFullBatchGradient) {
  const int64_t n = global_count();
  Array w = randn({3}, DType::Float64, 1);
  Array xs = randn({n, 5, 3}, DType::Float64, 2);
  Array ys = randn({n, 5}, DType::Float64, 3);
  auto loss = [](const Array& w, const Array& x, const Array& y) { return jnp::mean(jnp::square(jnp::matmul(x, w) - y)); };
  auto step = pmap(
      [&](const Array& w, const Array& x, const Array& y) { return lax::pmean(grad(loss)(w, x, y), "batch"); },
      {.axis_name = "batch", .in_axes = {not_mapped, 0, 0}});
  Array g = step(w, mine(xs), mine(ys));
  Array full = grad(loss)(w, xs.reshape({n * 5, 3}), ys.reshape({n * 5}));
  for (int64_t k = 0; k < local_count(); ++k) EXPECT_ALLCLOSE(g(k), full, 1e-12, 1e-12);
}

// A result's addressable shards are this process's devices' blocks of its local part.
TEST(Mpi, ResultsAreShardedOverThisProcesssDevices) {
  Array x = randn({global_count(), 3}, DType::Float32, 31);
  Array y = pmap([](const Array& r) { return lax::psum(r, "i") + r; }, {.axis_name = "i"})(mine(x));
  EXPECT_EQ(sharding(y)->mesh.size(), global_count());
  std::vector<Shard> shards = addressable_shards(y);
  ASSERT_EQ(static_cast<int64_t>(shards.size()), local_count());
  Array expected = mine(jnp::sum(x, 0) + x);
  for (int64_t k = 0; k < local_count(); ++k) {
    EXPECT_EQ(shards[static_cast<size_t>(k)].device, local_devices()[static_cast<size_t>(k)]);
    EXPECT_ALLCLOSE(shards[static_cast<size_t>(k)].data, expected(k), 1e-5, 1e-5);
  }
}

// A 2x2 mesh over the four devices: process-local operands are this process's blocks
// (one block with a device per process; a row of blocks with two).
TEST(Mpi, ShardMapOverAMeshSpanningProcesses) {
  ASSERT_EQ(global_count(), 4);
  Mesh mesh(devices(), {"data", "model"}, {2, 2});
  Array x = randn({4, 6}, DType::Float64, 11);
  const int64_t first = process_index() * local_count();  // this process's first device
  const int64_t row = first / 2, col = first % 2;
  const bool whole_row = local_count() == 2;
  Array x_local = whole_row ? x(Slice{2 * row, 2 * row + 2}) : x(Slice{2 * row, 2 * row + 2}, Slice{3 * col, 3 * col + 3});
  auto over_data = shard_map([](const Array& b) { return lax::psum(b, "data"); }, mesh, {P("data", "model")},
                             {P(none, "model")});
  Array sum_rows = x(Slice{0, 2}) + x(Slice{2, 4});
  EXPECT_ALLCLOSE(over_data(x_local), whole_row ? sum_rows : sum_rows(all, Slice{3 * col, 3 * col + 3}), 1e-12, 1e-12);
  auto both = shard_map([](const Array& b) { return lax::psum(b, {"data", "model"}); }, mesh, {P("data", "model")},
                        {P()});
  Array e2 = x(Slice{0, 2}, Slice{0, 3}) + x(Slice{0, 2}, Slice{3, 6}) + x(Slice{2, 4}, Slice{0, 3}) +
             x(Slice{2, 4}, Slice{3, 6});
  EXPECT_ALLCLOSE(both(x_local), e2, 1e-12, 1e-12);
  // The replicated output is one global value: its gradient is that of one copy.
  Array g = grad([&](const Array& v) { return jnp::sum(both(v)); })(x_local);
  EXPECT_ALLCLOSE(g, jnp::ones_like(x_local), 1e-12, 1e-12);
  // An operand replicated over both axes gets the sum of every device's cotangent.
  Array w = randn({3}, DType::Float64, 12);
  auto scaled = shard_map([](const Array& w, const Array& b) { return jnp::sin(b * w); }, mesh, {P(), P("data", "model")},
                          {P("data", "model")});
  Array gw = grad([&](const Array& v) { return jnp::sum(scaled(v, x_local)); })(w);
  Array gw_all = grad([&](const Array& v) {
    return jnp::sum(jnp::sin(x(all, Slice{0, 3}) * v)) + jnp::sum(jnp::sin(x(all, Slice{3, 6}) * v));
  })(w);
  EXPECT_ALLCLOSE(gw, gw_all, 1e-12, 1e-12);
}

// Every collective 1000 times over random sizes and dtypes on a line of every device,
// through the transport itself: no corrupt byte on any process.
TEST(Mpi, ChecksumOfEveryCollectiveOverRandomSizesAndDtypes) {
  std::vector<std::string> names;
  std::vector<int> process;
  for (const Device& d : devices()) {
    names.push_back(d.str() + " (process " + std::to_string(d.process_index()) + ")");
    process.push_back(d.process_index());
  }
  auto line = detail::CrossProcessGroup::create(names, process, /*tag=*/1 << 20, 60);
  std::vector<std::unique_ptr<detail::Communicator>> members;
  for (int64_t k = 0; k < local_count(); ++k)
    members.push_back(line->member(static_cast<int>(process_index() * local_count() + k)));
  const int n = static_cast<int>(global_count()), rounds = 5000;
  testing::ChecksumReport report = testing::run_checksum(members, n, rounds, 99);
  EXPECT_EQ(report.rounds, rounds);
  EXPECT_GT(report.bytes, size_t{1} << 20);
  for (const std::string& f : report.failures) ADD_FAILURE() << f;
}

TEST(Mpi, ProcessesThatDisagreeOnAShapeGetAnErrorNamingBoth) {
  const int64_t width = process_index() == 1 ? 4 : 3;
  Array x = jnp::ones({local_count(), width});
  const std::string first = devices()[0].str() + " (process 0)";
  const std::string second = devices()[static_cast<size_t>(local_count())].str() + " (process 1)";
  EXPECT_JX_ERROR(pmap([](const Array& r) { return lax::psum(r, "i"); }, {.axis_name = "i"})(x), "[psum]",
                  "over axis 'i'", "disagree on the operand", first.c_str(), "f32[3]", second.c_str(), "f32[4]");
  // The group is fine afterwards.
  Array y = pmap([](const Array& r) { return lax::psum(r, "i"); }, {.axis_name = "i"})(jnp::ones({local_count(), 2}));
  EXPECT_ALLCLOSE(y, jnp::full({local_count(), 2}, static_cast<float>(global_count())));
}

// Last: the last process never joins; the others raise within the timeout, naming it.
TEST(Mpi, ZZ_ACollectiveAProcessNeverJoinsTimesOutNamingIt) {
  const int last = process_count() - 1;
  if (process_index() == last) GTEST_SKIP() << "this process stays away";
  config::set_collective_timeout_s(2);
  std::string missing;
  for (int64_t k = 0; k < local_count(); ++k)
    missing += (k ? ", " : "") + devices()[static_cast<size_t>(last * local_count() + k)].str() + " (process " +
               std::to_string(last) + ")";
  EXPECT_JX_ERROR(pmap([](const Array& r) { return lax::pmax(r, "i"); }, {.axis_name = "i", .devices = devices()})(
                      jnp::ones({local_count(), 2})),
                  "[pmax]", "over axis 'i'", "timed out after 2 s", missing.c_str(), "did not arrive");
}

}  // namespace
}  // namespace jx

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  jx::distributed::initialize();
  return RUN_ALL_TESTS();
}
