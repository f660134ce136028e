// Backends: one per platform ("cpu", later "gpu"), each a folder src/backend/<platform>/
// implementing this interface (MLX's backend model): the platform's devices, an allocator
// per device, and a way to wait for a device's work. A platform that is not built is a
// stub whose devices() raises a clear jx::Error (src/backend/gpu/).
//
// Kernels are registered per platform: each backend fills its KernelTable on first use
// (the CPU's from src/backend/cpu/kernels/, one file per family of primitives), and
// register_impl adds to it. An operation runs the kernel of the platform of its
// operands' device (the thread's current device, set from the operands by
// Primitive::eval); a primitive without one there runs its platform-neutral Rules::impl
// (calls of sub-programs, a user's primitive) if it has one, and otherwise raises naming
// the primitive and the platform.
#pragma once

#include <cstddef>
#include <memory>
#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "jx/device.h"
#include "jx/primitive.h"

namespace jx::detail {

class Backend;

// Owns a device's memory. allocate throws std::bad_alloc when the memory is not there
// (alloc_array turns that into a jx::Error naming the operation and shape).
class Allocator {
 public:
  virtual ~Allocator() = default;
  // At least nbytes (a zero-byte request still gives a unique pointer), 64-byte aligned.
  virtual void* allocate(size_t nbytes) = 0;
  // p from allocate(nbytes) with the same nbytes.
  virtual void deallocate(void* p, size_t nbytes) = 0;
};

// What a jx::Device points to. Made by its backend and never destroyed (arrays may
// outlive main and still return their buffers).
struct DeviceState {
  std::string platform;
  int id = 0;
  int process_index = 0;
  std::string kind;
  Backend* backend = nullptr;
  Allocator* allocator = nullptr;
};

// One platform's kernels, by primitive.
class KernelTable {
 public:
  // Raises jx::Error if the primitive already has a kernel here.
  void add(const Primitive& primitive, ImplRule impl);
  // By the primitive's registered name (the backends' registration files); an unknown
  // name is an InternalError.
  void add(std::string_view primitive, ImplRule impl);
  // nullptr when the primitive has no kernel here.
  const ImplRule* find(const Primitive& primitive) const;

 private:
  std::string platform_;
  std::unordered_map<const Primitive*, ImplRule> impls_;
  friend class Backend;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const std::string& platform() const = 0;
  // False for the stub of a backend not built into this jx (devices() then raises).
  virtual bool available() const { return true; }
  // The platform's devices, ids 0..n-1. A backend that is not built raises here.
  virtual std::vector<Device> devices() = 0;
  // Whether device buffers are host memory that the CPU may read and write directly
  // (device_put between two such devices is a copy by the CPU).
  virtual bool host_memory() const = 0;
  // Returns once every operation queued on `device` has finished (dispatch on the CPU is
  // synchronous, so there it returns at once).
  virtual void synchronize(const Device& device) = 0;

  // This platform's kernel for `primitive`, or nullptr. The table is filled by
  // load_kernels on the first call; the pointer stays valid (entries are never removed).
  const ImplRule* kernel(const Primitive& primitive);
  // register_impl: raises jx::Error if the primitive already has a kernel here.
  void add_kernel(const Primitive& primitive, ImplRule impl);

 protected:
  // Fills the platform's kernel table (once, at the first lookup, when every primitive
  // exists: the registration files name primitives defined in other files).
  virtual void load_kernels(KernelTable&) {}

 private:
  void ensure_loaded();
  std::once_flag loaded_;
  std::atomic<bool> loaded_flag_{false};  // set once loaded_'s call has run
  // The table load_kernels filled, read without a lock (it never changes after); kernels
  // registered later (register_impl, while other threads may be running) go to `late_`.
  KernelTable kernels_;
  std::shared_mutex late_mu_;
  std::atomic<bool> has_late_{false};
  KernelTable late_;
};

// Makes a backend's platform available to devices(platform) and friends; raises
// jx::Error if the platform is taken. (Tests register fake platforms this way.)
void register_backend(std::unique_ptr<Backend> backend);
// The backend of `platform`; raises jx::Error naming it when it is unknown.
Backend& backend_of(std::string_view platform);

// Adds `platform`'s kernel for `primitive`; raises jx::Error if it already has one there
// (or the platform is unknown).
void register_impl(std::string_view platform, const Primitive& primitive, ImplRule impl);
// The impl to run for `primitive` on `device`: its platform's kernel, else the
// primitive's platform-neutral Rules::impl; raises jx::Error
// "[<primitive>] has no implementation for platform '<platform>'" when there is neither.
const ImplRule& impl_for(const DeviceState& device, const Primitive& primitive);

// The device this thread's operations allocate on and run on: the innermost DeviceScope,
// else the thread's default device (cpu:0 unless a DefaultDeviceScope says otherwise).
const DeviceState* current_device();
// Whether the platforms and their devices exist yet (jx::distributed::initialize must
// come before).
bool devices_made();
// Whether buffers allocated now are committed to current_device() (Storage::committed).
bool current_device_committed();
// The CPU backend's first device, the process's default device.
const DeviceState* default_cpu_device();

// Where an operation runs, and whether its results are committed there.
struct Placement {
  const DeviceState* device = nullptr;  // nullptr: no operands; the current device
  bool committed = false;
};

// Makes a placement current for the scope (Primitive::eval sets its operands', the jit
// executable its arguments').
class DeviceScope {
 public:
  explicit DeviceScope(Placement placement);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  Placement saved_;
};

// Where an operation on `operands` runs: the device of its committed operands, which
// must be one device (else jx::Error naming `op` and two of them), else the first
// operand's device, uncommitted. Uncommitted operands elsewhere are read where they are
// (every platform built today is host memory).
Placement placement_of(std::string_view op, std::span<const Array> operands);

}  // namespace jx::detail
