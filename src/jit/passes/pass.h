// A compiler pass: a named rewrite of a ClosedJaxpr that reports whether it changed
// anything. Every pass lives in its own file pair (src/jit/passes/<pass>.{h,cpp}) with
// its own test on small text IR (tests/jit_passes_test.cpp: fires / does not fire), and
// the pipeline (src/jit/pipeline.cpp) is the recipe that strings them together.
//
// Passes never change a program's signature (invars, outvars' types) and keep it
// verifiable (verify_jaxpr): the pipeline checks that after every pass in debug runs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jx/jaxpr.h"

namespace jx::compiler {

// What passes share while a pipeline runs: fresh variable ids and the notes (decisions
// with reasons: "fusion refused: ...") written into the JX_DUMP directory.
class PassContext {
 public:
  // Fresh ids start above every id used in `program` (sub-programs included).
  explicit PassContext(const Jaxpr& program);
  PassContext() = default;

  Var fresh_var(const Aval& aval) { return Var{next_id_++, aval}; }
  int64_t fresh_id() { return next_id_++; }

  // A decision worth a line in the dump ("fusion: merged mul into fusion.2").
  void note(std::string line) {
    if (records_notes_) notes_.push_back(std::move(line));
  }
  // Whether notes are kept (on unless a pipeline that writes no dump turns them off):
  // passes skip building a note's text when they are not, which on a 2000-op program
  // was a third of the fusion pass.
  bool records_notes() const { return records_notes_; }
  void set_records_notes(bool on) { records_notes_ = on; }
  const std::vector<std::string>& notes() const { return notes_; }
  std::vector<std::string> take_notes() { return std::exchange(notes_, {}); }

 private:
  int64_t next_id_ = 0;
  bool records_notes_ = true;
  std::vector<std::string> notes_;
};

// The largest Var id in a program and its sub-programs (-1 when it has none).
int64_t max_var_id(const Jaxpr& program);

struct Pass {
  std::string_view name;                          // "dce", "cse", ... (the dump's file names)
  bool (*run)(ClosedJaxpr& program, PassContext& ctx);  // true when it changed the program
};

}  // namespace jx::compiler
