#include "backend/gpu/gpu_backend.h"

namespace jx::detail {
namespace {

class GpuBackendNotBuilt final : public Backend {
 public:
  const std::string& platform() const override { return platform_; }
  bool available() const override { return false; }
  std::vector<Device> devices() override { fail_not_built(); }
  bool host_memory() const override { return false; }
  void synchronize(const Device&) override { fail_not_built(); }

 private:
  [[noreturn]] static void fail_not_built() {
    fail("devices", "platform 'gpu' is not available: this jx was built without the GPU backend "
         "(available: cpu)");
  }
  const std::string platform_ = "gpu";
};

}  // namespace

std::unique_ptr<Backend> make_gpu_backend() { return std::make_unique<GpuBackendNotBuilt>(); }

}  // namespace jx::detail
