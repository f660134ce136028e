// jx::distributed::initialize without a launcher: a group of one, and its errors. Its own
// binary, since initialize must run before any device exists.
#include <gtest/gtest.h>

#include "jx/jx.h"
#include "test_util.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;

TEST(DistributedInitialize, WithoutALauncherAProcessIsAGroupOfOne) {
  EXPECT_FALSE(distributed::is_initialized());
  EXPECT_JX_ERROR(distributed::initialize({.num_processes = 0}), "[distributed.initialize]", "num_processes=0",
                  "at least 1");
  EXPECT_JX_ERROR(distributed::initialize({.num_processes = 4}), "[distributed.initialize]", "num_processes=4",
                  "no MPI launcher started this process", "mpirun -np 4");
  EXPECT_JX_ERROR(distributed::initialize({.process_id = 2}), "[distributed.initialize]", "process_id=2",
                  "no MPI launcher");
  distributed::initialize({.num_processes = 1, .process_id = 0});
  EXPECT_TRUE(distributed::is_initialized());
  EXPECT_EQ(process_count(), 1);
  EXPECT_EQ(process_index(), 0);
  EXPECT_JX_ERROR(distributed::initialize(), "[distributed.initialize]", "already called");
  // Programs run unchanged: a pmap over this process's devices.
  Array y = pmap([](const Array& r) { return lax::psum(r, "i"); }, {.axis_name = "i"})(jnp::ones({1, 3}));
  EXPECT_EQ(y.shape(), (Shape{1, 3}));
  distributed::shutdown();
}

}  // namespace
}  // namespace jx
