// Internal to codegen: a compiled loop or reduction plan (loop_kernel.cpp), which the
// "loop"/"reduction" kernels wrap and the "dot" kernel (dot_kernel.cpp) runs as its
// epilogue, block by block.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "jit/codegen/kernel.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/codegen/llvm_session.h"

namespace jx::compiler::codegen {

class CompiledLoop {
 public:
  using Fn = void (*)(const void* const*, void* const*, int64_t, int64_t);
  using FinishFn = void (*)(const void* const*, void* const*, int64_t);

  // Compiles the plan, or reuses the object of an identical plan already loaded in this
  // process, or loads it from the disk cache.
  static std::shared_ptr<const CompiledLoop> compile(const KernelPlan& plan, const KernelOptions& options);
  // The same for a kernel function `emit` writes (named kernel_symbol(key), with the
  // signature loop_emitter.h gives), whose code depends on `plan_text` alone, optimized
  // as `optimization` says.
  using Emit = std::function<void(llvm::Module&, std::string_view key)>;
  static std::shared_ptr<const CompiledLoop> compile_emitted(const std::string& plan_text, const LoopSchedule& schedule,
                                                             std::vector<DType> output_dtypes,
                                                             const KernelOptions& options, Optimization optimization,
                                                             const Emit& emit);

  // The whole iteration space, split over the thread pool when large enough.
  void run(const void* const* inputs, void* const* outputs) const;
  // Units [begin, end) of schedule() on the calling thread (Elementwise plans only).
  void run_units(const void* const* inputs, void* const* outputs, int64_t begin, int64_t end) const {
    fn_(inputs, outputs, begin, end);
  }
  const LoopSchedule& schedule() const { return schedule_; }
  // Units below which a range is not worth another thread.
  int64_t grain() const { return grain_; }

 private:
  void run_totaling_rows(const void* const* inputs, void* const* outputs) const;

  std::shared_ptr<LoadedObject> object_;
  Fn fn_ = nullptr;
  FinishFn finish_ = nullptr;
  LoopSchedule schedule_;
  std::vector<DType> output_dtypes_;
  int64_t grain_ = 1;
};

// Kernels this process compiled with LLVM (not from the disk cache or an identical
// loaded kernel), for tests.
int64_t llvm_compile_count();

// compile_kernel for kind "scalar_loop" (scalar_loop_kernel.cpp): a while loop or scan
// on scalars as one native loop.
std::unique_ptr<Kernel> compile_scalar_loop_kernel(const Jaxpr& fused, const KernelOptions& options);

// compile_kernel for kind "dot" (dot_kernel.cpp): `over` names epilogue outputs written
// over inputs, among those dot_outputs_over_inputs_allowed lists.
std::unique_ptr<Kernel> compile_dot_kernel(const Jaxpr& fused, const KernelOptions& options,
                                           const OutputsOverInputs& over = {});
// outputs_over_inputs_allowed for kind "dot": its epilogue's, over inputs other than
// the product's operands.
OutputsOverInputs dot_outputs_over_inputs_allowed(const Jaxpr& fused);

}  // namespace jx::compiler::codegen
