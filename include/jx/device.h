// jx::Device: where an array's buffer lives and its operations run (JAX's jax.Device).
// A backend (src/backend/<platform>/) provides the devices of one platform; the CPU
// backend is always built and exposes config().num_cpu_devices devices (JX_NUM_CPU_DEVICES,
// default 1), cpu:0 ... cpu:N-1, all in host memory, each running its work on the
// shared thread pool concurrently with the others.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace jx {

class Array;

namespace detail {
struct DeviceState;  // src/backend/backend.h
}

class Device {
 public:
  // A null device (valid() is false); every accessor raises jx::Error on it.
  Device() = default;
  explicit Device(const detail::DeviceState* state) : state_(state) {}

  bool valid() const { return state_ != nullptr; }
  // "cpu" (later "gpu").
  const std::string& platform() const;
  // Index among the devices of its platform, from 0.
  int id() const;
  // The process that owns the device (0 in a single-process run).
  int process_index() const;
  // The device's hardware kind, e.g. "cpu".
  const std::string& kind() const;
  // "cpu:0": platform and id, as printed in errors and by operator<<.
  std::string str() const;

  bool operator==(const Device& other) const { return state_ == other.state_; }
  const detail::DeviceState* state() const { return state_; }

 private:
  const detail::DeviceState* state_ = nullptr;
};

std::ostream& operator<<(std::ostream& os, const Device& device);

// Every device of every available platform (the CPU's first).
std::vector<Device> devices();
// The devices of one platform. Raises jx::Error naming the platform when it is unknown
// or its backend is not built into this jx (e.g. "gpu").
std::vector<Device> devices(std::string_view platform);
// The devices this process drives (all of them, until multi-process runs land).
std::vector<Device> local_devices();
int device_count();
int local_device_count();
// This process's index among the processes of a distributed run, and their count.
int process_index();
int process_count();
// The device eager operations without operands (constants, iota, random bits) use on
// this thread: cpu:0 unless changed with DefaultDeviceScope.
Device default_device();

// Makes `device` the default device of this thread for the scope's lifetime (JAX's
// jax.default_device context manager).
class DefaultDeviceScope {
 public:
  explicit DefaultDeviceScope(const Device& device);
  ~DefaultDeviceScope();
  DefaultDeviceScope(const DefaultDeviceScope&) = delete;
  DefaultDeviceScope& operator=(const DefaultDeviceScope&) = delete;

 private:
  const detail::DeviceState* saved_;
};

// x's value in a buffer on `device`: x itself when it is already there, else a copy.
// Operations on it then run on that device; operands on different devices raise.
Array device_put(const Array& x, const Device& device);

}  // namespace jx
