// A fixed pool of worker threads for splitting large kernels.
#pragma once

#include <cstdint>
#include <functional>

namespace jx::cpu {

// Threads kernels may use: JX_NUM_THREADS if set, else the hardware's.
int num_threads();

// Runs body(begin, end) over [0, n) in chunks of at least `grain` iterations, on up to
// num_threads() threads; small ranges, and calls from inside a worker, run inline.
// The first exception thrown by a chunk is rethrown here.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

// Elements below which an elementwise kernel stays single-threaded: waking a worker
// costs a few microseconds, which pays off only past about this many elements.
inline constexpr int64_t kParallelGrain = 1 << 15;

}  // namespace jx::cpu
