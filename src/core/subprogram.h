// How control-flow primitives (cond, while, scan) run their sub-programs: loop bodies,
// loop predicates and branches.
//
// Eagerly a sub-program is interpreted equation by equation (eval_jaxpr). Under jit the
// loop stays a runtime call of its primitive's impl, but the compiled program
// (src/jit/executable.cpp) installs a SubprogramRunner around that call, and the
// runner runs each body as a natively compiled program of its own: optimized, fused,
// compiled once on first use and kept with the enclosing program. Nothing here depends
// on the compiler.
//
// A compiled body made only of native kernels is also offered as a BufferProgram: it
// runs on raw buffers the loop owns, with its intermediates in a workspace the loop
// allocates once, so an iteration allocates nothing, creates no arrays and costs a few
// indirect calls (the loop impls use it when every program they run has one; a body
// with runtime calls, a sort or a nested loop, say, runs through arrays instead).
#pragma once

#include <span>
#include <vector>

#include "jx/jaxpr.h"

namespace jx::detail {

// A program compiled to native kernels over caller-provided buffers.
class BufferProgram {
 public:
  virtual ~BufferProgram() = default;
  // Bytes of scratch run() needs (for the program's intermediates).
  virtual size_t workspace_bytes() const = 0;
  // inputs: one contiguous row-major buffer per invar of the program; outputs: one per
  // outvar, contiguous, distinct from each other and from every input; workspace:
  // workspace_bytes() bytes, 64-byte aligned, not shared with a concurrent run.
  virtual void run(const void* const* inputs, void* const* outputs, void* workspace) const = 0;
};

class SubprogramRunner {
 public:
  virtual ~SubprogramRunner() = default;
  virtual std::vector<Array> run(const ClosedJaxpr& program, std::span<const Array> args) const = 0;
  // The program compiled to run on buffers, or null (it needs arrays, or it is
  // interpreted). Lives as long as the runner.
  virtual const BufferProgram* buffer_program(const ClosedJaxpr& program) const { return nullptr; }
};

// Runs `program` on `args` with this thread's innermost runner, or interprets it.
std::vector<Array> run_subprogram(const ClosedJaxpr& program, std::span<const Array> args);

// `program` as a BufferProgram from this thread's innermost runner, or null.
const BufferProgram* buffer_subprogram(const ClosedJaxpr& program);

// Installs `runner` on this thread for the scope's lifetime (nests; null: interpret).
class SubprogramScope {
 public:
  explicit SubprogramScope(const SubprogramRunner* runner);
  ~SubprogramScope();
  SubprogramScope(const SubprogramScope&) = delete;
  SubprogramScope& operator=(const SubprogramScope&) = delete;

 private:
  const SubprogramRunner* previous_;
};

}  // namespace jx::detail
