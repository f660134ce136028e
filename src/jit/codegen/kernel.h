// A fusion compiled to native code: the interface between the executable (which plans
// buffers and runs steps) and codegen (LLVM, src/jit/codegen/).
//
// A fusion is a `fusion` equation whose `jaxpr` parameter is the fused sub-program
// (src/jit/fusion_primitive.cpp). Its `kind` parameter says what shape of loop it is:
//   "loop"       every output has the same shape S; one pass over S.
//   "reduction"  every output is a reduction (reduce_sum, ...) over the same axes of
//                operands of the same shape; one pass over that shape.
//   "rows"       row reductions over the same axes of one operand shape with the
//                elementwise work that reads their results back through broadcasts
//                (softmax, logsumexp, layer norm): each block of rows runs its passes
//                of reductions, then its elementwise outputs, while it is in cache.
//   "dot"        a dot_general of two kernel inputs followed by elementwise ops over
//                its result (the epilogue), run block by block after the BLAS call.
//   "scalar_loop" one while_loop or scan whose operands, predicate and body are
//                scalars (a scan's xs and ys may be 1-d): one native loop with the
//                carries in registers (scalar_loop_kernel.cpp).
// Producers inside a fusion are elementwise ops and index maps (kernel_support.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/vector_math.h"
#include "jx/jaxpr.h"

namespace jx::compiler {

// Element strides of each kernel input as the caller lays it out: an empty list, or an
// empty entry, is a contiguous row-major buffer; otherwise one stride per dim of the
// input's aval, zero for a broadcast dim, negative for a reversed one. Kernels compiled
// for a layout read views (jnp::ones, broadcast_to, transposes, slices) in place.
using InputStrides = std::vector<std::vector<int64_t>>;

class Kernel {
 public:
  virtual ~Kernel() = default;
  // inputs: one pointer per invar of the fused program, each the invar's aval laid out
  // as compile_kernel was told (row-major unless InputStrides say otherwise), pointing
  // at element (0, ..., 0); outputs: one per outvar, contiguous, allocated by the
  // caller, never aliasing an input except where compile_kernel was told it is written
  // over one (OutputsOverInputs: the same pointer in both places). Splits large
  // iteration spaces over the thread pool (src/backend/cpu/thread_pool.h) itself; small
  // kernels stay on the calling thread.
  virtual void run(const void* const* inputs, void* const* outputs) const = 0;
};

// Output `output` of a kernel written into the buffer of its input `input` (a donated
// argument, jx::JitOptions::donate_argnums): the kernel stores it through that input's
// pointer, so the compiler sees the aliasing instead of assuming none.
struct OutputOverInput {
  int output = -1;
  int input = -1;
  bool operator==(const OutputOverInput&) const = default;
};
using OutputsOverInputs = std::vector<OutputOverInput>;

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

// Compiles the sub-program of a fusion equation for inputs laid out as `input_strides`
// says. Raises jx::Error("[jit] ...") for an equation it cannot compile (the fusion pass
// should not have produced it), and for a layout it cannot read in place: a "dot"
// kernel (BLAS takes row-major operands) or a reshape no view strides express.
// `over`: outputs written into inputs' buffers, each pair one that
// outputs_over_inputs_allowed lists, each output and input in at most one pair.
std::unique_ptr<Kernel> compile_kernel(const Jaxpr& fused, std::string_view kind, const KernelOptions& options,
                                       const InputStrides& input_strides = {}, const OutputsOverInputs& over = {});

// Every (output, input) pair of a fusion whose output may be written into that input's
// buffer: the input is read only at the element the output writes there, with the same
// element width, and no later point reads that element (so each element is read before
// it is overwritten, by the point that overwrites it): any output of a "loop" or "rows"
// kernel, or of a "dot" kernel's epilogue (never over the product's operands, which the
// product reads while the epilogue runs). None for other kinds.
OutputsOverInputs outputs_over_inputs_allowed(const Jaxpr& fused, std::string_view kind);

}  // namespace jx::compiler
