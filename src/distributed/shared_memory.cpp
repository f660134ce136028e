#include "distributed/shared_memory.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "distributed/rendezvous.h"
#include "jx/error.h"

namespace jx::detail {
namespace {

// Blocks of the all-reduce fold: small enough that a block stays in L1/L2 between its
// fold and its copies to the other members.
constexpr size_t kFoldBlockBytes = size_t{32} << 10;
// Results from this size (per member) are written with non-temporal stores.
constexpr size_t kStreamResultBytes = size_t{32} << 20;

// memcpy with non-temporal stores (SSE2, part of x86-64's baseline), for destinations
// that will not be read before they leave the caches anyway; a plain memcpy elsewhere.
void stream_copy(char* dst, const char* src, size_t n) {
#if defined(__SSE2__)
  const size_t head = std::min(n, static_cast<size_t>((16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16));
  std::memcpy(dst, src, head);
  size_t k = head;
  for (; k + 16 <= n; k += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + k), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k)));
  std::memcpy(dst + k, src + k, n - k);
#else
  std::memcpy(dst, src, n);
#endif
}
// Orders the streamed stores before the barrier that publishes them.
void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

class Group final : public SharedMemoryGroup {
 public:
  Group(std::vector<std::string> names, double timeout_s) : rendezvous_(std::move(names), timeout_s) {}
  int size() const override { return rendezvous_.size(); }
  std::unique_ptr<Communicator> member(int rank) override;
  void abort(const std::string& reason) override { rendezvous_.abort(reason); }
  Rendezvous& rendezvous() { return rendezvous_; }

 private:
  Rendezvous rendezvous_;
};

class Member final : public Communicator {
 public:
  Member(std::shared_ptr<Group> g, int rank) : Communicator(g->size(), rank), g_(std::move(g)) {}
  std::string_view transport() const override { return "shared-memory"; }
  std::string member_name(int m) const override { return g_->rendezvous().name(m); }

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
      // This member's range of the result, folded in rank order once per cache-sized
      // block into member 0's output and copied from there (still in cache) to the
      // others': every input is read once and every output written once.
      const size_t block = std::max<size_t>(1, kFoldBlockBytes / w);
      // Results too big for the caches are folded in a scratch block and streamed out
      // (non-temporal stores: no read of the outputs' old contents, a third of the traffic).
      const bool stream = count * w >= kStreamResultBytes;
      std::vector<char> folded(stream ? block * w : 0);
      for (size_t b = begin; b < end; b += block) {
        const size_t len = std::min(block, end - b);
        char* dst = stream ? folded.data() : static_cast<char*>(r().slot(0).out) + b * w;
        copy(dst, static_cast<const char*>(r().slot(0).in) + b * w, len * w);
        for (int k = 1; k < size(); ++k)
          reduce_into(op, sig.dtype, dst, static_cast<const char*>(r().slot(k).in) + b * w, len);
        for (int m = stream ? 0 : 1; m < size(); ++m) {
          char* out_m = static_cast<char*>(r().slot(m).out) + b * w;
          if (stream) stream_copy(out_m, dst, len * w);
          else copy(out_m, dst, len * w);
        }
      }
      if (stream) stream_fence();
    });
    if (in == out) copy(out, scratch.data(), count * w);
  }
  void all_gather(const CollectiveSignature& sig, const void* in, void* out, size_t bytes) override {
    round(sig, in, out, [&](int) {
      for (int m = 0; m < size(); ++m) copy(static_cast<char*>(r().slot(m).out) + rank() * bytes, in, bytes);
    });
  }
  void reduce_scatter(const CollectiveSignature& sig, ReduceOp op, const void* in, void* out, size_t count) override {
    const size_t w = static_cast<size_t>(itemsize(sig.dtype));
    round(sig, in, out, [&](int) {
      copy(out, static_cast<const char*>(r().slot(0).in) + rank() * count * w, count * w);
      for (int k = 1; k < size(); ++k)
        reduce_into(op, sig.dtype, out, static_cast<const char*>(r().slot(k).in) + rank() * count * w, count);
    });
  }
  void all_to_all(const CollectiveSignature& sig, const void* in, void* out, size_t bytes) override {
    round(sig, in, out, [&](int) {
      for (int m = 0; m < size(); ++m)
        copy(static_cast<char*>(out) + m * bytes, static_cast<const char*>(r().slot(m).in) + rank() * bytes, bytes);
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
      else copy(out, r().slot(source).in, bytes);
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
    r().arrive(rank(), RendezvousSlot{&sig, in, out});
    // Every member compares against member 0, so all raise the same error.
    for (int m = 1; m < size(); ++m)
      if (!(*r().slot(m).sig == *r().slot(0).sig)) {
        // Copies: once past the barrier the others' signatures may be gone.
        const CollectiveSignature first = *r().slot(0).sig, other = *r().slot(m).sig;
        r().depart(sig);
        raise_signature_mismatch(*this, first, 0, other, m);
      }
    work(rank());
    r().depart(sig);
  }
  Rendezvous& r() { return g_->rendezvous(); }
  std::shared_ptr<Group> g_;
};

std::unique_ptr<Communicator> Group::member(int rank) {
  return std::make_unique<Member>(std::static_pointer_cast<Group>(shared_from_this()), rank);
}

}  // namespace

std::shared_ptr<SharedMemoryGroup> SharedMemoryGroup::create(std::vector<std::string> member_names, double timeout_s) {
  if (member_names.empty()) fail("collectives", "a group needs at least one member");
  return std::make_shared<Group>(std::move(member_names), timeout_s);
}

}  // namespace jx::detail
