#include "core/axis_env.h"
#include "core/hot_tls.h"

namespace jx::detail {
namespace {
JX_INITIAL_EXEC_TLS thread_local std::vector<AxisFrame> traced;
JX_INITIAL_EXEC_TLS thread_local std::vector<DeviceAxis> device_axes;
}  // namespace

std::optional<int64_t> traced_axis_size(std::string_view name) {
  for (auto it = traced.rbegin(); it != traced.rend(); ++it)
    if (it->name == name) return it->size;
  return std::nullopt;
}
const std::vector<AxisFrame>& traced_axes() { return traced; }

AxisEnvScope::AxisEnvScope(std::string name, int64_t size) : pushed_(!name.empty()) {
  if (pushed_) traced.push_back({std::move(name), size});
}
AxisEnvScope::~AxisEnvScope() {
  if (pushed_) traced.pop_back();
}

Communicator* device_axis(std::string_view name) {
  for (auto it = device_axes.rbegin(); it != device_axes.rend(); ++it)
    if (it->name == name) return it->comm;
  return nullptr;
}

DeviceAxesScope::DeviceAxesScope(std::vector<DeviceAxis> axes) : pushed_(axes.size()) {
  for (DeviceAxis& a : axes) device_axes.push_back(std::move(a));
}
DeviceAxesScope::~DeviceAxesScope() { device_axes.resize(device_axes.size() - pushed_); }

bool on_device_thread() { return !device_axes.empty(); }

}  // namespace jx::detail
