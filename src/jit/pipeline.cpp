// The optimizer's recipe (pipeline.h). Order matters where it says why:
//   inline_calls first: every later pass works on one flat program, across call bounds.
//   simplify, take_along_selects, one_hot_sums, constant_folding, cse, dce until nothing changes: a
//     simplification exposes a fold (x * 1 with x constant), a fold makes duplicates (two
//     equal literals), cse and the others leave dead equations, which dce removes before
//     the next round. take_along_selects sees indices simplified (arange(n) * 1 + 0 as a
//     row index) and before constant folding, which leaves iotas of more than one element
//     alone anyway; the next round cleans what it leaves. one_hot_sums after it: the
//     one-hot rows its scatters become are what a gradient then sums.
//   scan_accumulators on the cleaned program (its loops' bodies as reverse mode wrote
//     them), before fusion, which then fuses the products it adds after the loops.
//   fusion on the cleaned program, then dce for what fusion bypassed.
// PipelineOptions::verify (config's verify_passes, JX_VERIFY_PASSES=1; always in debug
// builds) verifies the program after every pass that changed it, naming the pass that broke it.
#include "jit/pipeline.h"

#include <cstdio>
#include <string>
#include <unordered_set>
#include <vector>

#include "jit/passes/constant_folding.h"
#include "jit/passes/cse.h"
#include "jit/passes/dce.h"
#include "jit/passes/fusion.h"
#include "jit/passes/inline_calls.h"
#include "jit/passes/one_hot_sums.h"
#include "jit/passes/pass.h"
#include "jit/passes/scan_accumulators.h"
#include "jit/passes/simplify.h"
#include "jit/passes/take_along_selects.h"
#include "jx/error.h"

namespace jx::compiler {
namespace {

// Rounds of the simplify/fold/cse/dce loop; each round that changes something shrinks
// the program or moves work to constants, so a handful suffice in practice.
constexpr int kMaxRounds = 10;

bool fuse_unmerged(ClosedJaxpr& program, PassContext& ctx) {
  return fuse(program, ctx, FusionOptions{.merge = false});
}
const Pass kUnmergedFusionPass{"fusion", &fuse_unmerged};

// Runs passes on one program, dumping after each change and gathering every note.
class PipelineRun {
 public:
  PipelineRun(ClosedJaxpr& program, const Dump& dump, bool verify)
      : program_(program), ctx_(program.jaxpr), dump_(dump), verify_(verify) {
    ctx_.set_records_notes(dump_.enabled());  // notes are read only by the dump
    if (verify_) check("the traced program is invalid");
    if (dump_.enabled()) dump_.write("00-traced.txt", program_.str() + "\n");
  }

  bool apply(const Pass& pass) {
    bool changed = pass.run(program_, ctx_);
    for (std::string& line : ctx_.take_notes()) note(detail::cat("[", pass.name, "] ", line));
    if (!changed) return false;
    if (verify_) check(detail::cat("pass '", pass.name, "' produced an invalid program"));
    if (dump_.enabled()) {
      char prefix[16];
      std::snprintf(prefix, sizeof prefix, "%02d-", ++dumped_);
      dump_.write(prefix + std::string(pass.name) + ".txt", program_.str() + "\n");
    }
    return true;
  }

  void note(std::string line) {
    if (seen_notes_.insert(line).second) notes_.push_back(std::move(line));
  }

  void write_notes() const {
    if (!dump_.enabled()) return;
    std::string text;
    for (const std::string& line : notes_) text += line + "\n";
    dump_.write("fusion.txt", text);
  }

 private:
  // `problem` says what failed ("pass 'cse' produced an invalid program").
  void check(const std::string& problem) const {
    try {
      verify_jaxpr(program_.jaxpr);
    } catch (const Error& e) {
      detail::fail("jit", problem, ": ", e.what(), "\n", program_.str());
    }
    if (program_.consts.size() != program_.jaxpr.constvars.size())
      detail::fail("jit", problem, ": it has ", program_.jaxpr.constvars.size(), " constvars but ",
                   program_.consts.size(), " values");
  }

  ClosedJaxpr& program_;
  PassContext ctx_;
  const Dump& dump_;
  bool verify_;
  int dumped_ = 0;
  std::vector<std::string> notes_;
  std::unordered_set<std::string> seen_notes_;  // the loop repeats a refusal each round
};

}  // namespace

ClosedJaxpr optimize_program(ClosedJaxpr program, const PipelineOptions& options, const Dump& dump) {
#ifndef NDEBUG
  const bool verify = true;
#else
  const bool verify = options.verify;
#endif
  PipelineRun run(program, dump, verify);
  run.apply(kInlineCallsPass);
  if (options.optimize) {
    bool changed = true;
    for (int round = 0; changed && round < kMaxRounds; ++round) {
      changed = false;
      for (const Pass* pass :
           {&kSimplifyPass, &kTakeAlongSelectsPass, &kOneHotSumsPass, &kConstantFoldingPass, &kCsePass, &kDcePass})
        changed = run.apply(*pass) || changed;
    }
    if (changed) run.note(detail::cat("[pipeline] stopped after ", kMaxRounds, " rounds that all changed the program"));
    run.apply(kScanAccumulatorsPass);
    run.apply(kFusionPass);
    run.apply(kDcePass);
  } else {
    run.apply(kUnmergedFusionPass);
  }
  run.write_notes();
  return program;
}

}  // namespace jx::compiler
