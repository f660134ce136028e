#include "spmd/device_threads.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "backend/backend.h"
#include "jx/error.h"

namespace jx::detail {
namespace {

// A device's thread and its queue of tasks. Lives until the process exits (detached at
// exit: the threads only ever wait on their queue then).
class DeviceThread {
 public:
  DeviceThread() : thread_([this] { loop(); }) { thread_.detach(); }
  void submit(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty(); });
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::thread thread_;
};

DeviceThread& thread_of(const Device& d) {
  static std::mutex mu;
  static auto* threads = new std::map<const DeviceState*, std::unique_ptr<DeviceThread>>;
  std::lock_guard lock(mu);
  auto& t = (*threads)[d.state()];
  if (!t) t = std::make_unique<DeviceThread>();
  return *t;
}

thread_local bool on_a_device_thread = false;

}  // namespace

std::vector<std::exception_ptr> run_on_devices(std::span<const Device> devices,
                                               const std::function<void(size_t)>& task,
                                               const std::function<void(size_t, const std::exception_ptr&)>& on_failure) {
  if (on_a_device_thread)
    fail("pmap", "a pmap or shard_map inside the function of another one cannot run: each device runs one share at "
                 "a time (use a mesh with one more axis instead)");
  const size_t n = devices.size();
  std::vector<std::exception_ptr> errors(n);
  std::mutex mu;
  std::condition_variable done_cv;
  size_t done = 0;
  for (size_t k = 0; k < n; ++k) {
    thread_of(devices[k]).submit([&, k] {
      on_a_device_thread = true;
      try {
        task(k);
      } catch (...) {
        errors[k] = std::current_exception();
        on_failure(k, errors[k]);
      }
      on_a_device_thread = false;
      std::lock_guard lock(mu);
      if (++done == n) done_cv.notify_all();
    });
  }
  std::unique_lock lock(mu);
  done_cv.wait(lock, [&] { return done == n; });
  return errors;
}

}  // namespace jx::detail
