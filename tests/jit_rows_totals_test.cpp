// Totals of a rows kernel (codegen/kernel_plan.h, PlanOutput::total): a per-row value
// reduced over every row (a loss's mean over its rows' losses) in the kernel that
// computes the rows, each block of rows adding its rows into a partial that a finish
// function combines in block order. Checked against eager on blocks with remainders (rows
// fewer than a block's lanes, one block, a block and one row, many blocks over the
// threads), for sums, maxima and minima, float32, float64 and int32; a float32 sum is
// the float64 sum of its terms rounded once (what a float32 accumulator misses); NaN
// rows reach a max; beside full-shape outputs; refused by the columns schedule; and under
// jx::jit a cross-entropy's mean is one kernel that matches eager.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "jit/codegen/kernel.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/pipeline.h"
#include "jx/jx.h"
#include "kernel_test_util.h"
#include "pass_test_util.h"
#include "row_programs.h"
#include "test_util.h"

namespace jx::compiler {
namespace {

namespace jnp = jx::numpy;
using testing::check;
using testing::cross_entropy_text;

// Labels for `rows` rows of `cols` classes, in bounds.
Array labels(int64_t rows, int64_t cols, uint32_t seed) {
  return jx::random::randint(jx::random::key(seed), {rows}, 0, cols, DType::Int32);
}

TEST(RowsTotals, PlanTotalsPerRowValues) {
  const Jaxpr j = parse_jaxpr(cross_entropy_text(1000, 10));  // the plan points into it
  const codegen::KernelPlan plan = codegen::plan_kernel(j, "rows");
  const std::string s = plan.str();
  EXPECT_EQ(plan.schedule.mode, codegen::LoopSchedule::Mode::Rows) << s;
  ASSERT_EQ(plan.outputs.size(), 2u);
  EXPECT_TRUE(plan.outputs[0].total() && plan.outputs[1].total()) << s;
  EXPECT_EQ(plan.schedule.totals, (std::vector<int>{0, 1})) << s;
  EXPECT_NE(s.find("out0:float32 = n"), std::string::npos) << s;
  EXPECT_NE(s.find(" reduce_sum per_row\n"), std::string::npos) << s;
  // A total is stored by the finish function: never over an input.
  EXPECT_TRUE(codegen::writable_pairs(plan, [](int) { return true; }).empty());
}

TEST(RowsTotals, MatchEagerOverBlocksWithRemainders) {
  // Blocks of 64 rows of 10 floats: rows fewer than the 4 lanes of a block's partial, a
  // block's worth, one more, many blocks shared by the threads; rows of 300 (blocks of
  // 64 too) and of 5000 (blocks of 13: a remainder in every lane).
  for (int64_t rows : {3, 5, 64, 65, 1001, 40000}) {
    SCOPED_TRACE(std::to_string(rows) + " rows");
    Array x = testing::randn({rows, 10}, DType::Float32, 3) * 4.0f;
    check(cross_entropy_text(rows, 10), "rows", 1e-5, 1e-5, {x, labels(rows, 10, 4)});
    check(cross_entropy_text(rows, 10, "reduce_max"), "rows", 1e-6, 1e-6, {x, labels(rows, 10, 4)});
    check(cross_entropy_text(rows, 10, "reduce_min"), "rows", 1e-6, 1e-6, {x, labels(rows, 10, 4)});
  }
  check(cross_entropy_text(777, 300), "rows", 1e-5, 1e-5, {testing::randn({777, 300}, DType::Float32, 5), labels(777, 300, 6)});
  check(cross_entropy_text(70, 5000), "rows", 1e-5, 1e-5, {testing::randn({70, 5000}, DType::Float32, 7), labels(70, 5000, 8)});
  check(cross_entropy_text(1001, 37, "reduce_sum", "f64"), "rows", 1e-12, 1e-12,
        {testing::randn({1001, 37}, DType::Float64, 9), labels(1001, 37, 10)});
  // An integer total: exact.
  check(R"({ lambda ; a:i32[1001,7]. let
    b:i32[1001] = reduce_max[axes=(1,)] a
    c:i32[1001] = reduce_sum[axes=(1,)] a
    d:i32[1001] = mul b c
    e:i32[] = reduce_sum[axes=(0,)] d
  in (e) })",
        "rows", 0, 0);
}

// A float32 total accumulates in float64 (as a full reduction does) and rounds once: the
// sum of 40000 row maxima near 1e4 is the float64 sum of the same floats, rounded, bit for
// bit (a float32 accumulator is off by many ulp); an order of blocks that depended on the
// threads would show as a difference between repeated runs.
TEST(RowsTotals, Float32SumsRoundOnce) {
  const int64_t rows = 40000, cols = 12;
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[40000,12]. let
    b:f32[40000] = reduce_max[axes=(1,)] a
    c:f32[] = reduce_sum[axes=(0,)] b
  in (c) })");
  Array x = testing::randn({rows, cols}, DType::Float32, 11) + 10000.0f;
  auto kernel = compile_kernel(j, "rows", testing::no_cache());
  const std::vector<float> v = x.to_vector<float>();
  double exact = 0;
  for (int64_t r = 0; r < rows; ++r) {
    float m = v[static_cast<size_t>(r * cols)];
    for (int64_t c = 1; c < cols; ++c) m = std::max(m, v[static_cast<size_t>(r * cols + c)]);
    exact += m;  // exact: 40000 floats near 1e4 sum within float64's 53 bits
  }
  for (int run = 0; run < 5; ++run) {
    const float got = testing::run_kernel(*kernel, j, {x})[0].item<float>();
    EXPECT_EQ(got, static_cast<float>(exact)) << "run " << run;
  }
}

TEST(RowsTotals, NaNRowsReachAMaxAndInfinitiesASum) {
  Array x = testing::randn({300, 10}, DType::Float32, 12);
  std::vector<float> v = x.to_vector<float>();
  v[137 * 10 + 3] = NAN;
  Array with_nan(v, {300, 10});
  Jaxpr j = parse_jaxpr(cross_entropy_text(300, 10, "reduce_max"));
  auto kernel = compile_kernel(j, "rows", testing::no_cache());
  std::vector<Array> got = testing::run_kernel(*kernel, j, {with_nan, labels(300, 10, 13)});
  EXPECT_TRUE(std::isnan(got[0].item<float>()));
  EXPECT_TRUE(std::isnan(got[1].item<float>()));
  v[137 * 10 + 3] = INFINITY;
  Jaxpr sum = parse_jaxpr(cross_entropy_text(300, 10));
  std::vector<Array> sums =
      testing::run_kernel(*compile_kernel(sum, "rows", testing::no_cache()), sum, {Array(v, {300, 10}), labels(300, 10, 13)});
  EXPECT_EQ(sums[1].item<float>(), INFINITY);  // the row maxima's sum
}

TEST(RowsTotals, BesideFullShapeAndPerRowOutputs) {
  // A softmax, its row maxima and their total: the kernel's other outputs are stored where
  // the caller put them while the total's partials go to the runtime's buffer.
  check(R"({ lambda ; a:f32[1001,37]. let
    b:f32[1001] = reduce_max[axes=(1,)] a
    c:f32[1001,1] = expand_dims[dimensions=(1,)] b
    d:f32[1001,37] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(1001, 37)] c
    e:f32[1001,37] = sub a d
    f:f32[1001,37] = exp e
    g:f32[1001] = reduce_sum[axes=(1,)] f
    h:f32[1001,1] = expand_dims[dimensions=(1,)] g
    i:f32[1001,37] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(1001, 37)] h
    j:f32[1001,37] = div f i
    k:f32[] = reduce_sum[axes=(0, 1)] c
  in (j, b, k) })",
        "rows", 1e-5, 1e-6);
}

TEST(RowsTotals, RefusedWhereRowsRunAcrossMemory) {
  // Reductions over axis 0 run as columns (kernel_plan.h, Mode::Columns): no totals there.
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[8,4096]. let
    b:f32[4096] = reduce_max[axes=(0,)] a
    c:f32[] = reduce_sum[axes=(0,)] b
  in (c) })");
  EXPECT_JX_ERROR(codegen::plan_kernel(j, "rows"),
                  "[jit] a rows fusion whose rows run across memory (the columns schedule) cannot total its rows");
}

TEST(RowsTotals, ACrossEntropyMeanIsOneRowsKernel) {
  Array logits = testing::randn({3000, 10}, DType::Float32, 14) * 3.0f;
  Array y = jx::random::randint(jx::random::key(15), {3000}, -10, 10, DType::Int32);  // negative ones wrap
  ClosedJaxpr optimized = optimize_program(make_jaxpr(cross_entropy)(logits, y), PipelineOptions{.verify = true},
                                           Dump("cross_entropy", ""));
  int rows = 0, reductions = 0;
  for (const Equation& e : optimized.jaxpr.eqns)
    if (e.params.has("kind")) {
      rows += e.params.get_string("kind") == "rows";
      reductions += e.params.get_string("kind") == "reduction";
    }
  EXPECT_EQ(rows, 1) << optimized.str();
  EXPECT_EQ(reductions, 0) << optimized.str();
  EXPECT_ALLCLOSE(jx::jit(cross_entropy)(logits, y), cross_entropy(logits, y), 1e-5, 1e-6);
}

}  // namespace
}  // namespace jx::compiler
