// The one_hot_sums pass (src/jit/passes/one_hot_sums.h): a sum along an axis of a row
// that is zero but where the position equals an index constant along the axis is that
// one value. Checked on programs built from lax: it fires where it should, leaves no
// reduction over the axis, and the rewritten program computes bit for bit what the
// original did (eval_jaxpr of both, on values that catch an inexact form: -0.0, NaN,
// infinities, indices below and past the axis); it leaves sums that are not one-hot; and
// under jit a cross-entropy's gradient keeps only its row max and sum of exp as
// reductions (the fast max loop), matching eager.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "jit/passes/one_hot_sums.h"
#include "jit/pipeline.h"
#include "jx/jx.h"
#include "pass_test_util.h"
#include "test_util.h"

namespace jx::compiler {
namespace {

namespace jnp = jx::numpy;

template <class F, class... Args>
Rewritten rewrite(F f, const Args&... args) {
  return rewrite_with(&one_hot_sums, f, args...);
}

// A 0-d zero made outside any trace (Array(0.0) inside one would be traced: a convert
// of a literal), so a traced program holds it as a literal, as constant folding leaves
// the zeros a gradient makes.
struct Zeros {
  Array f32 = Array(0.0).astype(DType::Float32), f64 = Array(0.0).astype(DType::Float64),
        i32 = Array(0.0).astype(DType::Int32);
  const Array& of(DType d) const { return d == DType::Float32 ? f32 : d == DType::Float64 ? f64 : i32; }
};

// Per row of `shape` (its last axis the row): the row's index (idx, one per row) and value
// (v, one per row) spread along the axis, and the one-hot select of v at idx.
Array one_hot(const Array& idx, const Array& v, const Shape& shape, int64_t axis, const Array& zero) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (d != axis) dims.push_back(d);
  Array at = lax::eq(lax::broadcasted_iota(idx.dtype(), shape, static_cast<int>(axis)), lax::broadcast_in_dim(idx, shape, dims));
  Array zeros = lax::broadcast_in_dim(zero, shape, {});
  return lax::select_n(at, {zeros, lax::broadcast_in_dim(v, shape, dims)});
}

// Values a sum would change: signed zeros, NaN, infinities.
Array awkward_values(DType d) {
  return Array(std::vector<double>{-0.0, 0.0, NAN, INFINITY, -INFINITY, -2.5, 1e300, 7.0}, {8}).astype(d);
}

TEST(OneHotSums, ASumOfAOneHotRowIsItsValue) {
  const Zeros zeros;
  const Shape shape{8, 5};
  Array idx = Array(std::vector<int32_t>{-1, 0, 4, 5, 2, 3, 100, -7}, {8});  // in and out of bounds
  for (DType d : {DType::Float32, DType::Float64, DType::Int32}) {
    Array v = is_floating(d) ? awkward_values(d) : Array(std::vector<int32_t>{-3, 0, 9, 1, -8, 2, 5, 7}, {8});
    const Array& zero = zeros.of(d);
    for (int negs = 0; negs < 3; ++negs) {
      Rewritten r = rewrite(
          [&](const Array& i, const Array& x) {
            Array row = one_hot(i, x, shape, 1, zero);
            for (int k = 0; k < negs; ++k) row = lax::neg(row);
            return lax::reduce_sum(row, {1});
          },
          idx, v);
      ASSERT_TRUE(r.changed) << dtype_name(d) << ", " << negs << " negs";
      EXPECT_EQ(count(r.after, "reduce_sum"), 0) << r.after.str();
      expect_same_values(r, {idx, v});
    }
  }
  const Array& zero = zeros.f32;
  ASSERT_TRUE(rewrite([&](const Array& i, const Array& x) { return lax::reduce_sum(one_hot(i, x, shape, 1, zero), {1}); },
                      idx, awkward_values(DType::Float32))
                  .notes.size() == 1);
}

TEST(OneHotSums, AnyAxisAndTheOtherReducedAxesAfter) {
  // Rows along axis 0 of [6, 3, 4], summed over (0, 2): the one-hot axis goes, the rest is summed.
  const Shape shape{6, 3, 4};
  const Array zero = Zeros().f64;
  Array idx = jx::random::randint(jx::random::key(1), {3, 4}, -2, 8, DType::Int32);
  Array v = testing::randn({3, 4}, DType::Float64, 2);
  Rewritten r = rewrite([&](const Array& i, const Array& x) { return lax::reduce_sum(one_hot(i, x, shape, 0, zero), {0, 2}); },
                        idx, v);
  ASSERT_TRUE(r.changed);
  EXPECT_EQ(count(r.after, "reduce_sum"), 1);
  const std::vector<Array> args{idx, v};
  std::vector<Array> want = eval_jaxpr(r.before, args), got = eval_jaxpr(r.after, args);
  EXPECT_ALLCLOSE(got[0], want[0], 1e-15, 0);  // the remaining sum's order may differ
}

TEST(OneHotSums, LeavesSumsThatAreNotOneHot) {
  const Shape shape{4, 6};
  const Array zero = Zeros().f32, one = Array(1.0).astype(DType::Float32);
  Array idx = Array(std::vector<int32_t>{0, 1, 2, 3}, {4});
  Array v = testing::randn({4}, DType::Float32, 3);
  Array m = testing::randn({4, 6}, DType::Float32, 4);
  auto unchanged = [](const Rewritten& r) { return !r.changed && r.after.str() == r.before.str(); };
  // The other case zero: select_n(at, v, 0) is v everywhere but one position.
  EXPECT_TRUE(unchanged(rewrite(
      [&](const Array& i, const Array& x) {
        Array at = lax::eq(lax::broadcasted_iota(DType::Int32, shape, 1), lax::broadcast_in_dim(i, shape, {0}));
        return lax::reduce_sum(lax::select_n(at, {lax::broadcast_in_dim(x, shape, {0}), lax::broadcast_in_dim(zero, shape, {})}), {1});
      },
      idx, v)));
  // A value varying along the row, a nonzero background, and the sum over the other axis.
  EXPECT_TRUE(unchanged(rewrite(
      [&](const Array& i, const Array& x) {
        Array at = lax::eq(lax::broadcasted_iota(DType::Int32, shape, 1), lax::broadcast_in_dim(i, shape, {0}));
        return lax::reduce_sum(lax::select_n(at, {lax::broadcast_in_dim(zero, shape, {}), x}), {1});
      },
      idx, m)));
  EXPECT_TRUE(unchanged(rewrite(
      [&](const Array& i, const Array& x) {
        Array at = lax::eq(lax::broadcasted_iota(DType::Int32, shape, 1), lax::broadcast_in_dim(i, shape, {0}));
        return lax::reduce_sum(lax::select_n(at, {lax::broadcast_in_dim(one, shape, {}), lax::broadcast_in_dim(x, shape, {0})}), {1});
      },
      idx, v)));
  EXPECT_TRUE(unchanged(
      rewrite([&](const Array& i, const Array& x) { return lax::reduce_sum(one_hot(i, x, shape, 1, zero), {0}); }, idx, v)));
  // An index varying along the row: several positions may match.
  Array many = Array(std::vector<int32_t>(24, 2), {4, 6});
  EXPECT_TRUE(unchanged(rewrite(
      [&](const Array& i, const Array& x) {
        Array at = lax::eq(lax::broadcasted_iota(DType::Int32, shape, 1), i);
        return lax::reduce_sum(lax::select_n(at, {lax::broadcast_in_dim(zero, shape, {}), lax::broadcast_in_dim(x, shape, {0})}), {1});
      },
      many, v)));
}

TEST(OneHotSums, ACrossEntropyGradientSumsOnlyItsExp) {
  Array logits = testing::randn({300, 100}, DType::Float32, 5) * 3.0f;
  Array labels = jx::random::randint(jx::random::key(6), {300}, -100, 110, DType::Int32);
  ClosedJaxpr optimized = optimize_program(make_jaxpr(jx::grad(cross_entropy))(logits, labels),
                                           PipelineOptions{.verify = true}, Dump("cross_entropy", ""));
  int sums = 0;
  for (const Equation& e : optimized.jaxpr.eqns)
    if (e.params.has("jaxpr"))
      for (const Equation& inner : e.params.get_jaxpr("jaxpr")->jaxpr.eqns) sums += inner.primitive->name() == "reduce_sum";
  EXPECT_EQ(sums, 1) << optimized.str();
  EXPECT_ALLCLOSE(jx::jit(jx::grad(cross_entropy))(logits, labels), jx::grad(cross_entropy)(logits, labels), 1e-5,
                  1e-7);
}

}  // namespace
}  // namespace jx::compiler
