// Multi-process runs (JAX's jax.distributed): the same program started once per process
// by an MPI launcher, each process driving its own devices, collectives between all of
// them.
//
//   jx::distributed::initialize();      // first thing in main, before any device is used
//   auto step = jx::pmap(f, {.axis_name = "i"});  // over every process's devices
//   step(local_batch);                  // leading axis: jx::local_device_count()
//
//   mpirun -np 4 ./train                  (as root: --allow-run-as-root --oversubscribe)
//
// Every process has the same number of CPU devices (JX_NUM_CPU_DEVICES); device ids are
// global, process p holding p*N ... p*N+N-1. jx::devices() lists them all,
// jx::local_devices() this process's. Without a launcher a process is a group of one and
// the program runs unchanged.
#pragma once

#include <optional>

namespace jx::distributed {

struct InitializeOptions {
  // When given, checked against what the launcher set up (an error names both).
  std::optional<int> num_processes;
  std::optional<int> process_id;
};

// Joins the processes started by the MPI launcher (mpirun, srun with PMIx) as one group,
// or makes this process a group of one when no launcher started it. Must come before the
// first use of a device; raises jx::Error when called twice, after devices were used,
// when the options disagree with the launcher, or when the processes' CPU device
// counts differ.
void initialize(const InitializeOptions& options = {});
bool is_initialized();
// Leaves the group (MPI_Finalize); no collective between processes runs afterwards. Runs
// at exit when not called.
void shutdown();

}  // namespace jx::distributed
