// Data-parallel training: a small two-layer network fitted by gradient descent, each
// step pmap(grad) over the devices, each device on its shard of the batch, the
// gradients averaged with pmean. A reference run on one device processes the same
// shards one after the other and averages their gradients in the same order: the two
// reach bit-for-bit the same parameters, since the collective reduces in rank order.
// The same program runs over in-process devices or over MPI processes, each process
// feeding its own devices' shards:
//
//   JX_NUM_CPU_DEVICES=4 ./build/examples/data_parallel
//   mpirun -np 4 ./build/examples/data_parallel      (as root: --allow-run-as-root --oversubscribe)
#include <cstdio>
#include <cstring>

#include "jx/jx.h"

namespace jnp = jx::numpy;
using jx::Array;

struct Params {
  Array w1, b1, w2, b2;
};
JX_TREE_NODE(Params, w1, b1, w2, b2);

Array predict(const Params& p, const Array& x) { return jnp::matmul(jnp::tanh(jnp::matmul(x, p.w1) + p.b1), p.w2) + p.b2; }
Array loss(const Params& p, const Array& x, const Array& y) { return jnp::mean(jnp::square(predict(p, x) - y)); }

Params update(const Params& p, const Params& g, float lr) {
  return jx::tree::map([lr](const Array& v, const Array& d) { return v - lr * d; }, p, g);
}

bool bitwise_equal(const Array& a, const Array& b) {
  const std::vector<float> x = a.to_vector<float>(), y = b.to_vector<float>();
  return a.shape() == b.shape() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

int main() {
  jx::distributed::initialize();  // joins the mpirun processes; a group of one otherwise
  const int64_t n = jx::device_count(), local = jx::local_device_count(), first = jx::process_index() * local;
  const bool leader = jx::process_index() == 0;
  const int64_t per_device = 64, features = 8, hidden = 32;
  Array keys = jx::random::split(jx::random::key(0), 4);
  Array k1 = keys(0), k2 = keys(1), k3 = keys(2), k4 = keys(3);
  Params p0{jx::random::normal(k1, {features, hidden}) * 0.3f, jnp::zeros({hidden}),
            jx::random::normal(k2, {hidden, 1}) * 0.3f, jnp::zeros({1})};
  Array x = jx::random::normal(k3, {n, per_device, features});
  Array y = jnp::sin(jnp::sum(x, -1, true)) + 0.1f * jx::random::normal(k4, {n, per_device, 1});

  // One step on every device: its shard's gradient, averaged over the devices.
  auto grads = jx::pmap(
      [](const Params& p, const Array& xs, const Array& ys) { return jx::lax::pmean(jx::grad(loss)(p, xs, ys), "batch"); },
      {.axis_name = "batch", .in_axes = {jx::not_mapped, 0, 0}});
  // The same shards on one device, one after the other.
  auto shard_grad = jx::jit(jx::grad(loss));
  // This process's shards of the batch.
  const Array x_mine = x(jx::Slice{first, first + local}), y_mine = y(jx::Slice{first, first + local});

  Params parallel = p0, single = p0;
  const float lr = 0.1f;
  for (int step = 0; step < 100; ++step) {
    Params g = grads(parallel, x_mine, y_mine);
    parallel = update(parallel, jx::tree::map([](const Array& v) { return v(0); }, g), lr);

    Params sum = shard_grad(single, x(0), y(0));
    for (int64_t k = 1; k < n; ++k)
      sum = jx::tree::map([](const Array& a, const Array& b) { return a + b; }, sum, shard_grad(single, x(k), y(k)));
    single = update(single, jx::tree::map([n](const Array& v) { return v / static_cast<float>(n); }, sum), lr);
    if (step % 25 == 0 && leader)
      std::printf("step %3d  loss %.6f\n", step, loss(parallel, x.reshape({-1, features}), y.reshape({-1, 1})).item<float>());
  }
  const bool same = bitwise_equal(parallel.w1, single.w1) && bitwise_equal(parallel.b1, single.b1) &&
                    bitwise_equal(parallel.w2, single.w2) && bitwise_equal(parallel.b2, single.b2);
  if (leader || !same)
    std::printf("%lld devices in %d process%s: final loss %.6f; parameters %s the one-device run's\n",
                static_cast<long long>(n), jx::process_count(), jx::process_count() == 1 ? "" : "es", loss(parallel, x.reshape({-1, features}), y.reshape({-1, 1})).item<float>(),
                same ? "bit-for-bit equal to" : "DIFFER from");
  return same ? 0 : 1;
}
