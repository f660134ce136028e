// One pool of workers shared by every parallel region in the process. A region (one
// parallel_for call) posts itself on the pool's queue; workers take chunks of the region
// at the front, while the caller takes chunks of its own region until none is left, then
// waits only for the chunks workers are running. So any number of regions, from any
// number of threads (several CPU devices, user threads), run at once, and each one makes
// progress through its caller even when every worker is busy elsewhere: a region never
// waits on a worker to start one of its chunks.
//
// Waking a sleeping thread (a futex) costs 5-30 µs on this class of machine, more than
// a whole kernel of 10^4 elements takes. So a worker that runs out of work, and a caller
// waiting for its region's last chunks, first spin for a short while (kSpin) on atomics
// before sleeping on the condition variables: kernels issued back to back, as a program
// issues them, find the workers awake, and a region of two chunks costs about a
// microsecond to split instead of tens. The spin is bounded, so an idle process sleeps.
#include "backend/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "backend/cpu/blas_threads.h"
#include "core/config_internal.h"

namespace jx::cpu {
namespace {

// Set while this thread runs a chunk: a parallel_for inside one runs inline (the pool is
// already split across the outer region).
thread_local bool t_in_chunk = false;

// How long an idle worker, or a caller waiting for workers, polls before sleeping.
constexpr std::chrono::microseconds kSpin{50};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls ready() until it holds or kSpin has passed; true if it held.
template <class Ready>
bool spin_until(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= deadline) return false;
  }
}

// A parallel_for in flight; lives on its caller's stack until every chunk has finished.
struct Region {
  const std::function<void(int64_t, int64_t)>* body;
  int64_t n, step;
  int chunks;
  // Guarded by the pool's mutex.
  int next = 0;                // first unclaimed chunk
  std::atomic<int> finished{0};  // chunks done (run, or skipped after a failure); written under the lock
  std::exception_ptr error;

  void run_chunk(int i) {
    const int64_t b = i * step, e = std::min(n, b + step);
    if (b < e) (*body)(b, e);
  }
};

class Pool {
 public:
  explicit Pool(int threads) {
    settle_blas_threads();  // OpenBLAS's workers, restarted to sleep soon (blas_threads.h)
    for (int i = 0; i + 1 < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      stopping_.store(true);
    }
    work_cv_.notify_all();
    for (auto& w : workers_) w.join();
  }

  void run(Region& r) {
    std::unique_lock<std::mutex> lock(mu_);
    queue_.push_back(&r);
    queued_.store(queue_.size(), std::memory_order_release);
    if (sleeping_) work_cv_.notify_all();
    // The caller's share: every chunk no worker has claimed yet.
    while (r.next < r.chunks) execute(r, r.next++, lock);
    if (r.finished.load() != r.chunks) {
      lock.unlock();
      spin_until([&] { return r.finished.load(std::memory_order_acquire) == r.chunks; });
      lock.lock();
      done_cv_.wait(lock, [&] { return r.finished.load() == r.chunks; });
    }
    lock.unlock();
    if (r.error) std::rethrow_exception(r.error);
  }

 private:
  // Runs chunk i of r without the lock; records its exception in r (the first one wins,
  // and once r has failed its remaining chunks are skipped: their work is moot).
  void execute(Region& r, int i, std::unique_lock<std::mutex>& lock) {
    if (r.next >= r.chunks) {  // the last chunk is claimed
      std::erase(queue_, &r);
      queued_.store(queue_.size(), std::memory_order_release);
    }
    const bool skip = r.error != nullptr;
    lock.unlock();
    std::exception_ptr error;
    if (!skip) {
      t_in_chunk = true;
      try {
        r.run_chunk(i);
      } catch (...) {  // carried to the region's caller, who rethrows it
        error = std::current_exception();
      }
      t_in_chunk = false;
    }
    lock.lock();
    if (error && !r.error) r.error = error;
    if (r.finished.fetch_add(1) + 1 == r.chunks) done_cv_.notify_all();
  }

  void work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (queue_.empty() && !stop_) {
        lock.unlock();
        spin_until([&] { return queued_.load(std::memory_order_acquire) != 0 || stopping_.load(); });
        lock.lock();
        ++sleeping_;
        work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        --sleeping_;
      }
      if (stop_) return;
      Region& r = *queue_.front();
      execute(r, r.next++, lock);
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Region*> queue_;  // regions with unclaimed chunks, oldest first
  std::atomic<size_t> queued_{0};  // queue_.size(), for spinning workers to poll unlocked
  int sleeping_ = 0;               // workers waiting on work_cv_
  bool stop_ = false;
  std::atomic<bool> stopping_{false};
};

Pool& pool() {
  static Pool p(num_threads());
  return p;
}

}  // namespace

bool in_parallel_chunk() { return t_in_chunk; }

int num_threads() {
  static const int n = detail::fix_num_threads();
  return n;
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = std::min<int64_t>(num_threads(), (n + grain - 1) / grain);
  if (chunks <= 1 || t_in_chunk) {
    body(0, n);
    return;
  }
  Region r{.body = &body, .n = n, .step = (n + chunks - 1) / chunks, .chunks = static_cast<int>(chunks)};
  pool().run(r);
}

}  // namespace jx::cpu
