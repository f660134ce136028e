// The platform registry, devices, the current device and per-platform impls.
#include "backend/backend.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <ostream>

#include "backend/cpu/cpu_backend.h"
#include "backend/gpu/gpu_backend.h"
#include "core/array_internal.h"
#include "distributed/mpi.h"
#include "core/hot_tls.h"

namespace jx {
namespace detail {
namespace {

// Backends in registration order (the CPU's first). Never destroyed: devices, and so
// their allocators, must outlive every array.
std::atomic<bool> g_devices_made{false};

struct Registry {
  std::mutex mu;
  std::vector<Backend*> backends;

  Registry() {
    g_devices_made = true;
    backends.push_back(make_cpu_backend().release());
    backends.push_back(make_gpu_backend().release());
  }
};
Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

std::string platform_list(const Registry& r) {
  std::string names;
  for (const Backend* b : r.backends)
    if (b->available()) names += (names.empty() ? "" : ", ") + b->platform();
  return names;
}

JX_INITIAL_EXEC_TLS thread_local Placement t_current;                          // innermost DeviceScope
JX_INITIAL_EXEC_TLS thread_local const DeviceState* t_default_device = nullptr;  // DefaultDeviceScope

}  // namespace

void register_backend(std::unique_ptr<Backend> backend) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const Backend* b : r.backends)
    if (b->platform() == backend->platform()) fail("register_backend", "platform '", b->platform(), "' is already registered");
  r.backends.push_back(backend.release());
}

Backend& backend_of(std::string_view platform) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (Backend* b : r.backends)
    if (b->platform() == platform) return *b;
  fail("devices", "unknown platform '", platform, "' (available: ", platform_list(r), ")");
}

void KernelTable::add(const Primitive& primitive, ImplRule impl) {
  JX_CHECK(impl, "register_impl", "an empty kernel for ", primitive.name());
  auto [it, inserted] = impls_.emplace(&primitive, std::move(impl));
  if (!inserted) fail("register_impl", primitive.name(), " already has an impl for platform '", platform_, "'");
}

void KernelTable::add(std::string_view primitive, ImplRule impl) {
  const Primitive* p = find_primitive(primitive);
  JX_CHECK(p, "register_impl", "the ", platform_, " backend registers a kernel for an unknown primitive '", primitive, "'");
  add(*p, std::move(impl));
}

const ImplRule* KernelTable::find(const Primitive& primitive) const {
  auto it = impls_.find(&primitive);
  return it == impls_.end() ? nullptr : &it->second;
}

void Backend::ensure_loaded() {
  // The flag first: libstdc++'s call_once sets two thread-locals (a __tls_get_addr call
  // each) on every call, done or not, and every eager op looks its kernel up here.
  if (loaded_flag_.load(std::memory_order_acquire)) return;
  std::call_once(loaded_, [&] {
    kernels_.platform_ = late_.platform_ = platform();
    load_kernels(kernels_);
    loaded_flag_.store(true, std::memory_order_release);
  });
}

const ImplRule* Backend::kernel(const Primitive& primitive) {
  ensure_loaded();
  if (const ImplRule* k = kernels_.find(primitive)) return k;
  if (!has_late_.load(std::memory_order_acquire)) return nullptr;
  std::shared_lock lock(late_mu_);
  return late_.find(primitive);  // unordered_map nodes are stable
}

void Backend::add_kernel(const Primitive& primitive, ImplRule impl) {
  ensure_loaded();
  if (kernels_.find(primitive))
    fail("register_impl", primitive.name(), " already has an impl for platform '", platform(), "'");
  std::unique_lock lock(late_mu_);
  late_.add(primitive, std::move(impl));
  has_late_.store(true, std::memory_order_release);
}

void register_impl(std::string_view platform, const Primitive& primitive, ImplRule impl) {
  backend_of(platform).add_kernel(primitive, std::move(impl));
}

const ImplRule& impl_for(const DeviceState& device, const Primitive& primitive) {
  if (const ImplRule* kernel = device.backend->kernel(primitive)) return *kernel;
  if (primitive.rules().impl) return primitive.rules().impl;
  fail(primitive.name(), "has no implementation for platform '", device.platform, "'");
}

bool devices_made() { return g_devices_made; }

const DeviceState* default_cpu_device() {
  // The first of this process's CPU devices (in a distributed run the others are remote).
  static const DeviceState* d = [] {
    for (const Device& dev : registry().backends.front()->devices())
      if (dev.process_index() == mpi::process_group().index) return dev.state();
    internal_fail("devices", "this process has no CPU device");
  }();
  return d;
}

const DeviceState* current_device() {
  if (t_current.device) return t_current.device;
  if (t_default_device) return t_default_device;
  return default_cpu_device();
}

// As with jax.default_device, arrays made on the default device are uncommitted.
bool current_device_committed() { return t_current.device && t_current.committed; }

DeviceScope::DeviceScope(Placement placement) : saved_(t_current) { t_current = placement; }
DeviceScope::~DeviceScope() { t_current = saved_; }

Placement placement_of(std::string_view op, std::span<const Array> operands) {
  Placement p;
  size_t committed_at = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Storage* s = operands[i].impl().storage.get();
    if (!s) continue;
    const DeviceState* d = s->device.state();
    if (!s->committed) {
      if (!p.device) p.device = d;
    } else if (!p.committed) {
      p = Placement{d, true};
      committed_at = i;
    } else if (d != p.device) {
      fail(op, "operands are on different devices: operand ", committed_at, " on ", Device(p.device).str(),
           ", operand ", i, " on ", Device(d).str(), " (move them to one device with jx::device_put)");
    }
  }
  return p;
}

}  // namespace detail

// ---- jx::Device and the public device functions ----

namespace {
const detail::DeviceState& state_of(const Device& d) {
  if (!d.valid()) detail::fail("device", "a null jx::Device has no platform, id or memory");
  return *d.state();
}
}  // namespace

const std::string& Device::platform() const { return state_of(*this).platform; }
int Device::id() const { return state_of(*this).id; }
int Device::process_index() const { return state_of(*this).process_index; }
const std::string& Device::kind() const { return state_of(*this).kind; }
std::string Device::str() const {
  if (!valid()) return "<null device>";
  return state_->platform + ":" + std::to_string(state_->id);
}

std::ostream& operator<<(std::ostream& os, const Device& device) { return os << device.str(); }

std::vector<Device> devices() {
  detail::Registry& r = detail::registry();
  std::vector<detail::Backend*> backends;
  {
    std::lock_guard lock(r.mu);
    backends = r.backends;
  }
  std::vector<Device> out;
  for (detail::Backend* b : backends)
    if (b->available())
      for (const Device& d : b->devices()) out.push_back(d);
  return out;
}

std::vector<Device> devices(std::string_view platform) { return detail::backend_of(platform).devices(); }
std::vector<Device> local_devices() {
  std::vector<Device> out;
  for (const Device& d : devices())
    if (d.process_index() == process_index()) out.push_back(d);
  return out;
}
int device_count() { return static_cast<int>(devices().size()); }
int local_device_count() { return static_cast<int>(local_devices().size()); }
int process_index() { return detail::mpi::process_group().index; }
int process_count() { return detail::mpi::process_group().count; }

Device default_device() { return Device(detail::current_device()); }

namespace {
void require_local(std::string_view op, const Device& device) {
  if (device.process_index() != process_index())
    detail::fail(op, "device ", device.str(), " belongs to process ", device.process_index(), "; this is process ",
                 process_index(), " (its arrays live on jx::local_devices())");
}
}  // namespace

DefaultDeviceScope::DefaultDeviceScope(const Device& device) : saved_(detail::t_default_device) {
  require_local("default_device", device);
  detail::t_default_device = &state_of(device);
}
DefaultDeviceScope::~DefaultDeviceScope() { detail::t_default_device = saved_; }

Device Array::device() const { return detail::concrete_impl(*this, "device").storage->device; }

Array device_put(const Array& x, const Device& device) {
  const detail::DeviceState& to = state_of(device);
  require_local("device_put", device);
  const detail::ArrayImpl& impl = detail::concrete_impl(x, "device_put");
  const detail::DeviceState& from = *impl.storage->device.state();
  if (!from.backend->host_memory() || !to.backend->host_memory())
    detail::fail("device_put", "cannot copy ", x.aval().str(), " from ", Device(&from).str(), " to ", device.str(),
                 ": transfers between these platforms are not implemented");
  if (&from == &to && impl.storage->committed) return x;
  const Array source = detail::contiguous(x);
  detail::DeviceScope scope(detail::Placement{&to, true});
  detail::AllocScope alloc("device_put");
  Array out = detail::alloc_array(x.aval());
  if (x.nbytes() > 0) std::memcpy(detail::mutable_data<void>(out), detail::raw_data(source), static_cast<size_t>(x.nbytes()));
  return out;
}

}  // namespace jx
