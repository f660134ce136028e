// The one collectives interface: a Communicator is one member's handle on a group of
// members (the devices along one mesh axis) that run the same collective together. The
// transports implement it: shared memory between the devices of one process
// (shared_memory.h), MPI between processes (mpi.h), and the two composed when each
// process holds several members (hierarchical.h). The collective primitives'
// kernels (src/lax/collectives.cpp) see only this interface.
//
// Contract of every call, for every transport:
// - Every member calls the same collectives in the same order, each with a signature
//   (what it is, over which axis, its operand's dtype and shape). Before any data moves
//   the members compare signatures; when two differ, every member raises jx::Error naming
//   the collective, the axis and both members with their operands.
// - A member waits at most `timeout_s` seconds for the others; past that it raises
//   jx::Error naming the collective, the axis and the members that did not arrive. A
//   group that timed out or was aborted is broken: its later calls raise at once.
// - Reductions combine the members' values in rank order, ((v0 op v1) op v2) ..., in the
//   dtype's own arithmetic, so a result is bit-for-bit the same on every member, on every
//   run and for every transport.
// - Buffers: `in` and `out` do not overlap unless said; the call returns once this
//   member's `out` is written and the group no longer reads this member's `in`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jx/dtype.h"

namespace jx::detail {

enum class ReduceOp { kSum, kMax, kMin };
std::string_view reduce_op_name(ReduceOp op);  // "sum", "max", "min"

// What the members of one collective call must agree on.
struct CollectiveSignature {
  std::string collective;  // "psum", "all_gather", ...: names the errors
  std::string axis;        // the axis name the collective runs over
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;  // this member's operand
  // Extra parameters every member must share (the ppermute pairs, all_gather's axis).
  std::string params;
  // "f32[4,3]", plus the params when there are any: how the errors show an operand.
  std::string operand_str() const;
  bool operator==(const CollectiveSignature&) const = default;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  int size() const { return size_; }
  int rank() const { return rank_; }
  // "shared-memory", "mpi", "hierarchical".
  virtual std::string_view transport() const = 0;
  // How errors name member m: "cpu:2" in one process, "process 1 (cpu:2)" across them.
  virtual std::string member_name(int m) const = 0;

  // out[k] = in_0[k] op in_1[k] op ... over the members in rank order; `count` elements
  // of sig.dtype. `in == out` is allowed.
  virtual void all_reduce(const CollectiveSignature& sig, ReduceOp op, const void* in, void* out,
                          size_t count) = 0;
  // out = the members' `bytes`-byte blocks concatenated in rank order (size() * bytes).
  virtual void all_gather(const CollectiveSignature& sig, const void* in, void* out, size_t bytes) = 0;
  // in holds size() blocks of `count` elements; out (count elements) = block rank() of
  // every member, combined in rank order.
  virtual void reduce_scatter(const CollectiveSignature& sig, ReduceOp op, const void* in, void* out,
                              size_t count) = 0;
  // in holds size() blocks of `bytes`; block k goes to member k; out's block m came from
  // member m.
  virtual void all_to_all(const CollectiveSignature& sig, const void* in, void* out, size_t bytes) = 0;
  // For each (source, target) pair, target's out = source's in (`bytes` bytes); a member
  // that is no pair's target gets zeros. Every member passes the same pairs; each member
  // is at most one pair's source and at most one pair's target.
  virtual void permute(const CollectiveSignature& sig, std::span<const std::pair<int, int>> pairs,
                       const void* in, void* out, size_t bytes) = 0;

 protected:
  Communicator(int size, int rank) : size_(size), rank_(rank) {}

 private:
  int size_, rank_;
};

// dst[k] = dst[k] op src[k] for `count` elements of `dtype` (every dtype; float16 and
// bfloat16 through float, rounded back at each step; max/min of complex values raise).
void reduce_into(ReduceOp op, DType dtype, void* dst, const void* src, size_t count);

// Raises the contract's errors, worded the same for every transport.
[[noreturn]] void raise_signature_mismatch(const Communicator& comm, const CollectiveSignature& a, int member_a,
                                           const CollectiveSignature& b, int member_b);
// member_names: the group's members (the count the message gives), missing: indices into it.
[[noreturn]] void raise_timeout(std::span<const std::string> member_names, const CollectiveSignature& sig,
                                double timeout_s, std::span<const int> missing);

}  // namespace jx::detail
