// Devices, buffers and backends: the CPU devices a process exposes (4 here, set before
// first use), where results live, device_put, the errors for mixed devices and for
// platforms that are not built, and per-platform impls through a fake "test" backend
// that implements one primitive.
#include <cstdlib>
#include <cstring>
#include <new>
#include <set>
#include <sstream>
#include <thread>

#include "backend/backend.h"
#include "core/array_internal.h"
#include "jx/jx.h"
#include "test_util.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;

// Before anything touches devices or arrays.
const bool g_four_devices = [] {
  config::set_num_cpu_devices(4);
  return true;
}();

TEST(Devices, CpuDevicesAsConfigured) {
  std::vector<Device> cpus = devices("cpu");
  ASSERT_EQ(cpus.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(cpus[i].platform(), "cpu");
    EXPECT_EQ(cpus[i].kind(), "cpu");
    EXPECT_EQ(cpus[i].id(), i);
    EXPECT_EQ(cpus[i].process_index(), 0);
    EXPECT_EQ(cpus[i].str(), "cpu:" + std::to_string(i));
  }
  // jx::devices() lists the CPU's first, then the fake "test" platform this binary adds.
  const std::vector<Device> all = devices();
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(std::vector<Device>(all.begin(), all.begin() + 4), cpus);
  EXPECT_EQ(all[4].platform(), "test");
  EXPECT_EQ(local_devices(), all);
  EXPECT_EQ(device_count(), 5);
  EXPECT_EQ(local_device_count(), 5);
  EXPECT_EQ(process_index(), 0);
  EXPECT_EQ(process_count(), 1);
  EXPECT_TRUE(cpus[1] == devices("cpu")[1]);
  EXPECT_FALSE(cpus[1] == cpus[2]);
  std::ostringstream os;
  os << cpus[3];
  EXPECT_EQ(os.str(), "cpu:3");
  EXPECT_EQ(default_device(), cpus[0]);
}

TEST(Devices, CountIsFixedOnceDevicesExist) {
  (void)devices();
  config::set_num_cpu_devices(4);  // unchanged: accepted
  EXPECT_JX_ERROR(config::set_num_cpu_devices(2), "[config] set_num_cpu_devices(2): the CPU devices already exist (4");
}

TEST(Devices, OneProcessIsAGroupOfOne) {
  EXPECT_EQ(process_index(), 0);
  EXPECT_EQ(process_count(), 1);
  EXPECT_EQ(local_devices().size(), devices().size());
  // Joining a group numbers every process's devices, so it comes first.
  EXPECT_JX_ERROR(distributed::initialize(), "[distributed.initialize]", "must come before the first use of a device");
  EXPECT_FALSE(distributed::is_initialized());
}

TEST(Devices, UnavailableAndUnknownPlatformsRaiseNamingThem) {
  EXPECT_JX_ERROR(devices("gpu"), "[devices] platform 'gpu' is not available: this jx was built without the GPU backend");
  EXPECT_JX_ERROR(devices("tpu"), "[devices] unknown platform 'tpu' (available: cpu");
  EXPECT_JX_ERROR(Device().platform(), "[device] a null jx::Device");
}

TEST(Devices, ResultsLiveOnTheOperandsDevice) {
  const std::vector<Device> cpus = devices("cpu");
  Array x = jnp::arange(12).astype(DType::Float32).reshape({3, 4});
  EXPECT_EQ(x.device(), cpus[0]);
  Array y = device_put(x, cpus[2]);
  EXPECT_EQ(y.device(), cpus[2]);
  EXPECT_EQ(y.to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(y.aval(), x.aval());
  EXPECT_EQ(device_put(y, cpus[2]).impl_ptr(), y.impl_ptr());  // already there: no copy
  // Eager operations, views, reductions and scalars mixed in (weak, made on the default
  // device but operands like any other) stay on cpu:2.
  Array z = jnp::sin(y) * 2.0 + y;
  EXPECT_EQ(z.device(), cpus[2]);
  EXPECT_EQ(jnp::sum(z, 0).device(), cpus[2]);
  EXPECT_EQ(y.T().device(), cpus[2]);
  EXPECT_ALLCLOSE(z, jnp::sin(x) * 2.0 + x, 0, 0);
  // A strided view copied to another device is a contiguous copy of its elements.
  Array v = device_put(x.T(), cpus[1]);
  EXPECT_EQ(v.device(), cpus[1]);
  EXPECT_EQ(v.to_vector<float>(), x.T().to_vector<float>());
  // jit runs on its arguments' device too.
  auto f = jit([](const Array& a) { return jnp::exp(a) - 1.0; });
  Array w = f(y);
  EXPECT_EQ(w.device(), cpus[2]);
  EXPECT_ALLCLOSE(w, jnp::exp(x) - 1.0, 1e-6, 1e-6);
}

TEST(Devices, OperandsOnDifferentDevicesRaiseNamingTheOperationAndDevices) {
  const std::vector<Device> cpus = devices("cpu");
  Array a = device_put(jnp::ones({3}), cpus[1]);
  Array b = device_put(jnp::ones({3}), cpus[3]);
  EXPECT_JX_ERROR(lax::add(a, b), "[add] operands are on different devices: operand 0 on cpu:1, operand 1 on cpu:3",
                  "jx::device_put");
  auto f = jit([](const Array& p, const Array& q) { return p * q; });
  EXPECT_JX_ERROR(f(a, b), "operands are on different devices", "cpu:1", "cpu:3");
}

TEST(Devices, DefaultDeviceScopePlacesNewArrays) {
  const std::vector<Device> cpus = devices("cpu");
  {
    DefaultDeviceScope scope(cpus[3]);
    EXPECT_EQ(default_device(), cpus[3]);
    EXPECT_EQ(jnp::zeros({2, 2}).device(), cpus[3]);
    EXPECT_EQ(Array(1.5f).device(), cpus[3]);
  }
  EXPECT_EQ(jnp::zeros({2}).device(), cpus[0]);
}

TEST(Devices, EachDeviceRunsWorkConcurrently) {
  // One thread per device, each computing on its own device: the results are right and
  // stay on their devices (the thread pool runs the devices' parallel regions at once).
  const std::vector<Device> cpus = devices("cpu");
  Array x = jnp::linspace(-2.0, 2.0, 1 << 18).astype(DType::Float32);
  Array want = jnp::tanh(x) * jnp::cos(x);
  std::vector<Array> got(cpus.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < cpus.size(); ++i)
    threads.emplace_back([&, i] {
      Array xi = device_put(x, cpus[i]);
      for (int rep = 0; rep < 5; ++rep) got[i] = jnp::tanh(xi) * jnp::cos(xi);
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < cpus.size(); ++i) {
    EXPECT_EQ(got[i].device(), cpus[i]);
    EXPECT_EQ(got[i].to_vector<float>(), want.to_vector<float>());
  }
}

// ---- a fake platform: host memory, one device, an impl for `neg` only ----

int64_t g_test_allocations = 0;

class TestAllocator final : public detail::Allocator {
 public:
  void* allocate(size_t n) override {
    ++g_test_allocations;
    void* p = std::aligned_alloc(64, (n + 63) / 64 * 64 + 64);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p, size_t) override { std::free(p); }
};

class TestBackend final : public detail::Backend {
 public:
  // A platform called `name`; host_memory false plays a device with memory of its own.
  explicit TestBackend(std::string name = "test", bool host_memory = true) : host_memory_(host_memory) {
    state_ = detail::DeviceState{.platform = std::move(name), .id = 0, .kind = "fake", .backend = this, .allocator = &allocator_};
  }
  const std::string& platform() const override { return state_.platform; }
  std::vector<Device> devices() override { return {Device(&state_)}; }
  bool host_memory() const override { return host_memory_; }
  void synchronize(const Device&) override {}

 private:
  bool host_memory_;
  TestAllocator allocator_;
  detail::DeviceState state_;
};

// neg on the test platform: its own loop (float32 only), so a test can tell it ran.
int64_t g_test_neg_calls = 0;
const bool g_test_backend = [] {
  detail::register_backend(std::make_unique<TestBackend>());
  detail::register_impl("test", *find_primitive("neg"),
                        [](std::span<const Array> in, const Params&, std::span<const Aval> out) {
                          ++g_test_neg_calls;
                          Array x = detail::contiguous(in[0]);
                          Array y = detail::alloc_array(out[0]);
                          const float* src = detail::data<float>(x);
                          float* dst = detail::mutable_data<float>(y);
                          for (int64_t i = 0; i < x.size(); ++i) dst[i] = -src[i];
                          return std::vector<Array>{y};
                        });
  return true;
}();

// Arrays from 256 KiB up start at staggered page offsets (cpu_backend.cpp, next_stagger):
// a kernel loading one array and storing another at the same offset into its page
// stalls on "4K aliasing". Consecutive arrays sit apart, every one 64-byte aligned, and
// blocks freed and taken again (through the block cache, at other offsets) keep their
// contents' bounds: each array is written whole and read back.
TEST(Allocator, LargeArraysStartAtStaggeredPageOffsets) {
  const int64_t n = int64_t{1} << 18;  // 1 MiB of float32
  std::vector<Array> kept;
  std::set<uintptr_t> offsets;
  for (int round = 0; round < 3; ++round) {
    std::vector<Array> made;
    for (int i = 0; i < 16; ++i) {
      made.push_back(jnp::full({n}, static_cast<float>(i)) * 1.0f);  // full alone is a broadcast view
      const auto at = reinterpret_cast<uintptr_t>(detail::raw_data(made.back()));
      EXPECT_EQ(at % 64, 0u);
      if (i > 0) {
        const auto before = reinterpret_cast<uintptr_t>(detail::raw_data(made[static_cast<size_t>(i - 1)]));
        EXPECT_NE(at % 4096, before % 4096) << "two consecutive arrays at one page offset";
      }
      offsets.insert(at % 4096);
    }
    for (int i = 0; i < 16; ++i)
      EXPECT_EQ(jnp::sum(made[static_cast<size_t>(i)] == static_cast<float>(i)).item<int64_t>(), n);
    kept.insert(kept.end(), made.begin(), made.begin() + 4);  // the rest are freed, their blocks taken again
  }
  EXPECT_GE(offsets.size(), 8u);
}

// A result never starts within aliasing reach of a buffer its kernel reads (256 bytes
// after it, modulo a page: detail::ReadBuffersScope): eager results of a fresh block,
// and a jitted function's, fresh or recycled from its buffer pool, over calls whose
// results cycle through every staggered slot.
TEST(Allocator, ResultsKeepOutOfTheirOperandsAliasingReach) {
  const int64_t n = int64_t{1} << 18;
  const Array x = jnp::arange(n).astype(DType::Float32), y = jnp::arange(n).astype(DType::Float32) + 1.0f;
  auto reach = [](const Array& out, const Array& in) {
    return (reinterpret_cast<uintptr_t>(detail::raw_data(out)) - reinterpret_cast<uintptr_t>(detail::raw_data(in))) & 4095;
  };
  auto f = jit([](const Array& a, const Array& b) { return jnp::sin(a) * b + a; });
  std::vector<Array> kept;
  for (int i = 0; i < 40; ++i) {
    Array eager = x * y, jitted = f(x, y);
    for (const Array* in : {&x, &y}) {
      EXPECT_GE(reach(eager, *in), detail::kAliasingReach) << "call " << i;
      EXPECT_GE(reach(jitted, *in), detail::kAliasingReach) << "call " << i;
    }
    if (i % 3 == 0) kept.push_back(jitted);  // the others return to the caches
  }
  EXPECT_TRUE(jnp::allclose(f(x, y), jnp::sin(x) * y + x));
}

TEST(Backends, ImplsAreLookedUpByTheOperandsPlatform) {
  Device test = devices("test").at(0);
  EXPECT_EQ(test.platform(), "test");
  EXPECT_EQ(test.str(), "test:0");
  EXPECT_EQ(devices().back(), test);  // registered platforms join jx::devices()
  const int64_t allocations = g_test_allocations;
  Array x = device_put(Array({1.0f, -2.5f, 3.0f}), test);
  EXPECT_EQ(x.device(), test);
  EXPECT_GT(g_test_allocations, allocations);  // the buffer came from the test allocator
  const int64_t calls = g_test_neg_calls;
  Array y = lax::neg(x);
  EXPECT_EQ(g_test_neg_calls, calls + 1);
  EXPECT_EQ(y.device(), test);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{-1.0f, 2.5f, -3.0f}));
  // Back on the CPU, neg runs the CPU impl.
  Array z = lax::neg(device_put(y, devices("cpu")[0]));
  EXPECT_EQ(g_test_neg_calls, calls + 1);
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{1.0f, -2.5f, 3.0f}));
}

TEST(Backends, MissingImplRaisesNamingPrimitiveAndPlatform) {
  Array x = device_put(Array({1.0f, 2.0f}), devices("test").at(0));
  EXPECT_JX_ERROR(lax::sin(x), "[sin] has no implementation for platform 'test'");
  EXPECT_JX_ERROR(lax::exp(x), "[exp] has no implementation for platform 'test'");
}

TEST(Backends, RegistrationErrors) {
  EXPECT_JX_ERROR(detail::register_backend(std::make_unique<TestBackend>()), "[register_backend] platform 'test' is already registered");
  auto noop = [](std::span<const Array>, const Params&, std::span<const Aval>) { return std::vector<Array>{}; };
  EXPECT_JX_ERROR(detail::register_impl("test", *find_primitive("neg"), noop),
                  "[register_impl] neg already has an impl for platform 'test'");
  EXPECT_JX_ERROR(detail::register_impl("cpu", *find_primitive("neg"), noop),
                  "[register_impl] neg already has an impl for platform 'cpu'");
  EXPECT_JX_ERROR(detail::register_impl("tpu", *find_primitive("neg"), noop), "[devices] unknown platform 'tpu'");
}

// Compiled programs are host code: a platform with device memory is refused, not misread.
TEST(Backends, JitRefusesPlatformsWithDeviceMemory) {
  static const bool registered = [] {
    detail::register_backend(std::make_unique<TestBackend>("testdevmem", /*host_memory=*/false));
    return true;
  }();
  ASSERT_TRUE(registered);
  Device d = devices("testdevmem").at(0);
  Array x;
  {
    DefaultDeviceScope scope(d);
    x = Array({1.0f, 2.0f});  // the fake's memory is host memory underneath, so this is safe
  }
  ASSERT_EQ(x.device(), d);
  EXPECT_JX_ERROR(jit([](const Array& a) { return a * 2.0f; })(x),
                  "[jit] compiled programs run on host-memory platforms; testdevmem:0 has device memory and no jit backend yet");
  EXPECT_JX_ERROR(device_put(x, devices("cpu")[0]), "[device_put] cannot copy f32[2] from testdevmem:0 to cpu:0: transfers between these platforms are not implemented");
}

// A primitive without a kernel on a platform runs its platform-neutral Rules::impl there:
// a call of a sub-program binds its body's primitives, which find the test platform's
// neg kernel.
TEST(Backends, PlatformNeutralImplsRunOnEveryPlatform) {
  Array x = device_put(Array({1.0f, -2.0f}), devices("test").at(0));
  const int64_t calls = g_test_neg_calls;
  Array y = named_call([](const Array& a) { return lax::neg(a); }, "negate")(x);
  EXPECT_EQ(g_test_neg_calls, calls + 1);
  EXPECT_EQ(y.device(), x.device());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{-1.0f, 2.0f}));
}

}  // namespace
}  // namespace jx
