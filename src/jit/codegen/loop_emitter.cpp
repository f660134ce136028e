// Loop kernels' LLVM IR (loop_emitter.h): the kernel's functions and their loop hints, the
// loop building blocks, node evaluation, and the elementwise and reduction schedules; the
// rows and columns schedules are rows_emitter.cpp.
#include "jit/codegen/loop_emitter.h"

#include <bit>
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include "jit/codegen/llvm_session.h"
#include "jit/codegen/module_target.h"
#include "jit/codegen/scalar_ops.h"
#include "jit/codegen/streaming_stores.h"
#include "jit/codegen/loop_emitter_internal.h"

namespace jx::compiler::codegen {
namespace detail {
namespace {

// Which loops of a function call a vector math function (jx_vm_*), which combine a
// float max or min reduction (llvm.maximum / llvm.minimum, reductions.cpp's max_step),
// and which test an inline function's rare path (jx_rare.*, scalar_ops.h), found once
// per function through LLVM's loop analysis; a loop's blocks include its
// inner loops'.
class LoopCalls {
 public:
  explicit LoopCalls(llvm::Function& f) : tree_(f), loops_(tree_) {
    for (llvm::BasicBlock& block : f)
      for (llvm::Instruction& inst : block)
        if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst)) {
          llvm::Function* callee = call->getCalledFunction();
          if (!callee) continue;
          if (callee->getName().starts_with("jx_vm_")) calling_.insert(&block);
          if (is_rare_path(*callee)) testing_rare_.insert(&block);
          const llvm::Intrinsic::ID id = callee->getIntrinsicID();
          if (id == llvm::Intrinsic::maximum || id == llvm::Intrinsic::minimum) extremum_.insert(&block);
        }
  }
  bool calls_vector_math(llvm::BasicBlock* latch_block) const { return holds(calling_, latch_block); }
  bool reduces_extremum(llvm::BasicBlock* latch_block) const { return holds(extremum_, latch_block); }
  bool tests_rare_paths(llvm::BasicBlock* latch_block) const { return holds(testing_rare_, latch_block); }

 private:
  bool holds(const std::set<const llvm::BasicBlock*>& blocks, llvm::BasicBlock* latch_block) const {
    const llvm::Loop* loop = loops_.getLoopFor(latch_block);
    if (!loop) return false;
    for (llvm::BasicBlock* block : loop->blocks())
      if (blocks.count(block)) return true;
    return false;
  }

  llvm::DominatorTree tree_;
  llvm::LoopInfo loops_;
  std::set<const llvm::BasicBlock*> calling_, extremum_, testing_rare_;
};

}  // namespace

void LoopEmitter::emit() {
  // A large body (kernel_plan.h: long, or chaining several transcendentals) calls its
  // inline math (scalar_ops.h's outlined math): a 250-op chain of mul/add/sin/sub/tanh
  // spent 80% of its code generation on the inline tanh, and 2000 ops compiled in 213 ms
  // instead of about 90; it runs within a few percent (its dependent chain, not the
  // calls, bounds it).
  if (large_body(plan_)) set_module_outlines_math(module_);
  llvm::Function* body = emit_body();
  emit_entry(body);
  if (plan_.schedule.mode == Mode::FullReduce) {
    std::vector<int> all(plan_.outputs.size());
    for (size_t m = 0; m < all.size(); ++m) all[m] = static_cast<int>(m);
    emit_finish(all);
  }
  if (!plan_.schedule.totals.empty()) emit_finish(plan_.schedule.totals);
  if (plan_.schedule.row_parts > 1) emit_column_finish();
  annotate_loops();
}

int64_t LoopEmitter::row_points() const {
  const size_t nk = static_cast<size_t>(plan_.num_kept);
  switch (plan_.schedule.mode) {
    case Mode::ColumnReduce: return std::min(plan_.schedule.column_block, plan_.dims[nk - 1]);
    case Mode::RowReduce:
    case Mode::Rows: return plan_.dims.empty() ? 1 : plan_.dims.back();
    default: return int64_t{1} << 40;
  }
}

// Full registers, or fewer lanes where the loops are shorter, or half a register where
// that covers a short loop's points and a full one does not (24 floats: three vectors
// of 8, not one of 16 and 8 points scalar). A whole_row loop (a rows kernel's outputs)
// of more than half a register's points runs as one masked register: rows of 10
// floats as one vector of 16 instead of 8 and 2 (a cross-entropy's gradient over
// 160000 x 10: 0.80 -> 0.67 ms, softmax 0.65 -> 0.61); row reductions kept the halves
// (a row max over rows of 10: 0.15 -> 0.20 ms as one register).
// Without AVX-512 a masked store is AVX2's vmaskmovps, which costs about five plain
// stores on AMD's Zen 3 (llvm_session.h, host_masks_vectors), and a loop LLVM folds
// its tail into masks for masks every vector: there a loop that stores runs whole
// vectors, then its rest in power-of-two pieces (points_loop), and rows across rows
// store their outputs in the loop across rows (rows()). Over 1.6e6 floats on the
// 2-core Zen 3, us, masked -> not: rows of 100, softmax 2374 -> 1127, layer norm 2690
// -> 1190, cross-entropy gradient 2516 -> 1077; of 21, 1555 -> 1205, 741 -> 583, 1657
// -> 1399; of 10, 2440 -> 1172, -, 2663 -> 1246.
bool LoopEmitter::masked_stores_cheap() { return host_masks_vectors(); }

int64_t LoopEmitter::vector_width_for_loops(int64_t lanes, bool whole_row) const {
  const int64_t points = loop_points();
  int64_t width = lanes;
  while (width > 1 && width > points && !(whole_row && 2 * points > lanes)) width /= 2;
  if (width > 1 && points < 4 * width && points % width != 0 && points % (width / 2) == 0) width /= 2;
  return width;
}

// An interleave count for vectors of `width`, at most `wanted`. A short loop takes the
// count that leaves the fewest points to the scalar remainder (the largest such); a
// column reduction's short last block counts where it holds a vector of `width` (a
// shorter one is left to the remainder).
int64_t LoopEmitter::fit_interleave(int64_t width, int64_t wanted) const {
  int64_t points = loop_points();
  if (plan_.schedule.mode == Mode::ColumnReduce) {
    const int64_t last = plan_.dims[static_cast<size_t>(plan_.num_kept) - 1] % plan_.schedule.column_block;
    if (last >= width) points = std::min(points, last);
  }
  if (points >= 4 * width * wanted) return wanted;
  int64_t best = 1;
  for (int64_t ic = 1; ic <= wanted; ++ic)
    if (points / (width * ic) * (width * ic) >= points / (width * best) * (width * best)) best = ic;
  return best;
}

// Loop hints for the vectorizer. An elementwise loop's lanes and interleaving are the
// plan's (kernel_plan.cpp, vector_blocks: four independent vectors per iteration hide
// the latency of a fused body's dependent chain, calls included). Otherwise a loop
// whose body calls a vector math function gets no interleaving: every vector register
// is caller-saved, so results of interleaved iterations are spilled around each call
// (measured: a jitted sin over 4M floats ran 20% slower than eager's
// one-call-per-vector loop). Loops of plain arithmetic keep LLVM's choice (reductions
// need several accumulators to hide latency). A large body
// (more than 64 ops: a long fused chain) gets its vector width fixed at one register
// of its widest element and no interleaving: LLVM 19 builds and destroys a VPlan per
// candidate width, at a cost superlinear in the body (a 2000-op chain spent 75% of a
// 4 s compile there), and its own choice ran a 200-op chain of sin/tanh/mul/add/sub
// over 65536 floats in 13 ms against 6.5 ms at the full width.
//
// A float32 reduction accumulates in double, and LLVM sizes its vectors for the double
// accumulator: 4 floats a vector on AVX2, so the body's float arithmetic ran at half
// width (a row sum of exp over 4096 x 4096 floats took 9.0 ms against 2.0 ms for the
// plain sum; sum(x + 2y + z^2) over 1.6e7 floats 7.0 ms, now 5.6). A reduction with
// float32 ops in its body gets a full register of floats, its accumulator spanning two
// registers; a plain sum of loads keeps LLVM's choice (it is memory-bound either way).
//
// Whether a loop calls is decided per loop: a rows kernel calls log once per row,
// outside its reduction loops, and a max reduction held to one accumulator by that
// call's hint ran a serial chain (logsumexp over 65536 x 128 floats: 3.3 ms).
//
// A float32 reduction whose terms call inline math with a rare path (exp: a sum of exp,
// softmax's and logsumexp's passes) is interleaved four times: its dependent chain
// (about 12 fma-latency steps per vector) leaves the out-of-order window short of
// independent work, and once the vectorized parts share one rare-path test
// (scalar_ops.cpp, share_rare_tests) the code generator interleaves their chains.
// On the 2-core Zen 1, against LLVM's two: softmax 4096 x 4096 13.4 -> 12.8 ms,
// 128 x 65536 7.6 -> 6.7; logsumexp 10.1 -> 8.9, 5.5 -> 4.8 (65536 x 128), 5.2 -> 4.5;
// a full sum of exp over 2^24 floats 9.1 -> 8.1.
//
// A loop of fewer points than its width times its interleave never runs a vector
// iteration: the vectorizer left a column reduction's loop over a block of fewer than
// 64 columns scalar with a width of 16 floats interleaved four times (a sum of exp over
// 100000 x 16 floats ran at 1.8 ns a float), and a row reduction's over rows of fewer
// than 64 (the same sum over axis 1: 1.4 ms for 1.6e6 floats, 0.23 at 64 a row). So
// where loops are short (a block's columns, a row) the width is at most their points
// (rounded down to a power of 2), and the interleave the count that leaves the fewest
// of them to the scalar remainder (fit_interleave).
//
// A float max or min reduction gets more vector accumulators than LLVM's four: on AVX2
// each step of llvm.maximum is a dependent chain of blends, a max and a compare, and a
// row max of 65536 x 128 floats was bound by that chain, not by memory (2.3-2.5 ms on 2
// threads, the row sum 1.5; single-threaded 4.0 against 2.6). See below.
void LoopEmitter::annotate_loops() {
  const int64_t ops = body_ops();
  const int64_t widest = widest_itemsize();
  const bool large = large_body(plan_);
  const int64_t interleave = plan_.schedule.interleave;  // 1 but for elementwise loops (vector_blocks)
  bool wide_accumulator = false;
  for (const PlanOutput& o : plan_.outputs)
    wide_accumulator = wide_accumulator || (o.reduce && o.dtype == DType::Float32);
  for (const PlanPhase& ph : plan_.phases) wide_accumulator = wide_accumulator || ph.dtype == DType::Float32;
  const bool float_arithmetic_reduction =
      plan_.kind != KernelPlan::Kind::Loop && wide_accumulator && widest == 4 && ops > 0;
  // value -1: a hint of its name alone (llvm.loop.unroll.disable); 0 or 1 for an enable flag.
  auto hint = [&](std::vector<llvm::Metadata*>& hints, const char* name, int64_t value) {
    if (value < 0) {
      hints.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, name)}));
      return;
    }
    llvm::Metadata* kv[] = {llvm::MDString::get(ctx_, name),
                            std::string_view(name).ends_with(".enable")
                                ? llvm::ConstantAsMetadata::get(b_.getInt1(value != 0))
                                : llvm::ConstantAsMetadata::get(b_.getInt32(static_cast<uint32_t>(value)))};
    hints.push_back(llvm::MDNode::get(ctx_, kv));
  };
  // A kernel over fewer elements than one vector holds never runs a vector iteration:
  // its loops are left scalar, which spares the vectorizer and the code generator the
  // vector body, its checks and remainder (a 4-element x * 3 compiled in 7.0 ms, now
  // 3.6-3.9; the first jitted call of a process 11-14 -> 7.2-7.7 ms). Its machine code,
  // a few scalar iterations, comes from LLVM's fast code generator (llvm_session.cpp):
  // a 1-element x + y * c compiled in 2.0-2.3 ms, then 0.8-0.9.
  int64_t elements = 1;
  for (int64_t d : plan_.dims) elements *= d;
  if (elements < host_vector_bytes() / widest) {
    set_module_quick_codegen(module_);
    for (llvm::BranchInst* latch : latches_) {
      llvm::Metadata* kv[] = {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                              llvm::ConstantAsMetadata::get(b_.getFalse())};
      std::vector<llvm::Metadata*> hints = {nullptr, llvm::MDNode::get(ctx_, kv)};
      set_loop_hints(latch, hints);
    }
    return;
  }
  std::map<llvm::Function*, std::unique_ptr<LoopCalls>> loops_of;
  for (llvm::BranchInst* latch : latches_) {
    if (scalar_loops_.contains(latch)) {
      std::vector<llvm::Metadata*> hints = {nullptr};
      hint(hints, "llvm.loop.vectorize.enable", 0);
      set_loop_hints(latch, hints);
      continue;
    }
    if (plan_.schedule.across_rows) {  // the loop over rows is the vector loop
      std::vector<llvm::Metadata*> hints = {nullptr};
      hint(hints, "llvm.loop.vectorize.enable", 1);
      hint(hints, "llvm.loop.vectorize.width", plan_.schedule.vector_lanes);
      hint(hints, "llvm.loop.interleave.count", 1);
      set_loop_hints(latch, hints);
      continue;
    }
    llvm::Function* f = latch->getFunction();
    auto& loops = loops_of[f];
    if (!loops) loops = std::make_unique<LoopCalls>(*f);
    const bool calls = loops->calls_vector_math(latch->getParent());
    if (plan_.schedule.mode == Mode::Columns) {
      // A columns kernel vectorizes its loops over a block's columns, never unrolled
      // before (a block of 16 columns, its trip count known, was unrolled and the loop
      // over 100000 reduced rows around it vectorized with gathers: 1.3 ms against 0.4),
      // in full vectors interleaved twice at most (four left the 36-column last block
      // of 64 x 100 floats to the scalar remainder: 5.1 -> 6.8 us; larger shapes are
      // level from 1 to 4), and not at all where the body is the whole program
      // (short_column). Its other loops run across memory and stay scalar.
      std::vector<llvm::Metadata*> hints = {nullptr};
      if (auto c = column_loops_.find(latch); c != column_loops_.end()) {
        const int64_t lanes = host_lanes();
        const int64_t columns = std::min(plan_.schedule.column_block, plan_.dims[static_cast<size_t>(plan_.num_kept) - 1]);
        hint(hints, "llvm.loop.unroll.disable", -1);
        hint(hints, "llvm.loop.vectorize.width", lanes);
        hint(hints, "llvm.loop.interleave.count",
             calls || large || c->second ? 1 : std::clamp<int64_t>(columns / lanes, 1, kColumnInterleave));
      } else {
        hint(hints, "llvm.loop.vectorize.enable", 0);
      }
      set_loop_hints(latch, hints);
      continue;
    }
    const auto split = split_points_.find(latch);
    split_points_now_ = split == split_points_.end() ? 0 : split->second.points;
    const bool extremum = !calls && !large && loops->reduces_extremum(latch->getParent());
    // A loop over rows (or a reduction's units) is not over a row's points: its width is
    // a full register's (the per-row log of a logsumexp over rows of 24 floats, held to
    // the row's 8 lanes, found no vector log of that width and ran scalar: 1.1 ms
    // against 0.27 at rows of 32).
    const bool over_rows = unit_loops_.contains(latch);
    const bool short_row = !over_rows && (short_rows() || split != split_points_.end());
    if (!short_row && !calls && !large && !float_arithmetic_reduction && !extremum && interleave == 1) continue;
    std::vector<llvm::Metadata*> hints = {nullptr};
    if (short_row) {
      // Not unrolled before it is vectorized; the vector loop LLVM may unroll (a row of
      // 128 floats is 8 vectors, whose loop it unrolls whole).
      hint(hints, "llvm.loop.unroll.disable", -1);
      llvm::Metadata* vectorized[] = {llvm::MDString::get(ctx_, "llvm.loop.isvectorized"),
                                      llvm::ConstantAsMetadata::get(b_.getInt32(1))};
      llvm::Metadata* followup[] = {llvm::MDString::get(ctx_, "llvm.loop.vectorize.followup_all"),
                                    llvm::MDNode::get(ctx_, vectorized)};
      hints.push_back(llvm::MDNode::get(ctx_, followup));
    }
    const int64_t lanes = host_lanes();
    if (extremum) {
      hint(hints, "llvm.loop.interleave.count", fit_interleave(lanes, extremum_accumulators(widest)));
    } else if (interleave > 1 && split == split_points_.end()) {  // (a split loop's hints are its own)
      // A large body: one vector of `interleave` registers (kernel_plan.h,
      // kLargeBodyVectors), but where it calls libmvec, whose variants are one register
      // wide (a wider vector would call it per lane): a loop over the block's vectors.
      const int64_t registers = large && !calls ? interleave : 1;
      hint(hints, "llvm.loop.interleave.count", large ? 1 : interleave);
      hint(hints, "llvm.loop.vectorize.width", plan_.schedule.vector_lanes * registers);
    } else {
      const bool rest = split != split_points_.end() && split->second.rest;  // one vector, masked if need be
      // Where masked stores are dear, a storing loop's rest is pieces of a power of two
      // points (points_loop), each exactly one vector.
      const bool unmasked = !masked_stores_cheap() && storing_loops_.contains(latch);
      const int64_t rest_width = unmasked ? std::bit_floor(static_cast<uint64_t>(loop_points()))
                                          : std::bit_ceil(static_cast<uint64_t>(loop_points()));
      int64_t width = over_rows ? lanes
                            : rest    ? std::min<int64_t>(lanes, rest_width)
                                      : vector_width_for_loops(lanes, output_loops_.contains(latch) && masked_stores_cheap());
      // A large body reduced along rows (or whole) of whole blocks of kLargeBodyVectors
      // registers runs them as one vector, as an elementwise one (kernel_plan.cpp,
      // vector_blocks): a row sum of a 200-op chain over 256 x 256 floats, one register a
      // vector, was bound by the chain's latency (1.19 ms; with 2 tanh, one a call, 0.70),
      // on four registers 0.39 (0.23), for a first call 10-20 ms longer.
      const bool along_rows = plan_.schedule.mode == Mode::RowReduce || plan_.schedule.mode == Mode::FullReduce;
      if (large && !calls && along_rows && !over_rows && split == split_points_.end() && width == lanes &&
          loop_points() % (lanes * kLargeBodyVectors) == 0)
        width = lanes * kLargeBodyVectors;
      if (calls || large) {
        hint(hints, "llvm.loop.interleave.count", 1);
      } else if (float_arithmetic_reduction && loops->tests_rare_paths(latch->getParent())) {
        hint(hints, "llvm.loop.interleave.count", fit_interleave(width, kRarePathInterleave));
      }
      if (large || float_arithmetic_reduction || short_row) hint(hints, "llvm.loop.vectorize.width", width);
      if (short_row && loop_points() % width != 0 && !unmasked) hint(hints, "llvm.loop.vectorize.predicate.enable", 1);
    }
    set_loop_hints(latch, hints);
    split_points_now_ = 0;
  }
}

// Attaches hints (their first slot left for the loop ID itself) as the loop's metadata.
void LoopEmitter::set_loop_hints(llvm::BranchInst* latch, std::vector<llvm::Metadata*>& hints) {
  llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, hints);
  id->replaceOperandWith(0, id);
  latch->setMetadata(llvm::LLVMContext::MD_loop, id);
}

// Whether the loops over a row's points (Rows, RowReduce) are short: at least half a
// register of the widest element and at most kShortRowPoints. Their vector hints then
// hold them as loops: LLVM unrolled a row of 24 floats whole (its trip count known) and
// vectorized the loop over rows around it with a gather per element (a row max over
// 66666 x 24 floats: 0.27 ms, 0.11 as a loop), and a row whose points its vectors do not
// divide runs its last vector masked instead of a scalar remainder (the sum of exp over
// rows of 28 floats: 16 points a vector, 12 scalar, 1.3 ms; masked 0.27).
bool LoopEmitter::short_rows() const {
  if (plan_.schedule.mode != Mode::Rows && plan_.schedule.mode != Mode::RowReduce) return false;
  const int64_t points = row_points(), half = host_vector_bytes() / widest_itemsize() / 2;
  return points >= std::max<int64_t>(2, half) && points <= kShortRowPoints;
}

// Bytes of the plan's widest element type.
int64_t LoopEmitter::widest_itemsize() const {
  int64_t widest = 1;
  for (const PlanNode& n : plan_.nodes) widest = std::max<int64_t>(widest, itemsize(n.dtype));
  return widest;
}

int64_t LoopEmitter::body_ops() const {
  int64_t ops = 0;
  for (const PlanNode& n : plan_.nodes) ops += n.kind == PlanNode::Kind::Op;
  return ops;
}

llvm::Function* LoopEmitter::new_function(const std::string& name, llvm::FunctionType* type, bool internal) {
  auto* f = llvm::Function::Create(
      type, internal ? llvm::GlobalValue::InternalLinkage : llvm::GlobalValue::ExternalLinkage, name, module_);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  set_host_attributes(*f);
  return f;
}

// The loops live in a function whose data pointers are parameters marked noalias
// (outputs never alias inputs), which the entry function inlines; after inlining the
// vectorizer still knows that stores to outputs do not change what inputs read. An
// output written over an input (PlanOutput::over_input, a donated buffer) is stored
// through that input's parameter, so the aliasing is in the IR: the stores keep their
// order after the loads of the same element, which noalias would let LLVM break.
llvm::Function* LoopEmitter::emit_body() {
  const size_t nin = plan_.input_dtypes.size(), nout = plan_.outputs.size();
  std::vector<llvm::Type*> params(nin + nout, ptr_);
  params.push_back(i64_);
  params.push_back(i64_);
  llvm::Function* f = new_function("jx_kernel_body", llvm::FunctionType::get(b_.getVoidTy(), params, false), true);
  f->addFnAttr(llvm::Attribute::AlwaysInline);
  std::vector<bool> written(nin, false);
  for (const PlanOutput& o : plan_.outputs)
    if (o.over_input >= 0) written[static_cast<size_t>(o.over_input)] = true;
  for (size_t i = 0; i < nin + nout; ++i) {
    f->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);
    f->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoCapture);
    if (i < nin && !written[i]) f->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::ReadOnly);
  }
  function_ = f;
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
  for (size_t i = 0; i < nin; ++i) ins_.push_back(f->getArg(static_cast<unsigned>(i)));
  for (size_t i = 0; i < nout; ++i) {
    const int over = plan_.outputs[i].over_input;
    outs_.push_back(over >= 0 ? ins_[static_cast<size_t>(over)] : f->getArg(static_cast<unsigned>(nin + i)));
  }
  Value* begin = f->getArg(static_cast<unsigned>(nin + nout));
  Value* end = f->getArg(static_cast<unsigned>(nin + nout + 1));
  switch (plan_.schedule.mode) {
    case Mode::Elementwise: elementwise(begin, end); break;
    case Mode::RowReduce: row_reduce(begin, end); break;
    case Mode::ColumnReduce: column_reduce(begin, end); break;
    case Mode::FullReduce: full_reduce(begin, end); break;
    case Mode::Rows: rows(begin, end); break;
    case Mode::Columns: columns(begin, end); break;
  }
  b_.CreateRetVoid();
  return f;
}

void LoopEmitter::emit_entry(llvm::Function* body) {
  llvm::Function* f = new_function(kernel_symbol(key_), llvm::FunctionType::get(b_.getVoidTy(), {ptr_, ptr_, i64_, i64_}, false), false);
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
  std::vector<Value*> args;
  auto pointers = [&](Value* array, size_t n, bool outputs) {
    for (size_t i = 0; i < n; ++i) {
      llvm::LoadInst* p = b_.CreateLoad(ptr_, b_.CreateConstInBoundsGEP1_64(ptr_, array, i));
      if (outputs && streamed(plan_.outputs[i])) mark_streamed_output(*p);
      args.push_back(p);
    }
  };
  pointers(f->getArg(0), plan_.input_dtypes.size(), false);
  pointers(f->getArg(1), plan_.outputs.size(), true);
  args.push_back(f->getArg(2));
  args.push_back(f->getArg(3));
  b_.CreateCall(body, args);
  b_.CreateRetVoid();
}

bool LoopEmitter::streamed(const PlanOutput& o) const {
  const bool memory_bound = plan_.schedule.mode == Mode::Rows || plan_.schedule.mode == Mode::Columns ||
                            (plan_.schedule.mode == Mode::Elementwise && plan_.schedule.cost <= kStreamedElementwiseCost);
  if (!memory_bound || o.reduce || o.per_row) return false;
  // A rows kernel's rows run across rows store each point alone, never a whole
  // register, and a loop along rows not of whole registers mixes streamed and plain
  // stores in its lines: the plain store reads a line that the streamed ones write
  // around it, and the write-combining buffers flush part lines (on the 2-core Zen 3, a
  // cross-entropy's gradient over 640000 rows of 10 floats: 27.5 ms streamed, 8.2
  // plain; over 64000 rows of 100: 12.7 against 4.3; a softmax over 41944 rows of 100:
  // 8.6-8.8 against 2.0-2.3; x * 2 + b over 4096 x 1001 floats 0.93-0.95 against
  // 0.85-0.91). Long rows lose nothing measurable (a softmax over 1031 x 4099 floats,
  // 1.9-2.5 ms streamed, 2.2-2.4 plain).
  if (plan_.schedule.mode == Mode::Rows && runs_across_rows()) return false;
  if (plan_.schedule.mode != Mode::Columns && plan_.dims.size() > 1 &&
      (plan_.dims.back() * itemsize(o.dtype)) % host_vector_bytes() != 0)
    return false;
  double bytes = static_cast<double>(itemsize(o.dtype));
  for (int64_t d : plan_.dims) bytes *= static_cast<double>(d);
  return bytes >= static_cast<double>(kStreamedOutputBytes);
}

// The accumulators of a float max or min reduction loop: a short row (up to 16
// vectors) gets one per vector, so its steps form a tree (65536 x 128 floats on the
// 2-core Zen 1: 2.3-2.5 -> 1.8 ms); a longer one gets 8 (4096 x 4096: 3.6 -> 3.3 ms,
// where 16 gave 3.4).
int64_t LoopEmitter::extremum_accumulators(int64_t widest) const {
  const int64_t lanes = std::max<int64_t>(1, host_vector_bytes() / widest);
  const int64_t row = plan_.dims.empty() ? 1 : plan_.dims.back();
  if (row <= 16 * lanes) return std::clamp<int64_t>(row / lanes, 1, 16);
  return 8;
}

// Combines the partials of `outputs` (one per unit, or per block of a rows kernel's
// totals), in order.
void LoopEmitter::emit_finish(const std::vector<int>& outputs) {
  llvm::Function* f = new_function(finish_symbol(key_), llvm::FunctionType::get(b_.getVoidTy(), {ptr_, ptr_, i64_}, false), false);
  function_ = f;
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
  for (int output : outputs) {
    const size_t m = static_cast<size_t>(output);
    const PlanOutput& o = plan_.outputs[m];
    Value* partials = b_.CreateLoad(ptr_, b_.CreateConstInBoundsGEP1_64(ptr_, f->getArg(0), m));
    Value* out = b_.CreateLoad(ptr_, b_.CreateConstInBoundsGEP1_64(ptr_, f->getArg(1), m));
    const DType a = accumulator_dtype(o);  // the partials' dtype
    llvm::AllocaInst* acc = entry_alloca(value_type(ctx_, a));
    b_.CreateStore(reduction_identity(b_, *o.reduce, a), acc);
    loop(c64(0), f->getArg(2), [&](Value* c) {
      Value* x = load_element(b_, b_.CreateInBoundsGEP(storage_type(ctx_, a), partials, c), a);
      b_.CreateStore(emit_reduce_combine(b_, *o.reduce, b_.CreateLoad(acc->getAllocatedType(), acc), x, a), acc);
    });
    store_element(b_, emit_convert(b_, b_.CreateLoad(acc->getAllocatedType(), acc), a, o.dtype), out, o.dtype);
  }
  b_.CreateRetVoid();
}

// A column reduction's partial results, row_parts of kept_elements per output in the
// accumulator's dtype (LoopSchedule::row_parts), combined in part order into the first
// part's (the inner loop along the columns), then rounded into the output.
void LoopEmitter::emit_column_finish() {
  llvm::Function* f = new_function(finish_symbol(key_), llvm::FunctionType::get(b_.getVoidTy(), {ptr_, ptr_, i64_}, false), false);
  function_ = f;
  b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
  const int64_t kept = plan_.schedule.kept_elements;
  for (size_t m = 0; m < plan_.outputs.size(); ++m) {
    const PlanOutput& o = plan_.outputs[m];
    Value* partials = b_.CreateLoad(ptr_, b_.CreateConstInBoundsGEP1_64(ptr_, f->getArg(0), m));
    Value* out = b_.CreateLoad(ptr_, b_.CreateConstInBoundsGEP1_64(ptr_, f->getArg(1), m));
    const DType a = accumulator_dtype(o);
    llvm::Type* t = storage_type(ctx_, a);
    loop(c64(1), f->getArg(2), [&](Value* p) {
      Value* part = b_.CreateInBoundsGEP(t, partials, b_.CreateMul(p, c64(kept), "", true, true));
      loop(c64(0), c64(kept), [&](Value* k) {
        Value* into = b_.CreateInBoundsGEP(t, partials, k);
        Value* x = load_element(b_, b_.CreateInBoundsGEP(t, part, k), a);
        store_element(b_, emit_reduce_combine(b_, *o.reduce, load_element(b_, into, a), x, a), into, a);
      });
    });
    loop(c64(0), c64(kept), [&](Value* k) {
      Value* x = load_element(b_, b_.CreateInBoundsGEP(t, partials, k), a);
      store_element(b_, emit_convert(b_, x, a, o.dtype), b_.CreateInBoundsGEP(storage_type(ctx_, o.dtype), out, k),
                    o.dtype);
    });
  }
  b_.CreateRetVoid();
}

// ---- loop building blocks ----

llvm::AllocaInst* LoopEmitter::entry_alloca(llvm::Type* type, int64_t count) {
  llvm::BasicBlock& entry = function_->getEntryBlock();
  llvm::IRBuilder<> at(&entry, entry.begin());
  return count == 1 ? at.CreateAlloca(type) : at.CreateAlloca(type, c64(count));
}

// for (i = lo; i < hi; ++i) body(i)
void LoopEmitter::loop(Value* lo, Value* hi, const std::function<void(Value*)>& body) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx_, "loop", function_);
  auto* block = llvm::BasicBlock::Create(ctx_, "body", function_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "exit", function_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* i = b_.CreatePHI(i64_, 2);
  i->addIncoming(lo, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(i, hi), block, exit);
  b_.SetInsertPoint(block);
  body(i);
  i->addIncoming(b_.CreateAdd(i, c64(1), "", true, true), b_.GetInsertBlock());
  latches_.push_back(b_.CreateBr(head));
  if (storing_points_) storing_loops_.insert(latches_.back());
  b_.SetInsertPoint(exit);
}

// A loop over a short row's points [lo, hi) (constant bounds: short_rows) whose points
// cost a transcendental or more, and whose count the vector width does not divide into
// two or more whole vectors: the whole vectors in one loop, unmasked, and the rest in a
// second loop (annotate_loops gives each its own point count: the rest runs as one
// vector, masked where it is not a power of two). One loop was masked at every vector,
// its mask computed each time (six instructions of the 30 a vector of a logsumexp's
// exp took over rows of 100 floats). Over 1.6e6 floats, us: rows of 70, softmax 540 ->
// 381, logsumexp 409 -> 250, cross-entropy 440 -> 282; of 100, softmax 425 -> 369,
// logsumexp 288 -> 228, cross-entropy 314 -> 255, its gradient 709 -> 650; of 130,
// softmax 473 -> 371, logsumexp 331 -> 227. Cheap points keep one loop (a layer norm's
// plain sums over rows of 70: 318 -> 416 split, their second horizontal sum costing
// more than the masks saved).
//
// A body that may see a point twice (`overlapping`: a max or min, which a point's second
// time leaves as it was, beside integer sums that add a seen point's term as 0, reading
// seen_below_; or repeatable_points_: reductions whose terms at seen points accumulate()
// replaces by the identity, stores of the same values again) where masks are dear
// (AVX2: each vector's mask was 14 instructions of 64-bit compares and packs, then a
// vmaskmovps load or store) runs its whole vectors, then one more full vector ending at
// the row's end, over points the whole vectors already saw.
// Only loops of 8 whole vectors or more (kOverlapMinVectors): LLVM unrolls shorter ones
// whole, their masks constant, and there the second loop's horizontal reduction cost
// more (a layer norm over rows of 21 and 50: 15-25% slower overlapping). Over 1.6e6
// floats on the 2-core Zen 3, us, masked -> overlapping: rows of 100, softmax about
// 1050 -> 740, logsumexp 750 -> 520, cross-entropy gradient 1320 -> 750 (its row max
// had been a third of its time), layer norm 1050 -> 400 (its two sums); rows of 130,
// 890 -> 690, 720 -> 520, 1060 -> 700; rows of 150, layer norm 990 -> 400.
void LoopEmitter::points_loop(Value* lo, Value* hi, const std::function<void(Value*)>& body, bool overlapping) {
  const auto* clo = llvm::dyn_cast<llvm::ConstantInt>(lo);
  const auto* chi = llvm::dyn_cast<llvm::ConstantInt>(hi);
  const bool elementwise = plan_.schedule.mode == Mode::Elementwise;
  const bool unmasked = storing_points_ && !masked_stores_cheap() && short_rows();
  if (!clo || !chi || !(short_rows() || elementwise) || !(costly_points() || unmasked)) {
    // One loop, which LLVM masks at every vector where its vectors do not divide it.
    if ((overlapping || repeatable_points_) && clo && chi && short_rows() && !host_masks_vectors()) {
      const int64_t first = clo->getSExtValue(), n = chi->getSExtValue() - first, width = host_lanes();
      if (n >= kOverlapMinVectors * width && n % width != 0) {
        const int64_t whole_end = first + n - n % width;
        loop(lo, c64(whole_end), body);
        split_points_[latches_.back()] = {n - n % width, false};
        seen_below_ = whole_end;
        loop(c64(first + n - width), hi, body);
        seen_below_ = -1;
        split_points_[latches_.back()] = {width, true};
        return;
      }
    }
    return loop(lo, hi, body);
  }
  const int64_t first = clo->getSExtValue(), n = chi->getSExtValue() - first;
  const int64_t lanes = host_lanes();
  const int64_t width = elementwise ? lanes : vector_width_for_loops(lanes, !unmasked);
  const int64_t whole = n - n % width;
  if (unmasked && whole != n) {
    // A storing loop where masked stores are dear: its whole vectors, then its rest in
    // pieces of a power of two points, each one vector (LLVM folds the rest of a loop
    // of fewer than 16 points into a masked vector).
    int64_t at = first;
    auto piece = [&](int64_t points, bool rest) {
      loop(c64(at), c64(at + points), body);
      split_points_[latches_.back()] = {points, rest};
      at += points;
    };
    if (whole > 0) piece(whole, false);
    while (at < first + n) piece(static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(first + n - at))), true);
    return;
  }
  // A rows kernel's row of one vector and a rest keeps its one masked loop; an
  // elementwise row's rest was LLVM's scalar remainder (over rows of 31 floats, 15
  // inline sines a row), so it splits from one whole vector, up to the short rows'
  // length (longer rows' remainders are a small part).
  if (whole == n || whole < (elementwise ? width : 2 * width) || (elementwise && n > kShortRowPoints))
    return loop(lo, hi, body);
  loop(lo, c64(first + whole), body);
  split_points_[latches_.back()] = {whole, false};
  loop(c64(first + whole), hi, body);
  split_points_[latches_.back()] = {n - whole, true};
}

// The multi-index over dims[first, last) of a row-major flat index.
void LoopEmitter::decompose(Value* flat, size_t first, size_t last, std::vector<Value*>& idx) {
  for (size_t d = last; d-- > first;) {
    if (d == first) {
      idx[d] = flat;
    } else {
      idx[d] = b_.CreateURem(flat, c64(plan_.dims[d]));
      flat = b_.CreateUDiv(flat, c64(plan_.dims[d]));
    }
  }
}

// Loops over dims[d, ndim) (the reduced dims), then body().
void LoopEmitter::nest(size_t d, std::vector<Value*>& idx, const std::function<void()>& body) {
  if (d == plan_.dims.size()) return body();
  auto point = [&](Value* i) {
    idx[d] = i;
    nest(d + 1, idx, body);
  };
  if (d + 1 == plan_.dims.size()) points_loop(c64(0), c64(plan_.dims[d]), point);
  else loop(c64(0), c64(plan_.dims[d]), point);
}

Value* LoopEmitter::affine(const Affine& a, const std::vector<Value*>& idx) {
  Value* v = c64(a.offset);
  for (size_t d = 0; d < a.coef.size(); ++d)
    if (a.coef[d] != 0) v = b_.CreateAdd(v, b_.CreateMul(idx[d], c64(a.coef[d]), "", false, true), "", false, true);
  return v;
}

// Every node's value at the point idx (rows kernels: the nodes the current pass needs,
// stashed ones loaded from their row buffers).
std::vector<Value*> LoopEmitter::eval(const std::vector<Value*>& idx) {
  std::vector<Value*> v(plan_.nodes.size());
  for (size_t i = 0; i < plan_.nodes.size(); ++i) {
    const PlanNode& n = plan_.nodes[i];
    if (!needed_.empty() && !needed_[i]) continue;
    if (!loaded_.empty() && loaded_[i]) {
      v[i] = load_element(b_, stash_ptr(stash_of_node(static_cast<int>(i)), idx), n.dtype);
      continue;
    }
    if (hoisted(i)) {
      llvm::AllocaInst* buffer = column_values_[i];
      v[i] = b_.CreateLoad(buffer->getAllocatedType(), b_.CreateInBoundsGEP(buffer->getAllocatedType(), buffer, block_slot_));
      continue;
    }
    switch (n.kind) {
      case PlanNode::Kind::RowValue: {
        const size_t k = static_cast<size_t>(n.phase);
        v[i] = b_.CreateLoad(block_values_[k]->getAllocatedType(), block_value_ptr(k));
        break;
      }
      case PlanNode::Kind::Load: {
        v[i] = load_element(b_, load_ptr(n, idx), n.dtype);
        break;
      }
      case PlanNode::Kind::Iota: v[i] = emit_convert(b_, affine(n.index, idx), DType::Int64, n.dtype); break;
      case PlanNode::Kind::Literal: v[i] = emit_literal(b_, n.literal); break;
      case PlanNode::Kind::Op: {
        std::vector<Value*> operands;
        for (int o : n.operands) operands.push_back(v[static_cast<size_t>(o)]);
        v[i] = emit_scalar_op(b_, *n.eqn, operands);
        break;
      }
    }
  }
  return v;
}

// The address a load reads at idx. In across_passes (rows of one kept dim, the loop
// over a block's rows vectorized across them) the offset is split into the part that
// varies across the block's rows, a 32-bit slot (the row's, less the block's first, in
// 32 bits) times the row stride, and the rest, the same in every lane, so the gathers
// take 32-bit indices, 16 lanes a gather where 64-bit ones took 8 (rows of 10: 80
// gathers of 8 -> 40 of 16 for a block, about half the spills; over 160000 rows,
// logsumexp 263 -> 248 us, layer norm 349 -> 338, cross-entropy 306 -> 293, its
// gradient 578 -> 560).
Value* LoopEmitter::load_ptr(const PlanNode& n, const std::vector<Value*>& idx) {
  // across_passes on AVX2: the block's column buffer (n is one of the plan's nodes: eval).
  if (const auto node = static_cast<size_t>(&n - plan_.nodes.data()); node < staged_loads_.size())
    if (llvm::AllocaInst* staged = staged_loads_[node]) return staged_ptr(staged, n.dtype, idx.back());
  llvm::Type* t = storage_type(ctx_, n.dtype);
  Value* base = ins_[static_cast<size_t>(n.input)];
  const int64_t stride = n.index.coef.empty() ? 0 : n.index.coef[0];
  const int64_t block_rows = std::max<int64_t>(1, plan_.schedule.chunk_rows);
  // Strides of a power of two (a row value's 1, rows of 8) load whole vectors (and
  // shuffle them), which the vectorizer sees only through the plain 64-bit offset.
  const bool gathered = stride != 0 && !std::has_single_bit(static_cast<uint64_t>(std::abs(stride)));
  if (!across_lo_ || plan_.num_kept != 1 || !gathered || std::abs(stride) * block_rows >= (int64_t{1} << 31))
    return b_.CreateInBoundsGEP(t, base, affine(n.index, idx));
  std::vector<Value*> at = idx;
  at[0] = across_lo_;  // the block's first row: the uniform part
  // (Frozen: InstCombine would otherwise fold the sign extension of this truncation
  // back into 64-bit shifts, which the code generator does not take for 32-bit indices.)
  // (Frozen: InstCombine would otherwise fold the sign extension of this truncation
  // back into 64-bit shifts, which the code generator does not take for 32-bit indices.)
  Value* slot32 = b_.CreateFreeze(b_.CreateSub(b_.CreateTrunc(block_slot_row_, b_.getInt32Ty()),
                                               b_.CreateTrunc(across_lo_, b_.getInt32Ty()), "", false, true));
  Value* slot = b_.CreateMul(slot32, b_.getInt32(static_cast<uint32_t>(stride)), "", false, true);
  Value* row = b_.CreateInBoundsGEP(t, base, affine(n.index, at));
  return b_.CreateInBoundsGEP(t, row, b_.CreateSExt(slot, i64_));
}

Value* LoopEmitter::out_ptr(size_t m, const std::vector<Value*>& idx) {
  const PlanOutput& o = plan_.outputs[m];
  if (!staged_outputs_.empty() && staged_outputs_[m]) return staged_ptr(staged_outputs_[m], o.dtype, idx.back());
  return b_.CreateInBoundsGEP(storage_type(ctx_, o.dtype), outs_[m], affine(o.index, idx));
}

void LoopEmitter::store_outputs(const std::vector<Value*>& idx) {
  std::vector<Value*> v = eval(idx);
  for (size_t m = 0; m < plan_.outputs.size(); ++m)
    store_element(b_, v[static_cast<size_t>(plan_.outputs[m].node)], out_ptr(m, idx), plan_.outputs[m].dtype);
}

std::vector<llvm::AllocaInst*> LoopEmitter::accumulators() {
  std::vector<llvm::AllocaInst*> accs;
  for (const PlanOutput& o : reducers()) accs.push_back(entry_alloca(value_type(ctx_, accumulator_dtype(o))));
  return accs;
}

void LoopEmitter::reset(const std::vector<llvm::AllocaInst*>& accs) {
  for (size_t m = 0; m < accs.size(); ++m)
    b_.CreateStore(reduction_identity(b_, *reducers()[m].reduce, accumulator_dtype(reducers()[m])), accs[m]);
}

// acc' = combine(acc, x) for x an element of the output's dtype.
Value* LoopEmitter::combine_element(const PlanOutput& o, Value* acc, Value* x) {
  const DType a = accumulator_dtype(o);
  return emit_reduce_combine(b_, *o.reduce, acc, emit_convert(b_, x, o.dtype, a), a);
}

// narrow: accs hold the outputs' own dtype (reduce_innermost's float32 partials).
void LoopEmitter::accumulate(const std::vector<llvm::AllocaInst*>& accs, const std::vector<Value*>& idx, bool narrow) {
  std::vector<Value*> v = eval(idx);
  for (int phase : stores_)  // rows kernels: operands later passes load
    store_element(b_, v[static_cast<size_t>(plan_.phases[static_cast<size_t>(phase)].node)], stash_ptr(phase, idx),
                  plan_.phases[static_cast<size_t>(phase)].dtype);
  for (size_t m = 0; m < accs.size(); ++m) {
    const PlanOutput& o = reducers()[m];
    Value* acc = b_.CreateLoad(accs[m]->getAllocatedType(), accs[m]);
    Value* x = v[static_cast<size_t>(o.node)];
    if (seen_below_ >= 0)  // points_loop's overlapping last vector: a seen point adds the identity
      x = b_.CreateSelect(b_.CreateICmpSGE(idx.back(), c64(seen_below_)), x,
                          reduction_identity(b_, *o.reduce, o.dtype));
    b_.CreateStore(narrow ? emit_reduce_combine(b_, *o.reduce, acc, x, o.dtype) : combine_element(o, acc, x), accs[m]);
  }
}

// ---- the schedules (kernel_plan.h); rows and columns: rows_emitter.cpp ----

void LoopEmitter::elementwise(Value* begin, Value* end) {
  const size_t nd = plan_.dims.size();
  std::vector<Value*> idx(nd, nullptr);
  if (nd == 0) return store_outputs(idx);
  if (nd == 1)
    return loop(begin, end, [&](Value* i) {
      idx[0] = i;
      store_outputs(idx);
    });
  // Short rows (LoopSchedule::across_rows): the row's points in sequence in the body of
  // the loop over rows, which the vectorizer runs across rows.
  if (plan_.schedule.across_rows) {
    loop(begin, end, [&](Value* row) {
      decompose(row, 0, nd - 1, idx);
      for (int64_t j = 0; j < plan_.dims[nd - 1]; ++j) {
        idx[nd - 1] = c64(j);
        store_outputs(idx);
      }
    });
    return;
  }
  loop(begin, end, [&](Value* row) {
    decompose(row, 0, nd - 1, idx);
    points_loop(c64(0), c64(plan_.dims[nd - 1]), [&](Value* j) {
      idx[nd - 1] = j;
      store_outputs(idx);
    });
  });
}

void LoopEmitter::fold(const std::vector<llvm::AllocaInst*>& accs, const std::vector<llvm::AllocaInst*>& parts) {
  for (size_t m = 0; m < accs.size(); ++m) {
    const PlanOutput& o = reducers()[m];
    Value* acc = b_.CreateLoad(accs[m]->getAllocatedType(), accs[m]);
    Value* part = b_.CreateLoad(parts[m]->getAllocatedType(), parts[m]);
    b_.CreateStore(emit_reduce_combine(b_, *o.reduce, acc, part, accumulator_dtype(o)), accs[m]);
  }
}

// Accumulates the loop nest over dims[d, ndim) into accs. A long innermost dim is
// reduced in blocks, each into fresh accumulators folded into accs after it, so a float
// sum's error grows with the block, not the row (eager sums pairwise); the vectorizer
// still sees a plain reduction loop per block.
void LoopEmitter::reduce_nest(size_t d, std::vector<Value*>& idx, const std::vector<llvm::AllocaInst*>& accs) {
  const size_t nd = plan_.dims.size();
  if (d == nd) return accumulate(accs, idx);
  const int64_t n = plan_.dims[d];
  if (d + 1 < nd)
    return loop(c64(0), c64(n), [&](Value* i) {
      idx[d] = i;
      reduce_nest(d + 1, idx, accs);
    });
  if (n <= kReduceBlock) return reduce_innermost(d, c64(0), c64(n), idx, accs);
  auto parts = accumulators();
  loop(c64(0), c64((n + kReduceBlock - 1) / kReduceBlock), [&](Value* block) {
    reset(parts);
    Value* lo = b_.CreateMul(block, c64(kReduceBlock), "", true, true);
    Value* hi = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(lo, c64(kReduceBlock)), c64(n));
    reduce_innermost(d, lo, hi, idx, parts);
    fold(accs, parts);
  });
}

// The loop over the innermost reduced dim [lo, hi), accumulating into accs. It runs in
// chunks of kChunkBytes when this pass prefetches (prefetch_: each chunk first prefetches
// the same span of the next block's rows, so their first pass finds them in cache while
// this one computes) or sums narrow (narrow_sums_: each chunk sums float32 terms in
// float32 partials, added to the float64 accumulators once per chunk).
void LoopEmitter::reduce_innermost(size_t d, Value* lo, Value* hi, std::vector<Value*>& idx,
                      const std::vector<llvm::AllocaInst*>& accs) {
  // One point of the loop: its terms into `into` (narrow: the chunk partials), and the
  // pipelined outputs at that point.
  auto step = [&](Value* i, const std::vector<llvm::AllocaInst*>& into) {
    idx[d] = i;
    accumulate(into, idx, narrow_sums_);
    if (companion_) companion_(i);
  };
  if (prefetch_.empty() && !narrow_sums_) {
    if (extrema_alone()) return reduce_extrema_checked(d, lo, hi, idx, accs);
    return points_loop(lo, hi, [&](Value* i) { step(i, accs); });
  }
  const int64_t chunk = kChunkBytes / widest_itemsize();
  std::vector<llvm::AllocaInst*> parts = accs;  // narrow: float32 partials per chunk
  if (narrow_sums_) {
    parts.clear();
    for (const PlanOutput& o : reducers()) parts.push_back(entry_alloca(value_type(ctx_, o.dtype)));
  }
  auto run_chunk = [&](Value* clo, Value* chi) {
    for (const PrefetchStream& s : prefetch_) {
      // Prefetches never fault, so the last chunk's lines past the row are harmless.
      Value* first = b_.CreateGEP(storage_type(ctx_, s.dtype), s.next_row, clo);
      for (int64_t line = 0; line * kCacheLine < chunk * itemsize(s.dtype); ++line)
        b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {ptr_},
                           {b_.CreateConstGEP1_64(b_.getInt8Ty(), first, line * kCacheLine), b_.getInt32(0),
                            b_.getInt32(3), b_.getInt32(1)});
    }
    if (narrow_sums_)
      for (size_t m = 0; m < parts.size(); ++m)
        b_.CreateStore(reduction_identity(b_, *reducers()[m].reduce, reducers()[m].dtype), parts[m]);
    points_loop(clo, chi, [&](Value* i) { step(i, parts); });
    if (narrow_sums_)
      for (size_t m = 0; m < parts.size(); ++m) {
        Value* acc = b_.CreateLoad(accs[m]->getAllocatedType(), accs[m]);
        Value* part = b_.CreateLoad(parts[m]->getAllocatedType(), parts[m]);
        b_.CreateStore(combine_element(reducers()[m], acc, part), accs[m]);
      }
  };
  // A loop known to fit one chunk (a short row) runs as that chunk, its bounds constant:
  // in a loop of chunks, its start and min(end) varied with the chunk, and the
  // vectorizer, asked to prove the row's addresses do not wrap, gave up ("too many SCEV
  // assumptions": a softmax over rows of 24 floats computed its exp scalar).
  const auto* clo = llvm::dyn_cast<llvm::ConstantInt>(lo);
  const auto* chi = llvm::dyn_cast<llvm::ConstantInt>(hi);
  if (clo && chi && chi->getSExtValue() - clo->getSExtValue() <= chunk) return run_chunk(lo, hi);
  Value* chunks = b_.CreateUDiv(b_.CreateAdd(b_.CreateSub(hi, lo, "", true, true), c64(chunk - 1), "", true, true),
                                c64(chunk));
  loop(c64(0), chunks, [&](Value* c) {
    Value* start = b_.CreateAdd(lo, b_.CreateMul(c, c64(chunk), "", true, true), "", true, true);
    run_chunk(start, b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(start, c64(chunk), "", true, true), hi));
  });
}

// Whether this loop's reductions are all float max or min in their own dtype, with
// nothing else in the loop (no stash, no pipelined outputs): reduce_extrema_checked.
// Integer sums may join them (a cross-entropy's label pick beside its row max: exact
// whatever the order, so they accumulate in the fast loop and the exact rerun leaves
// them be; without this the pick cost the max its fast loop, 397 -> 482 us for a
// cross-entropy over 16000 x 100 floats).
bool LoopEmitter::extrema_alone() const {
  if (!stores_.empty() || companion_) return false;
  bool any = false;
  for (const PlanOutput& o : reducers()) {
    if (fast_extremum(o)) any = true;
    else if (!(monoid_of(o) == lowering::Monoid::kSum && is_integer(o.dtype))) return false;
  }
  return any;
}

bool LoopEmitter::fast_extremum(const PlanOutput& o) {
  const lowering::Monoid monoid = monoid_of(o);
  return (monoid == lowering::Monoid::kMax || monoid == lowering::Monoid::kMin) && is_floating(o.dtype) &&
         itemsize(o.dtype) >= 4 && accumulator_dtype(o) == o.dtype;
}

// A float max or min loop over [lo, hi) in two vector instructions per vector. IEEE
// maximum (llvm.maximum: NaN wins, +0 over -0), which the reduction means, is three
// blends, a compare and a max per vector on AVX2, and a row max ran at about 6 cycles
// per vector of 8 floats where the loads alone take one (softmax's first pass: 3.1 ms
// of 4096 x 4096 floats on the 2-core Zen 1). This loop reduces with maxnum (minnum)
// marked nnan nsz, x86's maxps, and keeps NaN from it in one of two ways:
//  - a row of up to kShortExtremaRow elements maps NaN to +inf (min: -inf) first, by
//    x86's minps (maxps), whose semantics (the second operand where the compare is
//    unordered) the select below spells exactly; a +inf result then reruns;
//  - a longer range sums its terms in a probe beside the max (a NaN term makes it NaN
//    whatever the order; inf - inf only reruns), which runs on the adders, where the
//    mapping competes with the max (4096-float rows 2.5% faster), but costs a
//    horizontal sum per range (65536 x 128 floats: the mapping 3% faster).
// Where NaN was met, or the result is a zero (whose sign maxps picks by operand
// order), the exact reduction reruns over the range; otherwise the fast result is the
// exact one (without NaN, the maximum of a set is one value, and only zeros have two
// encodings), combined into accs exactly.
void LoopEmitter::reduce_extrema_checked(size_t d, Value* lo, Value* hi, std::vector<Value*>& idx,
                            const std::vector<llvm::AllocaInst*>& accs) {
  const std::vector<PlanOutput>& rs = reducers();
  const bool probe = plan_.dims[d] > kShortExtremaRow;
  auto is_max = [](const PlanOutput& o) { return monoid_of(o) == lowering::Monoid::kMax; };
  auto infinity = [&](const PlanOutput& o, llvm::Type* t) { return llvm::ConstantFP::getInfinity(t, !is_max(o)); };
  std::vector<llvm::AllocaInst*> fast, probes;
  llvm::FastMathFlags no_nans, reorder;
  no_nans.setNoNaNs();
  no_nans.setNoSignedZeros();
  reorder.setAllowReassoc();
  for (const PlanOutput& o : rs) {
    if (!fast_extremum(o)) {  // an integer sum: accumulated straight into its accumulator
      fast.push_back(nullptr);
      if (probe) probes.push_back(nullptr);
      continue;
    }
    llvm::Type* t = value_type(ctx_, o.dtype);
    fast.push_back(entry_alloca(t));
    b_.CreateStore(reduction_identity(b_, *o.reduce, o.dtype), fast.back());
    if (!probe) continue;
    probes.push_back(entry_alloca(t));
    b_.CreateStore(llvm::ConstantFP::get(t, 0.0), probes.back());
  }
  points_loop(lo, hi, [&](Value* i) {
    idx[d] = i;
    std::vector<Value*> v = eval(idx);
    for (size_t m = 0; m < rs.size(); ++m) {
      const bool max = is_max(rs[m]);
      Value* x = v[static_cast<size_t>(rs[m].node)];
      if (!fast[m]) {
        if (seen_below_ >= 0)  // points_loop's overlapping last vector: a seen point adds the identity
          x = b_.CreateSelect(b_.CreateICmpSGE(i, c64(seen_below_)), x,
                              reduction_identity(b_, *rs[m].reduce, rs[m].dtype));
        b_.CreateStore(combine_element(rs[m], b_.CreateLoad(accs[m]->getAllocatedType(), accs[m]), x), accs[m]);
        continue;
      }
      if (probe) {
        Value* sum = b_.CreateFAdd(b_.CreateLoad(probes[m]->getAllocatedType(), probes[m]), x);
        llvm::cast<llvm::Instruction>(sum)->setFastMathFlags(reorder);
        b_.CreateStore(sum, probes[m]);
      } else {
        Value* bound = infinity(rs[m], x->getType());
        x = b_.CreateSelect(max ? b_.CreateFCmpOLT(x, bound) : b_.CreateFCmpOGT(x, bound), x, bound);
      }
      Value* acc = b_.CreateLoad(fast[m]->getAllocatedType(), fast[m]);
      Value* next = b_.CreateBinaryIntrinsic(max ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum, acc, x);
      llvm::cast<llvm::Instruction>(next)->setFastMathFlags(no_nans);
      b_.CreateStore(next, fast[m]);
    }
  }, /*overlapping=*/!probe);
  // With the probe, a NaN term makes the fast result poison (maxnum nnan): the zero test
  // reads it only where the probe is not NaN, through a select, which does not spread
  // the other arm's poison.
  Value* redo = b_.getFalse();
  std::vector<Value*> results;
  for (size_t m = 0; m < rs.size(); ++m) {
    if (!fast[m]) {
      results.push_back(nullptr);
      continue;
    }
    Value* result = b_.CreateLoad(fast[m]->getAllocatedType(), fast[m]);
    Value* odd = b_.CreateFCmpOEQ(result, llvm::ConstantFP::get(result->getType(), 0.0));
    if (probe) {
      Value* p = b_.CreateLoad(probes[m]->getAllocatedType(), probes[m]);
      odd = b_.CreateSelect(b_.CreateFCmpUNO(p, p), b_.getTrue(), odd);
    } else {
      odd = b_.CreateOr(odd, b_.CreateFCmpOEQ(result, infinity(rs[m], result->getType())));
    }
    redo = b_.CreateSelect(redo, b_.getTrue(), odd);
    results.push_back(result);
  }
  auto* exact = llvm::BasicBlock::Create(ctx_, "extrema.exact", function_);
  auto* combine = llvm::BasicBlock::Create(ctx_, "extrema.combine", function_);
  auto* done = llvm::BasicBlock::Create(ctx_, "extrema.done", function_);
  // Unlikely: without the weights LLVM computed a short row's exact rerun (an unrolled
  // fmaximum reduction, a long chain of compares on x86) for every row and selected
  // (a row max over 100000 x 16 floats: 0.48-0.62 ms, 0.1 at rows of 32).
  b_.CreateCondBr(redo, exact, combine, llvm::MDBuilder(ctx_).createUnlikelyBranchWeights());
  b_.SetInsertPoint(exact);
  loop(lo, hi, [&](Value* i) {  // the extrema only: the sums are complete
    idx[d] = i;
    std::vector<Value*> v = eval(idx);
    for (size_t m = 0; m < rs.size(); ++m)
      if (fast[m])
        b_.CreateStore(combine_element(rs[m], b_.CreateLoad(accs[m]->getAllocatedType(), accs[m]),
                                       v[static_cast<size_t>(rs[m].node)]),
                       accs[m]);
  });
  b_.CreateBr(done);
  b_.SetInsertPoint(combine);
  for (size_t m = 0; m < rs.size(); ++m) {
    if (!fast[m]) continue;
    Value* acc = b_.CreateLoad(accs[m]->getAllocatedType(), accs[m]);
    b_.CreateStore(emit_reduce_combine(b_, *rs[m].reduce, acc, results[m], rs[m].dtype), accs[m]);
  }
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

void LoopEmitter::row_reduce(Value* begin, Value* end) {
  narrow_sums_ = sums_narrow();
  const size_t nd = plan_.dims.size(), nk = static_cast<size_t>(plan_.num_kept);
  std::vector<Value*> idx(nd, nullptr);
  auto accs = accumulators();
  loop(begin, end, [&](Value* u) {
    decompose(u, 0, nk, idx);
    reset(accs);
    repeatable_points_ = true;  // reductions alone
    reduce_nest(nk, idx, accs);
    repeatable_points_ = false;
    for (size_t m = 0; m < accs.size(); ++m)
      store_element(b_, final_value(plan_.outputs[m], b_.CreateLoad(accs[m]->getAllocatedType(), accs[m])),
                    out_ptr(m, idx), plan_.outputs[m].dtype);
  });
  unit_loops_.insert(latches_.back());
}

// A unit owns outputs [jb, je) of the innermost kept dim (a row segment). Reduced rows
// are accumulated into a stack row `part` in blocks of about kColumnRows rows, each
// block then folded into the output, so the inner loop runs along memory and float
// sums grow their error with the block, not the column. Outputs accumulated in a wider
// dtype (float32 sums) fold into a stack row `total` of it instead, stored rounded at
// the end.
void LoopEmitter::column_reduce(Value* begin, Value* end) {
  const size_t nd = plan_.dims.size(), nk = static_cast<size_t>(plan_.num_kept);
  const int64_t inner = plan_.dims[nk - 1], block = plan_.schedule.column_block;
  const int64_t blocks = (inner + block - 1) / block;
  int64_t inner_rows = 1;
  for (size_t d = nk + 1; d < nd; ++d) inner_rows *= plan_.dims[d];
  // A widened output (float32 sum) accumulates one reduced row per block (inner_rows 1)
  // into a float32 `part` over kWideColumnRows rows, then into its float64 `total`: the
  // inner loop stays float (a float64 part row doubles its loads, stores and adds:
  // 4000x4000 column sums took 7.1 ms instead of 5.0; with float parts 6.0), and 8 float
  // additions in a row err at most about 3.5 ulp (0.2 measured on 0.1f copies), where
  // float32 folds of 256-row blocks erred 30. Otherwise `part` holds the accumulator's dtype.
  int64_t rows_per_block = std::max<int64_t>(1, kColumnRows / std::max<int64_t>(inner_rows, 1));
  std::vector<DType> part_dtypes;
  for (const PlanOutput& o : plan_.outputs) {
    const bool narrow_part = accumulator_dtype(o) != o.dtype && inner_rows == 1;
    part_dtypes.push_back(narrow_part ? o.dtype : accumulator_dtype(o));
    if (narrow_part) rows_per_block = kWideColumnRows;
  }
  const int64_t rows = plan_.dims[nk];
  // Split rows (LoopSchedule::row_parts): a unit is a block of one part of the rows, and
  // its results are that part's partials, in the accumulator's dtype, at part * kept.
  const int64_t row_parts = plan_.schedule.row_parts, column_units = plan_.schedule.units / row_parts;
  const bool split = row_parts > 1;
  Value* row_part = nullptr;
  auto dest_dtype = [&](const PlanOutput& o) { return split ? accumulator_dtype(o) : o.dtype; };
  auto dest = [&](size_t m, const std::vector<Value*>& at) {
    if (!split) return out_ptr(m, at);
    const PlanOutput& o = plan_.outputs[m];
    Value* offset = b_.CreateAdd(b_.CreateMul(row_part, c64(plan_.schedule.kept_elements), "", true, true),
                                 affine(o.index, at), "", true, true);
    return b_.CreateInBoundsGEP(storage_type(ctx_, accumulator_dtype(o)), outs_[m], offset);
  };
  std::vector<llvm::AllocaInst*> parts, totals;
  for (size_t m = 0; m < plan_.outputs.size(); ++m) {
    const PlanOutput& o = plan_.outputs[m];
    llvm::BasicBlock& entry = function_->getEntryBlock();
    llvm::IRBuilder<> at(&entry, entry.begin());
    const DType a = accumulator_dtype(o);
    parts.push_back(at.CreateAlloca(value_type(ctx_, part_dtypes[m]), c64(block)));
    totals.push_back(a != o.dtype ? at.CreateAlloca(value_type(ctx_, a), c64(block)) : nullptr);
  }
  std::vector<Value*> idx(nd, nullptr);
  auto for_each_output = [&](const std::function<void(size_t, const PlanOutput&)>& f) {
    for (size_t m = 0; m < plan_.outputs.size(); ++m) f(m, plan_.outputs[m]);
  };
  loop(begin, end, [&](Value* unit) {
    Value* u = unit;
    Value* row_lo = c64(0);
    Value* row_hi = c64(rows);
    if (split) {
      u = b_.CreateURem(unit, c64(column_units));
      row_part = b_.CreateUDiv(unit, c64(column_units));
      row_lo = b_.CreateMul(row_part, c64(plan_.schedule.chunk_rows), "", true, true);
      row_hi = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(row_lo, c64(plan_.schedule.chunk_rows)),
                                        c64(rows));
    }
    Value* jb = b_.CreateMul(b_.CreateURem(u, c64(blocks)), c64(block));
    Value* je = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(jb, c64(block)), c64(inner));
    decompose(b_.CreateUDiv(u, c64(blocks)), 0, nk - 1, idx);
    auto part = [&](size_t m, Value* j) {
      return b_.CreateInBoundsGEP(parts[m]->getAllocatedType(), parts[m], b_.CreateSub(j, jb));
    };
    auto total = [&](size_t m, Value* j) {
      return b_.CreateInBoundsGEP(totals[m]->getAllocatedType(), totals[m], b_.CreateSub(j, jb));
    };
    loop(jb, je, [&](Value* j) {
      idx[nk - 1] = j;
      for_each_output([&](size_t m, const PlanOutput& o) {
        if (totals[m])
          b_.CreateStore(reduction_identity(b_, *o.reduce, accumulator_dtype(o)), total(m, j));
        else
          store_element(b_, reduction_identity(b_, *o.reduce, dest_dtype(o)), dest(m, idx), dest_dtype(o));
      });
    });
    // `part` starts at the identity, and each fold resets it while reading it.
    loop(jb, je, [&](Value* j) {
      for_each_output([&](size_t m, const PlanOutput& o) {
        b_.CreateStore(reduction_identity(b_, *o.reduce, part_dtypes[m]), part(m, j));
      });
    });
    Value* row_blocks =
        split ? b_.CreateUDiv(b_.CreateAdd(b_.CreateSub(row_hi, row_lo, "", true, true), c64(rows_per_block - 1)),
                              c64(rows_per_block))
              : c64((rows + rows_per_block - 1) / rows_per_block);
    loop(c64(0), row_blocks, [&](Value* row_block) {
      Value* lo = b_.CreateAdd(row_lo, b_.CreateMul(row_block, c64(rows_per_block), "", true, true), "", true, true);
      Value* hi = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(lo, c64(rows_per_block)), row_hi);
      loop(lo, hi, [&](Value* r) {
        idx[nk] = r;
        nest(nk + 1, idx, [&] {
          loop(jb, je, [&](Value* j) {
            idx[nk - 1] = j;
            std::vector<Value*> v = eval(idx);
            for_each_output([&](size_t m, const PlanOutput& o) {
              Value* p = part(m, j);
              Value* acc = b_.CreateLoad(parts[m]->getAllocatedType(), p);
              Value* x = emit_convert(b_, v[static_cast<size_t>(o.node)], o.dtype, part_dtypes[m]);
              b_.CreateStore(emit_reduce_combine(b_, *o.reduce, acc, x, part_dtypes[m]), p);
            });
          });
        });
      });
      loop(jb, je, [&](Value* j) {
        idx[nk - 1] = j;
        for_each_output([&](size_t m, const PlanOutput& o) {
          Value* partial = b_.CreateLoad(parts[m]->getAllocatedType(), part(m, j));
          b_.CreateStore(reduction_identity(b_, *o.reduce, part_dtypes[m]), part(m, j));
          if (totals[m]) {
            Value* t = total(m, j);
            const DType a = accumulator_dtype(o);
            Value* sum = emit_reduce_combine(b_, *o.reduce, b_.CreateLoad(totals[m]->getAllocatedType(), t),
                                             emit_convert(b_, partial, part_dtypes[m], a), a);
            b_.CreateStore(sum, t);
            return;
          }
          Value* p = dest(m, idx);
          store_element(b_, emit_reduce_combine(b_, *o.reduce, load_element(b_, p, o.dtype), partial, o.dtype), p,
                        o.dtype);
        });
      });
    });
    if (std::any_of(totals.begin(), totals.end(), [](llvm::AllocaInst* t) { return t != nullptr; }))
      loop(jb, je, [&](Value* j) {
        idx[nk - 1] = j;
        for_each_output([&](size_t m, const PlanOutput& o) {
          if (!totals[m]) return;
          Value* t = b_.CreateLoad(totals[m]->getAllocatedType(), total(m, j));
          if (split)
            store_element(b_, t, dest(m, idx), accumulator_dtype(o));
          else
            store_element(b_, final_value(o, t), out_ptr(m, idx), o.dtype);
        });
      });
  });
}

void LoopEmitter::full_reduce(Value* begin, Value* end) {
  narrow_sums_ = sums_narrow();
  const size_t nd = plan_.dims.size();
  const int64_t rows = nd > 0 ? plan_.dims[0] : 1, chunk = plan_.schedule.chunk_rows;
  std::vector<Value*> idx(nd, nullptr);
  auto accs = accumulators();
  loop(begin, end, [&](Value* c) {
    reset(accs);
    if (nd == 0) {
      accumulate(accs, idx);
    } else {
      Value* lo = b_.CreateMul(c, c64(chunk), "", true, true);
      Value* hi = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(lo, c64(chunk)), c64(rows));
      if (nd == 1) {
        reduce_innermost(0, lo, hi, idx, accs);  // the chunk is the innermost loop
      } else {
        loop(lo, hi, [&](Value* r) {
          idx[0] = r;
          reduce_nest(1, idx, accs);
        });
      }
    }
    for (size_t m = 0; m < accs.size(); ++m) {  // the partial in the accumulator's dtype
      const DType a = accumulator_dtype(plan_.outputs[m]);
      store_element(b_, b_.CreateLoad(accs[m]->getAllocatedType(), accs[m]),
                    b_.CreateInBoundsGEP(storage_type(ctx_, a), outs_[m], c), a);
    }
  });
}

}  // namespace detail

std::string kernel_symbol(std::string_view key) { return "jx_kernel_" + std::string(key); }
std::string finish_symbol(std::string_view key) { return kernel_symbol(key) + "_finish"; }

void emit_loop_kernel(llvm::Module& module, const KernelPlan& plan, std::string_view key) {
  detail::LoopEmitter(module, plan, key).emit();
}

}  // namespace jx::compiler::codegen
