// The CPU backend: config's num_cpu_devices devices (cpu:0 ... cpu:N-1) in host memory,
// each with the CPU allocator, all sharing the thread pool (src/backend/cpu/thread_pool.h), which
// runs the parallel regions of several devices at once.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace jx::detail {

// Fixes the CPU device count (config.h) at the first call.
std::unique_ptr<Backend> make_cpu_backend();

}  // namespace jx::detail
