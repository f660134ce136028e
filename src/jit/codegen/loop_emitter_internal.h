// The IR emitter of loop kernels (loop_emitter.h), shared by its two files:
// loop_emitter.cpp (the kernel's functions, the loop building blocks, node evaluation, the
// elementwise and reduction schedules, the loop hints) and rows_emitter.cpp (the rows and
// columns schedules: passes of row reductions over blocks of rows, what they stash and
// hoist, the outputs after them). Internal to codegen.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "jit/codegen/kernel_plan.h"
#include "jit/codegen/llvm_session.h"
#include "jit/codegen/scalar_ops.h"

namespace jx::compiler::codegen::detail {

using llvm::Value;
using Mode = LoopSchedule::Mode;

inline constexpr int64_t kReduceBlock = 4096;  // innermost reduced elements per partial accumulator
inline constexpr int64_t kColumnRows = 256;    // reduced rows per partial row of a column reduction
inline constexpr int64_t kWideColumnRows = 8;  // the same for float32 sums (column_reduce)
inline constexpr int64_t kShortColumnRows = 8;  // most reduced points a columns kernel unrolls (short_column)
inline constexpr int64_t kColumnInterleave = 2;  // most vectors an iteration over a block's columns computes
inline constexpr int64_t kCacheLine = 64;
inline constexpr int64_t kChunkBytes = 1024;  // chunks of an innermost reduction loop (reduce_innermost)
inline constexpr int64_t kNarrowSumCost = 8;   // op_cost of the terms of a float32 sum summed narrow (sums_narrow)
inline constexpr int64_t kPrefetchMinBytes = int64_t{8} << 20;  // inputs that prefetch (prefetching_pass)
inline constexpr int64_t kRarePathInterleave = 4;  // float32 reduction loops of inline math (annotate_loops)
inline constexpr int64_t kShortRowPoints = 256;  // rows of at most this many points are short (short_rows)
// Rows of at least this many whole vectors run an overlapping last vector where masks are
// dear (points_loop); shorter ones' loops LLVM unrolls whole, their masks constant.
inline constexpr int64_t kOverlapMinVectors = 8;
inline constexpr int64_t kShortExtremaRow = 1024;  // max/min rows that map NaN instead of probing (reduce_extrema_checked)

// The dtype a reduction accumulates in. Float32 sums accumulate in float64: every element
// is widened, and every partial, block and chunk is combined in double, with one rounding
// at the end. Float accumulators, even in 4096-element blocks spread over 64 vector lanes,
// let the rounding error grow with the terms each lane adds in sequence, and on data like
// 10^6 copies of 0.1f it is systematic: 100000.2578 where eager's pairwise sum gives
// 100000.0156 (exact 100000.0015); float blocks combined pairwise or in double would
// still be about 0.06 (8 ulp) off, the error being inside the blocks. In double the
// result is the exact sum rounded once: within 1 ulp (tests/jit_codegen_test.cpp,
// ReductionAccuracy), against eager's few ulp times log2 n. Measured on this Zen 4 (2
// cores, loaded), best of 15:
//   sum(x + 2y + z*z), 1.6e7 float32 (bandwidth-bound)   5.8-6.3 ms before, 5.6-5.9 after
//   sum(x), 4000x4000 over axis 1 (rows)                  1.8-2.0 ms before, 1.6 after
//   sum(x), 2^20 float32 in cache                         51 us before, 80 after
//   sum(x), 16384 float32                                 1.0 us before, 1.6 after
// so what memory bounds costs nothing, and compute-bound sums of cached data pay the two
// conversions and double adds per 16 floats (about 1.6x). Column reductions keep float
// partial rows over 8 reduced rows (column_reduce). Other reductions and dtypes
// accumulate in their own dtype (float64 sums in blocks, as before).
// Sums of terms that cost a transcendental each are compute-bound instead: they add
// float32 chunk partials into the double accumulators (LoopEmitter::sums_narrow).
inline lowering::Monoid monoid_of(const PlanOutput& o) { return o.reduce->rules().lowering.reducer.monoid; }

inline DType accumulator_dtype(const PlanOutput& o) {
  if (o.dtype == DType::Float32 && o.reduce && o.reduce->rules().lowering.reducer.widen_float32) return DType::Float64;
  return o.dtype;
}

class LoopEmitter {
 public:
  LoopEmitter(llvm::Module& module, const KernelPlan& plan, std::string_view key)
      : key_(key),
        module_(module),
        ctx_(module.getContext()),
        plan_(plan),
        b_(ctx_),
        i64_(llvm::Type::getInt64Ty(ctx_)),
        ptr_(llvm::PointerType::getUnqual(ctx_)) {}

  void emit();

  // The most points this kernel's innermost vector loops run over, where that is short:
  // a block's columns (column_reduce) or a row's length (row reductions, rows kernels);
  // for the other schedules a number no loop is short of. While annotate_loops hints a
  // loop points_loop split, that loop's own points.
  int64_t loop_points() const { return split_points_now_ > 0 ? split_points_now_ : row_points(); }
  int64_t row_points() const;
  int64_t vector_width_for_loops(int64_t lanes, bool whole_row = false) const;
  // Lanes of a full register of the plan's widest element.
  int64_t host_lanes() const { return std::max<int64_t>(1, host_vector_bytes() / widest_itemsize()); }
  static bool masked_stores_cheap();
  int64_t fit_interleave(int64_t width, int64_t wanted) const;
  void annotate_loops();

 private:
  void set_loop_hints(llvm::BranchInst* latch, std::vector<llvm::Metadata*>& hints);
  bool short_rows() const;
  int64_t widest_itemsize() const;
  int64_t body_ops() const;
  Value* c64(int64_t v) { return llvm::ConstantInt::get(i64_, static_cast<uint64_t>(v), true); }
  llvm::Function* new_function(const std::string& name, llvm::FunctionType* type, bool internal);
  llvm::Function* emit_body();
  void emit_entry(llvm::Function* body);

  // A full-shape output too large to stay in cache, of a kernel whose writing is
  // memory-bound: its vector stores become non-temporal (streaming_stores.h). Measured
  // on the 2-core Zen 1: a rows kernel's output pass, once the row's reductions are done
  // (softmax over 65536 x 128, 4096 x 4096 and 128 x 65536 floats: 1.06-1.08x faster),
  // and elementwise kernels of plain arithmetic (2x + y over 4096 x 4096 floats: 9.1 ->
  // 6.7-7.3 ms). Elementwise kernels with transcendentals are compute-bound and were
  // slower streamed (sin(x) + cos(y) over 5000 x 5000: 0.93-0.98x; SELU 0.98x).
  static constexpr int64_t kStreamedElementwiseCost = 2;  // plain ops and a division
  bool streamed(const PlanOutput& o) const;
  int64_t extremum_accumulators(int64_t widest) const;
  void emit_finish(const std::vector<int>& outputs);
  void emit_column_finish();

  // ---- loop building blocks ----

  llvm::AllocaInst* entry_alloca(llvm::Type* type, int64_t count = 1);  // in the entry block
  void loop(Value* lo, Value* hi, const std::function<void(Value*)>& body);
  void points_loop(Value* lo, Value* hi, const std::function<void(Value*)>& body, bool overlapping = false);
  void decompose(Value* flat, size_t first, size_t last, std::vector<Value*>& idx);
  void nest(size_t d, std::vector<Value*>& idx, const std::function<void()>& body);
  Value* affine(const Affine& a, const std::vector<Value*>& idx);
  std::vector<Value*> eval(const std::vector<Value*>& idx);
  Value* load_ptr(const PlanNode& n, const std::vector<Value*>& idx);
  Value* out_ptr(size_t m, const std::vector<Value*>& idx);
  void store_outputs(const std::vector<Value*>& idx);

  // Accumulators hold accumulator_dtype(output); these convert into and out of it.
  // The reductions accumulate() feeds: the plan's outputs, or one pass's phases.
  const std::vector<PlanOutput>& reducers() const { return reducers_ ? *reducers_ : plan_.outputs; }
  std::vector<llvm::AllocaInst*> accumulators();
  void reset(const std::vector<llvm::AllocaInst*>& accs);
  Value* combine_element(const PlanOutput& o, Value* acc, Value* x);
  Value* final_value(const PlanOutput& o, Value* acc) { return emit_convert(b_, acc, accumulator_dtype(o), o.dtype); }
  void accumulate(const std::vector<llvm::AllocaInst*>& accs, const std::vector<Value*>& idx, bool narrow = false);

  // ---- the schedules (kernel_plan.h) ----

  void elementwise(Value* begin, Value* end);
  void fold(const std::vector<llvm::AllocaInst*>& accs, const std::vector<llvm::AllocaInst*>& parts);
  void reduce_nest(size_t d, std::vector<Value*>& idx, const std::vector<llvm::AllocaInst*>& accs);
  void reduce_innermost(size_t d, Value* lo, Value* hi, std::vector<Value*>& idx,
                        const std::vector<llvm::AllocaInst*>& accs);
  bool extrema_alone() const;
  static bool fast_extremum(const PlanOutput& o);
  void reduce_extrema_checked(size_t d, Value* lo, Value* hi, std::vector<Value*>& idx,
                              const std::vector<llvm::AllocaInst*>& accs);
  void row_reduce(Value* begin, Value* end);
  void column_reduce(Value* begin, Value* end);
  void full_reduce(Value* begin, Value* end);

  // ---- rows kernels (rows_emitter.cpp) ----

  int stash_of_node(int node) const;
  Value* stash_ptr(int phase, const std::vector<Value*>& idx);
  void select(const std::vector<int>& targets, int pass);
  bool hoisted(size_t node) const { return !hoisted_.empty() && hoisted_[node]; }
  bool sums_narrow() const;
  bool costly_points(bool varying_only = false) const;
  bool pipelines_outputs() const;
  int prefetching_pass() const;
  bool runs_across_rows() const;
  bool one_reduced_dim() const { return plan_.ndim() - plan_.num_kept == 1; }
  void prefetch_streams(Value* end, int64_t block_rows);
  void rows(Value* begin, Value* end);
  void store_block_totals(const std::vector<llvm::AllocaInst*>& values, Value* lo, Value* hi, int64_t block_rows);
  using EachRow = std::function<void(Value*, Value*, Value*, const std::function<void()>&)>;
  void across_passes(Value* lo, Value* hi, std::vector<Value*>& idx,
                     const std::vector<std::vector<PlanOutput>>& pass_reducers,
                     const std::vector<std::vector<int>>& pass_phases, const EachRow& each_row,
                     const std::function<void()>& row_outputs, const std::vector<char>& row_output_nodes);
  bool stages_across(DType dtype, const Affine& index) const;
  bool stages_every_row_load() const;
  void plan_staging(const std::vector<std::vector<PlanOutput>>& pass_reducers, const std::vector<char>& row_output_nodes);
  void stage_block_in(Value* lo, Value* hi);
  void stage_block_out(Value* lo, Value* hi);
  void transpose_block(Value* lo, Value* hi, llvm::AllocaInst* buffer, Value* array, const Affine& index, DType dtype,
                       bool into_buffer);
  Value* staged_ptr(llvm::AllocaInst* buffer, DType dtype, Value* column);
  void hoist_row_values(const std::vector<int>& targets, int pass, Value* lo, Value* hi, std::vector<Value*>& idx,
                        const EachRow& each_row);
  std::vector<char> varies_along_reduced() const;
  std::vector<char> hoistable(const std::vector<int>& targets, const std::vector<char>& varies,
                              const std::function<bool(size_t)>& worth) const;
  void compute_hoisted(std::vector<char> hoist, int64_t slots, int pass, const std::vector<int>& targets,
                       std::vector<Value*>& idx, const std::function<void(const std::function<void()>&)>& each_slot);

  // ---- columns kernels ----

  void columns(Value* begin, Value* end);
  DType column_acc_dtype(const PlanPhase& ph, int64_t reduced) const;
  static PlanOutput phase_reducer(const PlanPhase& ph);
  void hoist_column_values(const std::vector<int>& targets, int pass, std::vector<Value*>& idx,
                           const std::function<void(const std::function<void()>&)>& each_column);
  std::vector<size_t> phases_of_pass(int pass) const;
  std::vector<int> phase_nodes(const std::vector<size_t>& phases) const;
  Value* block_value_ptr(size_t k);
  void column_pass(int pass, std::vector<Value*>& idx, int64_t reduced, const std::vector<llvm::AllocaInst*>& accs,
                   const std::function<void(const std::function<void()>&)>& each_column);
  void store_column_outputs(std::vector<Value*>& idx, const std::function<void(const std::function<void()>&)>& full_points,
                            const std::function<void(const std::function<void()>&)>& each_column, bool hoist);
  void short_column(std::vector<Value*>& idx, int64_t reduced);

  // ---- state ----

  std::string key_;
  llvm::Module& module_;
  std::vector<llvm::BranchInst*> latches_;  // back edges of every loop emitted
  llvm::LLVMContext& ctx_;
  const KernelPlan& plan_;
  llvm::IRBuilder<> b_;
  llvm::Type* i64_;
  llvm::PointerType* ptr_;
  llvm::Function* function_ = nullptr;
  std::vector<Value*> ins_, outs_;
  // rows kernels: the state of the pass being emitted
  const std::vector<PlanOutput>* reducers_ = nullptr;  // null: the plan's outputs
  std::vector<char> needed_, loaded_;                   // per node; empty: evaluate all
  std::vector<int> stores_;                             // phases whose operand this pass stashes
  std::vector<llvm::AllocaInst*> stashes_;              // per phase: its block's rows' buffer, or null
  std::vector<llvm::AllocaInst*> block_values_;         // per phase: its results for a block's rows
  struct PrefetchStream {
    Value* next_row;  // the load's element 0 of the row prefetched
    DType dtype;
  };
  std::vector<PrefetchStream> prefetch_;  // the prefetching pass's streams (empty: none)
  bool narrow_sums_ = false;              // reduce_innermost sums float32 in float32 chunks
  // The pipelined last pass (pipelines_outputs): the previous row's outputs at reduced index j.
  std::function<void(Value*)> companion_;
  // columns kernels: per node, its buffer of a block's column values (hoist_column_values),
  // and which nodes the current stage reads from theirs
  std::vector<llvm::AllocaInst*> column_values_;
  std::vector<char> hoisted_;
  struct SplitLoop {
    int64_t points;  // of this loop
    bool rest;       // the points after the whole vectors
  };
  std::map<const llvm::BranchInst*, SplitLoop> split_points_;  // points_loop's loops
  int64_t split_points_now_ = 0;                              // annotate_loops: the latch's, or 0
  // The points loops being emitted may run a point again (points_loop: whole vectors, then
  // one overlapping last vector), their reductions' terms at seen points the identity.
  bool repeatable_points_ = false;
  int64_t seen_below_ = -1;  // in points_loop's overlapping last vector: the points seen before it, or -1
  std::set<const llvm::BranchInst*> output_loops_;  // latches of a rows kernel's loops storing full-shape outputs
  // Loops over a row's points that store (a rows kernel's outputs, a pass's stash): while
  // storing_points_ is set, loop() adds its latches to storing_loops_.
  bool storing_points_ = false;
  std::set<const llvm::BranchInst*> storing_loops_;
  bool recompute_stashes_ = false;                  // rows(): across_passes stashes nothing
  std::set<const llvm::BranchInst*> scalar_loops_;  // latches of loops left scalar (a rare path's)
  std::map<llvm::BranchInst*, bool> column_loops_;  // latch of each loop over columns -> short_column's
  std::set<const llvm::BranchInst*> unit_loops_;    // latches of loops over rows or a reduction's units
  Value* block_slot_ = nullptr;                         // the current row's place in its block
  Value* block_slot_row_ = nullptr;                     // the current row (unit)
  Value* across_lo_ = nullptr;                          // across_passes' block start (load_ptr)
  // across_passes on AVX2: per node (load) and per output, its block's column-major
  // buffer (stage_block_in / stage_block_out), or null; empty when nothing is staged.
  std::vector<llvm::AllocaInst*> staged_loads_, staged_outputs_;
};

}  // namespace jx::compiler::codegen::detail
