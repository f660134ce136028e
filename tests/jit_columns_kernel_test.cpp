// The columns schedule of "rows" kernels (codegen/kernel_plan.h, Mode::Columns): a
// reduction that keeps the innermost axis, and the work reading it back, run over blocks
// of columns. Kernels compiled from jaxpr text and checked against eager jx.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "jit/codegen/kernel.h"
#include "jit/codegen/kernel_plan.h"
#include "jx/jaxpr.h"
#include "kernel_test_util.h"
#include "row_programs.h"
#include "test_util.h"

namespace jx::compiler {
namespace {

using jx::testing::check;
using jx::testing::no_cache;
using jx::testing::run_kernel;

std::string plan_of(const std::string& text) { return codegen::plan_kernel(parse_jaxpr(text), "rows").str(); }

TEST(ColumnsKernel, PlanRunsBlocksOfColumnsAndRecomputes) {
  // Softmax over the leading axis of 100 x 1024 floats: the kept (column) dim first in
  // the plan, reduced along a stride of 1024; 8 units of 128 columns; the exp is
  // recomputed by the output pass, not stashed.
  const std::string s = plan_of(jx::testing::softmax_text("f32", 100, 1024, 0));
  EXPECT_NE(s.find("rows dims (1024, 100) kept 1\n"), std::string::npos) << s;
  EXPECT_NE(s.find("p1:float32 = reduce_sum n3 pass 1\n"), std::string::npos) << s;
  EXPECT_NE(s.find("schedule columns units 8 chunk_rows 0 column_block 128\n"), std::string::npos) << s;
  // The row softmax keeps the rows schedule.
  EXPECT_NE(plan_of(jx::testing::softmax_text("f32", 100, 1024)).find("schedule rows "), std::string::npos);
}

TEST(ColumnsKernel, BlocksFitTheirColumnsInCache) {
  // 4096 reduced rows of floats: 16 KiB a column, so blocks of 32 columns (the floor)
  // rather than 512 for 8 units; 10^6 rows of 64 columns: two blocks, for two threads.
  const std::string s = plan_of(jx::testing::softmax_text("f32", 4096, 4096, 0));
  EXPECT_NE(s.find("schedule columns units 128 chunk_rows 0 column_block 32\n"), std::string::npos) << s;
  const std::string tall = plan_of(jx::testing::softmax_text("f32", 1000000, 64, 0));
  EXPECT_NE(tall.find("schedule columns units 2 chunk_rows 0 column_block 32\n"), std::string::npos) << tall;
}

TEST(ColumnsKernel, SoftmaxOverTheLeadingAxisMatchesEager) {
  // Long columns (100 and 9 reduced points: column buffers per block), short ones (3 and
  // 8: a column at a time, unrolled), a remainder block (1000 = 7 x 128 + 104), fewer
  // columns than a block or a vector (17), and float64.
  check(jx::testing::softmax_text("f32", 100, 1000, 0), "rows", 1e-5, 1e-7);
  check(jx::testing::softmax_text("f32", 9, 17, 0), "rows", 1e-5, 1e-7);
  check(jx::testing::softmax_text("f32", 3, 1000, 0), "rows", 1e-5, 1e-7);
  check(jx::testing::softmax_text("f32", 8, 17, 0), "rows", 1e-5, 1e-7);
  check(jx::testing::softmax_text("f64", 40, 300, 0), "rows", 1e-12, 1e-14);
  check(jx::testing::softmax_text("f64", 2, 33, 0), "rows", 1e-12, 1e-14);
}

TEST(ColumnsKernel, LeapfrogStepOfTwoDependentSums) {
  // bench's leapfrog step: the second sum reads positions computed from the first; both
  // outputs full-shape. Two passes and the outputs, one column of 3 at a time.
  const std::string text = jx::testing::leapfrog_text(1024);
  const std::string s = plan_of(text);
  EXPECT_NE(s.find("p1:float32 = reduce_sum"), std::string::npos) << s;
  EXPECT_NE(s.find(" pass 1\n"), std::string::npos) << s;
  EXPECT_NE(s.find("schedule columns "), std::string::npos) << s;
  check(text, "rows", 1e-6, 1e-6);
  check(jx::testing::leapfrog_text(50), "rows", 1e-6, 1e-6);
}

TEST(ColumnsKernel, MiddleAxisWithPerColumnOutputs) {
  // Standardization over the middle axis of 4 x 50 x 40: kept dims (4, 40) whose outer one
  // splits the units, a keepdims per-column output and a plain one beside the full one.
  check(R"({ lambda ; a:f64[4,50,40]. let
    n:f64[4,40] = broadcast_in_dim[broadcast_dimensions=() shape=(4, 40)] 50.0:f64[]
    b:f64[4,40] = reduce_sum[axes=(1,)] a
    c:f64[4,40] = div b n
    d:f64[4,1,40] = expand_dims[dimensions=(1,)] c
    e:f64[4,50,40] = broadcast_in_dim[broadcast_dimensions=(0, 1, 2) shape=(4, 50, 40)] d
    f:f64[4,50,40] = sub a e
    g:f64[4,50,40] = mul f f
    h:f64[4,40] = reduce_sum[axes=(1,)] g
    i:f64[4,40] = div h n
    j:f64[4,1,40] = expand_dims[dimensions=(1,)] i
    k:f64[4,1,40] = rsqrt j
    l:f64[4,50,40] = broadcast_in_dim[broadcast_dimensions=(0, 1, 2) shape=(4, 50, 40)] k
    m:f64[4,50,40] = mul f l
  in (m, c, k) })",
        "rows", 1e-12, 1e-12);
  // The same over 6 reduced points (unrolled), float32, a max beside the sum.
  check(R"({ lambda ; a:f32[3,6,40]. let
    b:f32[3,40] = reduce_max[axes=(1,)] a
    c:f32[3,40] = reduce_sum[axes=(1,)] a
    d:f32[3,40] = sub c b
    e:f32[3,1,40] = expand_dims[dimensions=(1,)] d
    f:f32[3,6,40] = broadcast_in_dim[broadcast_dimensions=(0, 1, 2) shape=(3, 6, 40)] e
    g:f32[3,6,40] = mul a f
  in (g, b) })",
        "rows", 1e-5, 1e-6);
}

TEST(ColumnsKernel, LongFloat32SumsAccumulateInDouble) {
  // 5000 copies of 0.1f per column: their mean in double rounds to 0.1f exactly, so x -
  // mean(x) is 0 (a float accumulator drifts by thousands of ulp over 5000 terms).
  const std::string text = R"({ lambda ; a:f32[5000,64]. let
    n:f32[64] = broadcast_in_dim[broadcast_dimensions=() shape=(64,)] 5000.0:f32[]
    b:f32[64] = reduce_sum[axes=(0,)] a
    c:f32[64] = div b n
    d:f32[5000,64] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(5000, 64)] c
    e:f32[5000,64] = sub a d
  in (e,) })";
  Jaxpr j = parse_jaxpr(text);
  Array x(std::vector<float>(5000 * 64, 0.1f), {5000, 64});
  EXPECT_NE(plan_of(text).find("schedule columns "), std::string::npos) << plan_of(text);
  auto kernel = compile_kernel(j, "rows", no_cache());
  std::vector<Array> got = run_kernel(*kernel, j, {x});
  EXPECT_EQ(jx::numpy::max(jx::numpy::abs(got[0])).item<float>(), 0.0f);
}

TEST(ColumnsKernel, NaNAndInfinityColumns) {
  // A column of -inf (its softmax is NaN, as eager's), a NaN column and one holding +inf,
  // short (4 rows) and long (12).
  for (int64_t rows : {4, 12}) {
    std::vector<float> v(static_cast<size_t>(rows) * 20, 0.5f);
    for (int64_t r = 0; r < rows; ++r) v[static_cast<size_t>(r * 20 + 1)] = -std::numeric_limits<float>::infinity();
    v[static_cast<size_t>(2 * 20 + 3)] = std::numeric_limits<float>::quiet_NaN();
    v[static_cast<size_t>(1 * 20 + 5)] = std::numeric_limits<float>::infinity();
    check(jx::testing::softmax_text("f32", rows, 20, 0), "rows", 1e-6, 1e-7, {Array(v, {rows, 20})});
  }
}

TEST(ColumnsKernel, DegenerateShapes) {
  // A reduced axis of one element (no reduced dims left once size-1 dims drop), no
  // columns at all, and kept dims that collapse into one run of columns (3 x 16 after
  // a reduced axis of 5).
  for (const char* shape : {"1,64", "3,0", "5,3,16"}) {
    const std::string s = shape;
    const std::string kept = s == "1,64" ? "64" : s == "3,0" ? "0" : "3,16";
    const std::string bdims = s == "5,3,16" ? "(1, 2)" : "(1,)";
    const std::string full_shape = s == "1,64" ? "(1, 64)" : s == "3,0" ? "(3, 0)" : "(5, 3, 16)";
    check("{ lambda ; a:f32[" + s + "]. let\n    b:f32[" + kept + "] = reduce_max[axes=(0,)] a\n    c:f32[" + s +
              "] = broadcast_in_dim[broadcast_dimensions=" + bdims + " shape=" + full_shape + "] b\n    d:f32[" + s +
              "] = sub a c\n  in (d, b) }",
          "rows", 1e-6, 1e-7);
  }
}

}  // namespace
}  // namespace jx::compiler
