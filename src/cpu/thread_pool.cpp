#include "cpu/thread_pool.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace jx::cpu {
namespace {

thread_local bool t_in_worker = false;

class Pool {
 public:
  explicit Pool(int threads) {
    for (int i = 0; i + 1 < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs tasks 0..count-1: the caller takes task 0, workers the rest.
  void run(int count, const std::function<void(int)>& task) {
    std::exception_ptr error;
    std::mutex error_mu;
    std::function<void(int)> guarded = [&](int i) {
      try {
        task(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
      }
    };
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = &guarded;
      next_ = 1;
      count_ = count;
      pending_ = count - 1;
      ++generation_;
    }
    cv_.notify_all();
    t_in_worker = true;
    guarded(0);
    t_in_worker = false;
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
    if (error) std::rethrow_exception(error);
  }

 private:
  void work() {
    t_in_worker = true;
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || (generation_ != seen && next_ < count_); });
      if (stop_) return;
      int i = next_++;
      if (next_ >= count_) seen = generation_;
      auto* job = job_;
      lock.unlock();
      (*job)(i);
      lock.lock();
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int)>* job_ = nullptr;
  int next_ = 0, count_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

Pool& pool() {
  static Pool p(num_threads());
  return p;
}

std::mutex g_run_mu;  // one parallel region at a time across user threads

}  // namespace

int num_threads() {
  static const int n = [] {
    if (const char* env = std::getenv("JX_NUM_THREADS")) {
      int v = std::atoi(env);
      if (v > 0) return v;
    }
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  }();
  return n;
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int64_t chunks = std::min<int64_t>(num_threads(), (n + grain - 1) / grain);
  if (chunks <= 1 || t_in_worker) {
    body(0, n);
    return;
  }
  std::unique_lock<std::mutex> lock(g_run_mu, std::try_to_lock);
  if (!lock.owns_lock()) {  // another user thread holds the pool: run inline
    body(0, n);
    return;
  }
  int64_t step = (n + chunks - 1) / chunks;
  pool().run(static_cast<int>(chunks), [&](int i) {
    int64_t b = i * step, e = std::min(n, b + step);
    if (b < e) body(b, e);
  });
}

}  // namespace jx::cpu
