// The IR half of loop codegen: turns a KernelPlan into LLVM functions, written as plain
// scalar loops that LLVM's loop vectorizer widens (the inner loop always runs along the
// plan's innermost dim, with unit stride wherever the data allows).
//
//   void jx_kernel(const void* const* ins, void* const* outs, int64 begin, int64 end)
//     runs units [begin, end) of plan.schedule (outs are the partial buffers in
//     FullReduce mode: one array of schedule.units elements per output);
//   void jx_kernel_finish(const void* const* partials, void* const* outs, int64 units)
//     FullReduce only: combines the partials in chunk order.
#pragma once

#include "jit/codegen/kernel_plan.h"

namespace llvm {
class Module;
}

namespace jx::compiler::codegen {

inline constexpr const char* kKernelSymbol = "jx_kernel";
inline constexpr const char* kFinishSymbol = "jx_kernel_finish";

void emit_loop_kernel(llvm::Module& module, const KernelPlan& plan);

}  // namespace jx::compiler::codegen
