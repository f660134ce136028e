// The rows and columns schedules of loop kernels (kernel_plan.h: LoopSchedule::Mode::Rows
// and Columns): passes of row reductions over blocks of rows or columns in cache, what
// they stash and hoist, the outputs after them. The rest of the emitter is
// loop_emitter.cpp; the class, loop_emitter_internal.h.
#include <algorithm>
#include <functional>
#include <vector>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include "jit/codegen/loop_emitter_internal.h"
#include "jit/codegen/module_target.h"
#include "jit/codegen/scalar_ops.h"

namespace jx::compiler::codegen::detail {

// ---- rows kernels ----

int LoopEmitter::stash_of_node(int node) const {
  for (size_t k = 0; k < plan_.phases.size(); ++k)
    if (plan_.phases[k].stash && plan_.phases[k].node == node) return static_cast<int>(k);
  return -1;
}

// The element of phase `phase`'s buffer at the current row of the block and the
// point's reduced index (row-major).
Value* LoopEmitter::stash_ptr(int phase, const std::vector<Value*>& idx) {
  const size_t nd = plan_.dims.size(), nk = static_cast<size_t>(plan_.num_kept);
  Value* flat = block_slot_;
  for (size_t d = nk; d < nd; ++d)
    flat = b_.CreateAdd(b_.CreateMul(flat, c64(plan_.dims[d]), "", true, true), idx[d], "", true, true);
  const PlanPhase& ph = plan_.phases[static_cast<size_t>(phase)];
  return b_.CreateInBoundsGEP(storage_type(ctx_, ph.dtype), stashes_[static_cast<size_t>(phase)], flat);
}

// Which nodes a pass evaluates (the cone of its targets) and which of them it loads
// from the row buffers of earlier passes.
void LoopEmitter::select(const std::vector<int>& targets, int pass) {
  loaded_.assign(plan_.nodes.size(), 0);
  for (const PlanPhase& ph : plan_.phases)
    if (ph.stash && ph.pass < pass && !recompute_stashes_) loaded_[static_cast<size_t>(ph.node)] = 1;
  needed_.assign(plan_.nodes.size(), 0);
  for (int t : targets) needed_[static_cast<size_t>(t)] = 1;
  for (size_t i = plan_.nodes.size(); i-- > 0;)
    if (needed_[i] && !loaded_[i] && !hoisted(i))
      for (int o : plan_.nodes[i].operands) needed_[static_cast<size_t>(o)] = 1;
}

// Whether the reductions being emitted (reducers(), over the nodes needed_ selects) sum
// float32 terms that cost a transcendental or more each. Those are compute-bound, and
// widening every term to double (accumulator_dtype) was a fifth of their time: the
// conversions, double adds and twice the accumulator registers, which spilled around
// an inline exp (a row sum of exp over 4096 x 4096 floats: 11.7 ms in double, 9.1 in
// float partials). They sum each 256-float chunk in float32 vector partials (16 terms
// per lane in sequence, then a tree), added to the double accumulators once per chunk:
// within a few ulp, as NumPy's pairwise sum (tests/jit_codegen_test.cpp,
// ReductionAccuracy). Plain sums are memory-bound and keep double terms.
bool LoopEmitter::sums_narrow() const {
  bool widened = false;
  for (const PlanOutput& o : reducers()) widened = widened || accumulator_dtype(o) != o.dtype;
  return widened && costly_points();
}

// Whether a point of the loop being emitted (the nodes needed_ selects) costs a
// transcendental or more; `varying_only`: counting only the ops that vary along the
// row (the others are computed once a row).
bool LoopEmitter::costly_points(bool varying_only) const {
  const std::vector<char> varies = varying_only ? varies_along_reduced() : std::vector<char>();
  int64_t cost = 0;
  for (size_t i = 0; i < plan_.nodes.size(); ++i) {
    const PlanNode& n = plan_.nodes[i];
    const bool evaluated = needed_.empty() || (needed_[i] && !loaded_[i] && !hoisted(i));
    if (n.kind == PlanNode::Kind::Op && evaluated && (!varying_only || varies[i])) cost += op_cost(*n.eqn->primitive);
  }
  return cost >= kNarrowSumCost;
}

// Whether a rows kernel's last pass of phases stores the previous row's full-shape
// outputs in its loop. Those outputs are large enough to stream (streamed()), and a loop
// of streaming stores alone runs at memory's write speed with the arithmetic units
// idle, while the last pass (a softmax's exp) computes with the memory bus idle; in
// one loop they overlap. Rows of one reduced dim.
bool LoopEmitter::pipelines_outputs() const {
  if (!one_reduced_dim()) return false;
  for (const PlanOutput& o : plan_.outputs)
    if (!o.per_row && !streamed(o)) return false;
  return true;
}

// The pass of a rows kernel that prefetches the next block's rows, or -1. A block's
// first pass reads its rows from memory, its later passes from cache: without
// prefetching, memory sits idle while the later passes compute (a softmax's exp) and
// the first pass waits on memory with the arithmetic units idle. The last pass of
// phases prefetches, when there are several, over rows of one reduced dim read along
// memory, from inputs larger than the last-level cache of a CPU of this class (smaller
// ones stay in cache between calls).
int LoopEmitter::prefetching_pass() const {
  if (plan_.num_passes < 2 || !one_reduced_dim() || runs_across_rows()) return -1;
  int64_t load_bytes = 0;  // the widest load's element
  for (const PlanNode& n : plan_.nodes)
    if (n.kind == PlanNode::Kind::Load) load_bytes = std::max<int64_t>(load_bytes, itemsize(n.dtype));
  double bytes = static_cast<double>(load_bytes);
  for (int64_t d : plan_.dims) bytes *= static_cast<double>(d);
  return bytes >= static_cast<double>(kPrefetchMinBytes) ? plan_.num_passes - 1 : -1;
}

// The streams of the current pass's loads at the row `block_rows` rows ahead of the
// current one (the same row in the last block): every load read along the reduced dim
// whose address moves with the row.
void LoopEmitter::prefetch_streams(Value* end, int64_t block_rows) {
  const size_t nd = plan_.dims.size(), nk = static_cast<size_t>(plan_.num_kept);
  std::vector<Value*> ahead(nd, nullptr);
  Value* row = b_.CreateAdd(block_slot_row_, c64(block_rows), "", true, true);
  row = b_.CreateSelect(b_.CreateICmpSLT(row, end), row, block_slot_row_);
  decompose(row, 0, nk, ahead);
  ahead[nd - 1] = c64(0);
  std::vector<std::pair<int, const Affine*>> seen;
  for (size_t i = 0; i < plan_.nodes.size(); ++i) {
    const PlanNode& n = plan_.nodes[i];
    if (n.kind != PlanNode::Kind::Load || !needed_[i] || loaded_[i] || n.index.coef[nd - 1] != 1) continue;
    bool moves = false;
    for (size_t d = 0; d < nk; ++d) moves = moves || n.index.coef[d] != 0;
    bool repeated = false;
    for (auto& [input, index] : seen) repeated = repeated || (input == n.input && *index == n.index);
    if (!moves || repeated) continue;
    seen.push_back({n.input, &n.index});
    Value* base = b_.CreateGEP(storage_type(ctx_, n.dtype), ins_[static_cast<size_t>(n.input)], affine(n.index, ahead));
    prefetch_.push_back({base, n.dtype});
  }
}

// Rows in blocks of chunk_rows (kernel_plan.h: LoopSchedule::Mode::Rows). Row values
// and stashes are kept per row of the block; the per-row outputs run as one loop over
// the block's rows, which vectorizes (the log of logsumexp called once per row cost a
// 16-lane libmvec call each time: 19% of 65536 x 128).
void LoopEmitter::rows(Value* begin, Value* end) {
  const size_t nd = plan_.dims.size(), nk = static_cast<size_t>(plan_.num_kept);
  const int64_t block_rows = std::max<int64_t>(1, plan_.schedule.chunk_rows);
  int64_t row_elements = 1;
  for (size_t d = nk; d < nd; ++d) row_elements *= plan_.dims[d];
  for (const PlanPhase& ph : plan_.phases) {
    llvm::BasicBlock& entry = function_->getEntryBlock();
    llvm::IRBuilder<> at(&entry, entry.begin());
    stashes_.push_back(ph.stash ? at.CreateAlloca(storage_type(ctx_, ph.dtype), c64(row_elements * block_rows))
                                : nullptr);
    block_values_.push_back(at.CreateAlloca(value_type(ctx_, ph.dtype), c64(block_rows)));
  }
  std::vector<std::vector<PlanOutput>> pass_reducers(static_cast<size_t>(plan_.num_passes));
  std::vector<std::vector<int>> pass_phases(static_cast<size_t>(plan_.num_passes));
  for (size_t k = 0; k < plan_.phases.size(); ++k) {
    const PlanPhase& ph = plan_.phases[k];
    pass_reducers[static_cast<size_t>(ph.pass)].push_back(phase_reducer(ph));
    pass_phases[static_cast<size_t>(ph.pass)].push_back(static_cast<int>(k));
  }
  std::vector<std::vector<llvm::AllocaInst*>> pass_accs;
  for (const auto& rs : pass_reducers) {
    reducers_ = &rs;
    pass_accs.push_back(accumulators());
  }
  reducers_ = nullptr;
  std::vector<int> full, per_row;
  for (const PlanOutput& o : plan_.outputs) (o.per_row ? per_row : full).push_back(o.node);
  // Per total: its block's rows' values, which store_block_totals adds up.
  std::vector<llvm::AllocaInst*> row_totals(plan_.outputs.size(), nullptr);
  for (size_t m = 0; m < plan_.outputs.size(); ++m)
    if (plan_.outputs[m].total()) row_totals[m] = entry_alloca(value_type(ctx_, plan_.outputs[m].dtype), block_rows);
  std::vector<Value*> idx(nd, nullptr);
  // body() for every row u of [from, to), of the block starting at row lo: idx holds
  // u's kept dims, block_slot_ its place in the block.
  auto each_row = [&](Value* lo, Value* from, Value* to, const std::function<void()>& body) {
    loop(from, to, [&](Value* u) {
      decompose(u, 0, nk, idx);
      block_slot_ = b_.CreateSub(u, lo, "", true, true);
      block_slot_row_ = u;
      body();
      block_slot_ = nullptr;
    });
    unit_loops_.insert(latches_.back());
  };
  // The full-shape outputs at the point idx (their nodes selected).
  auto store_full = [&](const std::vector<Value*>& at) {
    std::vector<Value*> v = eval(at);
    for (size_t m = 0; m < plan_.outputs.size(); ++m)
      if (!plan_.outputs[m].per_row)
        store_element(b_, v[static_cast<size_t>(plan_.outputs[m].node)], out_ptr(m, at), plan_.outputs[m].dtype);
  };
  const int prefetch_pass = prefetching_pass();
  const bool pipelined = !full.empty() && pipelines_outputs();
  const int last_pass = plan_.num_passes - 1;
  // Rows of 8-11 float32 points run every pass of a row in sequence in the body of one
  // loop over the block's rows (across_passes), which the vectorizer widens across
  // rows: no horizontal reduction per row and pass, full vectors where the row's own
  // would be masked, each point loaded once for all passes, and nothing stashed (the
  // full-shape outputs, along the row, compute a stashed operand again from the
  // block's rows in cache). Measured over 1.6e6 floats, rows of 10, along -> across
  // (a pass at a time): logsumexp 623 -> 406 us, layer norm 1151 -> 1034, cross-entropy
  // 816 -> 551; one loop for all passes: logsumexp 389 -> 246, cross-entropy 454 ->
  // 317, softmax 770 -> 647, layer norm 514 -> 358 (with arrays at staggered page
  // offsets: cpu_backend.cpp). Rows of 12 and 16 measured slower across (their loads
  // become gathers: softmax 609 -> 708 at 12), those of up to 7 level. Where every load
  // along the row is staged (AVX2: stage_block_in), rows of up to 23 run across: over
  // 1.6e6 floats on the 2-core Zen 3, best of 4 alternating, us, along -> across: rows
  // of 12, softmax 1076 -> 813, logsumexp 1170 -> 652, layer norm 643 -> 352,
  // cross-entropy 1422 -> 806, its gradient 1489 -> 905; of 14, 1533 -> 660, 881 -> 497,
  // 679 -> 352, 1164 -> 503, 1281 -> 879; of 16, 790 -> 703, 701 -> 530, 474 -> 310, 978
  // -> 625, the gradient level (887 -> 786 at best, its typical run 10% slower); of
  // 17-23 alike (rows of 21: logsumexp 949 -> 521, cross-entropy 1212 -> 687, its
  // gradient 1238 -> 764, softmax and layer norm level or faster); rows of 24, three
  // whole vectors, stay along the row (their gradient 666 -> 1066 at best across).
  const bool across = !pipelined && prefetch_pass < 0 && runs_across_rows();
  recompute_stashes_ = across;
  std::vector<char> full_needed, full_loaded;
  bool costly_outputs = false;
  if (!full.empty()) {
    select(full, plan_.num_passes);
    full_needed = needed_, full_loaded = loaded_;
    costly_outputs = costly_points(/*varying_only=*/true);
  }
  // Across rows where masked stores are dear (AVX2), the full-shape outputs are stored
  // in the same loop, after each row's passes, each point's store scalar: their terms
  // are the passes' own (a cross-entropy gradient's exp(x - m), shared in SSA instead of
  // computed again), and no loop over each row's few points follows, its last vector
  // mostly empty. A row of whole vectors keeps its loop unless its points cost a
  // transcendental (a layer norm over rows of 8 floats: 0.43 ms a row at a time, 0.75
  // across). Not over an input (a row's stores would overwrite points that the
  // vectorized loop's other lanes load). Over 1.6e6 floats on the 2-core Zen 3, us:
  // rows of 10, a cross-entropy's gradient 1783 (a row at a time, unmasked) -> 1246,
  // softmax 2469 -> 1172.
  bool outputs_over_inputs = false;
  for (const PlanOutput& o : plan_.outputs) outputs_over_inputs = outputs_over_inputs || o.over_input >= 0;
  const bool whole_vectors = plan_.dims[nd - 1] % host_lanes() == 0;
  std::function<void()> across_outputs;
  if (across && !full.empty() && !outputs_over_inputs && !masked_stores_cheap() && (!whole_vectors || costly_outputs))
    across_outputs = [&] {
      needed_ = full_needed, loaded_ = full_loaded;
      for (int64_t j = 0; j < plan_.dims[nd - 1]; ++j) {
        idx[nd - 1] = c64(j);
        store_full(idx);
      }
    };
  Value* count = b_.CreateSub(end, begin, "", true, true);
  Value* blocks = b_.CreateUDiv(b_.CreateAdd(count, c64(block_rows - 1), "", true, true), c64(block_rows));
  loop(c64(0), blocks, [&](Value* block) {
    Value* lo = b_.CreateAdd(begin, b_.CreateMul(block, c64(block_rows), "", true, true), "", true, true);
    Value* hi = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(lo, c64(block_rows), "", true, true), end);
    if (across)
      across_passes(lo, hi, idx, pass_reducers, pass_phases, each_row, across_outputs,
                    across_outputs ? full_needed : std::vector<char>{});
    const size_t separate_passes = across ? 0 : pass_reducers.size();  // each a loop over the block's rows
    for (size_t q = 0; q < separate_passes; ++q) {
      reducers_ = &pass_reducers[q];
      std::vector<int> targets;
      for (const PlanOutput& r : pass_reducers[q]) targets.push_back(r.node);
      for (int k : pass_phases[q])
        if (plan_.phases[static_cast<size_t>(k)].stash) stores_.push_back(k);
      select(targets, static_cast<int>(q));
      // A later pass's reductions read row values of the earlier ones (the picked
      // log-probability of a cross-entropy: x - m - log(s) at the label).
      const bool pipelined_pass = pipelined && static_cast<int>(q) == last_pass;
      if (q > 0 && !pipelined_pass) hoist_row_values(targets, static_cast<int>(q), lo, hi, idx, each_row);
      const bool prefetching = static_cast<int>(q) == prefetch_pass;
      narrow_sums_ = sums_narrow();
      auto pass_row = [&] {
        if (prefetching) prefetch_streams(end, block_rows);
        reset(pass_accs[q]);
        storing_points_ = !stores_.empty() || companion_ != nullptr;  // a stash, or the pipelined outputs
        // (The pipelined outputs stored again over an input would read what they wrote.)
        repeatable_points_ = !companion_ || !outputs_over_inputs;
        reduce_nest(nk, idx, pass_accs[q]);
        repeatable_points_ = storing_points_ = false;
        for (size_t m = 0; m < pass_phases[q].size(); ++m) {
          const size_t k = static_cast<size_t>(pass_phases[q][m]);
          Value* acc = b_.CreateLoad(pass_accs[q][m]->getAllocatedType(), pass_accs[q][m]);
          Value* value = final_value(pass_reducers[q][m], acc);
          b_.CreateStore(value, block_value_ptr(k));
        }
        prefetch_.clear();
      };
      if (pipelined_pass) {
        // The block's first row alone, then each later row's pass with the previous
        // row's outputs in the same loop (pipelines_outputs).
        Value* second = b_.CreateAdd(lo, c64(1), "", true, true);
        each_row(lo, lo, second, pass_row);
        each_row(lo, second, hi, [&] {
          std::vector<Value*> prev(nd, nullptr);
          decompose(b_.CreateSub(block_slot_row_, c64(1), "", true, true), 0, nk, prev);
          Value* prev_slot = b_.CreateSub(block_slot_, c64(1), "", true, true);
          companion_ = [&, prev, prev_slot](Value* j) mutable {
            std::swap(needed_, full_needed);
            std::swap(loaded_, full_loaded);
            Value* slot = block_slot_;
            block_slot_ = prev_slot;
            prev[nd - 1] = j;
            store_full(prev);
            block_slot_ = slot;
            std::swap(needed_, full_needed);
            std::swap(loaded_, full_loaded);
          };
          pass_row();
          companion_ = nullptr;
        });
      } else {
        each_row(lo, lo, hi, pass_row);
      }
      stores_.clear();
      hoisted_.clear();
      reducers_ = nullptr;
      narrow_sums_ = false;
    }
    if (!full.empty() && !across_outputs) {
      needed_ = full_needed, loaded_ = full_loaded;
      if (!pipelined) hoist_row_values(full, plan_.num_passes, lo, hi, idx, each_row);
      // Pipelined: only the block's last row is left.
      Value* from = pipelined ? b_.CreateSub(hi, c64(1), "", true, true) : lo;
      each_row(lo, from, hi, [&] {
        const size_t first_latch = latches_.size();
        storing_points_ = true;
        repeatable_points_ = !outputs_over_inputs;
        nest(nk, idx, [&] { store_full(idx); });
        repeatable_points_ = storing_points_ = false;
        output_loops_.insert(latches_.begin() + static_cast<std::ptrdiff_t>(first_latch), latches_.end());
      });
      hoisted_.clear();
    }
    if (!per_row.empty()) {
      select(per_row, plan_.num_passes);
      each_row(lo, lo, hi, [&] {
        std::vector<Value*> at = idx;
        for (size_t d = nk; d < nd; ++d) at[d] = c64(0);  // per-row values do not read the reduced dims
        std::vector<Value*> v = eval(at);
        for (size_t m = 0; m < plan_.outputs.size(); ++m) {
          const PlanOutput& o = plan_.outputs[m];
          if (!o.per_row) continue;
          Value* value = v[static_cast<size_t>(o.node)];
          if (o.total())
            b_.CreateStore(value, b_.CreateInBoundsGEP(value->getType(), row_totals[m], block_slot_));
          else
            store_element(b_, value, out_ptr(m, at), o.dtype);
        }
      });
      store_block_totals(row_totals, lo, hi, block_rows);
    }
    needed_.clear();
    loaded_.clear();
  });
}

// A block's partial of each total (PlanOutput::total): its rows' values (in `values`,
// hi - lo of them) combined in the accumulator's dtype, stored through the output's
// pointer (the runtime's partials) at the block's index, lo / block_rows (the runtime
// starts each range of rows at a block's start). A float sum may reassociate, so the
// loop vectorizes (the block's rows in the vector's lanes, then across them: fixed by
// the kernel, whatever the threads); rows unrolled one at a time into four scalar
// accumulators were a sixth of a cross-entropy's time over rows of 10 floats.
void LoopEmitter::store_block_totals(const std::vector<llvm::AllocaInst*>& values, Value* lo, Value* hi, int64_t block_rows) {
  Value* count = b_.CreateSub(hi, lo, "", true, true);
  Value* block = b_.CreateUDiv(lo, c64(block_rows));
  llvm::FastMathFlags reorder;
  reorder.setAllowReassoc();
  for (size_t m = 0; m < values.size(); ++m) {
    if (!values[m]) continue;
    const PlanOutput& o = plan_.outputs[m];
    const DType a = accumulator_dtype(o);
    llvm::AllocaInst* acc = entry_alloca(value_type(ctx_, a));
    b_.CreateStore(reduction_identity(b_, *o.reduce, a), acc);
    llvm::Type* t = values[m]->getAllocatedType();
    loop(c64(0), count, [&](Value* j) {
      Value* x = b_.CreateLoad(t, b_.CreateInBoundsGEP(t, values[m], j));
      Value* next = combine_element(o, b_.CreateLoad(acc->getAllocatedType(), acc), x);
      if (auto* add = llvm::dyn_cast<llvm::Instruction>(next); add && add->getOpcode() == llvm::Instruction::FAdd)
        add->setFastMathFlags(reorder);
      b_.CreateStore(next, acc);
    });
    unit_loops_.insert(latches_.back());
    store_element(b_, b_.CreateLoad(acc->getAllocatedType(), acc), b_.CreateInBoundsGEP(storage_type(ctx_, a), outs_[m], block), a);
  }
}

// Rows of 8-11 float32 points whose passes all run across rows (`across` in rows(), no
// stash, no full-shape outputs): every pass of a row in one iteration of one loop over
// the block's rows, which the vectorizer widens across rows, so the row's points are
// loaded (gathered across rows) once for all passes and a later pass reads the earlier
// ones' row values in registers (separate loops gathered every point once per pass).
// A float max or min runs as x86's maxps (minps) on NaN mapped to the infinity it
// reduces towards, two instructions a point where IEEE maximum is six; a row whose fast
// extreme is a zero (whose sign maxps picks by operand order) or that infinity (where
// NaN may have been) runs all its passes again exactly after the loop, which the block
// enters only when one did. A float32 sum of the row's few points adds in float32
// (the same partials as a short row's along it), so a rerun row sums the same way.
void LoopEmitter::across_passes(Value* lo, Value* hi, std::vector<Value*>& idx,
                   const std::vector<std::vector<PlanOutput>>& pass_reducers,
                   const std::vector<std::vector<int>>& pass_phases, const EachRow& each_row,
                   const std::function<void()>& row_outputs, const std::vector<char>& row_output_nodes) {
  const size_t nd = plan_.dims.size();
  plan_staging(pass_reducers, row_output_nodes);
  stage_block_in(lo, hi);
  auto is_max = [](const PlanOutput& o) { return monoid_of(o) == lowering::Monoid::kMax; };
  auto bound = [&](const PlanOutput& o, llvm::Type* t) { return llvm::ConstantFP::getInfinity(t, !is_max(o)); };
  auto odd_extreme = [&](const PlanOutput& o, Value* x) {
    return b_.CreateOr(b_.CreateFCmpOEQ(x, llvm::ConstantFP::get(x->getType(), 0.0)),
                       b_.CreateFCmpOEQ(x, bound(o, x->getType())));
  };
  bool any_fast = false;
  for (const auto& rs : pass_reducers)
    for (const PlanOutput& o : rs) any_fast = any_fast || fast_extremum(o);
  llvm::FastMathFlags no_nans;
  no_nans.setNoNaNs();
  no_nans.setNoSignedZeros();
  // One row's passes into the block values; returns whether a fast extreme was odd.
  auto run_row = [&](bool fast) {
    Value* odd = b_.getFalse();
    for (size_t q = 0; q < pass_reducers.size(); ++q) {
      const std::vector<PlanOutput>& rs = pass_reducers[q];
      reducers_ = &rs;
      std::vector<int> targets;
      for (const PlanOutput& r : rs) targets.push_back(r.node);
      select(targets, static_cast<int>(q));
      // Each reduction's running value in SSA: the points are unrolled.
      std::vector<Value*> acc(rs.size());
      std::vector<char> narrow(rs.size());
      for (size_t m = 0; m < rs.size(); ++m) {
        narrow[m] = (fast && fast_extremum(rs[m])) || accumulator_dtype(rs[m]) != rs[m].dtype;
        acc[m] = reduction_identity(b_, *rs[m].reduce, narrow[m] ? rs[m].dtype : accumulator_dtype(rs[m]));
      }
      for (int64_t j = 0; j < plan_.dims[nd - 1]; ++j) {
        idx[nd - 1] = c64(j);
        std::vector<Value*> v = eval(idx);
        for (size_t m = 0; m < rs.size(); ++m) {
          Value* x = v[static_cast<size_t>(rs[m].node)];
          if (fast && fast_extremum(rs[m])) {
            Value* inf = bound(rs[m], x->getType());
            x = b_.CreateSelect(is_max(rs[m]) ? b_.CreateFCmpOLT(x, inf) : b_.CreateFCmpOGT(x, inf), x, inf);
            acc[m] = b_.CreateBinaryIntrinsic(is_max(rs[m]) ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum,
                                              acc[m], x);
            llvm::cast<llvm::Instruction>(acc[m])->setFastMathFlags(no_nans);
          } else {
            acc[m] = narrow[m] ? emit_reduce_combine(b_, *rs[m].reduce, acc[m], x, rs[m].dtype)
                               : combine_element(rs[m], acc[m], x);
          }
        }
      }
      for (size_t m = 0; m < rs.size(); ++m) {
        Value* value = narrow[m] ? acc[m] : final_value(rs[m], acc[m]);
        if (fast && fast_extremum(rs[m])) odd = b_.CreateOr(odd, odd_extreme(rs[m], value));
        b_.CreateStore(value, block_value_ptr(static_cast<size_t>(pass_phases[q][m])));
      }
    }
    reducers_ = nullptr;
    return odd;
  };
  llvm::AllocaInst* any_odd = entry_alloca(b_.getInt1Ty());
  b_.CreateStore(b_.getFalse(), any_odd);
  across_lo_ = lo;
  each_row(lo, lo, hi, [&] {
    Value* odd = run_row(true);
    b_.CreateStore(b_.CreateOr(b_.CreateLoad(b_.getInt1Ty(), any_odd), odd), any_odd);
    if (row_outputs) row_outputs();
  });
  across_lo_ = nullptr;
  if (!any_fast) {
    stage_block_out(lo, hi);
    return;
  }
  auto* rerun = llvm::BasicBlock::Create(ctx_, "across.rerun", function_);
  auto* done = llvm::BasicBlock::Create(ctx_, "across.done", function_);
  llvm::MDNode* unlikely = llvm::MDBuilder(ctx_).createUnlikelyBranchWeights();
  b_.CreateCondBr(b_.CreateLoad(b_.getInt1Ty(), any_odd), rerun, done, unlikely);
  b_.SetInsertPoint(rerun);
  each_row(lo, lo, hi, [&] {
    Value* odd = b_.getFalse();
    for (size_t q = 0; q < pass_reducers.size(); ++q)
      for (size_t m = 0; m < pass_reducers[q].size(); ++m) {
        const PlanOutput& o = pass_reducers[q][m];
        if (!fast_extremum(o)) continue;
        const size_t k = static_cast<size_t>(pass_phases[q][m]);
        odd = b_.CreateOr(odd, odd_extreme(o, b_.CreateLoad(block_values_[k]->getAllocatedType(), block_value_ptr(k))));
      }
    auto* exact = llvm::BasicBlock::Create(ctx_, "across.exact", function_);
    auto* next = llvm::BasicBlock::Create(ctx_, "across.next", function_);
    b_.CreateCondBr(odd, exact, next, unlikely);
    b_.SetInsertPoint(exact);
    run_row(false);
    if (row_outputs) row_outputs();
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  });
  scalar_loops_.insert(latches_.back());
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
  stage_block_out(lo, hi);
}

// ---- across rows on AVX2: a block's rows staged through column-major buffers ----
//
// Across rows the vectorized loop's lanes are 8 rows, so a row-major array's point j of
// each is 8 strided loads (AVX2 has no cheap gather: a scalar load and an insert each)
// and each output point 8 extracts and scalar stores: about a third of a cross-entropy
// gradient's loop over rows of 10 floats. Instead, before the loop, each group of 8 rows
// of an input is loaded as row vectors of 8 points (every 8 points, and a last one
// ending at the row's end: staged_starts), each 8 transposed in registers (an 8 x 8
// shuffle network) and stored as column vectors into a block's column-major buffer,
// which the loop then reads at unit stride; the outputs go the other way (their rows'
// overlapping points stored twice, the same values). Rows of the block past its last
// whole group are copied point by point.
// Over 1.6e6 floats in rows of 10 on the 2-core Zen 3, best of 4 alternating runs, us:
// layer norm 806 -> 357, cross-entropy 777 -> 559, its gradient 808 -> 612, logsumexp
// 556 -> 498, softmax 814 -> 631; rows of 8 and 9 no slower.

namespace {

constexpr int kStagedLanes = 8;

// Where a staged row's vectors of 8 points start: every 8 points, and c - 8 where the
// vectors do not divide the row (its last vector overlapping the one before).
std::vector<int64_t> staged_starts(int64_t c) {
  std::vector<int64_t> starts;
  for (int64_t at = 0; at + kStagedLanes <= c; at += kStagedLanes) starts.push_back(at);
  if (c % kStagedLanes != 0) starts.push_back(c - kStagedLanes);
  return starts;
}

// The transpose of 8 vectors of 8 lanes: AVX's in-lane unpacks, then in-lane pair
// shuffles, then 128-bit halves (24 shuffles, each one instruction).
std::vector<Value*> transpose8(llvm::IRBuilder<>& b, const std::vector<Value*>& rows) {
  auto shuffle = [&](Value* x, Value* y, std::initializer_list<int> mask) {
    return b.CreateShuffleVector(x, y, llvm::ArrayRef<int>(mask.begin(), mask.size()));
  };
  std::vector<Value*> t(8), s(8), c(8);
  for (int k = 0; k < 4; ++k) {  // t: (r0 r1) interleaved within each 128-bit half
    t[2 * k] = shuffle(rows[2 * k], rows[2 * k + 1], {0, 8, 1, 9, 4, 12, 5, 13});
    t[2 * k + 1] = shuffle(rows[2 * k], rows[2 * k + 1], {2, 10, 3, 11, 6, 14, 7, 15});
  }
  for (int h = 0; h < 2; ++h)  // s: 4 rows' points j, j + 4 (a column's halves, 4 rows each)
    for (int k = 0; k < 2; ++k) {
      s[4 * h + 2 * k] = shuffle(t[4 * h + k], t[4 * h + k + 2], {0, 1, 8, 9, 4, 5, 12, 13});
      s[4 * h + 2 * k + 1] = shuffle(t[4 * h + k], t[4 * h + k + 2], {2, 3, 10, 11, 6, 7, 14, 15});
    }
  for (int j = 0; j < 4; ++j) {  // columns j and j + 4: the first 4 rows' half, then the last 4's
    c[j] = shuffle(s[j], s[4 + j], {0, 1, 2, 3, 8, 9, 10, 11});
    c[j + 4] = shuffle(s[j], s[4 + j], {4, 5, 6, 7, 12, 13, 14, 15});
  }
  return c;
}

}  // namespace

// Whether a rows kernel's short rows run across rows (rows(), across): rows of
// kAcrossRowsMin points and more, up to kAcrossRowsMax (kStagedAcrossRowsMax where every
// load along the row is staged), of 4-byte elements. Over large inputs too: their loop
// over the block's rows reads them in order, which the hardware prefetcher follows, and
// along the row, with a prefetching pass, they ran 2.5x as long (a cross-entropy over
// rows of 10 floats: 0.94 ms over 200000 rows, 2.47 over 210000, past kPrefetchMinBytes).
bool LoopEmitter::runs_across_rows() const {
  const size_t nd = plan_.dims.size();
  return one_reduced_dim() && widest_itemsize() <= 4 && plan_.dims[nd - 1] >= kAcrossRowsMin &&
         plan_.dims[nd - 1] <= (stages_every_row_load() ? kStagedAcrossRowsMax : kAcrossRowsMax);
}

// Whether every load that varies along the row is one across_passes stages (so rows of
// up to kStagedAcrossRowsMax points run across rows).
bool LoopEmitter::stages_every_row_load() const {
  bool any = false;
  for (const PlanNode& node : plan_.nodes) {
    if (node.kind != PlanNode::Kind::Load || node.index.coef.empty() || node.index.coef.back() == 0) continue;
    if (!stages_across(node.dtype, node.index)) return false;
    any = true;
  }
  return any;
}

// Whether across_passes stages an array of this dtype and index map: rows of c points,
// 8 <= c <= kStagedAcrossRowsMax, row-major and contiguous, of 4-byte elements filling
// AVX2's 8 lanes (AVX-512's masked loads and stores read and write its rows in place).
bool LoopEmitter::stages_across(DType dtype, const Affine& index) const {
  const int64_t c = plan_.dims.back();
  return !host_masks_vectors() && host_vector_bytes() == kStagedLanes * 4 && itemsize(dtype) == 4 &&
         plan_.dims.size() == 2 && plan_.num_kept == 1 && c >= kStagedLanes && c <= kStagedAcrossRowsMax &&
         index.coef.size() == 2 && index.coef[0] == c && index.coef[1] == 1;
}

// The buffers of the loads the passes (and the row outputs, `row_output_nodes`) read and
// of the outputs stored across rows.
void LoopEmitter::plan_staging(const std::vector<std::vector<PlanOutput>>& pass_reducers,
                               const std::vector<char>& row_output_nodes) {
  staged_loads_.clear();
  staged_outputs_.clear();
  const size_t n = plan_.nodes.size();
  std::vector<char> read = row_output_nodes;
  read.resize(n, 0);
  for (size_t q = 0; q < pass_reducers.size(); ++q) {
    std::vector<int> targets;
    for (const PlanOutput& r : pass_reducers[q]) targets.push_back(r.node);
    select(targets, static_cast<int>(q));
    for (size_t i = 0; i < n; ++i) read[i] = read[i] || needed_[i];
  }
  const int64_t block_rows = std::max<int64_t>(1, plan_.schedule.chunk_rows);
  auto buffer = [&](DType dtype) {
    llvm::AllocaInst* a = entry_alloca(storage_type(ctx_, dtype), plan_.dims.back() * block_rows);
    a->setAlignment(llvm::Align(32));
    return a;
  };
  bool any = false;
  std::vector<llvm::AllocaInst*> loads(n, nullptr), outputs(plan_.outputs.size(), nullptr);
  for (size_t i = 0; i < n; ++i) {
    const PlanNode& node = plan_.nodes[i];
    if (read[i] && node.kind == PlanNode::Kind::Load && stages_across(node.dtype, node.index))
      loads[i] = buffer(node.dtype), any = true;
  }
  if (!row_output_nodes.empty())
    for (size_t m = 0; m < plan_.outputs.size(); ++m) {
      const PlanOutput& o = plan_.outputs[m];
      if (!o.per_row && stages_across(o.dtype, o.index)) outputs[m] = buffer(o.dtype), any = true;
    }
  if (any) staged_loads_ = std::move(loads), staged_outputs_ = std::move(outputs);
}

// The point of the current row (block_slot_) at `column` in a block's column-major buffer.
Value* LoopEmitter::staged_ptr(llvm::AllocaInst* buffer, DType dtype, Value* column) {
  const int64_t block_rows = std::max<int64_t>(1, plan_.schedule.chunk_rows);
  Value* at = b_.CreateAdd(b_.CreateMul(column, c64(block_rows), "", true, true), block_slot_, "", true, true);
  return b_.CreateInBoundsGEP(storage_type(ctx_, dtype), buffer, at);
}

// Copies the block's rows [lo, hi) of each staged load into its column buffer.
void LoopEmitter::stage_block_in(Value* lo, Value* hi) {
  for (size_t i = 0; i < staged_loads_.size(); ++i)
    if (llvm::AllocaInst* buffer = staged_loads_[i]) {
      const PlanNode& node = plan_.nodes[i];
      transpose_block(lo, hi, buffer, ins_[static_cast<size_t>(node.input)], node.index, node.dtype, true);
    }
}

// Stores each staged output's column buffer into the block's rows [lo, hi); the staging
// ends (loads and outputs address the arrays again).
void LoopEmitter::stage_block_out(Value* lo, Value* hi) {
  std::vector<llvm::AllocaInst*> outputs = std::move(staged_outputs_);
  staged_outputs_.clear();
  staged_loads_.clear();
  for (size_t m = 0; m < outputs.size(); ++m)
    if (outputs[m]) transpose_block(lo, hi, outputs[m], outs_[m], plan_.outputs[m].index, plan_.outputs[m].dtype, false);
}

// The block's rows [lo, hi) of a row-major array (rows at `index`) into its column
// buffer (`into_buffer`), or the buffer into them: 8 rows at a time through transpose8,
// the rows past the last whole 8 point by point.
void LoopEmitter::transpose_block(Value* lo, Value* hi, llvm::AllocaInst* buffer, Value* array, const Affine& index,
                                  DType dtype, bool into_buffer) {
  const int64_t c = plan_.dims.back(), block_rows = std::max<int64_t>(1, plan_.schedule.chunk_rows);
  llvm::Type* t = storage_type(ctx_, dtype);
  auto* vec = llvm::FixedVectorType::get(t, kStagedLanes);
  auto row_ptr = [&](Value* u, int64_t j) {
    return b_.CreateInBoundsGEP(t, b_.CreateInBoundsGEP(t, array, affine(index, {u, c64(0)})), c64(j));
  };
  auto column_ptr = [&](int64_t j, Value* slot) {
    return b_.CreateInBoundsGEP(t, buffer, b_.CreateAdd(c64(j * block_rows), slot, "", true, true));
  };
  Value* groups = b_.CreateUDiv(b_.CreateSub(hi, lo, "", true, true), c64(kStagedLanes));
  loop(c64(0), groups, [&](Value* g) {
    Value* slot = b_.CreateMul(g, c64(kStagedLanes), "", true, true);
    Value* first = b_.CreateAdd(lo, slot, "", true, true);
    auto row = [&](int64_t r) { return b_.CreateAdd(first, c64(r), "", true, true); };
    // Each vector of 8 points of the rows (staged_starts), of which a column buffer takes
    // those the vectors before did not (the rows take all: the same values again).
    int64_t covered = 0;  // points of the row the vectors before this one moved
    for (int64_t from : staged_starts(c)) {
      std::vector<Value*> vectors(kStagedLanes);
      for (int64_t k = 0; k < kStagedLanes; ++k)
        vectors[static_cast<size_t>(k)] =
            b_.CreateAlignedLoad(vec, into_buffer ? row_ptr(row(k), from) : column_ptr(from + k, slot), llvm::Align(4));
      const std::vector<Value*> transposed = transpose8(b_, vectors);
      for (int64_t k = into_buffer ? covered - from : 0; k < kStagedLanes; ++k)
        b_.CreateAlignedStore(transposed[static_cast<size_t>(k)],
                              into_buffer ? column_ptr(from + k, slot) : row_ptr(row(k), from), llvm::Align(4));
      covered = from + kStagedLanes;
    }
  });
  scalar_loops_.insert(latches_.back());
  loop(b_.CreateAdd(lo, b_.CreateMul(groups, c64(kStagedLanes), "", true, true), "", true, true), hi, [&](Value* u) {
    Value* slot = b_.CreateSub(u, lo, "", true, true);
    for (int64_t j = 0; j < c; ++j) {
      Value* from = into_buffer ? row_ptr(u, j) : column_ptr(j, slot);
      b_.CreateStore(b_.CreateLoad(t, from), into_buffer ? column_ptr(j, slot) : row_ptr(u, j));
    }
  });
  scalar_loops_.insert(latches_.back());
}

// Before a block's full-shape outputs (unpipelined), or a later pass's reductions, the
// nodes they need that do not vary along the row and cost a division or more (a
// log_softmax's log of the row's sum, a normalization's rsqrt) are computed once per
// row into row buffers, in a loop over the block's rows that vectorizes across them;
// the outputs' (reductions') loops read them there. Left to LLVM, each was hoisted out
// of its row's loop as a scalar: a log per row through eager's one-element math call
// (jx_vm_log) was a third of a log_softmax over 160000 x 10 floats, and half of a
// cross-entropy's rows kernel, which picks its label's log-probability in a third pass.
// Selects the targets' nodes of `pass` again, stopping at the row values.
void LoopEmitter::hoist_row_values(const std::vector<int>& targets, int pass, Value* lo, Value* hi, std::vector<Value*>& idx,
                      const EachRow& each_row) {
  const size_t n = plan_.nodes.size();
  hoisted_.clear();
  const std::vector<char> varies = varies_along_reduced();
  // The cost of each row-invariant op with the row-invariant ops under it: a log's sum
  // with the row's shift (log(s) + m) is worth hoisting whole.
  std::vector<int64_t> invariant_cost(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const PlanNode& node = plan_.nodes[i];
    if (varies[i] || node.kind != PlanNode::Kind::Op) continue;
    invariant_cost[i] = op_cost(*node.eqn->primitive);
    for (int o : node.operands) invariant_cost[i] += invariant_cost[static_cast<size_t>(o)];
  }
  const std::vector<char> hoist = hoistable(targets, varies, [&](size_t o) { return invariant_cost[o] >= 2; });
  compute_hoisted(hoist, std::max<int64_t>(1, plan_.schedule.chunk_rows), pass, targets, idx,
                  [&](const std::function<void()>& body) { each_row(lo, lo, hi, body); });
}

// Per node: whether its value varies along the reduced dims (a load or iota reading
// them, an operand stashed per point, or an op of such). A stage may hoist the others.
std::vector<char> LoopEmitter::varies_along_reduced() const {
  const size_t nd = plan_.dims.size(), nk = static_cast<size_t>(plan_.num_kept), n = plan_.nodes.size();
  std::vector<char> varies(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const PlanNode& node = plan_.nodes[i];
    if (node.kind == PlanNode::Kind::Load || node.kind == PlanNode::Kind::Iota)
      for (size_t d = nk; d < nd; ++d) varies[i] = varies[i] || node.index.coef[d] != 0;
    varies[i] = varies[i] || (!loaded_.empty() && loaded_[i]);
    for (int o : node.operands) varies[i] = varies[i] || varies[static_cast<size_t>(o)];
  }
  return varies;
}

// The needed ops that do not vary along the reduced dims but feed ones that do (or are
// targets), among those `worth` accepts.
std::vector<char> LoopEmitter::hoistable(const std::vector<int>& targets, const std::vector<char>& varies,
                            const std::function<bool(size_t)>& worth) const {
  const size_t n = plan_.nodes.size();
  auto wanted = [&](size_t o) {
    return needed_[o] && !varies[o] && plan_.nodes[o].kind == PlanNode::Kind::Op && worth(o);
  };
  std::vector<char> hoist(n, 0);
  for (size_t i = 0; i < n; ++i)
    if (needed_[i] && varies[i])
      for (int o : plan_.nodes[i].operands) hoist[static_cast<size_t>(o)] = hoist[static_cast<size_t>(o)] || wanted(static_cast<size_t>(o));
  for (int t : targets) hoist[static_cast<size_t>(t)] = hoist[static_cast<size_t>(t)] || wanted(static_cast<size_t>(t));
  return hoist;
}

// Computes the `hoist` nodes once per slot of a block (a column or a row) into buffers
// of `slots` elements, in the loop each_slot runs, and marks them hoisted (eval reads
// them there at block_slot_); then selects `targets` of `pass` again.
void LoopEmitter::compute_hoisted(std::vector<char> hoist, int64_t slots, int pass, const std::vector<int>& targets,
                     std::vector<Value*>& idx, const std::function<void(const std::function<void()>&)>& each_slot) {
  const size_t nd = plan_.dims.size(), nk = static_cast<size_t>(plan_.num_kept), n = plan_.nodes.size();
  std::vector<int> nodes;
  for (size_t i = 0; i < n; ++i)
    if (hoist[i]) nodes.push_back(static_cast<int>(i));
  if (nodes.empty()) return;
  if (column_values_.empty()) column_values_.assign(n, nullptr);
  for (int h : nodes)
    if (!column_values_[static_cast<size_t>(h)]) {
      llvm::BasicBlock& entry = function_->getEntryBlock();
      llvm::IRBuilder<> at(&entry, entry.begin());
      column_values_[static_cast<size_t>(h)] =
          at.CreateAlloca(value_type(ctx_, plan_.nodes[static_cast<size_t>(h)].dtype), c64(slots));
    }
  select(nodes, pass);
  for (size_t d = nk; d < nd; ++d) idx[d] = c64(0);  // the hoisted nodes do not read them
  each_slot([&] {
    std::vector<Value*> v = eval(idx);
    for (int h : nodes) {
      llvm::AllocaInst* buffer = column_values_[static_cast<size_t>(h)];
      b_.CreateStore(v[static_cast<size_t>(h)], b_.CreateInBoundsGEP(buffer->getAllocatedType(), buffer, block_slot_));
    }
  });
  hoisted_ = std::move(hoist);
  select(targets, pass);
}

// ---- columns kernels ----

// Blocks of columns (kernel_plan.h: LoopSchedule::Mode::Columns). A unit owns columns
// [jb, je) of the innermost kept dim, as column_reduce's do. Columns of at most
// kShortColumnRows reduced points run one column at a time (short_column); longer
// ones pass over the block: each pass of phases accumulates over the reduced dims into
// a column buffer per phase (one element per column), its inner loop along the
// columns, and rounds it into the phase's block values, which RowValue nodes read at
// the column's slot; then the full-shape outputs run over the reduced dims and the
// block, and the per-row ones over the block.
void LoopEmitter::columns(Value* begin, Value* end) {
  const size_t nd = plan_.dims.size(), nk = static_cast<size_t>(plan_.num_kept);
  const int64_t inner = plan_.dims[nk - 1], block = plan_.schedule.column_block;
  const int64_t blocks = (inner + block - 1) / block;
  int64_t reduced = 1;
  for (size_t d = nk; d < nd; ++d) reduced *= plan_.dims[d];
  const bool short_columns = reduced <= kShortColumnRows;
  std::vector<llvm::AllocaInst*> column_accs;
  for (const PlanPhase& ph : plan_.phases) {
    llvm::BasicBlock& entry = function_->getEntryBlock();
    llvm::IRBuilder<> at(&entry, entry.begin());
    block_values_.push_back(at.CreateAlloca(value_type(ctx_, ph.dtype), c64(short_columns ? 1 : block)));
    if (!short_columns) column_accs.push_back(at.CreateAlloca(value_type(ctx_, column_acc_dtype(ph, reduced)), c64(block)));
  }
  std::vector<Value*> idx(nd, nullptr);
  loop(begin, end, [&](Value* u) {
    Value* jb = b_.CreateMul(b_.CreateURem(u, c64(blocks)), c64(block));
    Value* je = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(jb, c64(block)), c64(inner));
    decompose(b_.CreateUDiv(u, c64(blocks)), 0, nk - 1, idx);
    // body() at every column j of the block, block_slot_ its place in the block.
    auto each_column = [&](const std::function<void()>& body) {
      loop(jb, je, [&](Value* j) {
        idx[nk - 1] = j;
        block_slot_ = short_columns ? c64(0) : b_.CreateSub(j, jb, "", true, true);
        body();
        block_slot_ = nullptr;
      });
      column_loops_.emplace(latches_.back(), short_columns);
    };
    if (short_columns) {
      each_column([&] { short_column(idx, reduced); });
    } else {
      for (int pass = 0; pass < plan_.num_passes; ++pass) column_pass(pass, idx, reduced, column_accs, each_column);
      store_column_outputs(idx, [&](const std::function<void()>& body) { nest(nk, idx, [&] { each_column(body); }); },
                           each_column, true);
    }
    needed_.clear();
    loaded_.clear();
    hoisted_.clear();
  });
}

// Over at most kWideColumnRows reduced elements a float32 sum adds in float32, as
// column_reduce's partial rows do (as exact as eager's sum of so few terms): widening
// each term to double cost the leapfrog step (sums over 3 rows) more than its loads,
// a conversion per term on one port.
DType LoopEmitter::column_acc_dtype(const PlanPhase& ph, int64_t reduced) const {
  return reduced <= kWideColumnRows ? ph.dtype : accumulator_dtype(phase_reducer(ph));
}

PlanOutput LoopEmitter::phase_reducer(const PlanPhase& ph) {
  PlanOutput r;
  r.node = ph.node;
  r.dtype = ph.dtype;
  r.reduce = ph.reduce;
  return r;
}

// Before a stage's loops over the reduced dims (a pass of phases, or the outputs), the
// nodes it needs that do not vary over the reduced dims but feed ones that do (a mean
// subtracted, the rsqrt of a variance) are computed once per column into column
// buffers, which the loops then read: the rows schedule leaves those to LLVM, which
// hoists a row's invariants out of its loop, but here the columns are the inner loop.
// Recomputed per element, the sqrt and division of a 1000 x 1000 standardization over
// axis 0 cost it 0.62 ms against 0.50 as four kernels. Selects the stage's nodes.
void LoopEmitter::hoist_column_values(const std::vector<int>& targets, int pass, std::vector<Value*>& idx,
                         const std::function<void(const std::function<void()>&)>& each_column) {
  hoisted_.clear();
  select(targets, pass);
  const std::vector<char> hoist = hoistable(targets, varies_along_reduced(), [](size_t) { return true; });
  compute_hoisted(hoist, plan_.schedule.column_block, pass, targets, idx, each_column);
}

std::vector<size_t> LoopEmitter::phases_of_pass(int pass) const {
  std::vector<size_t> phases;
  for (size_t k = 0; k < plan_.phases.size(); ++k)
    if (plan_.phases[k].pass == pass) phases.push_back(k);
  return phases;
}

std::vector<int> LoopEmitter::phase_nodes(const std::vector<size_t>& phases) const {
  std::vector<int> nodes;
  for (size_t k : phases) nodes.push_back(plan_.phases[k].node);
  return nodes;
}

Value* LoopEmitter::block_value_ptr(size_t k) {
  return b_.CreateInBoundsGEP(block_values_[k]->getAllocatedType(), block_values_[k], block_slot_);
}

// One pass of phases over a block of columns into their column buffers, then their
// block values.
void LoopEmitter::column_pass(int pass, std::vector<Value*>& idx, int64_t reduced, const std::vector<llvm::AllocaInst*>& accs,
                 const std::function<void(const std::function<void()>&)>& each_column) {
  const size_t nk = static_cast<size_t>(plan_.num_kept);
  const std::vector<size_t> phases = phases_of_pass(pass);
  hoist_column_values(phase_nodes(phases), pass, idx, each_column);
  auto acc_ptr = [&](size_t k) { return b_.CreateInBoundsGEP(accs[k]->getAllocatedType(), accs[k], block_slot_); };
  each_column([&] {
    for (size_t k : phases)
      b_.CreateStore(reduction_identity(b_, *plan_.phases[k].reduce, column_acc_dtype(plan_.phases[k], reduced)), acc_ptr(k));
  });
  nest(nk, idx, [&] {
    each_column([&] {
      std::vector<Value*> v = eval(idx);
      for (size_t k : phases) {
        const PlanPhase& ph = plan_.phases[k];
        const DType a = column_acc_dtype(ph, reduced);
        Value* p = acc_ptr(k);
        Value* x = emit_convert(b_, v[static_cast<size_t>(ph.node)], ph.dtype, a);
        b_.CreateStore(emit_reduce_combine(b_, *ph.reduce, b_.CreateLoad(accs[k]->getAllocatedType(), p), x, a), p);
      }
    });
  });
  each_column([&] {
    for (size_t k : phases) {
      const PlanPhase& ph = plan_.phases[k];
      Value* acc = b_.CreateLoad(accs[k]->getAllocatedType(), acc_ptr(k));
      b_.CreateStore(emit_convert(b_, acc, column_acc_dtype(ph, reduced), ph.dtype), block_value_ptr(k));
    }
  });
}

// The full-shape outputs at every point full_points() visits, then the per-row ones at
// every column each_column() visits.
// hoist: the block schedule (hoist_column_values before the full-shape outputs' loops).
void LoopEmitter::store_column_outputs(std::vector<Value*>& idx, const std::function<void(const std::function<void()>&)>& full_points,
                          const std::function<void(const std::function<void()>&)>& each_column, bool hoist) {
  const size_t nd = plan_.dims.size(), nk = static_cast<size_t>(plan_.num_kept);
  std::vector<int> full, per_row;
  for (const PlanOutput& o : plan_.outputs) (o.per_row ? per_row : full).push_back(o.node);
  auto store = [&](bool rows) {
    std::vector<Value*> v = eval(idx);
    for (size_t m = 0; m < plan_.outputs.size(); ++m)
      if (plan_.outputs[m].per_row == rows)
        store_element(b_, v[static_cast<size_t>(plan_.outputs[m].node)], out_ptr(m, idx), plan_.outputs[m].dtype);
  };
  if (!full.empty()) {
    if (hoist)
      hoist_column_values(full, plan_.num_passes, idx, each_column);
    else
      select(full, plan_.num_passes);
    full_points([&] { store(false); });
  }
  if (!per_row.empty()) {
    hoisted_.clear();
    select(per_row, plan_.num_passes);
    for (size_t d = nk; d < nd; ++d) idx[d] = c64(0);  // per-row values do not read the reduced dims
    each_column([&] { store(true); });
  }
}

// The whole program at one column (idx[nk - 1]), its reduced points unrolled: the loop
// over the columns holds straight-line code, which the vectorizer runs along the
// columns, and in which LLVM's value numbering shares what the passes and the outputs
// recompute (each input element is loaded once). The leapfrog step (two sums over 3
// rows of 1024 floats and the work between them): 0.70 us as four kernels, 0.58-0.65
// as one over blocks of columns, 0.xx as this.
void LoopEmitter::short_column(std::vector<Value*>& idx, int64_t reduced) {
  const size_t nd = plan_.dims.size(), nk = static_cast<size_t>(plan_.num_kept);
  auto each_point = [&](const std::function<void()>& body) {
    for (int64_t flat = 0; flat < reduced; ++flat) {
      int64_t rest = flat;
      for (size_t d = nd; d-- > nk;) {
        idx[d] = c64(rest % plan_.dims[d]);
        rest /= plan_.dims[d];
      }
      body();
    }
  };
  for (int pass = 0; pass < plan_.num_passes; ++pass) {
    const std::vector<size_t> phases = phases_of_pass(pass);
    select(phase_nodes(phases), pass);
    std::vector<Value*> accs;
    for (size_t k : phases) accs.push_back(reduction_identity(b_, *plan_.phases[k].reduce, plan_.phases[k].dtype));
    each_point([&] {
      std::vector<Value*> v = eval(idx);
      for (size_t m = 0; m < phases.size(); ++m) {
        const PlanPhase& ph = plan_.phases[phases[m]];
        accs[m] = emit_reduce_combine(b_, *ph.reduce, accs[m], v[static_cast<size_t>(ph.node)], ph.dtype);
      }
    });
    for (size_t m = 0; m < phases.size(); ++m) b_.CreateStore(accs[m], block_value_ptr(phases[m]));
  }
  store_column_outputs(idx, each_point, [&](const std::function<void()>& body) { body(); }, false);
}

}  // namespace jx::compiler::codegen::detail
