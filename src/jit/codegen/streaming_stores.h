// Streaming (non-temporal) stores for kernel outputs too large to stay in cache.
//
// A plain store to a line that is not in cache first reads the line from memory (a
// read-for-ownership), so a kernel writing N bytes of fresh output moves 2N bytes: a
// softmax over 65536 x 128 floats writes 32 MB and reads 32 MB more for it. A
// non-temporal store (x86 movntps/movntpd) writes whole lines through write-combining
// buffers without reading them, and leaves them out of the cache, which is what an
// output bigger than the cache wants anyway.
//
// The emitter marks an output as streamed (mark_streamed_output) on the load of its
// pointer from the kernel's output array: a full-shape output of at least
// kStreamedOutputBytes of a rows kernel or of an elementwise kernel of plain arithmetic,
// whose writing is memory-bound (loop_emitter.cpp, streamed(), has the measurements). After the optimization pipeline, once the loop vectorizer has
// widened the stores (it refuses to widen a store that is already non-temporal and not
// known to be aligned), use_streaming_stores rewrites every full-register vector store
// into a streamed output as
//     if (address % register_bytes == 0) non-temporal store else plain store
// (a branch the predictor learns: consecutive vectors of a row share their alignment),
// and puts an sfence before the kernel returns, since non-temporal stores are weakly
// ordered and the thread pool's completion signal is a plain store. Scalar remainders
// and narrower vectors keep plain stores. x86 only: elsewhere nothing changes.
#pragma once

#include <cstdint>

namespace llvm {
class LoadInst;
class Module;
}  // namespace llvm

namespace jx::compiler::codegen {

// Outputs of at least this many bytes are streamed: twice the last-level cache of the
// machines measured (8 MB per Zen 1 core complex), so what a following kernel could still
// find in cache is small beside the reads saved.
inline constexpr int64_t kStreamedOutputBytes = int64_t{16} << 20;

// Marks `pointer_load` (the load of an output's pointer in a kernel's entry function) as
// an output whose vector stores use_streaming_stores makes non-temporal.
void mark_streamed_output(llvm::LoadInst& pointer_load);

// Rewrites the vector stores into marked outputs (see above); returns how many. Run after
// vectorization, before code generation.
int use_streaming_stores(llvm::Module& module);

}  // namespace jx::compiler::codegen
