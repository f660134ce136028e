// The meeting point of the members of a group that live in one process (threads): each
// collective is two barriers. At the first every member publishes its signature and
// buffers (a Slot); between them the members (or one leader on behalf of all) read and
// write each other's buffers directly; at the second every member waits until nobody
// reads its input any more. Used by the shared-memory transport and, for the local
// members of a line spanning processes, by the hierarchical one.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/communicator.h"

namespace jx::detail {

struct RendezvousSlot {
  const CollectiveSignature* sig = nullptr;
  const void* in = nullptr;
  void* out = nullptr;
};

class Rendezvous {
 public:
  // names[m] is how errors name member m.
  Rendezvous(std::vector<std::string> names, double timeout_s);
  int size() const { return static_cast<int>(names_.size()); }
  const std::string& name(int m) const { return names_[m]; }
  double timeout_s() const { return timeout_s_; }

  // Barrier 1: publishes `slot` and waits for every member. Raises when the group is
  // broken, or past the timeout naming the members that did not arrive (the group is
  // broken from then on).
  void arrive(int rank, const RendezvousSlot& slot);
  // Barrier 2: waits until every member of this round got here.
  void depart(const CollectiveSignature& sig);
  // Valid between the barriers.
  const RendezvousSlot& slot(int m) const { return slots_[m]; }
  // Between the barriers, one member may leave a message here that every member then
  // raises after barrier 2 (a leader's failure, worded once for all).
  void set_round_error(std::string message);
  // After barrier 2: the round's error ("" when none). Cleared at the next round.
  const std::string& round_error() const { return round_error_; }
  // Wakes every member waiting in (or later entering) a round; they raise
  // "[<collective>] over axis '<axis>': abandoned because <reason>".
  void abort(const std::string& reason);

 private:
  template <class Pred>
  void wait_for(std::unique_lock<std::mutex>& lock, const CollectiveSignature& sig, Pred done, uint64_t gen);
  void check_broken(const CollectiveSignature& sig);

  std::vector<std::string> names_;
  double timeout_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<RendezvousSlot> slots_;
  std::vector<uint64_t> arrived_gen_;
  int arrived_ = 0, departed_ = 0;
  // Atomic so a waiting member can spin on them without the lock (written under it).
  std::atomic<uint64_t> generation_ = 0, depart_generation_ = 0;
  std::string broken_, round_error_;
};

}  // namespace jx::detail
