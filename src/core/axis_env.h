// Named axes: the names collectives (psum, all_gather, axis_index...) refer to.
//
// Two views of one name, as in JAX:
// - While a function is traced, the axes in scope are those of the vmap (with an
//   axis_name), pmap and shard_map calls around it: AxisEnvScope pushes one. The
//   public collective functions look their axis up here, so a collective outside any
//   axis of that name raises, and its size (all_gather's output shape) is known.
// - While a program runs on devices, each device thread knows, per mesh axis, the
//   Communicator of its group along that axis: DeviceAxesScope pushes them, and the
//   collectives' kernels find theirs with device_axis().
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jx::detail {

class Communicator;  // distributed/communicator.h

struct AxisFrame {
  std::string name;
  int64_t size = 0;
};

// The innermost traced axis named `name`, if any.
std::optional<int64_t> traced_axis_size(std::string_view name);
// Every traced axis in scope, outermost first (a jit's cache key: a traced program
// bakes in the sizes of the axes its collectives name).
const std::vector<AxisFrame>& traced_axes();

class AxisEnvScope {
 public:
  AxisEnvScope(std::string name, int64_t size);  // an empty name pushes nothing
  ~AxisEnvScope();
  AxisEnvScope(const AxisEnvScope&) = delete;
  AxisEnvScope& operator=(const AxisEnvScope&) = delete;

 private:
  bool pushed_;
};

struct DeviceAxis {
  std::string name;
  Communicator* comm = nullptr;
};

// This thread's communicator along the innermost device axis named `name`, or null.
Communicator* device_axis(std::string_view name);

class DeviceAxesScope {
 public:
  explicit DeviceAxesScope(std::vector<DeviceAxis> axes);
  ~DeviceAxesScope();
  DeviceAxesScope(const DeviceAxesScope&) = delete;
  DeviceAxesScope& operator=(const DeviceAxesScope&) = delete;

 private:
  size_t pushed_;
};
// Whether this thread runs a device's share of a pmap or shard_map.
bool on_device_thread();

}  // namespace jx::detail
