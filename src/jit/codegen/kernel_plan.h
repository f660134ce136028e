// The analysis half of loop codegen (no LLVM): what a fused "loop", "reduction" or "rows"
// kernel computes at one point of its iteration space, with every read expressed as an
// affine address, so the emitter (loop_emitter.cpp) only decides how to loop.
//
// Every value the roots reach is a node evaluated at an iteration point i = (i_0, ...):
//   load     input[offset + sum_d coef_d * i_d]   (index ops folded into the address)
//   iota     convert(offset + sum_d coef_d * i_d)
//   literal  a constant
//   op       an elementwise equation of other nodes (scalar_ops.h emits it)
//   row      ("rows" kernels) the result of one of the plan's row reductions (phases) at
//            the iteration point's row: reduce_max(x) read back through a broadcast
// Index ops (broadcast_in_dim, transpose, slice, rev, squeeze, expand_dims, reshape of an
// input, a splitting reshape) are read through, never materialized. A value reached
// through two different index maps becomes two nodes (recomputed), which is what makes
// "broadcast after sin" cost a sin per output element, as XLA's elemental emitter does.
// Planning visits each (value, index map) pair once, so a DAG with reuse costs its size,
// not the size of its unfolded tree (KernelPlan::stats counts the visits).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "jit/codegen/kernel.h"
#include "jx/jaxpr.h"

namespace jx::compiler::codegen {

// offset + sum_d coef[d] * i_d over the plan's iteration dims.
struct Affine {
  int64_t offset = 0;
  std::vector<int64_t> coef;
  bool operator==(const Affine&) const = default;
};

struct PlanNode {
  enum class Kind { Load, Iota, Literal, Op, RowValue };
  Kind kind = Kind::Op;
  DType dtype = DType::Float32;
  int input = -1;                 // Load: index of the kernel input
  Affine index;                   // Load: element offset into the input; Iota: the index value
  Array literal;                  // Literal: a 0-d array of `dtype`
  const Equation* eqn = nullptr;  // Op: the equation (lives in the fused Jaxpr)
  std::vector<int> operands;      // Op: node ids, all smaller than this node's
  int phase = -1;                 // RowValue: index into KernelPlan::phases
};

// One row reduction of a "rows" kernel: `reduce` of node `node` over the row's reduced
// dims. Phases of one pass run in one loop over the row; a phase reading another's
// result (x - max(x)) runs in a later pass. `stash`: the reduced operand is kept in a
// row-sized stack buffer for the later passes that read it (exp(x - m) for the division
// of a softmax), so they load it instead of recomputing it.
struct PlanPhase {
  int node = -1;
  DType dtype = DType::Float32;
  const Primitive* reduce = nullptr;
  int pass = 0;
  bool stash = false;
};

struct PlanOutput {
  int node = -1;                      // the value stored (reductions: the reduced operand)
  DType dtype = DType::Float32;
  const Primitive* reduce = nullptr;  // reduction kind: reduce_sum, ...
  Affine index;                       // element offset into the output (0 coefs on reduced dims)
  bool per_row = false;               // "rows" kernels: one element per row, stored after the passes
  int over_input = -1;                // >= 0: stored through that input's pointer (kernel.h, OutputOverInput)
  // "rows" kernels: a per-row value reduced over every row by `reduce` (a loss's mean
  // over its rows' losses): each block of rows adds its rows into one partial (in the
  // accumulator's dtype), and a finish function combines the blocks' partials in block
  // order, so the result does not depend on the threads.
  bool total() const { return per_row && reduce; }
};

// How the emitter loops over a plan: a function of the plan alone (so part of its text).
//   Elementwise   units are elements (1-d) or rows of the innermost dim (n-d).
//   RowReduce     units are kept (output) elements; each runs the whole reduced loop nest
//                 with scalar accumulators, innermost reduced dim innermost.
//   ColumnReduce  the innermost kept dim is the contiguous one: units are blocks of it,
//                 accumulated in the output row across the reduced loop nest, so the
//                 inner loop runs along memory instead of gathering with a stride. Too
//                 few blocks for the threads (tall, narrow operands): each block's rows
//                 in parts too (row_parts), combined by a finish function.
//   FullReduce    no kept dims: units are fixed chunks of the outermost reduced dim, each
//                 writing a partial; a finish function combines them in chunk order, so
//                 results do not depend on the thread count.
//   Rows          units are rows (kept elements), taken in blocks of chunk_rows: each
//                 pass of phases runs over every row of the block (its loop per row),
//                 then one elementwise loop per row stores the full-shape outputs, then
//                 one loop over the block's rows the per-row outputs. The block stays in
//                 cache between passes (a softmax reads x once from memory and writes
//                 once), and its rows' reductions are independent, so one row's serial
//                 tail (a horizontal max, then a sum) overlaps the next row's loads.
//                 Over large operands the last pass prefetches the next block's rows
//                 and stores the previous row's outputs in its own loop, so memory
//                 and arithmetic overlap (rows_emitter.cpp's pipelines_outputs).
//                 Totals (PlanOutput::total) add up each block's per-row values into
//                 a partial per block, combined by a finish function in block order.
//   Columns       a rows plan whose innermost kept dim is the contiguous one (the reduced
//                 dims run across memory: sum(q * q, 0) of a [3, n] array and the work
//                 reading it back). Units are blocks of column_block elements of that
//                 dim (down to 32, so that tall arrays still feed the threads): each
//                 pass of phases accumulates into a column buffer per phase over the
//                 reduced dims, its inner loop along the columns, the per-column values
//                 it reads computed once before; then the outputs run over the block.
//                 The block's operands stay in cache between passes; nothing is stashed
//                 (a pass recomputes). Columns of at most 8 reduced points run the whole
//                 program a column at a time instead (rows_emitter.cpp, short_column).
struct LoopSchedule {
  enum class Mode { Elementwise, RowReduce, ColumnReduce, FullReduce, Rows, Columns };
  Mode mode = Mode::Elementwise;
  int64_t units = 0;              // the kernel function runs over ranges of [0, units)
  int64_t elements_per_unit = 1;  // iteration points per unit
  int64_t chunk_rows = 0;         // FullReduce: rows of dims[0] per chunk; Rows: rows per block
  int64_t column_block = 0;       // ColumnReduce, Columns: innermost kept elements per unit
  // ColumnReduce over few columns and many rows: the first reduced dim in row_parts parts
  // of chunk_rows rows, a unit per block and part, each writing its partial results (in
  // the accumulator's dtype) for a finish function to combine in part order; 1: none.
  int64_t row_parts = 1;
  int64_t kept_elements = 0;      // with row_parts > 1: the elements of a partial result
  int64_t cost = 1;               // relative cost of one point (op_cost summed)
  // Elementwise, with a vector ISA: the lanes of the kernel's widest type, and how many
  // independent vectors one vector iteration computes (kernel_plan.cpp, vector_blocks).
  int64_t vector_lanes = 0;
  int64_t interleave = 1;
  // Rows: the outputs that total their rows (PlanOutput::total), which the kernel stores
  // as one partial per block of chunk_rows rows for the finish function to combine.
  std::vector<int> totals;
  // Elementwise, n-d: the vectors run across rows, each row's points repeated in the loop
  // body (rows shorter than a few vectors: kernel_plan.cpp, runs_across_rows).
  bool across_rows = false;
};

// A kernel body of more ops than this is "large": its vector width is fixed and its loop
// not interleaved, since LLVM's time on it grows faster than its size (loop_emitter.cpp),
// and its inline math is called, not inlined (scalar_ops.h, outlined math).
inline constexpr int64_t kLargeBodyOps = 64;
// An elementwise body whose dependent paths chain this many transcendentals is large too.
// Inlined and interleaved four ways, each is a long block of polynomial code, and LLVM's
// code generator spent most of a short chain's compile on them: on the 2-core Zen 3, a
// chain of mul, add, sin, sub, tanh over float32 compiled in 34 ms with 4 such functions
// (10 ops) and 48 ms with 8, each 6.6-7 ms calling them (once its outlined functions were
// compiled, which the first kernel calling them does: 39-42 -> 30 ms). Along a chain the
// calls cost little, since the chain's latency bounds the loop (1024^2 floats: 1.04 ->
// 1.12 ms with 4, 1.60 -> 1.65 with 6, the same with 2); independent functions side by
// side, as sin(x) + cos(y), overlap better inline, and ran 1.4x as long calling them,
// so they stay inline, as shorter chains do.
inline constexpr int64_t kLargeBodyChainedMath = 4;
// A large body's vectors, in registers: its loop runs blocks of this many register
// vectors as one vector (kernel_plan.cpp, vector_blocks; a reduction's loop along rows
// of whole such blocks too: loop_emitter.cpp, annotate_loops), whose outlined math calls
// (scalar_ops.h) take the registers together.
inline constexpr int64_t kLargeBodyVectors = 4;

struct KernelPlan {
  enum class Kind { Loop, Reduction, Rows };
  Kind kind = Kind::Loop;
  // Iteration space after dropping size-1 dims and collapsing dims whose strides compose.
  // Reductions: dims[0, num_kept) are kept (output) dims, the rest reduced.
  std::vector<int64_t> dims;
  int num_kept = 0;
  std::vector<DType> input_dtypes;
  std::vector<PlanNode> nodes;  // topological order
  std::vector<PlanOutput> outputs;
  std::vector<PlanPhase> phases;  // Rows: the row reductions, in pass order
  int num_passes = 0;             // Rows: passes of phases (before the elementwise loop)
  LoopSchedule schedule;
  // How planning went (not part of str(): it does not change the code).
  struct Stats {
    int64_t visits = 0;  // (equation, index map) pairs planned; linear in the program's size
  } stats;

  int ndim() const { return static_cast<int>(dims.size()); }
  int num_reduced() const { return ndim() - num_kept; }
  // A canonical text naming everything codegen depends on (disk-cache key, dumps).
  std::string str() const;
};

// Most bytes of row buffers a "rows" kernel keeps on its stack for stashed phases
// (PlanPhase::stash): 65536 float32 or 32768 float64 elements; longer rows recompute.
inline constexpr int64_t kMaxRowStashBytes = 256 * 1024;
// Float32 rows kernels over rows of this many points reduce across rows (`across` in
// rows_emitter.cpp's rows()); a reduction of such rows is planned as one (plan_kernel).
inline constexpr int64_t kAcrossRowsMin = 8, kAcrossRowsMax = 11;
inline constexpr int64_t kStagedAcrossRowsMax = 23;  // where every load along the row is staged (AVX2)
// A rows kernel's block: at most this many rows, whose operands (and stashes) fit in
// about kRowBlockBytes of cache (1 row when a row alone is larger).
inline constexpr int64_t kMaxRowBlock = 64;
inline constexpr int64_t kRowBlockBytes = 256 * 1024;

// Builds the plan of a fused sub-program of kind "loop", "reduction" or "rows". Raises
// jx::Error("[jit] ...") naming the equation it cannot compile (including a reshape of
// a strided input that no view strides express: the caller then copies that input).
// Loads fold the inputs' strides (kernel.h) into their affine addresses. `isa`: the
// vector instruction set the kernel is compiled for, which sets the vector blocks of a
// flat elementwise loop and its interleaving (kernel_plan.cpp's vector_blocks; Scalar: none).
// `over`: outputs stored through an input's pointer, each pair one can_write_over allows.
KernelPlan plan_kernel(const Jaxpr& fused, std::string_view kind, const InputStrides& input_strides = {},
                       cpu::VectorIsa isa = cpu::VectorIsa::Scalar, const OutputsOverInputs& over = {});

// Whether output `output` of a plan may be written into input `input`'s buffer
// (outputs_over_inputs_allowed, kernel.h): a "loop" or "rows" plan that loads that input
// only at the element the output stores, with the same element width. Each point then
// reads the element before it stores over it: a loop point evaluates every node before
// its stores; a rows kernel stores a block's outputs after the passes that read its
// rows, and the full-shape ones row by row after the row's last pass.
bool can_write_over(const KernelPlan& plan, int output, int input);
// Every (output, input) pair can_write_over allows, over the inputs `eligible` accepts.
OutputsOverInputs writable_pairs(const KernelPlan& plan, const std::function<bool(int input)>& eligible);

// True for the primitives the plan reads through as index maps: those whose lowering has
// one (jx/lowering.h).
bool is_index_op(const Primitive& p);

// Relative cost of one element of a primitive in a loop (its lowering's cost, at least 1:
// transcendentals cost more), for the threading grain.
int op_cost(const Primitive& p);
// More than kLargeBodyOps ops, or an elementwise loop chaining kLargeBodyChainedMath
// transcendentals.
bool large_body(const KernelPlan& plan);

}  // namespace jx::compiler::codegen
