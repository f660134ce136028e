#include "distributed/mpi.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>

#include "backend/backend.h"
#include "core/config_internal.h"
#include "jx/error.h"

#ifdef JX_HAVE_MPI
#include <mpi.h>
#endif

namespace jx::detail::mpi {
namespace {

std::mutex g_init_mu;
ProcessGroup g_group;

constexpr std::string_view kOp = "distributed";

#ifdef JX_HAVE_MPI
MPI_Comm g_comm = MPI_COMM_NULL;
bool g_we_initialized = false;
// Below MPI_THREAD_MULTIPLE, one MPI call at a time (never held while waiting).
bool g_serialize = false;
std::mutex g_call_mu;
int g_tag_ub = 32767;

template <class F>
int mpi_call(F f) {
  if (!g_serialize) return f();
  std::lock_guard lock(g_call_mu);
  return f();
}

void check(int rc, std::string_view what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(rc, text, &n);
  fail(kOp, what, " failed: ", std::string(text, static_cast<size_t>(n)));
}

void finalize_at_exit() {
  std::lock_guard lock(g_init_mu);
  if (!g_we_initialized || g_comm == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  MPI_Comm_free(&g_comm);
  MPI_Finalize();
}

void join_launched_group(std::optional<int> num_processes, std::optional<int> process_id) {
  int inited = 0, provided = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    g_we_initialized = true;
    std::atexit(finalize_at_exit);
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_SERIALIZED)
    fail(kOp, "MPI gives thread level ", provided, "; jx needs at least MPI_THREAD_SERIALIZED (its devices run on threads)");
  g_serialize = provided < MPI_THREAD_MULTIPLE;
  check(MPI_Comm_dup(MPI_COMM_WORLD, &g_comm), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(g_comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(g_comm, &rank);
  MPI_Comm_size(g_comm, &size);
  void* ub = nullptr;
  int has_ub = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &has_ub);
  if (has_ub && ub) g_tag_ub = *static_cast<int*>(ub);
  if (num_processes && *num_processes != size)
    fail("distributed.initialize", "num_processes=", *num_processes, " but the MPI launcher started ", size,
         " processes");
  if (process_id && *process_id != rank)
    fail("distributed.initialize", "process_id=", *process_id, " but MPI gives this process rank ", rank);
  // Global device ids are process * N + local index: every process needs the same N.
  int n = fix_num_cpu_devices();
  std::vector<int> all(static_cast<size_t>(size));
  check(MPI_Allgather(&n, 1, MPI_INT, all.data(), 1, MPI_INT, g_comm), "MPI_Allgather");
  for (int p = 0; p < size; ++p)
    if (all[p] != all[0])
      fail("distributed.initialize", "every process needs the same number of CPU devices, but process 0 has ", all[0],
           " and process ", p, " has ", all[p], " (JX_NUM_CPU_DEVICES)");
  g_group = {rank, size, true};
}
#endif

}  // namespace

bool built() {
#ifdef JX_HAVE_MPI
  return true;
#else
  return false;
#endif
}

bool launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

const ProcessGroup& process_group() { return g_group; }

void initialize(std::optional<int> num_processes, std::optional<int> process_id) {
  std::lock_guard lock(g_init_mu);
  constexpr std::string_view op = "distributed.initialize";
  if (g_group.initialized) fail(op, "was already called in this process");
  if (devices_made())
    fail(op, "must come before the first use of a device (jx::devices(), an array, a jitted call): the devices of "
             "every process are numbered when the group is joined");
  if (num_processes && *num_processes < 1) fail(op, "num_processes=", *num_processes, " must be at least 1");
  if (!launched()) {
    if ((num_processes && *num_processes != 1) || (process_id && *process_id != 0))
      fail(op, "num_processes=", num_processes.value_or(1), ", process_id=", process_id.value_or(0),
           " but no MPI launcher started this process (start every process with mpirun -np ",
           num_processes.value_or(1), " ...)");
    g_group = {0, 1, true};
    return;
  }
#ifdef JX_HAVE_MPI
  join_launched_group(num_processes, process_id);
#else
  fail(op, "an MPI launcher started this process but this jx was built without MPI (install libopenmpi-dev and "
           "build again)");
#endif
}

void shutdown() {
  std::lock_guard lock(g_init_mu);
#ifdef JX_HAVE_MPI
  if (g_we_initialized && g_comm != MPI_COMM_NULL) {
    MPI_Comm_free(&g_comm);
    g_comm = MPI_COMM_NULL;
    MPI_Finalize();
  }
#endif
}

Link::Link(int tag, std::vector<int> processes) : processes_(std::move(processes)) {
#ifdef JX_HAVE_MPI
  tag_ = tag % (g_tag_ub / 2);
#else
  tag_ = tag;
#endif
}
Link::~Link() = default;

#ifdef JX_HAVE_MPI
namespace {

using Clock = std::chrono::steady_clock;

// Polls `done` until it returns true or the deadline passes (false then).
template <class Done>
bool poll_until(Clock::time_point deadline, Done done) {
  for (int spins = 0;; ++spins) {
    if (done()) return true;
    if (spins >= 64) {
      if (Clock::now() > deadline) return false;
      sched_yield();  // oversubscribed ranks: let the peer run
    }
  }
}

Clock::time_point deadline_after(double s) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

void require_comm() {
  if (g_comm == MPI_COMM_NULL) fail(kOp, "the distributed runtime is shut down (jx::distributed::shutdown)");
}

// Cancels what is still pending, so no buffer is written after we return.
void cancel_pending(std::vector<MPI_Request>& reqs, const std::vector<bool>& is_send) {
  for (size_t i = 0; i < reqs.size(); ++i) {
    if (reqs[i] == MPI_REQUEST_NULL) continue;
    if (is_send[i]) {
      mpi_call([&] { return MPI_Request_free(&reqs[i]); });
    } else {
      mpi_call([&] { return MPI_Cancel(&reqs[i]); });
      mpi_call([&] { return MPI_Wait(&reqs[i], MPI_STATUS_IGNORE); });
    }
  }
}

}  // namespace

std::vector<int> Link::transfer(std::span<const Message> messages, double timeout_s) {
  require_comm();
  constexpr size_t kChunk = size_t{1} << 30;  // MPI counts are int
  std::vector<MPI_Request> reqs;
  std::vector<int> peer;
  std::vector<bool> is_send;
  const int tag = 2 * tag_ + 1;
  for (const Message& m : messages) {
    for (size_t off = 0; off < m.bytes || (off == 0 && m.bytes == 0); off += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, m.bytes - off));
      char* p = static_cast<char*>(m.data) + off;
      MPI_Request r = MPI_REQUEST_NULL;
      check(mpi_call([&] {
              return m.send ? MPI_Isend(p, n, MPI_BYTE, m.peer, tag, g_comm, &r)
                            : MPI_Irecv(p, n, MPI_BYTE, m.peer, tag, g_comm, &r);
            }),
            m.send ? "MPI_Isend" : "MPI_Irecv");
      reqs.push_back(r);
      peer.push_back(m.peer);
      is_send.push_back(m.send);
      if (m.bytes == 0) break;
    }
  }
  const int count = static_cast<int>(reqs.size());
  int rc = MPI_SUCCESS;
  const bool done = poll_until(deadline_after(timeout_s), [&] {
    int flag = 0;
    rc = mpi_call([&] { return MPI_Testall(count, reqs.data(), &flag, MPI_STATUSES_IGNORE); });
    return rc != MPI_SUCCESS || flag != 0;
  });
  check(rc, "MPI_Testall");
  if (done) return {};
  std::vector<int> missing;
  for (size_t i = 0; i < reqs.size(); ++i) {
    int flag = 0;
    if (reqs[i] != MPI_REQUEST_NULL) mpi_call([&] { return MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE); });
    if (reqs[i] != MPI_REQUEST_NULL && std::find(missing.begin(), missing.end(), peer[i]) == missing.end())
      missing.push_back(peer[i]);
  }
  cancel_pending(reqs, is_send);
  broken_ = true;
  std::sort(missing.begin(), missing.end());
  return missing;
}

std::vector<std::string> Link::exchange_text(const std::string& mine, double timeout_s, std::vector<int>& missing) {
  require_comm();
  const int tag = 2 * tag_;
  const int me = g_group.index;
  std::vector<std::string> theirs(processes_.size());
  std::vector<MPI_Request> sends;
  std::vector<size_t> pending;  // indices into processes_ still to receive from
  for (size_t i = 0; i < processes_.size(); ++i) {
    if (processes_[i] == me) {
      theirs[i] = mine;
      continue;
    }
    MPI_Request r = MPI_REQUEST_NULL;
    check(mpi_call([&] {
            return MPI_Isend(mine.data(), static_cast<int>(mine.size()), MPI_CHAR, processes_[i], tag, g_comm, &r);
          }),
          "MPI_Isend");
    sends.push_back(r);
    pending.push_back(i);
  }
  const bool done = poll_until(deadline_after(timeout_s), [&] {
    for (size_t k = 0; k < pending.size();) {
      const size_t i = pending[k];
      int flag = 0;
      MPI_Message msg;
      MPI_Status status;
      check(mpi_call([&] { return MPI_Improbe(processes_[i], tag, g_comm, &flag, &msg, &status); }), "MPI_Improbe");
      if (!flag) {
        ++k;
        continue;
      }
      int n = 0;
      MPI_Get_count(&status, MPI_CHAR, &n);
      theirs[i].resize(static_cast<size_t>(n));
      check(mpi_call([&] { return MPI_Mrecv(theirs[i].data(), n, MPI_CHAR, &msg, MPI_STATUS_IGNORE); }), "MPI_Mrecv");
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(k));
    }
    if (!pending.empty()) return false;
    int flag = 0;
    check(mpi_call([&] { return MPI_Testall(static_cast<int>(sends.size()), sends.data(), &flag, MPI_STATUSES_IGNORE); }),
          "MPI_Testall");
    return flag != 0;
  });
  if (done) return theirs;
  for (size_t i : pending) missing.push_back(processes_[i]);
  if (missing.empty())  // every text arrived but ours were not taken: those peers
    for (size_t i = 0; i < processes_.size(); ++i)
      if (processes_[i] != me) missing.push_back(processes_[i]);
  cancel_pending(sends, std::vector<bool>(sends.size(), true));
  broken_ = true;
  return theirs;
}

#else

std::vector<int> Link::transfer(std::span<const Message>, double) {
  fail(kOp, "this jx was built without MPI: no messages between processes");
}
std::vector<std::string> Link::exchange_text(const std::string&, double, std::vector<int>&) {
  fail(kOp, "this jx was built without MPI: no messages between processes");
}

#endif

std::shared_ptr<Link> link_for(int tag, const std::vector<int>& processes) {
  static std::mutex mu;
  static auto* links = new std::map<std::pair<int, std::vector<int>>, std::shared_ptr<Link>>;
  std::lock_guard lock(mu);
  auto& link = (*links)[{tag, processes}];
  if (!link) link = std::make_shared<Link>(tag, processes);  // a broken link stays broken
  return link;
}

}  // namespace jx::detail::mpi
