// The MPI layer: the process group of a run started by an MPI launcher (mpirun), and the
// messages the hierarchical transport sends between processes. Everything here is
// non-blocking MPI polled against a deadline, so a peer that never arrives is an error
// naming it, never a hang. Built when CMake finds MPI (JX_HAVE_MPI); without it a
// process is always a group of one and initialize() under a launcher raises.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace jx::detail::mpi {

// Whether this jx was built with MPI.
bool built();
// Whether the environment says an MPI launcher started this process.
bool launched();

// The processes of this run: {0, 1} until initialize() joins a launched group.
struct ProcessGroup {
  int index = 0;
  int count = 1;
  bool initialized = false;  // jx::distributed::initialize ran (even as a group of one)
};
const ProcessGroup& process_group();

// jx::distributed::initialize/shutdown (include/jx/distributed.h).
void initialize(std::optional<int> num_processes, std::optional<int> process_id);
void shutdown();

// One message of a transfer: to (send) or from (receive) process `peer`.
struct Message {
  int peer = 0;
  bool send = false;
  void* data = nullptr;  // read when sending
  size_t bytes = 0;
};

// The MPI messages of one line of a mesh (the devices along one mesh axis that span
// processes). Messages between two processes of a line are matched in the order they
// are posted, so both sides list them in the same order.
class Link {
 public:
  // tag: unique among the lines that may run at once (the mesh axis and the line's
  // first device); processes: those of the line.
  Link(int tag, std::vector<int> processes);
  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // Posts every message and waits until all complete. Returns the peers whose messages
  // had not completed when `timeout_s` passed (empty: done); the link is broken then.
  std::vector<int> transfer(std::span<const Message> messages, double timeout_s);
  // Sends `mine` to every other process of the line and returns what each sent
  // (theirs[i] from processes[i]; theirs[self] = mine), or fills `missing`.
  std::vector<std::string> exchange_text(const std::string& mine, double timeout_s, std::vector<int>& missing);
  const std::vector<int>& processes() const { return processes_; }
  bool broken() const { return broken_; }

 private:
  int tag_;
  std::vector<int> processes_;
  bool broken_ = false;
};

// The link of a line, made on first use and kept for the process's life (lines recur
// from one call of a program to the next).
std::shared_ptr<Link> link_for(int tag, const std::vector<int>& processes);

}  // namespace jx::detail::mpi
