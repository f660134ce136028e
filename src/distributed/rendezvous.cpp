#include "distributed/rendezvous.h"

#include <chrono>
#include <thread>

#include "jx/error.h"

namespace jx::detail {

constexpr auto kSpin = std::chrono::microseconds(100);

Rendezvous::Rendezvous(std::vector<std::string> names, double timeout_s)
    : names_(std::move(names)), timeout_s_(timeout_s), slots_(names_.size()), arrived_gen_(names_.size(), 0) {}

void Rendezvous::abort(const std::string& reason) {
  std::lock_guard lock(mu_);
  if (broken_.empty()) broken_ = "abandoned because " + reason;
  cv_.notify_all();
}

void Rendezvous::check_broken(const CollectiveSignature& sig) {
  if (!broken_.empty()) fail(sig.collective, "over axis '", sig.axis, "': ", broken_);
}

void Rendezvous::arrive(int rank, const RendezvousSlot& slot) {
  const CollectiveSignature& sig = *slot.sig;
  std::unique_lock lock(mu_);
  check_broken(sig);
  const uint64_t gen = generation_ + 1;  // the round this member joins
  slots_[rank] = slot;
  arrived_gen_[rank] = gen;
  if (++arrived_ == size()) {
    arrived_ = 0;
    round_error_.clear();
    generation_ = gen;
    cv_.notify_all();
    return;
  }
  wait_for(lock, sig, [&] { return generation_ >= gen; }, gen);
}

void Rendezvous::depart(const CollectiveSignature& sig) {
  std::unique_lock lock(mu_);
  const uint64_t gen = depart_generation_ + 1;
  if (++departed_ == size()) {
    departed_ = 0;
    depart_generation_ = gen;
    cv_.notify_all();
    return;
  }
  wait_for(lock, sig, [&] { return depart_generation_ >= gen; }, 0);
}

void Rendezvous::set_round_error(std::string message) {
  std::lock_guard lock(mu_);
  if (round_error_.empty()) round_error_ = std::move(message);
}

template <class Pred>
void Rendezvous::wait_for(std::unique_lock<std::mutex>& lock, const CollectiveSignature& sig, Pred done,
                          uint64_t gen) {
  // The others usually arrive within microseconds: spin (yielding the core) before
  // sleeping on the condition variable, whose wake-up alone costs tens of microseconds.
  if (!done()) {
    lock.unlock();
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 1; !done(); ++i) {
      if (i % 16 == 0 && std::chrono::steady_clock::now() > spin_until) break;
      std::this_thread::yield();
    }
    lock.lock();
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  while (!done()) {
    check_broken(sig);
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && !done()) {
      std::vector<int> missing;
      for (int m = 0; m < size(); ++m)
        if (gen == 0 || arrived_gen_[m] < gen) missing.push_back(m);
      try {
        raise_timeout(names_, sig, timeout_s_, missing);
      } catch (const Error& e) {
        broken_ = std::string("the group is broken: ") + e.what();
        cv_.notify_all();
        throw;
      }
    }
  }
}

}  // namespace jx::detail
