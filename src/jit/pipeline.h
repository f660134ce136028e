// The optimizer: the recipe of passes a traced program goes through before codegen.
//
//   inline_calls                      closed_call / jit equations spliced into the caller
//   repeat until nothing changes:     simplify, take_along_selects (take_along_axis and
//                                     its gradient as selects), fold_constants, cse, dce
//   scan_accumulators                 outer-product sums of scanned loops after the loop
//   fuse                              loop / reduction / rows / dot-epilogue fusions (fusion.h)
//   dce
//
// With optimize=false only inline_calls and single-equation fusions run, so every
// supported equation still becomes its own native kernel (the differential tests'
// reference for what the optimizer changes).
#pragma once

#include "jit/dump.h"
#include "jx/jaxpr.h"

namespace jx::compiler {

struct PipelineOptions {
  bool optimize = true;
  // Type-check the program after every pass that changed it, naming the pass that broke
  // it (config's verify_passes, JX_VERIFY_PASSES; on in debug builds).
  bool verify = false;
};

// Runs the pipeline; writes the program after each changing pass and the fusion notes
// into `dump` when it is enabled.
ClosedJaxpr optimize_program(ClosedJaxpr program, const PipelineOptions& options, const Dump& dump);

}  // namespace jx::compiler
