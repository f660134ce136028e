// A pass run on a program jnp traces, for the tests of one pass each
// (jit_scan_accumulators_test.cpp, jit_take_along_selects_test.cpp): the program before
// and after, whether the pass said it changed it, and its notes. The result verifies and
// keeps the program's signature.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "jit/passes/pass.h"
#include "jx/jx.h"
#include "test_util.h"

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

// How many equations of `p` (top level) bind `primitive`.
inline int count(const ClosedJaxpr& p, std::string_view primitive) {
  int n = 0;
  for (const Equation& e : p.jaxpr.eqns) n += e.primitive->name() == primitive;
  return n;
}

// Equal bit for bit (0.0 and -0.0 differ, NaN equals NaN of the same payload).
inline ::testing::AssertionResult same_bits(const Array& got, const Array& want) {
  if (got.aval() != want.aval()) return ::testing::AssertionFailure() << got.aval().str() << " vs " << want.aval().str();
  if (!is_floating(got.dtype())) return testing::allclose(got, want, 0, 0);
  const DType bits = got.itemsize() == 8 ? DType::Int64 : got.itemsize() == 4 ? DType::Int32 : DType::Int16;
  return testing::allclose(lax::bitcast_convert_type(got, bits), lax::bitcast_convert_type(want, bits), 0, 0);
}

// The rewritten program computes bit for bit what the original did on `args`.
inline void expect_same_values(const Rewritten& r, const std::vector<Array>& args) {
  std::vector<Array> want = eval_jaxpr(r.before, args), got = eval_jaxpr(r.after, args);
  ASSERT_EQ(want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_TRUE(same_bits(got[k], want[k])) << "output " << k;
}

// jax.nn.log_softmax's formulation (the max's gradient stopped), the labels'
// log-probabilities, their mean: the cross-entropy the rows-kernel tests trace.
inline Array cross_entropy(const Array& logits, const Array& labels) {
  namespace jnp = jx::numpy;
  Array shifted = logits - jx::stop_gradient(jnp::max(logits, 1, true));
  Array log_probs = shifted - jnp::log(jnp::sum(jnp::exp(shifted), 1, true));
  return -jnp::mean(jnp::take_along_axis(log_probs, jnp::expand_dims(labels, 1), 1));
}

}  // namespace jx::compiler
