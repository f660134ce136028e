// The IR half of loop codegen: turns a KernelPlan into LLVM functions, written as plain
// scalar loops that LLVM's loop vectorizer widens (the inner loop always runs along the
// plan's innermost dim, with unit stride wherever the data allows).
//
//   void jx_kernel_<key>(const void* const* ins, void* const* outs, int64 begin, int64 end)
//     runs units [begin, end) of plan.schedule (outs are the partial buffers in
//     FullReduce mode: one array of schedule.units elements per output; a column
//     reduction in row_parts, one of row_parts x kept_elements; a rows kernel's totals,
//     one element per block of chunk_rows rows, begin then a block's start);
//   void jx_kernel_<key>_finish(const void* const* partials, void* const* outs, int64 parts)
//     those three only: combines the partials in order into the outputs.
// The emitter is one class (loop_emitter_internal.h) over two files: loop_emitter.cpp and
// rows_emitter.cpp (the rows and columns schedules).
// <key> is the kernel's cache key (object_cache.h): object code loaded for one plan
// defines no symbol another plan looks up, so it can never run in its place.
#pragma once

#include <string>
#include <string_view>

#include "jit/codegen/kernel_plan.h"

namespace llvm {
class Module;
}

namespace jx::compiler::codegen {

// The entry symbols of the kernel whose cache key is `key`.
std::string kernel_symbol(std::string_view key);
std::string finish_symbol(std::string_view key);

void emit_loop_kernel(llvm::Module& module, const KernelPlan& plan, std::string_view key);

}  // namespace jx::compiler::codegen
