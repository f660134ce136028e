// pmap, shard_map and the collectives: every collective against its definition (written
// here with jnp on the stacked per-device values) on 1 to 4 in-process CPU devices, the
// same function under vmap with an axis_name against pmap, gradients through them by
// check_grads, and composition with jit, grad and vmap.
#include <gtest/gtest.h>

#include "jx/test_util.h"
#include "collective_cases.h"
#include "test_util.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;
using lax::AllGatherOptions;
using testing::Case;
using testing::cases;
using testing::stacked_shape;
using testing::randn;

// Four CPU devices for the whole binary, set before jx lists devices.
const bool kDevices = [] {
  config::set_num_cpu_devices(4);
  return true;
}();

std::vector<Device> first(int64_t n) {
  auto d = local_devices();
  return {d.begin(), d.begin() + n};
}

class CollectivesTest : public ::testing::TestWithParam<int> {};

TEST_P(CollectivesTest, PmapAndVmapMatchTheDefinition) {
  const int64_t n = GetParam();
  for (const Case& c : cases(n)) {
    SCOPED_TRACE(c.name);
    const Shape shape = stacked_shape(c, n);
    Array x = randn(shape, DType::Float32, 7);
    Array expected = c.def(x);
    auto f = c.per_device;
    Array by_pmap = pmap([f](const Array& r) { return f(r); }, {.axis_name = "i", .devices = first(n)})(x);
    EXPECT_ALLCLOSE(by_pmap, expected, 1e-5, 1e-5);
    Array by_vmap = vmap([f](const Array& r) { return f(r); }, {.axis_name = "i"})(x);
    EXPECT_ALLCLOSE(by_vmap, expected, 1e-5, 1e-5);
    Array by_jit_pmap = jit(pmap([f](const Array& r) { return f(r); }, {.axis_name = "i", .devices = first(n)}))(x);
    EXPECT_ALLCLOSE(by_jit_pmap, expected, 1e-5, 1e-5);
  }
}

// Reverse and forward mode through every linear collective (and pmax) inside pmap,
// against finite differences.
TEST_P(CollectivesTest, GradientsThroughPmapMatchFiniteDifferences) {
  const int64_t n = GetParam();
  for (const Case& c : cases(n)) {
    if (c.name == "axis_index") continue;
    SCOPED_TRACE(c.name);
    const Shape shape = stacked_shape(c, n);
    Array x = randn(shape, DType::Float32, 3);
    auto f = c.per_device;
    auto mapped = pmap([f](const Array& r) { return jnp::sin(f(r * r)); }, {.axis_name = "i", .devices = first(n)});
    test_util::check_grads([&](const Array& v) { return mapped(v); }, std::tuple{x}, {.order = 1});
    // The same gradient under vmap with the axis name.
    auto batched = vmap([f](const Array& r) { return jnp::sin(f(r * r)); }, {.axis_name = "i"});
    auto loss_p = [&](const Array& v) { return jnp::sum(mapped(v) * jnp::cos(v.reshape({-1})).reshape(v.shape())[0]); };
    (void)loss_p;
    Array gp = grad([&](const Array& v) { return jnp::sum(mapped(v)); })(x);
    Array gv = grad([&](const Array& v) { return jnp::sum(batched(v)); })(x);
    EXPECT_ALLCLOSE(gp, gv, 1e-4, 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, CollectivesTest, ::testing::Values(1, 2, 3, 4));

TEST(Pmap, GradInsidePmapWithPmeanIsTheFullBatchGradient) {
  // Data-parallel least squares: each device's mean-loss gradient, pmean'd, is the
  // gradient of the mean loss over the whole batch.
  Array w = randn({3}, DType::Float64, 1);
  Array xs = randn({4, 5, 3}, DType::Float64, 2);
  Array ys = randn({4, 5}, DType::Float64, 3);
  auto loss = [](const Array& w, const Array& x, const Array& y) { return jnp::mean(jnp::square(jnp::matmul(x, w) - y)); };
  auto step = pmap(
      [&](const Array& w, const Array& x, const Array& y) { return lax::pmean(grad(loss)(w, x, y), "batch"); },
      {.axis_name = "batch", .in_axes = {not_mapped, 0, 0}});
  Array g = step(w, xs, ys);
  Array full = grad(loss)(w, xs.reshape({20, 3}), ys.reshape({20}));
  for (int k = 0; k < 4; ++k) EXPECT_ALLCLOSE(g(k), full, 1e-12, 1e-12);
}

TEST(Pmap, ComposesWithJitVmapAndGrad) {
  Array x = randn({4, 2, 3}, DType::Float32, 5);
  auto f = [](const Array& r) { return jnp::tanh(r) * lax::psum(r, "i"); };
  Array expected = vmap(f, {.axis_name = "i"})(x);
  // pmap of jit, and vmap of pmap (the vmapped axis inside each device).
  EXPECT_ALLCLOSE(pmap(jit(f), {.axis_name = "i"})(x), expected, 1e-5, 1e-5);
  Array xt = jnp::moveaxis(x, 1, 0);  // [2, 4, 3]
  Array vp = vmap(pmap(f, {.axis_name = "i"}))(xt);
  EXPECT_ALLCLOSE(jnp::moveaxis(vp, 0, 1), expected, 1e-5, 1e-5);
  // grad of jit of pmap, against grad of the vmap version.
  auto total = [&](auto mapped) { return [mapped](const Array& v) { return jnp::sum(jnp::sin(mapped(v))); }; };
  Array g1 = grad(total(jit(pmap(f, {.axis_name = "i"}))))(x);
  Array g2 = grad(total(vmap(f, {.axis_name = "i"})))(x);
  EXPECT_ALLCLOSE(g1, g2, 1e-4, 1e-5);
  // pmap(vmap(grad)) with a collective over the vmap's axis inside.
  auto inner = [](const Array& v) { return jnp::sum(v * lax::pmean(v, "j")); };
  Array pvg = pmap(vmap(grad(inner), {.axis_name = "j"}))(x);
  Array vvg = vmap(vmap(grad(inner), {.axis_name = "j"}))(x);
  EXPECT_ALLCLOSE(pvg, vvg, 1e-5, 1e-5);
}

TEST(Pmap, OutAxesNotMappedAndInAxes) {
  Array x = randn({3, 4}, DType::Float32, 9);  // mapped along axis 1
  auto out = pmap([](const Array& c) { return std::make_pair(lax::psum(c, "i"), c * 2.0f); },
                  {.axis_name = "i", .in_axes = {1}, .out_axes = {not_mapped, 1}})(x);
  EXPECT_ALLCLOSE(out.first, jnp::sum(x, 1), 1e-5, 1e-5);
  EXPECT_ALLCLOSE(out.second, x * 2.0f);
}

TEST(ShardMap, TwoByTwoMeshWithPsumOverOneAndBothAxes) {
  Mesh mesh(local_devices(), {"data", "model"}, {2, 2});
  Array x = randn({4, 6}, DType::Float64, 11);
  // Blocks of [2, 3]; psum over data sums the two row blocks of each column block.
  auto f = shard_map([](const Array& b) { return lax::psum(b, "data"); }, mesh, {P("data", "model")}, {P(none, "model")});
  Array y = f(x);
  Array expected = x(Slice{0, 2}) + x(Slice{2, 4});
  EXPECT_ALLCLOSE(y, expected, 1e-12, 1e-12);
  auto both = shard_map([](const Array& b) { return lax::psum(b, {"data", "model"}); }, mesh, {P("data", "model")},
                        {P()});
  Array z = both(x);
  Array e2 = x(Slice{0, 2}, Slice{0, 3}) + x(Slice{0, 2}, Slice{3, 6}) + x(Slice{2, 4}, Slice{0, 3}) +
             x(Slice{2, 4}, Slice{3, 6});
  EXPECT_ALLCLOSE(z, e2, 1e-12, 1e-12);
  // Reverse mode through the replicated output: d sum(z) / dx = 1 everywhere.
  Array g = grad([&](const Array& v) { return jnp::sum(both(v)); })(x);
  EXPECT_ALLCLOSE(g, jnp::ones_like(x), 1e-12, 1e-12);
  test_util::check_grads([&](const Array& v) { return f(jnp::sin(v)); }, std::tuple{x}, {.order = 2});
}

TEST(ShardMap, ReplicatedOperandGetsTheSumOfItsCotangents) {
  Mesh mesh(first(4), "d");
  Array w = randn({3}, DType::Float64, 4);
  Array x = randn({8, 3}, DType::Float64, 5);
  auto f = shard_map([](const Array& w, const Array& x) { return jnp::sin(x * w); }, mesh, {P(), P("d")}, {P("d")});
  EXPECT_ALLCLOSE(f(w, x), jnp::sin(x * w), 1e-12, 1e-12);
  test_util::check_grads([&](const Array& a, const Array& b) { return f(a, b); }, std::tuple{w, x}, {.order = 2});
}

TEST(Pmap, Errors) {
  Array x = jnp::ones({4, 3});
  EXPECT_JX_ERROR(pmap([](const Array& r) { return lax::psum(r, "j"); }, {.axis_name = "i"})(x), "[psum]",
                  "unbound axis name 'j'");
  EXPECT_JX_ERROR(lax::psum(x, "i"), "[psum]", "unbound axis name 'i'");
  EXPECT_JX_ERROR(pmap([](const Array& r) { return r; })(jnp::ones({5, 2})), "[pmap]", "size 5",
                  "only 4 devices");
  EXPECT_JX_ERROR(vmap([](const Array& r) { return lax::psum_scatter(r, "i"); }, {.axis_name = "i"})(jnp::ones({4, 3})),
                  "[psum_scatter]", "extent 3", "size 4");
  EXPECT_JX_ERROR(vmap([](const Array& r) { return lax::all_to_all(r, "i", 0, 0); }, {.axis_name = "i"})(x),
                  "[all_to_all]", "split_axis 0", "extent 3");
  EXPECT_JX_ERROR(vmap([](const Array& r) { return lax::ppermute(r, "i", {{0, 1}, {1, 1}}); }, {.axis_name = "i"})(x),
                  "[ppermute]", "target of two pairs");
  Mesh mesh(local_devices(), {"a", "b"}, {2, 2});
  EXPECT_JX_ERROR(shard_map([](const Array& b) { return b; }, mesh, {P("a")}, {P("a")})(jnp::ones({3, 2})),
                  "[shard_map]", "not divisible", "f32[3,2]");
  EXPECT_JX_ERROR(shard_map([](const Array& b) { return b; }, mesh, {P("c")}, {P("c")})(jnp::ones({4})),
                  "[shard_map]", "mesh axis 'c'");
  EXPECT_JX_ERROR(Mesh(local_devices(), {"a"}, {3}), "[Mesh]", "needs 3 devices, got 4");
}

}  // namespace
}  // namespace jx

namespace jx {
namespace {

// A jitted function traced under one axis size is traced again under another: the
// program bakes in the sizes of the axes its collectives name.
TEST(Pmap, JitInsidePmapRetracesPerAxisSize) {
  auto f = jit([](const Array& r) { return lax::psum(r, "i"); });
  for (int64_t n : {2, 4, 2}) {
    Array x = jnp::ones({n, 3});
    Array y = pmap(f, {.axis_name = "i", .devices = first(n)})(x);
    EXPECT_ALLCLOSE(y, jnp::full({n, 3}, static_cast<float>(n)));
  }
}

}  // namespace
}  // namespace jx

namespace jx {
namespace {

namespace jnp = jx::numpy;

// Static arguments reach f as they are (an int and a string here), the same on every
// device; a new value traces anew.
TEST(Pmap, StaticArgumentsReachTheFunctionAsTheyAre) {
  auto f = [](const Array& r, int power, const std::string& op) {
    Array v = jnp::power(r, static_cast<float>(power));
    return op == "sum" ? lax::psum(v, "i") : lax::pmax(v, "i");
  };
  auto mapped = pmap(f, static_argnums<1, 2>, {.axis_name = "i", .in_axes = {0, not_mapped, not_mapped}});
  Array x = testing::randn({4, 3}, DType::Float32, 13);
  Array expected = vmap([&](const Array& r) { return f(r, 2, "sum"); }, {.axis_name = "i"})(x);
  EXPECT_ALLCLOSE(mapped(x, 2, std::string("sum")), expected, 1e-5, 1e-5);
  Array expected_max = vmap([&](const Array& r) { return f(r, 3, "max"); }, {.axis_name = "i"})(x);
  EXPECT_ALLCLOSE(mapped(x, 3, std::string("max")), expected_max, 1e-5, 1e-5);
  // Under grad and jit too.
  Array g = grad([&](const Array& v) { return jnp::sum(mapped(v, 2, std::string("sum"))); })(x);
  EXPECT_ALLCLOSE(g, 4.0f * 2.0f * x, 1e-4, 1e-5);
  auto jitted = jit([&](const Array& v) { return mapped(v, 3, std::string("max")); });
  EXPECT_ALLCLOSE(jitted(x), expected_max, 1e-5, 1e-5);
  // A pytree argument beside the static one.
  auto pair_fn = pmap([](const std::pair<Array, Array>& p, int k) { return p.first * static_cast<float>(k) + p.second; },
                      static_argnums<1>);
  EXPECT_ALLCLOSE(pair_fn(std::make_pair(x, x), 3), 4.0f * x, 1e-6, 1e-6);
  EXPECT_JX_ERROR(pmap(f, static_argnums<1, 2>, {.in_axes = {0, 0}})(x, 2, std::string("sum")), "[pmap]",
                  "2 in_axes entries", "3 arguments");
}

}  // namespace
}  // namespace jx

namespace jx {
namespace {

namespace jnp = jx::numpy;

// A pmap result is sharded over its devices: one shard per device, the per-device value
// as a view committed to that device.
TEST(Pmap, ResultsAreShardedOverTheirDevices) {
  Array x = testing::randn({4, 3}, DType::Float32, 17);
  Array y = pmap([](const Array& r) { return jnp::sin(r); }, {.axis_name = "i"})(x);
  ASSERT_TRUE(sharding(y).has_value());
  EXPECT_EQ(sharding(y)->spec, P("i"));
  EXPECT_EQ(sharding(y)->str(), "NamedSharding(Mesh('i': 4), P('i'))");
  std::vector<Shard> shards = addressable_shards(y);
  ASSERT_EQ(shards.size(), 4u);
  for (int64_t k = 0; k < 4; ++k) {
    const Shard& s = shards[static_cast<size_t>(k)];
    EXPECT_EQ(s.device, local_devices()[static_cast<size_t>(k)]);
    EXPECT_EQ(s.index, (std::vector<std::pair<int64_t, int64_t>>{{k, k + 1}, {0, 3}}));
    EXPECT_EQ(s.squeezed_dim, 0);
    EXPECT_EQ(s.data.device(), s.device);
    EXPECT_EQ(s.data.shape(), (Shape{3}));
    EXPECT_ALLCLOSE(s.data.block_until_ready(), jnp::sin(x(k)), 1e-6, 1e-6);
    // Work on a shard runs on its device.
    EXPECT_EQ((s.data * 2.0f).device(), s.device);
  }
  // Another operation's result is an ordinary array again: one shard, the whole.
  Array z = y + 1.0f;
  EXPECT_FALSE(sharding(z).has_value());
  ASSERT_EQ(addressable_shards(z).size(), 1u);
  EXPECT_EQ(addressable_shards(z)[0].index, (std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {0, 3}}));
  // out_axes: the mapped dimension where asked; unmapped outputs are whole on each device.
  auto [a, b] = pmap([](const Array& r) { return std::make_pair(r * 2.0f, lax::psum(r, "i")); },
                     {.axis_name = "i", .out_axes = {1, not_mapped}})(x);
  EXPECT_EQ(sharding(a)->spec, P(none, "i"));
  EXPECT_EQ(addressable_shards(a)[2].index, (std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {2, 3}}));
  EXPECT_ALLCLOSE(addressable_shards(a)[2].data, x(2) * 2.0f, 1e-6, 1e-6);
  EXPECT_EQ(sharding(b)->spec, P());
  for (const Shard& s : addressable_shards(b)) EXPECT_ALLCLOSE(s.data, jnp::sum(x, 0), 1e-5, 1e-5);
  EXPECT_JX_ERROR(jit([](const Array& v) { return addressable_shards(v)[0].data; })(x), "[addressable_shards]",
                  "traced array of type f32[4,3]");
}

TEST(ShardMap, ResultsRecordEachDevicesBlock) {
  Mesh mesh(local_devices(), {"data", "model"}, {2, 2});
  Array x = testing::randn({4, 6}, DType::Float64, 19);
  Array y = shard_map([](const Array& b) { return b * 3.0; }, mesh, {P("data", "model")}, {P("data", "model")})(x);
  EXPECT_EQ(sharding(y)->spec, P("data", "model"));
  std::vector<Shard> shards = addressable_shards(y);
  ASSERT_EQ(shards.size(), 4u);
  // Device k sits at (k / 2, k % 2) of the mesh: rows 2 (k / 2) ..., columns 3 (k % 2) ...
  for (int64_t k = 0; k < 4; ++k) {
    const int64_t r = k / 2, c = k % 2;
    const Shard& s = shards[static_cast<size_t>(k)];
    EXPECT_EQ(s.index, (std::vector<std::pair<int64_t, int64_t>>{{2 * r, 2 * r + 2}, {3 * c, 3 * c + 3}}));
    EXPECT_EQ(s.squeezed_dim, -1);
    EXPECT_ALLCLOSE(s.data, x(Slice{2 * r, 2 * r + 2}, Slice{3 * c, 3 * c + 3}) * 3.0, 1e-12, 1e-12);
  }
  Array z = shard_map([](const Array& b) { return lax::psum(b, "data"); }, mesh, {P("data", "model")}, {P(none, "model")})(x);
  EXPECT_EQ(addressable_shards(z)[2].index, (std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {0, 3}}));
}

}  // namespace
}  // namespace jx
