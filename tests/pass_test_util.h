// A pass run on a program jnp traces, for the tests of one pass each
// (jit_scan_accumulators_test.cpp, jit_take_along_selects_test.cpp): the program before
// and after, whether the pass said it changed it, and its notes. The result verifies and
// keeps the program's signature.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jit/passes/pass.h"
#include "jx/jx.h"

namespace jx::compiler {

struct Rewritten {
  ClosedJaxpr before, after;
  bool changed = false;
  std::vector<std::string> notes;
};

template <class F, class... Args>
Rewritten rewrite_with(bool (*pass)(ClosedJaxpr&, PassContext&), F f, const Args&... args) {
  Rewritten r;
  r.before = make_jaxpr(f)(args...);
  r.after = r.before;
  PassContext ctx(r.after.jaxpr);
  r.changed = pass(r.after, ctx);
  r.notes = ctx.take_notes();
  verify_jaxpr(r.after.jaxpr);
  EXPECT_EQ(r.after.in_avals(), r.before.in_avals());
  EXPECT_EQ(r.after.out_avals(), r.before.out_avals());
  return r;
}

}  // namespace jx::compiler
