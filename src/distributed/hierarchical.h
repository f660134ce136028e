// The hierarchical transport: a line of members (the devices along one mesh axis) that
// spans processes. The members inside one process meet at a Rendezvous (shared
// memory); the first of them, the process's leader, then moves the data of all of them
// to and from the other processes' leaders over MPI (distributed/mpi.h) and writes
// every local member's result. With one device per process this is plain MPI between
// processes; with several, each process sends its devices' data in one message per
// peer. Reductions still fold in the line's rank order, member by member, so results
// are bit-for-bit those of the shared-memory transport over the same members.
//
// All-reduce moves count/P elements of every member to each process (reduce-scatter:
// process q folds chunk q of all members), then all-gathers the folded chunks; small
// operands (n * bytes <= 256 KB) go in one all-gather of the inputs instead, each
// process folding the whole result (one message round instead of two).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "distributed/communicator.h"

namespace jx::detail {

class CrossProcessGroup {
 public:
  // names[m]: how errors name member m; process[m]: the process that holds it. tag:
  // unique among the lines that may run at once (distributed/mpi.h's Link).
  static std::shared_ptr<CrossProcessGroup> create(std::vector<std::string> names, std::vector<int> process, int tag,
                                                   double timeout_s);
  virtual ~CrossProcessGroup() = default;
  // The handle of member `rank`, which must be held by this process.
  virtual std::unique_ptr<Communicator> member(int rank) = 0;
  // As SharedMemoryGroup::abort, for this process's members (the other processes'
  // members then wait for them until their timeout).
  virtual void abort(const std::string& reason) = 0;
};

}  // namespace jx::detail
