// A fusion compiled to native code: the interface between the executable (which plans
// buffers and runs steps) and codegen (LLVM, src/jit/codegen/).
//
// A fusion is a `fusion` equation whose `jaxpr` parameter is the fused sub-program
// (src/jit/fusion_primitive.cpp). Its `kind` parameter says what shape of loop it is:
//   "loop"       every output has the same shape S; one pass over S.
//   "reduction"  every output is a reduction (reduce_sum, ...) over the same axes of
//                operands of the same shape; one pass over that shape.
//   "dot"        a dot_general of two kernel inputs followed by elementwise ops over
//                its result (the epilogue), run block by block after the BLAS call.
// Producers inside a fusion are elementwise ops and index maps (kernel_support.h).
#pragma once

#include <memory>
#include <string>

#include "backend/cpu/vector_math.h"
#include "jx/jaxpr.h"

namespace jx::compiler {

class Kernel {
 public:
  virtual ~Kernel() = default;
  // inputs: one pointer per invar of the fused program, each a contiguous row-major
  // buffer of the invar's aval; outputs: one per outvar, contiguous, allocated by the
  // caller, never aliasing an input. Splits large iteration spaces over the thread pool
  // (src/backend/cpu/thread_pool.h) itself; small kernels stay on the calling thread.
  virtual void run(const void* const* inputs, void* const* outputs) const = 0;
};

struct KernelOptions {
  std::string name;        // base of the kernel's symbol and dump files ("f.fusion3")
  std::string dump_dir;    // non-empty: write <name>.ll (optimized LLVM IR) and <name>.s there
  bool disk_cache = true;  // reuse / store object code in the on-disk cache (object_cache.h)
  std::string cache_dir;   // the disk cache's directory ("": no disk cache)
  // The math library's instruction set: transcendentals call its libmvec variants, as
  // eager does under the same ISA (scalar_ops.h). Part of the kernel's cache key. The
  // default is eager's when the options are made, so the kernel matches eager bit for bit.
  cpu::VectorIsa vector_isa = cpu::vector_isa();
};

// Compiles the sub-program of a fusion equation. Raises jx::Error("[jit] ...") for an
// equation it cannot compile (the fusion pass should not have produced it).
std::unique_ptr<Kernel> compile_kernel(const Jaxpr& fused, std::string_view kind, const KernelOptions& options);

}  // namespace jx::compiler
