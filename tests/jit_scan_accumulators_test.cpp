// The scan_accumulators pass (src/jit/passes/scan_accumulators.h): a carry summing outer
// products becomes stacked factors and one product after the loop. Checked on programs
// reverse mode makes (the weight cotangents of a scanned recurrence): it fires where it
// should, the rewritten program computes what the original did (eval_jaxpr of both), and
// it leaves alone a carry read elsewhere and products too small to gain.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jit/passes/scan_accumulators.h"
#include "jx/jx.h"
#include "lax/control_flow/scan_rules.h"
#include "pass_test_util.h"
#include "test_util.h"

namespace jx::compiler {
namespace {

namespace jnp = jx::numpy;
using testing::randn;

// The scan equations' carry counts, in program order.
std::vector<int64_t> scan_carries(const ClosedJaxpr& p) {
  std::vector<int64_t> out;
  for (const Equation& e : p.jaxpr.eqns)
    if (e.primitive == &detail::scan_p) out.push_back(e.params.get_int("num_carry"));
  return out;
}

template <class F, class... Args>
Rewritten rewrite(F f, const Args&... args) {
  return rewrite_with(&hoist_scan_accumulators, f, args...);
}

// sum(h_T^2) of h' = tanh(h W + x U), differentiated in W and U.
auto rnn_grad() {
  return grad(
      [](const Array& w, const Array& u, const Array& xs) {
        auto cell = [&](const Array& h, const Array& x) {
          return std::pair<Array, None>(jnp::tanh(jnp::matmul(h, w) + jnp::matmul(x, u)), none);
        };
        return jnp::sum(jnp::square(lax::scan(cell, jnp::zeros({w.shape(0)}, w.dtype()), xs).first));
      },
      argnums<0, 1>);
}

TEST(ScanAccumulators, HoistsTheWeightCotangentsOfARecurrence) {
  Array w = randn({16, 16}, DType::Float64, 1) * 0.2, u = randn({6, 16}, DType::Float64, 2) * 0.3;
  Array xs = randn({7, 6}, DType::Float64, 3);
  Rewritten r = rewrite(rnn_grad(), w, u, xs);
  ASSERT_TRUE(r.changed);
  // The backward scan carried both cotangents (16x16 and 6x16); now neither.
  std::vector<int64_t> before = scan_carries(r.before), after = scan_carries(r.after);
  ASSERT_EQ(before.size(), after.size());
  EXPECT_EQ(after.back(), before.back() - 2);
  ASSERT_EQ(r.notes.size(), 2u);
  EXPECT_NE(r.notes[0].find("sums outer products"), std::string::npos) << r.notes[0];
  std::vector<Array> args{w, u, xs};
  std::vector<Array> want = eval_jaxpr(r.before, args), got = eval_jaxpr(r.after, args);
  ASSERT_EQ(want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_ALLCLOSE(got[k], want[k], 1e-12, 1e-12) << "output " << k;
  // Under jit (the pass in the pipeline) the gradients match eager too.
  auto [gw, gu] = jit(rnn_grad())(w, u, xs);
  auto [ew, eu] = rnn_grad()(w, u, xs);
  EXPECT_ALLCLOSE(gw, ew, 1e-12, 1e-12);
  EXPECT_ALLCLOSE(gu, eu, 1e-12, 1e-12);
}

TEST(ScanAccumulators, TransposedAndReversedSumsAndEmptyLoops) {
  // c' = c + outer(x, sin(v) sum(x))^T in a reversed scan; and the same over zero steps.
  auto f = [](const Array& c0, const Array& v, const Array& xs) {
    return lax::scan([&](const Array& c, const Array& x) {
      // An outer product as reverse mode writes it: a dot_general contracting nothing.
      return std::pair(c + jnp::transpose(lax::dot_general(x, jnp::sin(v) * x.sum(), {})), None{});
    }, c0, xs, {.reverse = true}).first;
  };
  for (int64_t steps : {5, 0}) {
    Array c0 = randn({9, 8}, DType::Float32, 4), v = randn({9}, DType::Float32, 5);
    Array xs = steps ? randn({steps, 8}, DType::Float32, 6) : jnp::zeros({0, 8});
    Rewritten r = rewrite(f, c0, v, xs);
    ASSERT_TRUE(r.changed) << "steps " << steps << "\n" << r.before.str();
    std::vector<Array> args{c0, v, xs};
    EXPECT_ALLCLOSE(eval_jaxpr(r.after, args)[0], eval_jaxpr(r.before, args)[0], 1e-5, 1e-5) << "steps " << steps;
  }
}

TEST(ScanAccumulators, LeavesOtherCarriesAlone) {
  Array c0 = randn({8, 8}, DType::Float32, 7), xs = randn({5, 8}, DType::Float32, 8);
  // The carry is read by the step (a y of it): not an accumulator.
  auto read_elsewhere = [](const Array& c0, const Array& xs) {
    return lax::scan([](const Array& c, const Array& x) { return std::pair(c + jnp::outer(x, x), jnp::sum(c)); }, c0,
                     xs);
  };
  EXPECT_FALSE(rewrite(read_elsewhere, c0, xs).changed);
  // A product of 2x2 from 2 + 2 values: stacking the factors would not pay.
  auto small = [](const Array& c0, const Array& xs) {
    return lax::scan([](const Array& c, const Array& x) { return std::pair(c + jnp::outer(x, x), None{}); }, c0, xs)
        .first;
  };
  EXPECT_FALSE(rewrite(small, jnp::zeros({2, 2}), randn({5, 2}, DType::Float32, 9)).changed);
  // A sum of something else than an outer product.
  auto squares = [](const Array& c0, const Array& xs) {
    return lax::scan([&](const Array& c, const Array& x) { return std::pair(c + jnp::sin(c0) * x.sum(), None{}); }, c0,
                     xs)
        .first;
  };
  EXPECT_FALSE(rewrite(squares, c0, xs).changed);
}

}  // namespace
}  // namespace jx::compiler
