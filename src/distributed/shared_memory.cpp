#include "distributed/shared_memory.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "jx/error.h"

namespace jx::detail {
namespace {

struct Slot {
  const CollectiveSignature* sig = nullptr;
  const void* in = nullptr;
  void* out = nullptr;
};

class Group final : public SharedMemoryGroup {
 public:
  Group(std::vector<std::string> names, double timeout_s)
      : names_(std::move(names)), timeout_s_(timeout_s), slots_(names_.size()), arrived_gen_(names_.size(), 0) {}
  int size() const override { return static_cast<int>(names_.size()); }
  std::unique_ptr<Communicator> member(int rank) override;
  void abort(const std::string& reason) override {
    std::lock_guard lock(mu_);
    if (broken_.empty()) broken_ = "abandoned because " + reason;
    cv_.notify_all();
  }

  const std::string& name(int m) const { return names_[m]; }

  // Phase 1: publish and wait for everyone; returns the slots of this round.
  void arrive(int rank, const Slot& slot, const CollectiveSignature& sig) {
    std::unique_lock lock(mu_);
    check_broken(sig);
    const uint64_t gen = generation_ + 1;  // the round this member joins
    slots_[rank] = slot;
    arrived_gen_[rank] = gen;
    if (++arrived_ == size()) {
      arrived_ = 0;
      generation_ = gen;
      cv_.notify_all();
      return;
    }
    wait_for(lock, sig, [&] { return generation_ >= gen; }, gen);
  }
  // Phase 2: wait until everyone finished reading.
  void depart(const CollectiveSignature& sig) {
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
  const Slot& slot(int m) const { return slots_[m]; }

 private:
  void check_broken(const CollectiveSignature& sig) {
    if (!broken_.empty()) fail(sig.collective, "over axis '", sig.axis, "': ", broken_);
  }
  template <class Pred>
  void wait_for(std::unique_lock<std::mutex>& lock, const CollectiveSignature& sig, Pred done, uint64_t gen) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
    while (!done()) {
      if (!broken_.empty()) check_broken(sig);
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && !done()) {
        std::vector<int> missing;
        for (int m = 0; m < size(); ++m)
          if (gen == 0 || arrived_gen_[m] < gen) missing.push_back(m);
        std::string why;
        try {
          raise_timeout(*members_[0], sig, timeout_s_, missing);
        } catch (const Error& e) {
          why = e.what();
          broken_ = "the group is broken: " + why;
          cv_.notify_all();
          throw;
        }
      }
    }
  }

  friend class Member;
  std::vector<std::string> names_;
  double timeout_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  std::vector<uint64_t> arrived_gen_;
  int arrived_ = 0, departed_ = 0;
  uint64_t generation_ = 0, depart_generation_ = 0;
  std::string broken_;
  std::vector<Communicator*> members_;
};

class Member final : public Communicator {
 public:
  Member(std::shared_ptr<Group> g, int rank) : Communicator(g->size(), rank), g_(std::move(g)) {}
  std::string_view transport() const override { return "shared-memory"; }
  std::string member_name(int m) const override { return g_->name(m); }

  void all_reduce(const CollectiveSignature& sig, ReduceOp op, const void* in, void* out, size_t count) override {
    const size_t w = static_cast<size_t>(itemsize(sig.dtype));
    if (size() == 1) return copy(out, in, count * w);
    // Results land in a scratch first when in == out, so no member's input changes
    // while others still read it.
    std::vector<char> scratch;
    void* target = out;
    if (in == out) {
      scratch.resize(count * w);
      target = scratch.data();
    }
    round(sig, in, target, [&](int) {
      auto [begin, end] = share(count);
      if (begin == end) return;
      for (int m = 0; m < size(); ++m) {  // every member's result range, folded in rank order
        char* dst = static_cast<char*>(g_->slot(m).out) + begin * w;
        copy(dst, static_cast<const char*>(g_->slot(0).in) + begin * w, (end - begin) * w);
        for (int k = 1; k < size(); ++k)
          reduce_into(op, sig.dtype, dst, static_cast<const char*>(g_->slot(k).in) + begin * w, end - begin);
      }
    });
    if (in == out) copy(out, scratch.data(), count * w);
  }
  void all_gather(const CollectiveSignature& sig, const void* in, void* out, size_t bytes) override {
    round(sig, in, out, [&](int) {
      for (int m = 0; m < size(); ++m) copy(static_cast<char*>(g_->slot(m).out) + rank() * bytes, in, bytes);
    });
  }
  void reduce_scatter(const CollectiveSignature& sig, ReduceOp op, const void* in, void* out, size_t count) override {
    const size_t w = static_cast<size_t>(itemsize(sig.dtype));
    round(sig, in, out, [&](int) {
      copy(out, static_cast<const char*>(g_->slot(0).in) + rank() * count * w, count * w);
      for (int k = 1; k < size(); ++k)
        reduce_into(op, sig.dtype, out, static_cast<const char*>(g_->slot(k).in) + rank() * count * w, count);
    });
  }
  void all_to_all(const CollectiveSignature& sig, const void* in, void* out, size_t bytes) override {
    round(sig, in, out, [&](int) {
      for (int m = 0; m < size(); ++m)
        copy(static_cast<char*>(out) + m * bytes, static_cast<const char*>(g_->slot(m).in) + rank() * bytes, bytes);
    });
  }
  void permute(const CollectiveSignature& sig, std::span<const std::pair<int, int>> pairs, const void* in, void* out,
               size_t bytes) override {
    int source = -1;
    for (auto [s, t] : pairs) {
      if (s < 0 || s >= size() || t < 0 || t >= size())
        fail(sig.collective, "over axis '", sig.axis, "': pair (", s, ", ", t, ") is out of range for ", size(), " members");
      if (t == rank()) source = s;
    }
    round(sig, in, out, [&](int) {
      if (source < 0) std::memset(out, 0, bytes);
      else copy(out, g_->slot(source).in, bytes);
    });
  }

 private:
  static void copy(void* dst, const void* src, size_t n) {
    if (n && dst != src) std::memcpy(dst, src, n);
  }
  std::pair<size_t, size_t> share(size_t count) const {
    const size_t per = (count + static_cast<size_t>(size()) - 1) / static_cast<size_t>(size());
    const size_t begin = std::min(count, per * static_cast<size_t>(rank()));
    return {begin, std::min(count, begin + per)};
  }
  template <class Work>
  void round(const CollectiveSignature& sig, const void* in, void* out, Work work) {
    g_->arrive(rank(), Slot{&sig, in, out}, sig);
    // Every member compares against member 0, so all raise the same error.
    for (int m = 1; m < size(); ++m)
      if (!(*g_->slot(m).sig == *g_->slot(0).sig)) {
        // Copies: once past the barrier the others' signatures may be gone.
        const CollectiveSignature first = *g_->slot(0).sig, other = *g_->slot(m).sig;
        g_->depart(sig);
        raise_signature_mismatch(*this, first, 0, other, m);
      }
    work(rank());
    g_->depart(sig);
  }
  std::shared_ptr<Group> g_;
};

std::unique_ptr<Communicator> Group::member(int rank) {
  auto m = std::make_unique<Member>(std::static_pointer_cast<Group>(shared_from_this()), rank);
  std::lock_guard lock(mu_);
  if (members_.empty()) members_.assign(names_.size(), nullptr);
  members_[rank] = m.get();
  if (!members_[0]) members_[0] = m.get();
  return m;
}

}  // namespace

std::shared_ptr<SharedMemoryGroup> SharedMemoryGroup::create(std::vector<std::string> member_names, double timeout_s) {
  if (member_names.empty()) fail("collectives", "a group needs at least one member");
  return std::make_shared<Group>(std::move(member_names), timeout_s);
}

}  // namespace jx::detail
