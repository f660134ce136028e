// Arguments that are views (jnp::ones, zeros, full, broadcast_to, transposes, flips,
// strided slices) are read in place by kernels compiled for their layout: the jitted
// result equals eager on the same views, and no argument is copied on entry except where
// a kernel cannot read it in place (a BLAS operand, a reshape that merges a sliced dim).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/array_internal.h"
#include "jit/codegen/loop_kernel.h"
#include "jit/executable.h"
#include "jx/jx.h"
#include "test_util.h"

namespace {

using namespace jx;
namespace jnp = jx::numpy;
using jx::testing::randn;

// The views of the suite, each of shape {rows, cols}, none of them row-major.
std::vector<std::pair<std::string, Array>> views(int64_t rows, int64_t cols, DType d) {
  Array base = randn({rows + 2, 2 * cols}, d, 11);
  std::vector<std::pair<std::string, Array>> v;
  v.emplace_back("ones", jnp::ones({rows, cols}, d));
  v.emplace_back("zeros", jnp::zeros({rows, cols}, d));
  v.emplace_back("full", jnp::full({rows, cols}, Array(2.5), d));
  v.emplace_back("broadcast row", jnp::broadcast_to(randn({cols}, d, 12), {rows, cols}));
  v.emplace_back("broadcast column", jnp::broadcast_to(randn({rows, 1}, d, 13), {rows, cols}));
  v.emplace_back("transpose", jnp::transpose(randn({cols, rows}, d, 14)));
  v.emplace_back("flip", jx::testing::make_test_view(randn({rows, cols}, d, 15), 1));
  v.emplace_back("slice", base(Slice{1, rows + 1}, Slice{1, 2 * cols, 2}));
  return v;
}

// The same values, row-major (the eager oracle's input).
Array dense(const Array& x) {
  Array c = detail::contiguous(x);
  EXPECT_TRUE(detail::is_contiguous(c));
  return c;
}

int64_t copies() { return compiler::kernel_input_copy_count(); }

TEST(JitLayout, ViewsAreReadInPlaceByLoopKernels) {
  auto f = [](const Array& x, const Array& y) { return jnp::sin(x) + jnp::cos(y) * x; };
  for (DType d : {DType::Float32, DType::Float64}) {
    Array y = randn({37, 129}, d, 2);
    for (const auto& [name, x] : views(37, 129, d)) {
      SCOPED_TRACE(name + " " + std::string(dtype_name(d)));
      ASSERT_FALSE(detail::is_contiguous(x));
      const int64_t before = copies();
      Array got = jit(f)(x, y), swapped = jit(f)(y, x);
      EXPECT_EQ(copies(), before) << "a view was copied on entry";
      EXPECT_ALLCLOSE(got, f(dense(x), y), 1e-6, 1e-6);
      EXPECT_ALLCLOSE(swapped, f(y, dense(x)), 1e-6, 1e-6);
    }
  }
}

TEST(JitLayout, ViewsAreReadInPlaceByReductionKernels) {
  // Full, row and column reductions over each view, with elementwise work before them.
  auto f = [](const Array& x) {
    Array e = jnp::exp(x * 0.5);
    return std::make_tuple(jnp::sum(e), jnp::sum(e, 1), jnp::max(x * x, 0));
  };
  for (const auto& [name, x] : views(40, 300, DType::Float32)) {
    SCOPED_TRACE(name);
    const int64_t before = copies();
    auto [all, rows, cols] = jit(f)(x);
    EXPECT_EQ(copies(), before) << "a view was copied on entry";
    auto [all_want, rows_want, cols_want] = f(dense(x));
    EXPECT_ALLCLOSE(all, all_want, 1e-5, 1e-5);
    EXPECT_ALLCLOSE(rows, rows_want, 1e-5, 1e-5);
    EXPECT_ALLCLOSE(cols, cols_want, 1e-6, 1e-6);
  }
}

TEST(JitLayout, ReshapesOfViews) {
  // A splitting reshape of a transpose, and any reshape of a broadcast scalar, have view
  // strides: read in place. Merging the dims of a transpose has none: that argument is
  // copied, and the result is still right.
  auto split = [](const Array& x) { return jnp::reshape(x, {4, 5, 6}) * 2 + 1; };
  auto merge = [](const Array& x) { return jnp::reshape(x, {30}) * 2 + 1; };
  Array t = jnp::transpose(randn({6, 20}, DType::Float32, 3));  // (20, 6), strides (1, 20)
  Array ones = jnp::ones({5, 6});
  int64_t before = copies();
  EXPECT_ALLCLOSE(jit(split)(t), split(dense(t)), 0, 0);
  EXPECT_ALLCLOSE(jit(merge)(ones), merge(dense(ones)), 0, 0);
  EXPECT_EQ(copies(), before);
  Array t2 = jnp::transpose(randn({6, 5}, DType::Float32, 4));
  EXPECT_ALLCLOSE(jit(merge)(t2), merge(dense(t2)), 0, 0);
  EXPECT_EQ(copies(), before + 1) << "the merged transpose is copied";
}

TEST(JitLayout, MatmulOfViewsCopiesTheOperands) {
  // BLAS reads row-major operands: a transposed operand of a dot kernel is copied.
  auto f = [](const Array& a, const Array& b) { return jnp::tanh(jnp::matmul(a, b) + 1); };
  Array a = jnp::transpose(randn({24, 16}, DType::Float64, 5));
  Array b = jnp::ones({24, 8}, DType::Float64);
  EXPECT_ALLCLOSE(jit(f)(a, b), f(dense(a), dense(b)), 1e-12, 1e-12);
}

TEST(JitLayout, OneCompilePerLayout) {
  auto f = [](const Array& x, const Array& y) { return x * y + 3; };
  auto jf = jit(f);
  Array y = randn({64, 64}, DType::Float32, 6);
  Array t1 = jnp::transpose(randn({64, 64}, DType::Float32, 7));
  Array t2 = jnp::transpose(randn({64, 64}, DType::Float32, 8));
  (void)jf(y, y);  // the contiguous program
  const int64_t compiles = compiler::codegen::llvm_compile_count();
  EXPECT_ALLCLOSE(jf(t1, y), f(dense(t1), y), 0, 0);
  const int64_t after_first = compiler::codegen::llvm_compile_count();
  EXPECT_LE(after_first - compiles, 1);  // the transposed layout (none if on disk already)
  // Another array of the same layout, at another address: the same kernel.
  EXPECT_ALLCLOSE(jf(t2, y), f(dense(t2), y), 0, 0);
  EXPECT_EQ(compiler::codegen::llvm_compile_count(), after_first);
  // Contiguous arguments again: the program's own kernel.
  EXPECT_ALLCLOSE(jf(y, y), f(y, y), 0, 0);
  EXPECT_EQ(compiler::codegen::llvm_compile_count(), after_first);
}

TEST(JitLayout, AFirstCallOnViewsCompilesOnlyItsLayout) {
  // The row-major kernel is compiled when a call first needs it, not with the program: a
  // program first called on views (jnp::ones, as a new user writes it) compiles one
  // kernel, not two. (Off the disk cache, and a body no other test compiles.)
  auto f = [](const Array& x, const Array& y) { return jnp::cos(x) * y + 3.25; };
  auto jf = jit(f, {.name = "first_call_on_views", .disk_cache = false});
  Array ones = jnp::ones({48, 40});
  Array y = randn({48, 40}, DType::Float32, 16);
  auto compiles = [] { return compiler::codegen::llvm_compile_count(); };
  int64_t before = compiles();
  EXPECT_ALLCLOSE(jf(ones, y), f(dense(ones), y), 0, 0);
  EXPECT_EQ(compiles() - before, 1) << "the ones layout's kernel only";
  before = compiles();
  EXPECT_ALLCLOSE(jf(y, y), f(y, y), 0, 0);
  EXPECT_EQ(compiles() - before, 1) << "the row-major kernel, on the first call that needs it";
  before = compiles();
  EXPECT_ALLCLOSE(jf(ones, y), f(dense(ones), y), 0, 0);
  EXPECT_ALLCLOSE(jf(y, ones), f(y, dense(ones)), 0, 0);  // a new layout: one kernel
  EXPECT_EQ(compiles() - before, 1);

  // lower().compile() compiles the row-major kernels now: calls on them compile nothing.
  auto g = [](const Array& x) { return jnp::sin(x) * 1.75 - x; };
  auto jg = jit(g, {.name = "compiled_ahead", .disk_cache = false});
  auto compiled = jg.lower(y).compile();
  before = compiles();
  EXPECT_ALLCLOSE(compiled(y), g(y), 0, 0);
  EXPECT_EQ(compiles(), before);
  EXPECT_ALLCLOSE(compiled(ones), g(dense(ones)), 0, 0);
  EXPECT_EQ(compiles() - before, 1) << "the ones layout's kernel";
}

TEST(JitLayout, ManyLayoutsStayCorrect) {
  // Past the layouts a program keeps kernels for, views are copied: still right.
  auto f = [](const Array& x) { return jnp::sqrt(x * x + 1); };
  auto jf = jit(f);
  Array base = randn({4, 64}, DType::Float32, 9);
  for (int64_t step = 2; step <= 12; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    Array v = base(all, Slice{0, 64, step});
    EXPECT_ALLCLOSE(jf(v), f(dense(v)), 0, 0);
  }
}

TEST(JitLayout, GradientsOfJittedFunctionsOfViews) {
  // jit(grad(f)) on a broadcast argument: the gradient program reads it in place too.
  auto loss = [](const Array& x) { return jnp::sum(jnp::sin(x) * x); };
  Array x = jnp::broadcast_to(randn({50}, DType::Float64, 10), {8, 50});
  const int64_t before = copies();
  Array g = jit(grad(loss))(x);
  EXPECT_EQ(copies(), before);
  EXPECT_ALLCLOSE(g, grad(loss)(dense(x)), 1e-12, 1e-12);
}

}  // namespace
