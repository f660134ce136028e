// A fixed pool of worker threads for splitting large kernels.
#pragma once

#include <cstdint>
#include <functional>

namespace jx::cpu {

// Threads kernels may use: config's num_threads (JX_NUM_THREADS), else the hardware's;
// fixed at the first call.
int num_threads();

// Runs body(begin, end) over [0, n) in chunks of at least `grain` iterations (at most
// num_threads() chunks; the split depends only on n, grain and num_threads()). The caller
// runs chunks itself and idle workers help, so parallel_for calls from several threads
// run concurrently, each independent of the others. Small ranges, and calls from inside
// a chunk, run inline. The first exception thrown by a chunk is rethrown here (chunks of
// the same call not yet started are then skipped).
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

// Whether this thread is running a chunk of a parallel_for (where a nested parallel_for
// runs inline, and a library with threads of its own should not start them).
bool in_parallel_chunk();

// Elements below which an eager elementwise kernel stays single-threaded: handing a
// chunk to a worker costs about a microsecond while workers spin between regions, and
// 5-30 µs once they sleep (thread_pool.cpp), which pays off only past about this many
// elements of plain arithmetic.
inline constexpr int64_t kParallelGrain = 1 << 15;

}  // namespace jx::cpu
