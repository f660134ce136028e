#include "distributed/hierarchical.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "distributed/mpi.h"
#include "core/text.h"
#include "distributed/rendezvous.h"
#include "jx/error.h"

namespace jx::detail {
namespace {

// Operands of up to this many bytes (all members together) are all-gathered whole.
constexpr size_t kSmallAllReduceBytes = size_t{256} << 10;
// Data of up to this many bytes per message travels with the signatures (one message
// round instead of two), kept under Open MPI's shared-memory eager limit (4 KB): past it a
// probed receive costs more than the round it saves.
constexpr size_t kPiggybackBytes = size_t{3} << 10;

// Signatures as text for the exchange between processes: fields split by \x1f,
// members by \x1e.
std::string serialize(const CollectiveSignature& s) {
  std::ostringstream o;
  o << s.collective << '\x1f' << s.axis << '\x1f' << static_cast<int>(s.dtype) << '\x1f';
  for (size_t d = 0; d < s.shape.size(); ++d) o << (d ? "," : "") << s.shape[d];
  o << '\x1f' << s.params;
  return o.str();
}
CollectiveSignature deserialize(const std::string& text) {
  std::vector<std::string> f = split(text, '\x1f');
  if (f.size() != 5) internal_fail("collectives", "a malformed signature came from another process");
  CollectiveSignature s{f[0], f[1], static_cast<DType>(std::stoi(f[2])), {}, f[4]};
  if (!f[3].empty())
    for (const std::string& d : split(f[3], ',')) s.shape.push_back(std::stoll(d));
  return s;
}

// [begin, end) of part q of `count` split into `parts`.
std::pair<size_t, size_t> part(size_t count, size_t parts, size_t q) {
  const size_t per = (count + parts - 1) / parts;
  const size_t begin = std::min(count, per * q);
  return {begin, std::min(count, begin + per)};
}

class Line final : public CrossProcessGroup, public std::enable_shared_from_this<Line> {
 public:
  Line(std::vector<std::string> names, std::vector<int> process, int tag, double timeout_s)
      : names_(std::move(names)), process_(std::move(process)), timeout_s_(timeout_s) {
    const int self = mpi::process_group().index;
    for (size_t m = 0; m < process_.size(); ++m) {
      auto it = std::find(procs_.begin(), procs_.end(), process_[m]);
      if (it == procs_.end()) {
        procs_.push_back(process_[m]);
        members_of_.emplace_back();
        it = procs_.end() - 1;
      }
      const int q = static_cast<int>(it - procs_.begin());
      proc_of_.push_back(q);
      pos_.push_back(static_cast<int>(members_of_[q].size()));
      members_of_[q].push_back(static_cast<int>(m));
    }
    me_ = static_cast<int>(std::find(procs_.begin(), procs_.end(), self) - procs_.begin());
    if (me_ == static_cast<int>(procs_.size())) internal_fail("collectives", "a line without this process's devices");
    std::vector<std::string> local_names;
    for (int m : members_of_[me_]) local_names.push_back(names_[m]);
    rendezvous_ = std::make_unique<Rendezvous>(std::move(local_names), timeout_s);
    link_ = mpi::link_for(tag, procs_);
  }
  std::unique_ptr<Communicator> member(int rank) override;
  void abort(const std::string& reason) override { rendezvous_->abort(reason); }

  int size() const { return static_cast<int>(names_.size()); }
  const std::string& name(int m) const { return names_[m]; }
  Rendezvous& rendezvous() { return *rendezvous_; }
  int local_pos(int rank) const { return pos_[rank]; }
  bool is_local(int rank) const { return proc_of_[rank] == me_; }

  // ---- the leader's side of each collective; slots are the local members' ----

  // Exchanges every local member's signature, and `payload` (small operands ride along,
  // saving a message round), with the other processes' leaders, and compares every
  // member's signature with member 0's (all processes raise the same). Returns each
  // process's message; its payload starts at the returned offset.
  static size_t payload_offset(uint64_t text_len) { return (8 + static_cast<size_t>(text_len) + 15) / 16 * 16; }
  struct Exchanged {
    std::vector<std::string> messages;
    std::vector<size_t> payload_at;
    const char* payload(size_t q) const { return messages[q].data() + payload_at[q]; }
  };
  Exchanged check_signatures(const CollectiveSignature& sig, const Communicator& comm, const void* payload = nullptr,
                             size_t per_member_bytes = 0) {
    if (link_->broken())
      fail(sig.collective, "over axis '", sig.axis,
           "': the group is broken: an earlier collective over it timed out between processes");
    std::string text;
    for (size_t p = 0; p < local().size(); ++p) text += (p ? "\x1e" : "") + serialize(*slot(p).sig);
    // [text length: 8 bytes][text][padding][payload]: the payload starts 16-byte aligned
    // (a message's heap buffer is), as every dtype's reads need.
    std::string mine(8, '\0');
    const uint64_t text_len = text.size();
    std::memcpy(mine.data(), &text_len, 8);
    mine += text;
    mine.resize(payload_offset(text_len), '\0');
    if (per_member_bytes) mine.append(static_cast<const char*>(payload), local().size() * per_member_bytes);
    std::vector<int> missing;
    Exchanged ex{link_->exchange_text(mine, timeout_s_, missing), {}};
    if (!missing.empty()) raise_missing(sig, missing);
    std::vector<CollectiveSignature> all(names_.size());
    for (size_t q = 0; q < procs_.size(); ++q) {
      const std::string& msg = ex.messages[q];
      uint64_t len = 0;
      if (msg.size() < 8 || (std::memcpy(&len, msg.data(), 8), msg.size() - 8 < len))
        internal_fail("collectives", "a malformed message came from process ", procs_[q]);
      ex.payload_at.push_back(std::min(msg.size(), payload_offset(len)));
      std::vector<std::string> parts = split(msg.substr(8, len), '\x1e');
      if (parts.size() != members_of_[q].size())
        internal_fail("collectives", "process ", procs_[q], " sent ", parts.size(), " signatures for ",
                      members_of_[q].size(), " members");
      for (size_t k = 0; k < parts.size(); ++k) all[members_of_[q][k]] = deserialize(parts[k]);
    }
    for (size_t m = 1; m < all.size(); ++m)
      if (!(all[m] == all[0])) raise_signature_mismatch(comm, all[0], 0, all[m], static_cast<int>(m));
    for (size_t q = 0; q < procs_.size(); ++q)
      if (ex.messages[q].size() - ex.payload_at[q] != members_of_[q].size() * per_member_bytes)
        internal_fail("collectives", "process ", procs_[q], " sent a payload of ", ex.messages[q].size() - ex.payload_at[q],
                      " bytes for ", members_of_[q].size(), " members of ", per_member_bytes);
    return ex;
  }

  // Every process's local inputs (`bytes` per member, `mine` packed): after the signature
  // check, in the same messages when they are small, else in a transfer of their own.
  struct Received {
    Exchanged ex;
    std::vector<std::vector<char>> from;
    const char* of(size_t q) const { return from.empty() ? ex.payload(q) : from[q].data(); }
  };
  Received gather_inputs(const CollectiveSignature& sig, const Communicator& comm, const void* mine, size_t bytes) {
    const size_t L = local().size(), P = procs_.size();
    if (L * bytes <= kPiggybackBytes) return Received{check_signatures(sig, comm, mine, bytes), {}};
    Received r{check_signatures(sig, comm), std::vector<std::vector<char>>(P)};
    std::vector<mpi::Message> msgs;
    for (size_t q = 0; q < P; ++q) {
      if (static_cast<int>(q) == me_) continue;
      r.from[q].resize(members_of_[q].size() * bytes);
      msgs.push_back({procs_[q], true, const_cast<void*>(mine), L * bytes});
      msgs.push_back({procs_[q], false, r.from[q].data(), r.from[q].size()});
    }
    transfer(sig, msgs);
    return r;
  }

  void all_reduce(const CollectiveSignature& sig, const Communicator& comm, ReduceOp op, size_t count) {
    const size_t w = static_cast<size_t>(itemsize(sig.dtype)), bytes = count * w, n = names_.size();
    const size_t L = local().size(), P = procs_.size();
    if (bytes * n <= kSmallAllReduceBytes || count < P) {
      std::vector<char> packed = pack_inputs(bytes);
      const Received from = gather_inputs(sig, comm, packed_or_first_input(packed), bytes);
      std::vector<char> result(bytes);
      fold(sig.dtype, op, result.data(), count, [&](size_t m) -> const char* {
        return is_local(m) ? in(pos_[m]) : from.of(proc_of_[m]) + pos_[m] * bytes;
      });
      for (size_t p = 0; p < L; ++p) copy(out(p), result.data(), bytes);
      return;
    }
    // Reduce-scatter by process, then all-gather of the folded parts.
    check_signatures(sig, comm);
    const auto [b_me, e_me] = part(count, P, me_);
    const size_t len_me = e_me - b_me;
    std::vector<std::vector<char>> sends(P), from(P);
    std::vector<mpi::Message> msgs;
    for (size_t q = 0; q < P; ++q) {
      if (static_cast<int>(q) == me_) continue;
      const auto [b, e] = part(count, P, q);
      void* data;
      if (L == 1) {
        data = const_cast<char*>(in(0)) + b * w;
      } else {
        sends[q].resize(L * (e - b) * w);
        for (size_t p = 0; p < L; ++p) copy(sends[q].data() + p * (e - b) * w, in(p) + b * w, (e - b) * w);
        data = sends[q].data();
      }
      from[q].resize(members_of_[q].size() * len_me * w);
      msgs.push_back({procs_[q], true, data, L * (e - b) * w});
      msgs.push_back({procs_[q], false, from[q].data(), from[q].size()});
    }
    transfer(sig, msgs);
    char* mine = out(0) + b_me * w;
    std::vector<char> scratch;
    const bool aliased = static_cast<const void*>(out(0)) == static_cast<const void*>(in(0));
    if (aliased) scratch.resize(len_me * w);
    char* dst = aliased ? scratch.data() : mine;
    fold(sig.dtype, op, dst, len_me, [&](size_t m) -> const char* {
      return is_local(m) ? in(pos_[m]) + b_me * w : from[proc_of_[m]].data() + pos_[m] * len_me * w;
    });
    if (aliased) copy(mine, dst, len_me * w);
    msgs.clear();
    for (size_t q = 0; q < P; ++q) {
      if (static_cast<int>(q) == me_) continue;
      const auto [b, e] = part(count, P, q);
      msgs.push_back({procs_[q], true, mine, len_me * w});
      msgs.push_back({procs_[q], false, out(0) + b * w, (e - b) * w});
    }
    transfer(sig, msgs);
    for (size_t p = 1; p < L; ++p) copy(out(p), out(0), bytes);
  }

  void all_gather(const CollectiveSignature& sig, const Communicator& comm, size_t bytes) {
    const size_t L = local().size(), P = procs_.size();
    std::vector<char> packed = pack_inputs(bytes);
    char* out0 = out(0);
    if (L * bytes <= kPiggybackBytes) {  // one message per peer, as all_reduce's small ones
      const Received from = gather_inputs(sig, comm, packed_or_first_input(packed), bytes);
      for (size_t m = 0; m < names_.size(); ++m)
        copy(out0 + m * bytes, is_local(m) ? in(pos_[m]) : from.of(proc_of_[m]) + pos_[m] * bytes, bytes);
      for (size_t p = 1; p < L; ++p) copy(out(p), out0, names_.size() * bytes);
      return;
    }
    check_signatures(sig, comm);
    for (size_t p = 0; p < L; ++p) copy(out0 + local()[p] * bytes, in(p), bytes);
    std::vector<std::vector<char>> from(P);
    std::vector<mpi::Message> msgs;
    for (size_t q = 0; q < P; ++q) {
      if (static_cast<int>(q) == me_) continue;
      const auto& mq = members_of_[q];
      const bool contiguous = mq.back() - mq.front() + 1 == static_cast<int>(mq.size());
      void* dst = out0 + mq.front() * bytes;
      if (!contiguous) {
        from[q].resize(mq.size() * bytes);
        dst = from[q].data();
      }
      msgs.push_back({procs_[q], true, packed_or_first_input(packed), L * bytes});
      msgs.push_back({procs_[q], false, dst, mq.size() * bytes});
    }
    transfer(sig, msgs);
    for (size_t q = 0; q < P; ++q)
      if (!from[q].empty())
        for (size_t k = 0; k < members_of_[q].size(); ++k)
          copy(out0 + members_of_[q][k] * bytes, from[q].data() + k * bytes, bytes);
    for (size_t p = 1; p < L; ++p) copy(out(p), out0, names_.size() * bytes);
  }

  // Member t gets block t of every member k: combined in rank order (reduce_scatter),
  // or placed as its block k (all_to_all).
  void blockwise(const CollectiveSignature& sig, const Communicator& comm, size_t block_bytes,
                 const std::optional<ReduceOp>& op) {
    check_signatures(sig, comm);
    const size_t L = local().size(), P = procs_.size();
    std::vector<std::vector<char>> sends(P), from(P);
    std::vector<mpi::Message> msgs;
    for (size_t q = 0; q < P; ++q) {
      if (static_cast<int>(q) == me_) continue;
      const auto& mq = members_of_[q];
      sends[q].resize(L * mq.size() * block_bytes);
      char* p = sends[q].data();
      for (size_t k = 0; k < L; ++k)
        for (int t : mq) {
          copy(p, in(k) + t * block_bytes, block_bytes);
          p += block_bytes;
        }
      from[q].resize(mq.size() * L * block_bytes);
      msgs.push_back({procs_[q], true, sends[q].data(), sends[q].size()});
      msgs.push_back({procs_[q], false, from[q].data(), from[q].size()});
    }
    transfer(sig, msgs);
    // Block t of member k, wherever it is now.
    auto block = [&](size_t k, size_t tpos) -> const char* {
      if (is_local(k)) return in(pos_[k]) + local()[tpos] * block_bytes;
      return from[proc_of_[k]].data() + (pos_[k] * L + tpos) * block_bytes;
    };
    for (size_t tpos = 0; tpos < L; ++tpos) {
      if (op) {
        const size_t count = block_bytes / static_cast<size_t>(itemsize(sig.dtype));
        fold(sig.dtype, *op, out(tpos), count, [&](size_t k) { return block(k, tpos); });
      } else {
        for (size_t k = 0; k < names_.size(); ++k) copy(out(tpos) + k * block_bytes, block(k, tpos), block_bytes);
      }
    }
  }

  void permute(const CollectiveSignature& sig, const Communicator& comm, std::span<const std::pair<int, int>> pairs,
               size_t bytes) {
    check_signatures(sig, comm);
    const size_t L = local().size();
    for (size_t p = 0; p < L; ++p) {
      const int t = local()[p];
      if (std::none_of(pairs.begin(), pairs.end(), [&](const auto& st) { return st.second == t; }))
        std::memset(out(p), 0, bytes);
    }
    std::vector<mpi::Message> msgs;
    for (auto [s, t] : pairs) {
      if (is_local(s) && is_local(t)) copy(out(pos_[t]), in(pos_[s]), bytes);
      else if (is_local(s)) msgs.push_back({procs_[proc_of_[t]], true, const_cast<char*>(in(pos_[s])), bytes});
      else if (is_local(t)) msgs.push_back({procs_[proc_of_[s]], false, out(pos_[t]), bytes});
    }
    transfer(sig, msgs);
  }

 private:
  const std::vector<int>& local() const { return members_of_[me_]; }
  const RendezvousSlot& slot(size_t p) const { return rendezvous_->slot(static_cast<int>(p)); }
  const char* in(size_t p) const { return static_cast<const char*>(slot(p).in); }
  char* out(size_t p) const { return static_cast<char*>(slot(p).out); }
  static void copy(void* dst, const void* src, size_t n) {
    if (n && dst != src) std::memcpy(dst, src, n);
  }
  // The local members' inputs back to back (empty with one local member: send it as is).
  std::vector<char> pack_inputs(size_t bytes) const {
    std::vector<char> packed;
    if (local().size() == 1) return packed;
    packed.resize(local().size() * bytes);
    for (size_t p = 0; p < local().size(); ++p) copy(packed.data() + p * bytes, in(p), bytes);
    return packed;
  }
  void* packed_or_first_input(std::vector<char>& packed) const {
    return packed.empty() ? const_cast<char*>(in(0)) : packed.data();
  }
  // dst = input(0) op input(1) op ... over every member in rank order.
  template <class Input>
  void fold(DType dtype, ReduceOp op, void* dst, size_t count, Input input) const {
    const size_t w = static_cast<size_t>(itemsize(dtype));
    copy(dst, input(0), count * w);
    for (size_t m = 1; m < names_.size(); ++m) reduce_into(op, dtype, dst, input(m), count);
  }
  void transfer(const CollectiveSignature& sig, const std::vector<mpi::Message>& msgs) {
    std::vector<int> missing = link_->transfer(msgs, timeout_s_);
    if (!missing.empty()) raise_missing(sig, missing);
  }
  [[noreturn]] void raise_missing(const CollectiveSignature& sig, const std::vector<int>& processes) const {
    std::vector<int> members;
    for (size_t m = 0; m < names_.size(); ++m)
      if (std::find(processes.begin(), processes.end(), process_[m]) != processes.end())
        members.push_back(static_cast<int>(m));
    raise_timeout(names_, sig, timeout_s_, members);
  }

  std::vector<std::string> names_;
  std::vector<int> process_;
  double timeout_s_;
  std::vector<int> procs_;                     // the line's processes, in order of first member
  std::vector<std::vector<int>> members_of_;   // per process (index into procs_), its members
  std::vector<int> proc_of_, pos_;             // per member: its process's index, its place there
  int me_ = 0;
  std::unique_ptr<Rendezvous> rendezvous_;
  std::shared_ptr<mpi::Link> link_;
};

class Member final : public Communicator {
 public:
  Member(std::shared_ptr<Line> line, int rank) : Communicator(line->size(), rank), line_(std::move(line)) {}
  std::string_view transport() const override { return "hierarchical"; }
  std::string member_name(int m) const override { return line_->name(m); }

  void all_reduce(const CollectiveSignature& sig, ReduceOp op, const void* in, void* out, size_t count) override {
    round(sig, in, out, [&] { line_->all_reduce(sig, *this, op, count); });
  }
  void all_gather(const CollectiveSignature& sig, const void* in, void* out, size_t bytes) override {
    round(sig, in, out, [&] { line_->all_gather(sig, *this, bytes); });
  }
  void reduce_scatter(const CollectiveSignature& sig, ReduceOp op, const void* in, void* out, size_t count) override {
    const size_t block = count * static_cast<size_t>(itemsize(sig.dtype));
    round(sig, in, out, [&] { line_->blockwise(sig, *this, block, op); });
  }
  void all_to_all(const CollectiveSignature& sig, const void* in, void* out, size_t bytes) override {
    round(sig, in, out, [&] { line_->blockwise(sig, *this, bytes, std::nullopt); });
  }
  void permute(const CollectiveSignature& sig, std::span<const std::pair<int, int>> pairs, const void* in, void* out,
               size_t bytes) override {
    for (auto [s, t] : pairs)
      if (s < 0 || s >= size() || t < 0 || t >= size())
        fail(sig.collective, "over axis '", sig.axis, "': pair (", s, ", ", t, ") is out of range for ", size(),
             " members");
    round(sig, in, out, [&] { line_->permute(sig, *this, pairs, bytes); });
  }

 private:
  // Local members meet; the leader checks signatures and moves everyone's data; all
  // leave together and raise the leader's error, if any.
  template <class Work>
  void round(const CollectiveSignature& sig, const void* in, void* out, Work work) {
    Rendezvous& r = line_->rendezvous();
    const int p = line_->local_pos(rank());
    r.arrive(p, RendezvousSlot{&sig, in, out});
    if (p == 0) {
      try {
        work();  // checks the signatures first (with small data in the same messages)
      } catch (const std::exception& e) {
        r.set_round_error(e.what());
      }
    }
    r.depart(sig);
    if (!r.round_error().empty()) throw Error(r.round_error());
  }
  std::shared_ptr<Line> line_;
};

std::unique_ptr<Communicator> Line::member(int rank) {
  if (rank < 0 || rank >= size() || !is_local(rank))
    internal_fail("collectives", "member ", rank, " of a line is not held by this process");
  return std::make_unique<Member>(shared_from_this(), rank);
}

}  // namespace

std::shared_ptr<CrossProcessGroup> CrossProcessGroup::create(std::vector<std::string> names, std::vector<int> process,
                                                             int tag, double timeout_s) {
  if (names.empty() || names.size() != process.size())
    internal_fail("collectives", names.size(), " member names for ", process.size(), " processes");
  return std::make_shared<Line>(std::move(names), std::move(process), tag, timeout_s);
}

}  // namespace jx::detail
