// Loop codegen (src/jit/codegen/): fused sub-programs written as jaxpr text, compiled by
// compile_kernel and checked against eval_jaxpr (eager jx) on random data.
#include <set>
#include <bit>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <regex>
#include <sstream>

#include <unistd.h>

#include "jit/codegen/kernel.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/codegen/llvm_session.h"
#include "jit/codegen/loop_kernel.h"
#include "jit/codegen/object_cache.h"
#include "jit/kernel_support.h"
#include "jx/jaxpr.h"
#include "kernel_test_util.h"
#include "row_programs.h"
#include "test_util.h"

namespace jx::compiler {
namespace {

namespace fs = std::filesystem;

using jx::testing::check;
using jx::testing::kernel_ir;
using jx::testing::read_file;
using jx::testing::no_cache;
using jx::testing::random_array;
using jx::testing::run_kernel;

TEST(LoopKernel, ElementwiseChainF32) {
  check(R"({ lambda ; a:f32[1000] b:f32[1000]. let
    c:f32[1000] = sin a
    d:f32[1000] = cos b
    e:f32[1000] = add c d
    f:f32[1000] = mul e a
  in (f) })",
        "loop", 1e-5, 1e-6);
}


TEST(LoopKernel, ElementwiseChainF64) {
  check(R"({ lambda ; a:f64[7] b:f64[7]. let
    c:f64[7] = exp a
    d:f64[7] = mul c b
    g:f64[7] = broadcast_in_dim[broadcast_dimensions=() shape=(7,)] 1.5:f64[]
    e:f64[7] = sub d g
    h:f64[7] = broadcast_in_dim[broadcast_dimensions=() shape=(7,)] 3.0:f64[]
    f:f64[7] = div e h
  in (f) })",
        "loop", 1e-12, 1e-12);
}

TEST(LoopKernel, ElementwiseInt32AndComparisons) {
  check(R"({ lambda ; a:i32[1000] b:i32[1000]. let
    c:i32[1000] = mul a b
    d:i32[1000] = sub c a
    e:bool[1000] = gt d b
    f:i32[1000] = select_n e a d
    g:i32[1000] = max f b
  in (g, e) })",
        "loop");
}

TEST(LoopKernel, Bool) {
  check(R"({ lambda ; a:bool[7] b:bool[7] c:f32[7]. let
    d:bool[7] = and a b
    e:bool[7] = not d
    h:f32[7] = broadcast_in_dim[broadcast_dimensions=() shape=(7,)] 0.0:f32[]
    f:bool[7] = lt c h
    g:bool[7] = or e f
  in (g) })",
        "loop");
}

TEST(LoopKernel, Sizes) {
  // exp(sin a) + cos b is a chain long enough to interleave two vectors (KernelPlan,
  // FlatLoopRunsInVectorBlocks): in blocks of both (64, 128, 4096, 2^20), blocks of one
  // (24, 1000), one loop interleaved with a remainder (4001), one loop (0, 1, 7, 1001).
  for (int64_t n : {0, 1, 7, 24, 64, 128, 1000, 1001, 4001, 4096, 1 << 20}) {
    const std::string t = "f32[" + std::to_string(n) + "]";
    check("{ lambda ; a:" + t + " b:" + t + ". let\n    c:" + t + " = sin a\n    d:" + t + " = cos b\n    e:" + t +
              " = exp c\n    f:" + t + " = add e d\n  in (f) }",
          "loop", 1e-5, 1e-6);
  }
}

TEST(LoopKernel, InterleavedLoopNest) {
  // A row broadcast keeps two dims; rows of 1024 and 1027 interleave two vectors, with
  // no remainder and with one per row; rows of 1000 do not (KernelPlan, FlatLoopRunsInVectorBlocks).
  for (int64_t n : {1000, 1024, 1027}) {
    const std::string row = std::to_string(n), t = "f32[3," + row + "]";
    check("{ lambda ; a:" + t + " r:f32[" + row + "]. let\n    b:" + t + " = exp a\n    c:" + t +
              " = broadcast_in_dim[broadcast_dimensions=(1,) shape=(3, " + row + ")] r\n    d:" + t +
              " = mul b c\n    e:" + t + " = sin d\n  in (e) }",
          "loop", 1e-5, 1e-6);
  }
}

TEST(LoopKernel, ScalarOutput) {
  check(R"({ lambda ; a:f32[] b:f32[]. let
    c:f32[] = mul a b
    d:f32[] = add c 1.0:f32[]
  in (d) })",
        "loop");
}

TEST(LoopKernel, Broadcasts) {
  // row (b along the last axis), column (c along the first), scalar (d), and a
  // broadcast of a computed value (recomputed per element).
  check(R"({ lambda ; a:f32[33,65] b:f32[65] c:f32[33] d:f32[]. let
    e:f32[33,65] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(33, 65)] b
    f:f32[33] = exp c
    g:f32[33,65] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(33, 65)] f
    h:f32[33,65] = broadcast_in_dim[broadcast_dimensions=() shape=(33, 65)] d
    i:f32[33,65] = add a e
    j:f32[33,65] = mul i g
    k:f32[33,65] = sub j h
  in (k) })",
        "loop", 1e-5, 1e-6);
}

// Rows of fewer than 16 points that vectors do not divide run vectors across rows
// (kernel_plan.cpp, runs_across_rows): the body repeated per point in the loop over rows.
// Every point stays where it was, with row, column and scalar broadcasts, computed
// values broadcast, an outer dim the loop over rows decomposes, transcendentals and
// float64; rows of whole vectors or past 15 points keep the loop along the row.
TEST(LoopKernel, ShortRowsRunAcrossRows) {
  auto program = [](const std::string& t, int64_t n, int64_t c) {
    const std::string row = t + "[" + std::to_string(n) + "," + std::to_string(c) + "]";
    return "{ lambda ; a:" + row + " m:" + t + "[" + std::to_string(n) + "] s:" + t + "[" + std::to_string(c) +
           "] d:" + t + "[]. let\n    e:" + row + " = broadcast_in_dim[broadcast_dimensions=(0,) shape=(" +
           std::to_string(n) + ", " + std::to_string(c) + ")] m\n    f:" + row +
           " = broadcast_in_dim[broadcast_dimensions=(1,) shape=(" + std::to_string(n) + ", " + std::to_string(c) +
           ")] s\n    g:" + row + " = sub a e\n    h:" + row + " = exp g\n    i:" + row + " = mul a f\n    j:" + row +
           " = sin i\n    k:" + t + "[] = exp d\n    l:" + row + " = broadcast_in_dim[broadcast_dimensions=() shape=(" +
           std::to_string(n) + ", " + std::to_string(c) + ")] k\n    o:" + row + " = add j l\n    p:" + row +
           " = mul o h\n  in (p, h) }";
  };
  for (auto [t, c] : {std::pair{"f32", 2}, {"f32", 3}, {"f32", 7}, {"f32", 12}, {"f32", 15}, {"f64", 3}, {"f64", 5},
                      {"f64", 9}, {"f64", 14}}) {
    SCOPED_TRACE(std::string(t) + " rows of " + std::to_string(c));
    const std::string text = program(t, 1001, c);
    EXPECT_NE(codegen::plan_kernel(parse_jaxpr(text), "loop", {}, cpu::VectorIsa::Avx512).str().find("across_rows"),
              std::string::npos);
    check(text, "loop", std::string(t) == "f32" ? 1e-5 : 1e-12, std::string(t) == "f32" ? 1e-6 : 1e-14);
  }
  for (auto [t, c] : {std::pair{"f32", 16}, {"f32", 20}, {"f32", 48}, {"f64", 8}, {"f64", 16}}) {
    SCOPED_TRACE(std::string(t) + " rows of " + std::to_string(c));
    EXPECT_EQ(codegen::plan_kernel(parse_jaxpr(program(t, 100, c)), "loop", {}, cpu::VectorIsa::Avx512).str().find(
                  "across_rows"),
              std::string::npos);
    check(program(t, 1001, c), "loop", std::string(t) == "f32" ? 1e-5 : 1e-12, std::string(t) == "f32" ? 1e-6 : 1e-14);
  }
  // An outer dim of the rows decomposed in the loop over rows, and a transposed operand.
  check(R"({ lambda ; a:f32[50,4,3] b:f32[50] c:f32[3,4]. let
    d:f32[50,4,3] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(50, 4, 3)] b
    e:f32[4,3] = transpose[permutation=(1, 0)] c
    f:f32[50,4,3] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(50, 4, 3)] e
    g:f32[50,4,3] = mul a d
    h:f32[50,4,3] = add g f
    i:f32[50,4,3] = tanh h
  in (i) })",
        "loop", 1e-5, 1e-6);
}

// An elementwise nest over short rows of costly points (an inline sin) runs the row's
// whole vectors in one loop and the rest as one vector in a loop of its own
// (loop_emitter's points_loop): over rows of 31 floats LLVM's scalar remainder computed
// 15 sines a row one at a time (0.70 ms against eager's 0.42 over 1.6e6 floats; 0.18
// split). Values against eager for rests of 1 to 15 points, and the masked rest in the IR.
TEST(LoopKernel, CostlyShortRowsRunTheirRestAsOneVector) {
  auto text = [](int64_t cols) {
    const std::string c = std::to_string(cols), x = "f32[37," + c + "]";
    return "{ lambda ; a:" + x + " b:f32[" + c + "]. let\n    c:" + x +
           " = broadcast_in_dim[broadcast_dimensions=(1,) shape=(37, " + c + ")] b\n    d:" + x + " = mul a c\n    e:" + x +
           " = sin d\n  in (e,) }";
  };
  for (int64_t cols : {17, 20, 24, 31, 33, 47}) {
    SCOPED_TRACE(std::to_string(cols) + " a row");
    check(text(cols), "loop", 1e-6, 1e-6);
  }
  if (codegen::host_target().features.find("+avx512f") == std::string::npos) GTEST_SKIP() << "no AVX-512 on this host";
  const std::string ir = kernel_ir(text(31), "loop");
  EXPECT_NE(ir.find("@llvm.masked.load.v16f32"), std::string::npos) << ir.substr(0, 3000);
}

TEST(LoopKernel, BroadcastSizeOneDim) {
  check(R"({ lambda ; a:f32[4,1,5] b:f32[4,3,5]. let
    c:f32[4,3,5] = broadcast_in_dim[broadcast_dimensions=(0, 1, 2) shape=(4, 3, 5)] a
    d:f32[4,3,5] = add c b
  in (d) })",
        "loop");
}

TEST(LoopKernel, Transpose) {
  check(R"({ lambda ; a:f32[37,53] b:f32[53,37]. let
    c:f32[53,37] = transpose[permutation=(1, 0)] a
    d:f32[53,37] = add c b
  in (d) })",
        "loop");
  check(R"({ lambda ; a:f64[2,3,4]. let
    b:f64[4,2,3] = transpose[permutation=(2, 0, 1)] a
    c:f64[4,2,3] = neg b
  in (c) })",
        "loop");
}

// Compositions of transpose, rev and strided slice over a 3-d operand.
TEST(LoopKernel, ComposedIndexMaps) {
  const Shape x{4, 5, 6};
  std::vector<int64_t> perm{0, 1, 2};
  do {
    for (int rev_mask : {0, 1, 5, 6}) {
      Shape t{x[static_cast<size_t>(perm[0])], x[static_cast<size_t>(perm[1])], x[static_cast<size_t>(perm[2])]};
      Shape sliced;
      for (int64_t d : t) sliced.push_back((d - 1 + 1) / 2);  // start 1, step 2
      std::vector<std::string> revs;
      for (int d = 0; d < 3; ++d)
        if (rev_mask & (1 << d)) revs.push_back(std::to_string(d));
      std::ostringstream rev_dims;
      for (size_t i = 0; i < revs.size(); ++i) rev_dims << (i ? ", " : "") << revs[i];
      if (revs.size() == 1) rev_dims << ",";
      auto st = [](const Shape& s) {
        std::ostringstream os;
        os << "f32[" << s[0] << "," << s[1] << "," << s[2] << "]";
        return os.str();
      };
      std::ostringstream text;
      text << "{ lambda ; a:f32[4,5,6] b:" << st(sliced) << ". let\n"
           << "    c:" << st(t) << " = transpose[permutation=(" << perm[0] << ", " << perm[1] << ", " << perm[2]
           << ")] a\n"
           << "    d:" << st(t) << " = rev[dimensions=(" << rev_dims.str() << ")] c\n"
           << "    e:" << st(sliced) << " = slice[limit_indices=(" << t[0] << ", " << t[1] << ", " << t[2]
           << ") start_indices=(1, 1, 1) strides=(2, 2, 2)] d\n"
           << "    f:" << st(sliced) << " = sub e b\n"
           << "  in (f) }";
      check(text.str(), "loop");
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(LoopKernel, SliceWithSteps) {
  check(R"({ lambda ; a:f32[10,12]. let
    b:f32[4,4] = slice[limit_indices=(9, 12) start_indices=(1, 2) strides=(2, 3)] a
    d:f32[4,4] = broadcast_in_dim[broadcast_dimensions=() shape=(4, 4)] 2.0:f32[]
    c:f32[4,4] = mul b d
  in (c) })",
        "loop");
}

TEST(LoopKernel, Rev) {
  check(R"({ lambda ; a:i32[6,5] b:i32[6,5]. let
    c:i32[6,5] = rev[dimensions=(1,)] a
    d:i32[6,5] = rev[dimensions=(0, 1)] b
    e:i32[6,5] = sub c d
  in (e) })",
        "loop");
}

TEST(LoopKernel, SqueezeExpandDims) {
  check(R"({ lambda ; a:f32[3,1,4] b:f32[3,4]. let
    c:f32[3,4] = squeeze[dimensions=(1,)] a
    d:f32[1,3,4] = expand_dims[dimensions=(0,)] b
    e:f32[3,4] = squeeze[dimensions=(0,)] d
    f:f32[3,4] = add c e
  in (f) })",
        "loop");
}

TEST(LoopKernel, ReshapeOfInput) {
  check(R"({ lambda ; a:f32[6,4] b:f32[4,6]. let
    c:f32[4,6] = reshape[new_sizes=(4, 6)] a
    d:f32[24] = reshape[new_sizes=(24,)] a
    e:f32[24] = neg d
    f:f32[4,6] = reshape[new_sizes=(4, 6)] e
    g:f32[1,4,1,6] = reshape[new_sizes=(1, 4, 1, 6)] f
    i:f32[4,6] = reshape[new_sizes=(4, 6)] g
    h:f32[4,6] = add c b
  in (h, i) })",
        "loop");
}

TEST(LoopKernel, Iota) {
  check(R"({ lambda ; a:f32[4,5]. let
    b:i32[4,5] = iota[dimension=1 dtype=int32 shape=(4, 5)]
    c:f32[4,5] = convert_element_type[new_dtype=float32 weak_type=False] b
    d:f32[4,5] = add a c
    e:f32[4,5] = iota[dimension=0 dtype=float32 shape=(4, 5)]
    f:f32[4,5] = mul d e
  in (f) })",
        "loop");
}

TEST(LoopKernel, MultiOutputAndInputPassthrough) {
  check(R"({ lambda ; a:f32[100] b:f32[100]. let
    c:f32[100] = add a b
    d:f32[100] = mul a b
  in (c, d, a) })",
        "loop");
}

TEST(LoopKernel, CopyAndFill) {
  // Loops LLVM turns into memcpy / memset calls, which the JIT resolves in the process.
  check(R"({ lambda ; a:f32[1000] b:f64[1000]. let
    c:i32[1000] = broadcast_in_dim[broadcast_dimensions=() shape=(1000,)] 0:i32[]
  in (a, c) })",
        "loop");
  check(R"({ lambda ; a:f64[100,30]. let
    b:f64[100,30] = broadcast_in_dim[broadcast_dimensions=() shape=(100, 30)] 0.0:f64[]
  in (a, b) })",
        "loop");
}

TEST(LoopKernel, ScalarOperandsAndComputedScalars) {
  // clamp's bounds may be 0-d inputs; a 0-d computed value broadcast into the loop.
  check(R"({ lambda ; a:f32[] b:f32[50] c:f32[] d:f32[]. let
    e:f32[50] = clamp a b c
    f:f32[] = exp d
    g:f32[50] = broadcast_in_dim[broadcast_dimensions=() shape=(50,)] f
    h:f32[50] = mul e g
    i:f32[50] = integer_pow[y=3] h
  in (i) })",
        "loop", 1e-5, 1e-6);
}

TEST(LoopKernel, MaxPropagatesNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Array a(std::vector<float>{1, nan, 3, -1, nan, 0, 2}, Shape{7});
  Array b(std::vector<float>{nan, 2, 1, nan, nan, -0.f, 5}, Shape{7});
  check(R"({ lambda ; a:f32[7] b:f32[7]. let
    c:f32[7] = max a b
    d:f32[7] = min a b
  in (c, d) })",
        "loop", 1e-6, 1e-6, {a, b});
}

TEST(LoopKernel, RefusesWhatItCannotCompile) {
  // A reshape that merges dims of a computed value has no affine index map.
  Jaxpr merge = parse_jaxpr(R"({ lambda ; a:f32[6,4]. let
    b:f32[4,6] = transpose[permutation=(1, 0)] a
    c:f32[24] = reshape[new_sizes=(24,)] b
  in (c) })");
  EXPECT_JX_ERROR(compile_kernel(merge, "loop", no_cache()), "[jit] cannot compile equation 'reshape[new_sizes=(24,)] of (f32[4,6])'",
                  "merges dims");
  Jaxpr cumsum = parse_jaxpr(R"({ lambda ; a:f32[6]. let
    b:f32[6] = cumsum[axis=0 reverse=False] a
  in (b) })");
  EXPECT_JX_ERROR(compile_kernel(cumsum, "loop", no_cache()), "[jit] cannot compile equation 'cumsum");
  Jaxpr reduce_in_loop = parse_jaxpr(R"({ lambda ; a:f32[6]. let
    b:f32[] = reduce_sum[axes=(0,)] a
  in (b) })");
  EXPECT_JX_ERROR(compile_kernel(reduce_in_loop, "loop", no_cache()), "a reduction can only end a reduction kernel");
  Jaxpr not_reduced = parse_jaxpr(R"({ lambda ; a:f32[6]. let
    b:f32[6] = sin a
  in (b) })");
  EXPECT_JX_ERROR(compile_kernel(not_reduced, "reduction", no_cache()), "output 0 of a reduction fusion (f32[6]) is not computed by a reduction");
  EXPECT_JX_ERROR(compile_kernel(not_reduced, "scan", no_cache()), "kind must be loop, reduction or rows, got 'scan'");
  Jaxpr mixed = parse_jaxpr(R"({ lambda ; a:f32[6] b:f32[3]. let
    c:f32[6] = sin a
    d:f32[3] = cos b
  in (c, d) })");
  EXPECT_JX_ERROR(compile_kernel(mixed, "loop", no_cache()), "must share one shape");
  Jaxpr batched = parse_jaxpr(R"({ lambda ; a:f32[2,3,4] b:f32[2,4,5]. let
    c:f32[2,3,5] = dot_general[lhs_batch_dimensions=(0,) lhs_contracting_dimensions=(2,) rhs_batch_dimensions=(0,) rhs_contracting_dimensions=(1,)] a b
  in (c) })");
  EXPECT_JX_ERROR(compile_kernel(batched, "dot", no_cache()), "[jit] a dot kernel handles 1-d or 2-d operands only");
  Jaxpr ints = parse_jaxpr(R"({ lambda ; a:i32[2,3] b:i32[3,4]. let
    c:i32[2,4] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b
  in (c) })");
  EXPECT_JX_ERROR(compile_kernel(ints, "dot", no_cache()), "float32 or float64");
}

TEST(KernelSupport, Predicates) {
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[2,3] b:bool[4] c:c64[3] d:i32[4]. let
    e:f32[3,2] = transpose[permutation=(1, 0)] a
    f:f32[] = reduce_sum[axes=(0, 1)] a
    g:bool[] = reduce_and[axes=(0,)] b
    h:bool[] = reduce_max[axes=(0,)] b
    i:c64[3] = rev[dimensions=(0,)] c
    k:f32[2,3] = cumsum[axis=0 reverse=False] a
    l:i32[] = reduce_or[axes=(0,)] d
    m:i32[] = argmax[axes=(0,) index_dtype=int32] d
  in (e, f, g, h, i, k, l, m) })");
  std::string why;
  EXPECT_TRUE(index_op_supported(j.eqns[0], &why));
  EXPECT_FALSE(index_op_supported(j.eqns[4], &why));
  EXPECT_EQ(why, "loop kernels do not handle dtype complex64");
  EXPECT_FALSE(index_op_supported(j.eqns[5], &why));
  EXPECT_EQ(why, "cumsum is not an index map");
  EXPECT_TRUE(reduction_supported(j.eqns[1], &why));
  EXPECT_TRUE(reduction_supported(j.eqns[2], &why));
  EXPECT_FALSE(reduction_supported(j.eqns[3], &why));
  EXPECT_EQ(why, "reduce_max of bool runs eagerly");
  EXPECT_TRUE(reduction_supported(j.eqns[6], &why));
  EXPECT_FALSE(reduction_supported(j.eqns[7], &why));
  EXPECT_EQ(why, "argmax is not a reduction a loop kernel can end in");
  EXPECT_FALSE(reduction_supported(j.eqns[5], nullptr));
}

// ---- the plan: index maps folded into affine addresses, dims collapsed ----

TEST(KernelPlan, ContiguousWorkIsOneFlatLoop) {
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[4,5,6] b:f32[4,5,6]. let
    c:f32[4,5,6] = add a b
    d:f32[4,5,6] = exp c
  in (d) })");
  EXPECT_EQ(codegen::plan_kernel(j, "loop").str(),
            "loop dims (120,) kept 1\n"
            "in0 float32\n"
            "in1 float32\n"
            "n0:float32 = load in0 [0; 1]\n"
            "n1:float32 = load in1 [0; 1]\n"
            "n2:float32 = add (n0:float32 n1:float32)\n"
            "n3:float32 = exp (n2:float32)\n"
            "out0:float32 = n3 [0; 1]\n"
            "schedule elementwise units 120 chunk_rows 0 column_block 0\n");
}

// A flat loop whose length is a multiple of the vector width runs as blocks of one
// vector (the lanes of its widest type at the ISA's width): each block's loop becomes one
// vector iteration, with no scalar remainder loop. Other lengths, scalar code, and loops
// that do not collapse to one dim keep their shape.
TEST(KernelPlan, FlatLoopRunsInVectorBlocks) {
  // A short body (add, then mul: two plain ops deep) in blocks of one vector, 8 float32
  // on AVX2.
  Jaxpr flat = parse_jaxpr(R"({ lambda ; a:f32[2,8,32] b:f32[2,8,32]. let
    c:f32[2,8,32] = add a b
    d:i32[512] = iota[dimension=0 dtype=int32 shape=(512,)]
    e:i32[2,8,32] = reshape[new_sizes=(2, 8, 32)] d
    f:f32[2,8,32] = convert_element_type[new_dtype=float32 weak_type=False] e
    g:f32[2,8,32] = mul c f
  in (g) })");
  EXPECT_EQ(codegen::plan_kernel(flat, "loop", {}, cpu::VectorIsa::Avx2).str(),
            "loop dims (64, 8) kept 2\n"
            "in0 float32\n"
            "in1 float32\n"
            "n0:float32 = load in0 [0; 8 1]\n"
            "n1:float32 = load in1 [0; 8 1]\n"
            "n2:float32 = add (n0:float32 n1:float32)\n"
            "n3:int32 = iota [0; 8 1]\n"
            "n4:float32 = convert_element_type[new_dtype=float32 weak_type=False] (n3:int32)\n"
            "n5:float32 = mul (n2:float32 n4:float32)\n"
            "out0:float32 = n5 [0; 8 1]\n"
            "schedule elementwise units 64 chunk_rows 0 column_block 0 lanes 8 interleave 1\n");
  auto first_line = [](const std::string& text) { return text.substr(0, text.find('\n')); };
  auto last_line = [](const std::string& text) {
    const std::string body = text.substr(0, text.size() - 1);
    return body.substr(body.rfind('\n') + 1);
  };
  auto plan = [](const Jaxpr& j, cpu::VectorIsa isa) { return codegen::plan_kernel(j, "loop", {}, isa).str(); };
  auto lanes = [&](const Jaxpr& j, cpu::VectorIsa isa = cpu::VectorIsa::Avx2) {  // "lanes L interleave K"
    const std::string text = last_line(plan(j, isa));
    return text.substr(std::min(text.size(), text.find("lanes")));
  };
  EXPECT_EQ(first_line(plan(flat, cpu::VectorIsa::Avx512)), "loop dims (32, 16) kept 2");
  EXPECT_EQ(first_line(plan(flat, cpu::VectorIsa::Scalar)), "loop dims (512,) kept 1");
  EXPECT_EQ(last_line(plan(flat, cpu::VectorIsa::Scalar)), "schedule elementwise units 512 chunk_rows 0 column_block 0");
  // The widest type sets the lanes: float64 (4 at 256 bits), bool (32).
  auto unary = [](const std::string& type, const std::string& shape, const std::string& op) {
    const std::string t = type + "[" + shape + "]";
    return parse_jaxpr("{ lambda ; a:" + t + ". let\n    b:" + t + " = " + op + " a\n  in (b) }");
  };
  EXPECT_EQ(first_line(plan(unary("f64", "1024", "exp"), cpu::VectorIsa::Avx2)), "loop dims (256, 4) kept 2");
  EXPECT_EQ(lanes(unary("f64", "1024", "exp")), "lanes 4 interleave 1");
  EXPECT_EQ(first_line(plan(unary("bool", "1024", "not"), cpu::VectorIsa::Avx2)), "loop dims (32, 32) kept 2");
  // A length that is not a multiple of the lanes, or no longer than one vector: one loop.
  EXPECT_EQ(first_line(plan(unary("f32", "100", "exp"), cpu::VectorIsa::Avx2)), "loop dims (100,) kept 1");
  EXPECT_EQ(first_line(plan(unary("f32", "8", "exp"), cpu::VectorIsa::Avx2)), "loop dims (8,) kept 1");
  // A long dependent chain (exp, then sin: op costs 16 deep) interleaves four vectors, in
  // blocks of four where the length allows, else of two, else in blocks of one without
  // interleaving.
  auto two_deep = [](const std::string& shape, const std::string& row = "") {
    const std::string t = "f32[" + shape + "]";
    if (row.empty())
      return parse_jaxpr("{ lambda ; a:" + t + ". let\n    b:" + t + " = exp a\n    c:" + t + " = sin b\n  in (c) }");
    return parse_jaxpr("{ lambda ; a:" + t + " r:f32[" + row + "]. let\n    b:" + t + " = exp a\n    c:" + t +
                       " = broadcast_in_dim[broadcast_dimensions=(1,) shape=(" + shape + ")] r\n    d:" + t +
                       " = mul b c\n    e:" + t + " = sin d\n  in (e) }");
  };
  EXPECT_EQ(first_line(plan(two_deep("1024"), cpu::VectorIsa::Avx2)), "loop dims (32, 32) kept 2");
  EXPECT_EQ(lanes(two_deep("1024")), "lanes 8 interleave 4");
  EXPECT_EQ(first_line(plan(two_deep("1024"), cpu::VectorIsa::Avx512)), "loop dims (16, 64) kept 2");
  EXPECT_EQ(lanes(two_deep("1024"), cpu::VectorIsa::Avx512), "lanes 16 interleave 4");
  EXPECT_EQ(first_line(plan(two_deep("1040"), cpu::VectorIsa::Avx2)), "loop dims (65, 16) kept 2");
  EXPECT_EQ(lanes(two_deep("1040")), "lanes 8 interleave 2");
  EXPECT_EQ(first_line(plan(two_deep("1032"), cpu::VectorIsa::Avx2)), "loop dims (129, 8) kept 2");
  EXPECT_EQ(lanes(two_deep("1032")), "lanes 8 interleave 1");
  // Not split: a flat loop interleaves past 64 vector iterations (its one remainder is
  // negligible), a loop nest only where its rows leave no more to the remainder.
  EXPECT_EQ(first_line(plan(two_deep("4001"), cpu::VectorIsa::Avx2)), "loop dims (4001,) kept 1");
  EXPECT_EQ(lanes(two_deep("4001")), "lanes 8 interleave 4");
  EXPECT_EQ(lanes(two_deep("1501")), "lanes 8 interleave 2");
  EXPECT_EQ(lanes(two_deep("1001")), "lanes 8 interleave 1");
  EXPECT_EQ(first_line(plan(two_deep("3,1024", "1024"), cpu::VectorIsa::Avx2)), "loop dims (3, 1024) kept 2");
  EXPECT_EQ(lanes(two_deep("3,1024", "1024")), "lanes 8 interleave 4");
  EXPECT_EQ(lanes(two_deep("3,1000", "1000")), "lanes 8 interleave 1");
  EXPECT_EQ(lanes(two_deep("3,1027", "1027")), "lanes 8 interleave 4");
  EXPECT_EQ(lanes(two_deep("3,1043", "1043")), "lanes 8 interleave 2");
  // A large body (more than kLargeBodyOps ops) runs the same blocks of four vectors, as
  // one vector of four registers (its loop hints: CodegenDumps.LargeBodyCallsOutlinedMathOnFourRegisters).
  std::string chain = "{ lambda ; a:f32[1024]. let\n";
  std::string prev = "a";
  for (int64_t i = 0; i <= codegen::kLargeBodyOps; ++i) {
    chain += "    v" + std::to_string(i) + ":f32[1024] = sin " + prev + "\n";
    prev = "v" + std::to_string(i);
  }
  const Jaxpr large = parse_jaxpr(chain + "  in (" + prev + ") }");
  EXPECT_EQ(first_line(plan(large, cpu::VectorIsa::Avx2)), "loop dims (32, 32) kept 2");
  EXPECT_EQ(lanes(large), "lanes 8 interleave 4");
  // A broadcast operand keeps the loop two-dimensional (its inner loop a constant 32).
  Jaxpr broadcast = parse_jaxpr(R"({ lambda ; a:f32[2,8,32] b:f32[32]. let
    c:f32[2,8,32] = broadcast_in_dim[broadcast_dimensions=(2,) shape=(2, 8, 32)] b
    d:f32[2,8,32] = add a c
  in (d) })");
  EXPECT_EQ(first_line(plan(broadcast, cpu::VectorIsa::Avx2)), "loop dims (16, 32) kept 2");
}

// An elementwise body chaining kLargeBodyChainedMath transcendentals on one dependent path
// is large (it calls its math outlined), however few its ops; as many side by side, a
// shorter chain, or a reduction of the chain are not.
TEST(KernelPlan, ChainedTranscendentalsMakeALargeBody) {
  auto body = [](const std::vector<std::string>& lines, const std::string& out) {
    std::string text = "{ lambda ; a:f32[1024] b:f32[1024]. let\n";
    for (const std::string& l : lines) text += "    " + l + "\n";
    return parse_jaxpr(text + "  in (" + out + ") }");
  };
  auto large = [](const Jaxpr& j, const char* kind = "loop") {
    return codegen::large_body(codegen::plan_kernel(j, kind, {}, cpu::VectorIsa::Avx2));
  };
  static_assert(codegen::kLargeBodyChainedMath == 4);
  const std::vector<std::string> chain3 = {"c:f32[1024] = exp a", "d:f32[1024] = mul c b", "e:f32[1024] = sin d",
                                           "f:f32[1024] = tanh e"};
  std::vector<std::string> chain4 = chain3;
  chain4.push_back("g:f32[1024] = sin f");
  EXPECT_FALSE(large(body(chain3, "f")));
  EXPECT_TRUE(large(body(chain4, "g")));
  // Four side by side: one on each path.
  EXPECT_FALSE(large(body({"c:f32[1024] = sin a", "d:f32[1024] = cos b", "e:f32[1024] = exp a",
                           "f:f32[1024] = tanh b", "g:f32[1024] = add c d", "h:f32[1024] = add e f",
                           "i:f32[1024] = add g h"},
                          "i")));
  // The longest path counts, not the sum: a branch of 3 beside the chain of 4.
  std::vector<std::string> branched = chain4;
  for (const char* l : {"h:f32[1024] = cos b", "i:f32[1024] = exp h", "k:f32[1024] = log i", "l:f32[1024] = add g k"})
    branched.push_back(l);
  EXPECT_TRUE(large(body(branched, "l")));
  std::vector<std::string> summed = chain4;
  summed.push_back("h:f32[] = reduce_sum[axes=(0,)] g");
  EXPECT_FALSE(large(body(summed, "h"), "reduction"));
}

TEST(KernelPlan, IndexMapsAndRecompute) {
  // b is read transposed; c = sin(a) is read directly and reversed (two nodes); the row
  // broadcast d keeps the dims apart; size-1 dims disappear.
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[3,4] b:f32[4,3] d:f32[4]. let
    c:f32[3,4] = sin a
    e:f32[3,4] = transpose[permutation=(1, 0)] b
    f:f32[3,4] = rev[dimensions=(0, 1)] c
    g:f32[3,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(3, 4)] d
    h:f32[3,4] = add c e
    i:f32[3,4] = add h f
    k:f32[3,4] = mul i g
    l:f32[1,3,4] = expand_dims[dimensions=(0,)] k
  in (l) })");
  EXPECT_EQ(codegen::plan_kernel(j, "loop").str(),
            "loop dims (3, 4) kept 2\n"
            "in0 float32\n"
            "in1 float32\n"
            "in2 float32\n"
            "n0:float32 = load in0 [0; 4 1]\n"
            "n1:float32 = sin (n0:float32)\n"
            "n2:float32 = load in1 [0; 1 3]\n"
            "n3:float32 = add (n1:float32 n2:float32)\n"
            "n4:float32 = load in0 [11; -4 -1]\n"
            "n5:float32 = sin (n4:float32)\n"
            "n6:float32 = add (n3:float32 n5:float32)\n"
            "n7:float32 = load in2 [0; 0 1]\n"
            "n8:float32 = mul (n6:float32 n7:float32)\n"
            "out0:float32 = n8 [0; 4 1]\n"
            "schedule elementwise units 3 chunk_rows 0 column_block 0\n");
}

TEST(KernelPlan, ReductionSchedules) {
  auto mode = [](const std::string& text) {
    std::string s = codegen::plan_kernel(parse_jaxpr(text), "reduction").str();
    return s.substr(s.find("schedule"));
  };
  EXPECT_EQ(mode(R"({ lambda ; a:f32[8,300]. let
    b:f32[8] = reduce_sum[axes=(1,)] a
  in (b) })"),
            "schedule row_reduce units 8 chunk_rows 0 column_block 0\n");
  EXPECT_EQ(mode(R"({ lambda ; a:f32[300,2000]. let
    b:f32[2000] = reduce_sum[axes=(0,)] a
  in (b) })"),
            "schedule column_reduce units 8 chunk_rows 0 column_block 256\n");
  EXPECT_EQ(mode(R"({ lambda ; a:f32[100,1000]. let
    b:f32[] = reduce_sum[axes=(0, 1)] a
  in (b) })"),
            "schedule full_reduce units 7 chunk_rows 16384 column_block 0\n");
}

// ---- reductions ----

TEST(ReductionKernel, FullSum) {
  for (int64_t n : {0, 1, 7, 1000, 1 << 20}) {
    const std::string t = "f32[" + std::to_string(n) + "]";
    check("{ lambda ; a:" + t + " b:" + t + ". let\n    k:" + t + " = broadcast_in_dim[broadcast_dimensions=() shape=(" +
              std::to_string(n) + ",)] 2.0:f32[]\n    c:" + t + " = mul b k\n    d:" + t +
              " = add a c\n    e:f32[] = reduce_sum[axes=(0,)] d\n  in (e) }",
          "reduction", 1e-5, 1e-4);
  }
}

TEST(ReductionKernel, FullReductionsOfEveryKind) {
  check(R"({ lambda ; a:f64[50,40]. let
    b:f64[] = reduce_sum[axes=(0, 1)] a
    c:f64[] = reduce_max[axes=(0, 1)] a
    d:f64[] = reduce_min[axes=(0, 1)] a
  in (b, c, d) })",
        "reduction", 1e-12, 1e-12);
  check(R"({ lambda ; a:f32[30]. let
    k:f32[30] = broadcast_in_dim[broadcast_dimensions=() shape=(30,)] 0.1:f32[]
    b:f32[30] = mul a k
    c:f32[30] = exp b
    d:f32[] = reduce_prod[axes=(0,)] c
  in (d) })",
        "reduction", 1e-5, 1e-6);
  check(R"({ lambda ; a:i32[300] b:bool[300]. let
    c:i32[] = reduce_sum[axes=(0,)] a
    d:i32[] = reduce_max[axes=(0,)] a
  in (c, d) })",
        "reduction");
  check(R"({ lambda ; a:bool[300] b:bool[300]. let
    c:bool[] = reduce_and[axes=(0,)] a
    d:bool[] = reduce_or[axes=(0,)] b
  in (c, d) })",
        "reduction");
}

TEST(ReductionKernel, RowReduction) {
  check(R"({ lambda ; a:f32[100,37] b:f32[100,37]. let
    c:f32[100,37] = mul a b
    d:f32[100] = reduce_sum[axes=(1,)] c
    e:f32[100] = reduce_max[axes=(1,)] a
  in (d, e) })",
        "reduction", 1e-5, 1e-5);
}

TEST(ReductionKernel, ColumnReduction) {
  check(R"({ lambda ; a:f32[37,2100]. let
    b:f32[37,2100] = exp a
    c:f32[2100] = reduce_sum[axes=(0,)] b
    d:f32[2100] = reduce_min[axes=(0,)] a
  in (c, d) })",
        "reduction", 1e-5, 1e-5);
}

// Tall, narrow column reductions split their rows into parts, each unit a block of one
// part, the parts' partial results combined by a finish function (LoopSchedule::row_parts):
// parts that do not divide the rows (100003), float32 sums of exp accumulated in float64,
// min and max with a NaN in one part, float64, and two reduced dims.
TEST(ReductionKernel, TallNarrowColumnsSplitTheirRows) {
  auto schedule_of = [](const std::string& text) { return codegen::plan_kernel(parse_jaxpr(text), "reduction").str(); };
  const std::string tall = R"({ lambda ; a:f32[100003,12]. let
    b:f32[100003,12] = exp a
    c:f32[12] = reduce_sum[axes=(0,)] b
    d:f32[12] = reduce_min[axes=(0,)] a
    e:f32[12] = reduce_max[axes=(0,)] a
  in (c, d, e) })";
  EXPECT_NE(schedule_of(tall).find("row_parts"), std::string::npos) << schedule_of(tall);
  EXPECT_EQ(schedule_of(R"({ lambda ; a:f32[37,2100]. let
    b:f32[2100] = reduce_sum[axes=(0,)] a
  in (b) })").find("row_parts"),
            std::string::npos);
  std::vector<float> v = random_array(Aval{{100003, 12}, DType::Float32, false}, 5).to_vector<float>();
  v[77777 * 12 + 5] = std::numeric_limits<float>::quiet_NaN();
  check(tall, "reduction", 1e-6, 1e-6, {Array(v, Shape{100003, 12})});
  check(R"({ lambda ; a:f64[65536,3]. let
    b:f64[3] = reduce_sum[axes=(0,)] a
  in (b) })",
        "reduction", 1e-12, 1e-12);
  check(R"({ lambda ; a:f32[4000,7,16]. let
    b:f32[16] = reduce_sum[axes=(0, 1)] a
  in (b) })",
        "reduction", 1e-5, 1e-5);
}

TEST(ReductionKernel, MiddleAxes) {
  check(R"({ lambda ; a:f64[4,5,6]. let
    b:f64[4,6] = reduce_sum[axes=(1,)] a
  in (b) })",
        "reduction", 1e-12, 1e-12);
  check(R"({ lambda ; a:f32[3,4,5,6]. let
    b:f32[3,6] = reduce_max[axes=(1, 2)] a
  in (b) })",
        "reduction");
  check(R"({ lambda ; a:f32[3,4,5,6]. let
    b:f32[4,5] = reduce_sum[axes=(0, 3)] a
  in (b) })",
        "reduction", 1e-5, 1e-5);
}

TEST(ReductionKernel, OfTransposedAndBroadcastOperands) {
  check(R"({ lambda ; a:f32[40,30] b:f32[40]. let
    c:f32[30,40] = transpose[permutation=(1, 0)] a
    d:f32[30,40] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(30, 40)] b
    e:f32[30,40] = sub c d
    f:f32[30] = reduce_sum[axes=(1,)] e
  in (f) })",
        "reduction", 1e-5, 1e-5);
}

TEST(ReductionKernel, FullReductionOfTransposedOperand) {
  check(R"({ lambda ; a:f32[40,30] b:f32[30,40]. let
    c:f32[30,40] = transpose[permutation=(1, 0)] a
    d:f32[30,40] = mul c b
    e:f32[] = reduce_sum[axes=(0, 1)] d
    f:f32[] = reduce_min[axes=(1, 0)] d
  in (e, f) })",
        "reduction", 1e-5, 1e-4);
}

TEST(ReductionKernel, NoReducedAxes) {
  check(R"({ lambda ; a:f32[4,5]. let
    b:f32[4,5] = reduce_sum[axes=()] a
  in (b) })",
        "reduction");
  check(R"({ lambda ; a:f32[4,1,5]. let
    b:f32[4,5] = reduce_max[axes=(1,)] a
  in (b) })",
        "reduction");
  check(R"({ lambda ; a:f64[]. let
    b:f64[] = reduce_prod[axes=()] a
  in (b) })",
        "reduction");
}

// Results of a full and a column reduction are the same bits with 1 and 3 threads: the
// test runs itself as a child process with JX_NUM_THREADS set (the pool's size is fixed
// per process).
TEST(ReductionKernel, IndependentOfThreadCount) {
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[1024,1536]. let
    b:f32[] = reduce_sum[axes=(0, 1)] a
    c:f32[] = reduce_max[axes=(0, 1)] a
  in (b, c) })");
  Jaxpr col = parse_jaxpr(R"({ lambda ; a:f32[1024,1536]. let
    b:f32[1536] = reduce_sum[axes=(0,)] a
  in (b) })");
  // Split into parts of rows (LoopSchedule::row_parts): the parts are the plan's.
  Jaxpr narrow = parse_jaxpr(R"({ lambda ; a:f32[98304,16]. let
    b:f32[16] = reduce_sum[axes=(0,)] a
  in (b) })");
  std::vector<Array> args{random_array(j.invars[0].aval, 77)};
  auto full = compile_kernel(j, "reduction", no_cache());
  auto column = compile_kernel(col, "reduction", no_cache());
  auto parts = compile_kernel(narrow, "reduction", no_cache());
  std::vector<Array> r = run_kernel(*full, j, args);
  std::vector<Array> c = run_kernel(*column, col, args);
  std::vector<Array> p = run_kernel(*parts, narrow, {args[0].reshape({98304, 16})});
  std::ostringstream bits;
  for (const Array& x : {r[0], r[1], c[0], p[0]})
    for (float v : x.to_vector<float>()) bits << std::hexfloat << v << " ";
  if (const char* out = std::getenv("JX_CODEGEN_TEST_BITS")) {  // the child: report
    std::ofstream(out) << bits.str();
    return;
  }
  const fs::path dir = fs::temp_directory_path();
  for (int threads : {1, 3}) {
    const fs::path out = dir / ("jx_codegen_bits_" + std::to_string(::getpid()) + "_" + std::to_string(threads));
    const std::string cmd = "JX_NUM_THREADS=" + std::to_string(threads) + " JX_CODEGEN_TEST_BITS=" + out.string() +
                            " /proc/" + std::to_string(::getpid()) +
                            "/exe --gtest_filter=ReductionKernel.IndependentOfThreadCount > /dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    EXPECT_EQ(read_file(out), bits.str()) << threads << " threads";
    fs::remove(out);
  }
}

// Every subset of axes, of a plain and of a transposed operand: exercises dim collapsing
// and every schedule.
TEST(ReductionKernel, EveryAxisSubset) {
  auto shape_text = [](const Shape& s) {
    std::ostringstream os;
    for (size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
    return os.str();
  };
  for (int transposed = 0; transposed < 2; ++transposed)
    for (int mask = 0; mask < 16; ++mask) {
      const Shape x = transposed ? Shape{70, 4, 1, 3} : Shape{3, 1, 4, 70};
      Shape kept;
      std::vector<std::string> axes;
      for (int d = 0; d < 4; ++d) {
        if (mask & (1 << d))
          axes.push_back(std::to_string(d));
        else
          kept.push_back(x[static_cast<size_t>(d)]);
      }
      std::ostringstream axes_text;
      for (size_t i = 0; i < axes.size(); ++i) axes_text << (i ? ", " : "") << axes[i];
      if (axes.size() == 1) axes_text << ",";
      const std::string xt = "f32[" + shape_text(x) + "]", kt = "f32[" + shape_text(kept) + "]";
      std::ostringstream text;
      text << "{ lambda ; a:f32[3,1,4,70]. let\n";
      if (transposed)
        text << "    b:" << xt << " = transpose[permutation=(3, 2, 1, 0)] a\n";
      else
        text << "    b:" << xt << " = neg a\n";
      text << "    c:" << kt << " = reduce_sum[axes=(" << axes_text.str() << ")] b\n";
      text << "    e:" << kt << " = reduce_max[axes=(" << axes_text.str() << ")] b\n";
      text << "  in (c, e) }";
      check(text.str(), "reduction", 1e-5, 1e-5);
    }
}

TEST(ReductionKernel, EmptyReducedAxes) {
  check(R"({ lambda ; a:f32[5,0]. let
    b:f32[5] = reduce_sum[axes=(1,)] a
    c:f32[5] = reduce_max[axes=(1,)] a
  in (b, c) })",
        "reduction");
  check(R"({ lambda ; a:f32[0,5]. let
    b:f32[5] = reduce_sum[axes=(0,)] a
  in (b) })",
        "reduction");
}

TEST(ReductionKernel, MaxWithNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> v(2000, 1.f);
  v[1234] = nan;
  Array a(v, Shape{2000});
  check(R"({ lambda ; a:f32[2000]. let
    b:f32[] = reduce_max[axes=(0,)] a
    c:f32[] = reduce_min[axes=(0,)] a
  in (b, c) })",
        "reduction", 1e-6, 1e-6, {a});
  Array rows(v, Shape{40, 50});
  check(R"({ lambda ; a:f32[40,50]. let
    b:f32[40] = reduce_max[axes=(1,)] a
    c:f32[50] = reduce_max[axes=(0,)] a
  in (b) })",
        "reduction", 1e-6, 1e-6, {rows});
}

TEST(ReductionKernel, RowMaxAndMinAtEveryAccumulatorLane) {
  // Max and min reductions keep up to 16 vector accumulators (loop_emitter.cpp,
  // extremum_accumulators): rows of 128 floats (one accumulator per vector) and of 4100
  // (8, with a remainder). In row r a NaN sits at column r, so every lane of every
  // accumulator (and the remainder) holds it once; it must win. Rows of zeros with one +0
  // among -0 (at column r) give max +0 and min -0, as IEEE maximum and minimum do.
  for (int64_t cols : {int64_t{128}, int64_t{4100}}) {
    SCOPED_TRACE(cols);
    const int64_t rows = cols;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> v(static_cast<size_t>(rows * cols)), zeros(static_cast<size_t>(rows * cols), -0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) v[static_cast<size_t>(r * cols + c)] = static_cast<float>((r * 31 + c * 17) % 97) - 48;
    std::vector<float> with_nan = v;
    for (int64_t r = 0; r < rows; ++r) {
      with_nan[static_cast<size_t>(r * cols + r)] = nan;
      zeros[static_cast<size_t>(r * cols + r)] = 0.0f;
    }
    const std::string n = std::to_string(rows), m = std::to_string(cols);
    const Jaxpr j = parse_jaxpr("{ lambda ; a:f32[" + n + "," + m + "]. let\n    b:f32[" + n +
                                "] = reduce_max[axes=(1,)] a\n    c:f32[" + n + "] = reduce_min[axes=(1,)] a\n  in (b, c) }");
    auto kernel = compile_kernel(j, "reduction", no_cache());
    for (const std::vector<float>* data : {&v, &with_nan, &zeros}) {
      const std::vector<Array> args = {Array(*data, {rows, cols})};
      const std::vector<Array> got = run_kernel(*kernel, j, args);
      const std::vector<float> mx = got[0].to_vector<float>(), mn = got[1].to_vector<float>();
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = data->data() + r * cols;
        if (data == &with_nan) {
          ASSERT_TRUE(std::isnan(mx[static_cast<size_t>(r)]) && std::isnan(mn[static_cast<size_t>(r)])) << "row " << r;
        } else if (data == &zeros) {
          ASSERT_FALSE(std::signbit(mx[static_cast<size_t>(r)])) << "max of -0 and +0 must be +0, row " << r;
          ASSERT_TRUE(std::signbit(mn[static_cast<size_t>(r)])) << "min of -0 and +0 must be -0, row " << r;
        } else {
          ASSERT_EQ(mx[static_cast<size_t>(r)], *std::max_element(row, row + cols)) << "row " << r;
          ASSERT_EQ(mn[static_cast<size_t>(r)], *std::min_element(row, row + cols)) << "row " << r;
        }
      }
    }
  }
}

TEST(ReductionKernel, ExtremaFallBackToTheExactLoopWhereOrderMatters) {
  // Float max and min loops reduce with x86's maxps / minps and a probe sum, rerunning
  // IEEE maximum / minimum where the probe is NaN or the result a zero (loop_emitter.cpp,
  // reduce_extrema_checked). Row r of each case puts its special values at columns r and
  // (r * 7 + 3) % cols, so they meet every lane of every accumulator: +inf beside -inf
  // (the probe's inf - inf), a -0 as the largest of negatives, and -0 beside +0 as the
  // smallest of positives; plain rows check the usual path against std::max_element.
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t cols : {int64_t{128}, int64_t{4100}}) {
    SCOPED_TRACE(cols);
    const int64_t rows = 96;
    auto fill = [&](float base, float sign) {
      std::vector<float> v(static_cast<size_t>(rows * cols));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          v[static_cast<size_t>(r * cols + c)] = sign * (base + static_cast<float>((r * 31 + c * 17) % 97));
      return v;
    };
    std::vector<float> infinities = fill(0.5f, 1.f), negatives = fill(1.f, -1.f), positives = fill(1.f, 1.f),
                       plain = fill(-48.f, 1.f);
    for (int64_t r = 0; r < rows; ++r) {
      const size_t a = static_cast<size_t>(r * cols + r % cols), b = static_cast<size_t>(r * cols + (r * 7 + 3) % cols);
      infinities[a] = inf;
      infinities[b] = -inf;
      negatives[a] = -0.0f;
      positives[a] = -0.0f;
      positives[b] = 0.0f;
    }
    const std::string n = std::to_string(rows), m = std::to_string(cols);
    const Jaxpr j = parse_jaxpr("{ lambda ; a:f32[" + n + "," + m + "]. let\n    b:f32[" + n +
                                "] = reduce_max[axes=(1,)] a\n    c:f32[" + n + "] = reduce_min[axes=(1,)] a\n  in (b, c) }");
    auto kernel = compile_kernel(j, "reduction", no_cache());
    for (const std::vector<float>* data : {&infinities, &negatives, &positives, &plain}) {
      const std::vector<Array> got = run_kernel(*kernel, j, {Array(*data, {rows, cols})});
      const std::vector<float> mx = got[0].to_vector<float>(), mn = got[1].to_vector<float>();
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = data->data() + r * cols;
        const size_t k = static_cast<size_t>(r);
        if (data == &infinities) {
          ASSERT_EQ(mx[k], inf) << "row " << r;
          ASSERT_EQ(mn[k], -inf) << "row " << r;
        } else if (data == &negatives) {
          ASSERT_TRUE(mx[k] == 0.0f && std::signbit(mx[k])) << "the max of negatives and -0 is -0, row " << r;
          ASSERT_EQ(mn[k], *std::min_element(row, row + cols)) << "row " << r;
        } else if (data == &positives) {
          ASSERT_TRUE(mn[k] == 0.0f && std::signbit(mn[k])) << "the min of positives, +0 and -0 is -0, row " << r;
          ASSERT_EQ(mx[k], *std::max_element(row, row + cols)) << "row " << r;
        } else {
          ASSERT_EQ(mx[k], *std::max_element(row, row + cols)) << "row " << r;
          ASSERT_EQ(mn[k], *std::min_element(row, row + cols)) << "row " << r;
        }
      }
    }
  }
  // A full reduction's units and blocks take the same path.
  std::vector<float> flat(100000);
  for (size_t i = 0; i < flat.size(); ++i) flat[i] = -1.0f - static_cast<float>(i % 1000);
  flat[77777] = -0.0f;
  flat[99999] = -inf;
  const Jaxpr full = parse_jaxpr(R"({ lambda ; a:f32[100000]. let
    b:f32[] = reduce_max[axes=(0,)] a
    c:f32[] = reduce_min[axes=(0,)] a
  in (b, c) })");
  auto kernel = compile_kernel(full, "reduction", no_cache());
  const std::vector<Array> got = run_kernel(*kernel, full, {Array(flat, Shape{100000})});
  EXPECT_TRUE(got[0].item<float>() == 0.0f && std::signbit(got[0].item<float>()));
  EXPECT_EQ(got[1].item<float>(), -inf);
}

TEST(ReductionKernel, LargeRowAndColumnReductionsRunThreaded) {
  check(R"({ lambda ; a:f32[512,1024]. let
    b:f32[512,1024] = mul a a
    c:f32[512] = reduce_sum[axes=(1,)] b
  in (c) })",
        "reduction", 1e-5, 1e-4);
  check(R"({ lambda ; a:f32[1024,2048]. let
    b:f32[2048] = reduce_max[axes=(0,)] a
    c:f32[2048] = reduce_sum[axes=(0,)] a
  in (b, c) })",
        "reduction", 1e-5, 1e-3);
  check(R"({ lambda ; a:f64[64,64,64]. let
    b:f64[64,64,64] = sin a
    c:f64[] = reduce_sum[axes=(0, 1, 2)] b
  in (c) })",
        "reduction", 1e-10, 1e-10);
}

TEST(ReductionKernel, IntegerAndBitwise) {
  check(R"({ lambda ; a:i32[20,30] b:i32[20,30]. let
    c:i32[20,30] = mul a b
    d:i32[30] = reduce_sum[axes=(0,)] c
    e:i32[30] = reduce_min[axes=(0,)] c
  in (d, e) })",
        "reduction");
  check(R"({ lambda ; a:i32[20,30]. let
    b:i32[20] = reduce_or[axes=(1,)] a
    c:i32[20] = reduce_and[axes=(1,)] a
  in (b, c) })",
        "reduction");
  check(R"({ lambda ; a:f32[20,30] b:f32[20,30]. let
    c:bool[20,30] = gt a b
    d:bool[30] = reduce_or[axes=(0,)] c
    e:bool[30] = reduce_and[axes=(0,)] c
  in (d, e) })",
        "reduction");
}

// ---- dot ----

// ---- rows kernels: passes over each row block, then the elementwise work ----

using jx::testing::softmax_text;

TEST(RowsKernel, PlanStashesTheExpForTheOutputPass) {
  // exp(x - max) is computed once per element: pass 1 stores it in the row buffer, the
  // output pass loads it. 8 KiB per row, 32 rows per 256 KiB block.
  const std::string s = codegen::plan_kernel(parse_jaxpr(softmax_text("f32", 100, 1024)), "rows").str();
  EXPECT_NE(s.find("p0:float32 = reduce_max n0 pass 0\n"), std::string::npos) << s;
  EXPECT_NE(s.find("p1:float32 = reduce_sum n3 pass 1 stash\n"), std::string::npos) << s;
  EXPECT_NE(s.find("schedule rows units 100 chunk_rows 32 column_block 0\n"), std::string::npos) << s;
}

// Inputs read once a row (a row value, a label) do not vote for the columns schedule: a
// cross-entropy's gradient over rows of 100, with its labels and a per-row value beside
// the logits, ran as columns (the loads of two row values outvoting the logits') at twice
// the time.
TEST(RowsKernel, RowValueInputsKeepTheRowsSchedule) {
  const std::string text = R"({ lambda ; a:f32[300,100] b:i32[300,1] c:f32[300]. let
    d:f32[300] = reduce_max[axes=(1,)] a
    e:f32[300,100] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(300, 100)] d
    f:f32[300,100] = sub a e
    g:f32[300,100] = exp f
    h:f32[300] = reduce_sum[axes=(1,)] g
    i:i32[300,100] = iota[dimension=1 dtype=int32 shape=(300, 100)]
    j:i32[300,100] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(300, 100)] b
    k:bool[300,100] = eq i j
    l:f32[300,100] = broadcast_in_dim[broadcast_dimensions=() shape=(300, 100)] 0.0:f32[]
    m:f32[300,100] = broadcast_in_dim[broadcast_dimensions=() shape=(300, 100)] -0.5:f32[]
    n:f32[300,100] = select_n k l m
    o:f32[300] = div c h
    p:f32[300,100] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(300, 100)] o
    q:f32[300,100] = mul p g
    r:f32[300,100] = add n q
  in (r,) })";
  const std::string s = codegen::plan_kernel(parse_jaxpr(text), "rows").str();
  EXPECT_NE(s.find("schedule rows "), std::string::npos) << s;
  Array labels = jx::random::randint(jx::random::key(3), {300, 1}, -5, 105, DType::Int32);
  check(text, "rows", 1e-5, 1e-7, {testing::randn({300, 100}, DType::Float32, 1), labels, testing::randn({300}, DType::Float32, 2)});
}

TEST(RowsKernel, SoftmaxMatchesEager) {
  // Blocks with a remainder (100 rows of 37 in blocks of 64), rows longer than a
  // reduction block (10000 > 4096 elements: several partial accumulators per row), one
  // row per block (65536 floats: 256 KiB), and float64.
  check(softmax_text("f32", 100, 37), "rows", 1e-5, 1e-7);
  check(softmax_text("f32", 9, 10000), "rows", 1e-5, 1e-9);
  check(softmax_text("f32", 3, 65536), "rows", 1e-5, 1e-10);
  check(softmax_text("f64", 70, 300), "rows", 1e-12, 1e-14);
}

// Short rows (loop_emitter.cpp, short_rows): their loops held as loops, the last vector
// of a row its vectors do not divide masked (or, past two whole vectors of exp, run in a
// loop of its own: points_loop), against eager for every length from 3 (too short for
// the treatment) through the lengths a vector does not divide to 200, in blocks with a
// remainder (1001 rows).
TEST(RowsKernel, ShortRowsMatchEager) {
  for (int64_t cols : {3, 5, 8, 12, 16, 20, 24, 28, 31, 40, 50, 70, 100, 130, 200}) {
    SCOPED_TRACE(std::to_string(cols) + " a row");
    check(softmax_text("f32", 1001, cols), "rows", 1e-5, 1e-7);
    check(jx::testing::logsumexp_text(1001, cols, /*with_log_softmax=*/true), "rows", 1e-5, 1e-5);
    check(softmax_text("f64", 1001, cols), "rows", 1e-12, 1e-14);
  }
}

TEST(RowsKernel, LargeRowsPrefetchAndPipelineTheirOutputs) {
  // Outputs of 16 MiB and more: the last pass prefetches the next block's rows and, over
  // rows of whole registers (streamed outputs), stores the previous row's outputs in its
  // loop (rows_emitter.cpp, pipelines_outputs), with the block's first row's pass and its
  // last row's outputs alone. 1031 rows (blocks of 8 with a remainder of 7), of 4112
  // floats, and of 4099 (a vector remainder: prefetched, not pipelined), with a second
  // (per-row) output; float64; rows of one per block (65 of 65536 floats), whose
  // pipelined loop never runs.
  check(softmax_text("f32", 1031, 4112), "rows", 1e-5, 1e-10);
  check(jx::testing::logsumexp_text(1031, 4099, /*with_log_softmax=*/true), "rows", 1e-5, 1e-5);
  check(softmax_text("f64", 520, 4104), "rows", 1e-12, 1e-16);
  check(softmax_text("f32", 65, 65536), "rows", 1e-5, 1e-11);
  check(softmax_text("f32", 220000, 10), "rows", 1e-5, 1e-10);  // across rows (8.8 MB)
}

TEST(Dumps, LargeRowsKernelPrefetchesAndPipelines) {
  auto count = [](const std::string& ir, const std::string& what) {
    size_t n = 0;
    for (size_t at = ir.find(what); at != std::string::npos; at = ir.find(what, at + 1)) ++n;
    return n;
  };
  // 1031 x 4112 floats: prefetches, and streams its output from two loops (the pipelined
  // last pass and the block's last row); rows of 4099, not whole registers, prefetch
  // and keep plain stores; 100 x 1024 (400 KiB) does neither.
  const std::string large = kernel_ir(softmax_text("f32", 1031, 4112), "rows");
  EXPECT_NE(large.find("call void @llvm.prefetch"), std::string::npos) << large;
  EXPECT_GE(count(large, "!nontemporal"), 2u) << large;
  const std::string ragged = kernel_ir(softmax_text("f32", 1031, 4099), "rows");
  EXPECT_NE(ragged.find("call void @llvm.prefetch"), std::string::npos);
  EXPECT_EQ(ragged.find("!nontemporal"), std::string::npos);
  // Rows of 10 floats over 8.8 MB run across rows (rows_emitter.cpp, runs_across_rows),
  // each point stored alone: no prefetching pass, no streamed stores.
  const std::string short_rows = kernel_ir(softmax_text("f32", 220000, 10), "rows");
  EXPECT_EQ(short_rows.find("@llvm.prefetch"), std::string::npos);
  EXPECT_EQ(short_rows.find("!nontemporal"), std::string::npos);
  const std::string small = kernel_ir(softmax_text("f32", 100, 1024), "rows");
  EXPECT_EQ(small.find("@llvm.prefetch"), std::string::npos) << small;
  EXPECT_EQ(small.find("!nontemporal"), std::string::npos) << small;
}

TEST(RowsKernel, LogsumexpAndLogSoftmax) {
  // A per-row output (logsumexp) beside a full-shape one (log_softmax = x - lse).
  check(jx::testing::logsumexp_text(130, 77, /*with_log_softmax=*/true), "rows", 1e-5, 1e-6);
}

TEST(RowsKernel, LayerNormWithItsStatistics) {
  // Two dependent passes (mean, then the variance about it), a per-row output of each,
  // trailing axes (1, 2) of a 3-d operand as the row, and a second input.
  check(R"({ lambda ; a:f64[20,6,50] w:f64[20,6,50]. let
    n:f64[20] = broadcast_in_dim[broadcast_dimensions=() shape=(20,)] 300.0:f64[]
    p:f64[20] = broadcast_in_dim[broadcast_dimensions=() shape=(20,)] 1e-05:f64[]
    b:f64[20] = reduce_sum[axes=(1, 2)] a
    c:f64[20] = div b n
    d:f64[20,6,50] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(20, 6, 50)] c
    e:f64[20,6,50] = sub a d
    f:f64[20,6,50] = mul e e
    g:f64[20] = reduce_sum[axes=(1, 2)] f
    h:f64[20] = div g n
    i:f64[20] = add h p
    j:f64[20] = rsqrt i
    k:f64[20,6,50] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(20, 6, 50)] j
    l:f64[20,6,50] = mul e k
    m:f64[20,6,50] = mul l w
  in (m, c, h) })",
        "rows", 1e-12, 1e-12);
}

TEST(RowsKernel, KeepdimsRowOutputAndTwoInputs) {
  // A per-row output spelled (33, 1), beside rows normalized and scaled by a second input.
  check(R"({ lambda ; a:f32[33,200] w:f32[33,200]. let
    b:f32[33,200] = mul a a
    c:f32[33] = reduce_sum[axes=(1,)] b
    d:f32[33,1] = expand_dims[dimensions=(1,)] c
    e:f32[33,1] = sqrt d
    f:f32[33,200] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(33, 200)] e
    g:f32[33,200] = div a f
    h:f32[33,200] = mul g w
  in (h, e) })",
        "rows", 1e-5, 1e-6);
}

TEST(RowsKernel, NaNAndInfinityRows) {
  // A row of -inf (logsumexp's max is not finite: the shift is 0), a NaN row and an
  // all-equal row, against eager bit for bit where the values are special.
  std::vector<float> v(16 * 8, 0.5f);
  for (int k = 0; k < 8; ++k) v[1 * 8 + k] = -std::numeric_limits<float>::infinity();
  v[2 * 8 + 3] = std::numeric_limits<float>::quiet_NaN();
  v[3 * 8 + 5] = std::numeric_limits<float>::infinity();
  check(softmax_text("f32", 16, 8), "rows", 1e-6, 1e-7, {Array(v, {16, 8})});
}

// Rows of 8-11 floats run every pass of a row in one loop across rows (loop_emitter's
// across_passes) with the max and min as x86's maxps/minps on NaN mapped to infinity;
// a row whose fast extreme is a zero or that infinity runs again exactly. Rows of NaN at
// every position, of +inf, of -inf, of signed zeros in either order, of zeros beside
// negatives, in blocks of 64 with a remainder: the max and min bit for bit against IEEE
// maximum and minimum, the sums and the softmax (whose exp the full-shape outputs
// compute again) close to eager.
TEST(RowsKernel, AcrossRowsRerunRowsWhoseFastExtremeIsOdd) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (int64_t cols : {8, 10, 11, 14}) {  // (14: across rows where loads are staged, AVX2)
    SCOPED_TRACE(std::to_string(cols) + " a row");
    const int64_t rows = 64 * 3 + 5;
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    std::vector<float> v(static_cast<size_t>(rows * cols));
    for (float& x : v) x = normal(rng);
    auto row = [&](int64_t r) { return v.begin() + r * cols; };
    for (int64_t j = 0; j < cols; ++j) row(3 + j)[j] = nan;                      // NaN at each position
    row(20)[cols - 1] = inf;                                                       // +inf, max
    std::fill(row(21), row(21) + cols, -inf);                                      // all -inf
    std::fill(row(22), row(22) + cols, -0.0f);                                     // all -0.0
    std::fill(row(64), row(64) + cols, 0.0f), row(64)[0] = -0.0f;                  // -0.0 first, then +0.0
    std::fill(row(65), row(65) + cols, -0.0f), row(65)[cols - 1] = 0.0f;           // +0.0 last
    for (int64_t j = 0; j < cols; ++j) row(66)[j] = j % 2 ? -1.0f - j : 0.0f;      // max 0 beside negatives
    for (int64_t j = 0; j < cols; ++j) row(130)[j] = j % 2 ? 1.0f + j : -0.0f;     // min -0.0 beside positives
    row(131)[1] = inf, row(131)[4] = nan;                                          // inf and NaN
    row(rows - 1)[cols / 2] = -inf;                                                // min -inf in the last block
    const Array x(v, {rows, cols});
    const std::string r = std::to_string(rows), c = std::to_string(cols);
    const std::string text = "{ lambda ; a:f32[" + r + "," + c + "]. let\n    b:f32[" + r +
                             "] = reduce_max[axes=(1,)] a\n    c:f32[" + r + "] = reduce_min[axes=(1,)] a\n    d:f32[" +
                             r + ",1] = expand_dims[dimensions=(1,)] b\n    e:f32[" + r + "," + c +
                             "] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(" + r + ", " + c +
                             ")] d\n    f:f32[" + r + "," + c + "] = sub a e\n    g:f32[" + r + "," + c +
                             "] = exp f\n    h:f32[" + r + "] = reduce_sum[axes=(1,)] g\n  in (b, c, h) }";
    Jaxpr j = parse_jaxpr(text);
    EXPECT_NE(codegen::plan_kernel(j, "rows").str().find("pass 1"), std::string::npos);
    const std::vector<Array> args = {x};
    std::vector<Array> expected = eval_jaxpr(j, {}, args);
    std::vector<Array> actual = run_kernel(*compiler::compile_kernel(j, "rows", no_cache()), j, args);
    // The oracle of the max and min: IEEE maximum and minimum (NaN wins, +0 over -0 in a
    // max, -0 in a min: JAX's reductions), which eager's order-dependent choice between
    // zeros is not (lax/elemental.h).
    for (size_t m = 0; m < 2; ++m) {
      const std::vector<float> a = actual[m].to_vector<float>();
      for (int64_t i = 0; i < rows; ++i) {
        float e = m == 0 ? -inf : inf;
        for (int64_t k = 0; k < cols; ++k) {
          const float y = row(i)[k];
          if (std::isnan(e) || std::isnan(y)) e = nan;
          else if (y == e) e = (m == 0) == std::signbit(e) ? y : e;
          else if ((m == 0) == (y > e)) e = y;
        }
        EXPECT_EQ(std::bit_cast<uint32_t>(a[static_cast<size_t>(i)]), std::bit_cast<uint32_t>(e))
            << (m == 0 ? "max" : "min") << " of row " << i << ": " << a[static_cast<size_t>(i)] << " against " << e;
      }
    }
    EXPECT_ALLCLOSE(actual[2], expected[2], 1e-6, 1e-7);
    check(softmax_text("f32", rows, cols), "rows", 1e-6, 1e-7, {x});
    check(jx::testing::logsumexp_text(rows, cols, /*with_log_softmax=*/true), "rows", 1e-6, 1e-6, {x});
    // A cross-entropy's gradient, whose output shares its exp with the sum's pass (stored
    // across rows on AVX2), labels at every position.
    std::vector<int32_t> labels(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) labels[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7) % cols);
    check(jx::testing::cross_entropy_grad_text(rows, cols), "rows", 1e-6, 1e-9, {x, Array(labels, {rows})});
  }
}

// Across rows on AVX2 a block's rows are staged through column buffers, 8 rows at a
// time by an in-register transpose and the block's last rows point by point
// (rows_emitter.cpp, stage_block_in/out): rows of 8-11, 13, 16 and 21 floats (up to 23
// run across rows where every load is staged; 21: three vectors a row, the last
// overlapping) in blocks of whole groups,
// of groups and a rest (77 rows: 64, then 8 + 5) and of a rest alone (5 rows), a softmax, a
// layer norm, a cross-entropy's gradient (the labels a per-row input beside the staged
// logits), and the exp of a max-shifted input read from the fourth row of a larger
// array (a staged load at an offset). Any host: elsewhere the same kernels read in place.
TEST(RowsKernel, AcrossRowsStagedBlocksMatchEager) {
  for (int64_t cols : {8, 9, 10, 11, 13, 16, 21})
    for (int64_t rows : {int64_t{5}, int64_t{77}}) {
      SCOPED_TRACE(std::to_string(rows) + " rows of " + std::to_string(cols));
      check(softmax_text("f32", rows, cols), "rows", 1e-5, 1e-7);
      check(jx::testing::layer_norm_text("f32", rows, cols), "rows", 1e-4, 1e-5);
      std::vector<int32_t> labels(static_cast<size_t>(rows));
      for (int64_t i = 0; i < rows; ++i) labels[static_cast<size_t>(i)] = static_cast<int32_t>((i * 5) % cols);
      check(jx::testing::cross_entropy_grad_text(rows, cols), "rows", 1e-5, 1e-9,
            {testing::randn({rows, cols}, DType::Float32, 3), Array(labels, {rows})});
      const std::string r = std::to_string(rows), c = std::to_string(cols), whole = std::to_string(rows + 3);
      const std::string x = "f32[" + r + "," + c + "]";
      const std::string shifted_exp = "{ lambda ; a:f32[" + whole + "," + c + "]. let\n    b:" + x +
                                      " = slice[limit_indices=(" + whole + ", " + c +
                                      ") start_indices=(3, 0) strides=(1, 1)] a\n    m:f32[" + r +
                                      "] = reduce_max[axes=(1,)] b\n    d:f32[" + r +
                                      ",1] = expand_dims[dimensions=(1,)] m\n    e:" + x +
                                      " = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(" + r + ", " + c +
                                      ")] d\n    f:" + x + " = sub b e\n    g:" + x + " = exp f\n  in (g,) }";
      const std::string plan = codegen::plan_kernel(parse_jaxpr(shifted_exp), "rows").str();
      EXPECT_NE(plan.find("load in0 [" + std::to_string(3 * cols) + "; " + c + " 1]"), std::string::npos) << plan;
      check(shifted_exp, "rows", 1e-5, 1e-7);
    }
}

// A row reduction where masks are dear (AVX2), over rows of 8 or more whole vectors and a
// rest, runs its whole vectors, then one full vector ending at the row's end over points
// already seen (loop_emitter.cpp, points_loop): a max or min is unchanged by them, and
// the other reductions' terms there are their identity (an integer sum beside a max, as
// a label's pick; integer sums and maxima, float sums). Rows of 70, 100 and 130 floats
// (rests of 6, 4 and 2) and of 37 doubles (4 lanes, a rest of 1), against eager, exactly
// where the values are integers or extremes, with terms that, counted twice, would
// show; any host (elsewhere the rest is masked).
TEST(RowsKernel, OverlappingLastVectorCountsEachPointOnce) {
  for (auto [t, cols] : {std::pair<std::string, int64_t>{"f32", 70}, {"f32", 100}, {"f32", 130}, {"f64", 37}}) {
    SCOPED_TRACE(t + " rows of " + std::to_string(cols));
    const std::string r = "77", c = std::to_string(cols);
    const std::string x = t + "[" + r + "," + c + "]", ints = "i32[" + r + "," + c + "]";
    const DType dtype = t == "f32" ? DType::Float32 : DType::Float64;
    const std::vector<Array> args = {testing::randn({77, cols}, dtype, 11),
                                     jx::random::randint(jx::random::key(12), {77, cols}, -1000000, 1000000, DType::Int32)};
    for (const std::string extreme : {"reduce_max", "reduce_min"}) {
      const std::string text = "{ lambda ; a:" + x + " k:" + ints + ". let\n    b:" + t + "[" + r + "] = " + extreme +
                               "[axes=(1,)] a\n    s:i32[" + r + "] = reduce_sum[axes=(1,)] k\n  in (b, s) }";
      const std::string plan = codegen::plan_kernel(parse_jaxpr(text), "rows").str();
      EXPECT_NE(plan.find("reduce_sum n2 pass 0"), std::string::npos) << plan;
      check(text, "rows", 0, 0, args);
    }
    const std::string sums = "{ lambda ; a:" + x + " k:" + ints + ". let\n    b:" + t + "[" + r +
                             "] = reduce_sum[axes=(1,)] a\n    s:i32[" + r + "] = reduce_sum[axes=(1,)] k\n    m:i32[" +
                             r + "] = reduce_max[axes=(1,)] k\n  in (b, s, m) }";
    check(sums, "rows", 1e-5, 1e-5, args);  // (eager sums float32 pairwise in float32)
    check(jx::testing::layer_norm_text(t, 77, cols), "rows", 1e-5, 1e-6, {args[0]});
  }
}

TEST(RowsKernel, RefusesWhatItCannotPlan) {
  Jaxpr none = parse_jaxpr(R"({ lambda ; a:f32[16,8]. let
    b:f32[16,8] = exp a
  in (b) })");
  EXPECT_JX_ERROR(codegen::plan_kernel(none, "rows"), "[jit] a rows fusion must hold a reduction");
  Jaxpr whole = parse_jaxpr(R"({ lambda ; a:f32[16,8]. let
    b:f32[] = reduce_sum[axes=(0, 1)] a
  in (b) })");
  EXPECT_JX_ERROR(codegen::plan_kernel(whole, "rows"), "a rows fusion needs kept dims, got a reduction of (16, 8) over every axis");
  Jaxpr across = parse_jaxpr(R"({ lambda ; a:f32[16,16]. let
    b:f32[16] = reduce_max[axes=(1,)] a
    c:f32[16,16] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(16, 16)] b
    d:f32[16,16] = sub a c
  in (d) })");
  EXPECT_JX_ERROR(codegen::plan_kernel(across, "rows"), "is read at another row than its own");
  Jaxpr column = parse_jaxpr(R"({ lambda ; a:f32[16,8]. let
    b:f32[16] = reduce_sum[axes=(1,)] a
    c:f32[8] = reduce_sum[axes=(0,)] a
    d:f32[16,8] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(16, 8)] c
    e:f32[16,8] = add a d
  in (b, e) })");
  EXPECT_JX_ERROR(codegen::plan_kernel(column, "rows"), "a rows kernel's reductions must share the operand shape");
  Jaxpr other_shape = parse_jaxpr(R"({ lambda ; a:f32[16,8]. let
    b:f32[16] = reduce_sum[axes=(1,)] a
    c:f32[1,16] = expand_dims[dimensions=(0,)] b
  in (c) })");
  EXPECT_JX_ERROR(codegen::plan_kernel(other_shape, "rows"),
                  "an output of a rows fusion must have the operand's shape (16, 8) or the row's (16,) (or (16, 1)), got f32[1,16]");
  std::string why;
  EXPECT_FALSE(rows_fusion_supported(across, &why));
  EXPECT_NE(why.find("another row"), std::string::npos) << why;
  EXPECT_TRUE(rows_fusion_supported(parse_jaxpr(softmax_text("f32", 16, 8)), &why)) << why;
}

// ---- float32 sum accuracy (accumulated in float64, loop_emitter.cpp) ----

// reduce_sum over `axes` of f32 `shape` (of exp(x) with exp_terms), compiled, on x; every
// output within 4 ulp of the float64 sum of the same float32 terms (eager's pairwise
// summation stays within that too, tests/lax_reduction_test.cpp; float accumulators were
// 30 ulp off on 0.1f columns). Terms costing a transcendental are summed in float32 chunk
// partials (loop_emitter.cpp's sums_narrow), plain terms widened one by one.
void expect_accurate_f32_sum(const Shape& shape, const std::vector<int64_t>& axes, const Array& x,
                             bool exp_terms = false) {
  auto dims = [](const std::vector<int64_t>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += detail::cat(i ? ", " : "", v[i]);
    return s + (v.size() == 1 ? "," : "");
  };
  Shape out_shape;
  for (size_t d = 0; d < shape.size(); ++d)
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) == axes.end()) out_shape.push_back(shape[d]);
  auto type = [&](const Shape& s) {
    std::string t = "f32[";
    for (size_t i = 0; i < s.size(); ++i) t += detail::cat(i ? "," : "", s[i]);
    return t + "]";
  };
  const std::string terms = exp_terms ? "t:" + type(shape) + " = exp a\n    " : "";
  const std::string text = "{ lambda ; a:" + type(shape) + ". let\n    " + terms + "b:" + type(out_shape) +
                           " = reduce_sum[axes=(" + dims(axes) + ")] " + (exp_terms ? "t" : "a") + "\n  in (b) }";
  SCOPED_TRACE(text);
  Jaxpr j = parse_jaxpr(text);
  auto kernel = compile_kernel(j, "reduction", no_cache("sum_accuracy"));
  const std::vector<float> got = run_kernel(*kernel, j, {x})[0].to_vector<float>();
  const Array term_values = exp_terms ? lax::exp(x) : x;
  const std::vector<double> ref = lax::reduce_sum(term_values.astype(DType::Float64), axes).to_vector<double>();
  ASSERT_EQ(got.size(), ref.size());
  int bad = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float r = static_cast<float>(ref[i]);
    const double ulp = std::nextafter(r, INFINITY) - r;
    worst = std::max(worst, std::abs(got[i] - ref[i]) / ulp);
    if (std::abs(got[i] - ref[i]) > 4 * ulp && ++bad <= 3)
      ADD_FAILURE() << "output " << i << ": got " << got[i] << ", float64 sum " << ref[i];
  }
  std::printf("[sum accuracy] %s%s over (%s): worst %.2f ulp\n", exp_terms ? "exp of " : "", type(shape).c_str(),
              dims(axes).c_str(), worst);
}

Array uniform_f32(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> v(static_cast<size_t>(shape_size(shape)));
  for (auto& e : v) e = u(rng);
  return Array(v, shape);
}

TEST(ReductionAccuracy, Float32SumsOfAMillionTermsStayWithinAFewUlps) {
  const int64_t n = 1000000;
  // 10^6 copies of 0.1f: each rounding errs the same way, the worst case for running sums.
  const Array tenths(std::vector<float>(n, 0.1f), Shape{n});
  const Array random = uniform_f32({n}, 5);
  for (const Array* x : {&tenths, &random}) {
    expect_accurate_f32_sum({n}, {0}, x->reshape({n}));                            // full, one dim
    expect_accurate_f32_sum({1000, 1000}, {0, 1}, x->reshape({1000, 1000}));       // full, two dims
    expect_accurate_f32_sum({4, n / 4}, {1}, x->reshape({4, n / 4}));              // rows (blocks of 4096)
    expect_accurate_f32_sum({n / 16, 16}, {0}, x->reshape({n / 16, 16}));          // columns
    expect_accurate_f32_sum({n / 1000, 1000}, {0}, x->reshape({n / 1000, 1000}));  // wide columns
    expect_accurate_f32_sum({4, n / 20, 5}, {1}, x->reshape({4, n / 20, 5}));      // a middle axis
    expect_accurate_f32_sum({2, 500, 1000}, {1, 2}, x->reshape({2, 500, 1000}));   // rows of a short inner dim
    expect_accurate_f32_sum({50, 2000, 10}, {0, 2}, x->reshape({50, 2000, 10}));  // outer and inner axes
  }
}

// A reduction of rows of 8-11 float32 points is planned as a rows kernel on AVX2
// (kernel_plan.cpp, short_rows_reduce_across), whose loop over a block's rows runs across
// rows; other widths, float64, columns and other ISAs keep the row reduction.
TEST(KernelPlan, ShortRowReductionsRunAsRowsKernels) {
  auto sum_of_exp = [](const std::string& t, int64_t rows, int64_t cols, int axis) {
    const std::string x = t + "[" + std::to_string(rows) + "," + std::to_string(cols) + "]";
    const std::string out = t + "[" + std::to_string(axis == 1 ? rows : cols) + "]";
    return parse_jaxpr("{ lambda ; a:" + x + ". let\n    b:" + x + " = exp a\n    c:" + out +
                       " = reduce_sum[axes=(" + std::to_string(axis) + ",)] b\n  in (c) }");
  };
  auto kind = [](const Jaxpr& j, cpu::VectorIsa isa) {
    const std::string text = codegen::plan_kernel(j, "reduction", {}, isa).str();
    return text.substr(0, text.find(' '));
  };
  for (int64_t cols : {8, 10, 11}) {
    EXPECT_EQ(kind(sum_of_exp("f32", 1000, cols, 1), cpu::VectorIsa::Avx2), "rows") << cols;
  }
  EXPECT_EQ(kind(sum_of_exp("f32", 1000, 7, 1), cpu::VectorIsa::Avx2), "reduction");
  EXPECT_EQ(kind(sum_of_exp("f32", 1000, 16, 1), cpu::VectorIsa::Avx2), "reduction");
  EXPECT_EQ(kind(sum_of_exp("f64", 1000, 10, 1), cpu::VectorIsa::Avx2), "reduction");
  EXPECT_EQ(kind(sum_of_exp("f32", 10, 1000, 0), cpu::VectorIsa::Avx2), "reduction");  // columns
  EXPECT_EQ(kind(sum_of_exp("f32", 1000, 10, 1), cpu::VectorIsa::Avx512), "reduction");
  EXPECT_EQ(kind(sum_of_exp("f32", 1000, 10, 1), cpu::VectorIsa::Scalar), "reduction");
}

// Reductions of short rows (a rows kernel across rows on AVX2, above) against eager:
// sums of exp, maxima with a NaN, an infinity and a row of -inf, a sum and a max of the
// same rows as two outputs, the last axis of a 3-d array, and int32 sums; rows of 8-11
// points and 2000 rows (not a multiple of a block), and 7 rows (fewer than a group).
TEST(RowsKernel, ShortRowReductionsMatchEager) {
  for (int64_t rows : {int64_t{2000}, int64_t{7}})
    for (int64_t cols : {8, 9, 10, 11}) {
      SCOPED_TRACE(std::to_string(rows) + " rows of " + std::to_string(cols));
      const std::string r = std::to_string(rows), c = std::to_string(cols);
      const std::string x = "f32[" + r + "," + c + "]", row = "f32[" + r + "]";
      check("{ lambda ; a:" + x + ". let\n    b:" + x + " = exp a\n    c:" + row +
                " = reduce_sum[axes=(1,)] b\n  in (c) }",
            "reduction", 2e-6, 0);
      std::vector<float> v(static_cast<size_t>(rows * cols));
      for (size_t i = 0; i < v.size(); ++i) {
        v[i] = static_cast<float>((static_cast<int64_t>(i) * 37) % 201) / 50.0f - 2.0f;
      }
      v[3] = std::numeric_limits<float>::quiet_NaN();
      if (rows > 2) {
        v[static_cast<size_t>(cols + 1)] = std::numeric_limits<float>::infinity();
        const float minus_inf = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < cols; ++j) v[static_cast<size_t>(2 * cols + j)] = minus_inf;
      }
      const Array a(v, {rows, cols});
      check("{ lambda ; a:" + x + ". let\n    b:" + row + " = reduce_max[axes=(1,)] a\n    c:" + x +
                " = abs a\n    d:" + row + " = reduce_sum[axes=(1,)] c\n  in (b, d) }",
            "reduction", 1e-6, 0, {a});
      check("{ lambda ; a:f32[4," + r + "," + c + "]. let\n    b:f32[4," + r + "," + c + "] = tanh a\n    c:f32[4," + r +
                "] = reduce_sum[axes=(2,)] b\n  in (c) }",
            "reduction", 2e-6, 1e-6);
      check("{ lambda ; a:i32[" + r + "," + c + "]. let\n    b:i32[" + r + "] = reduce_sum[axes=(1,)] a\n  in (b) }",
            "reduction", 0, 0);
    }
}

TEST(RowsKernel, RareExpLanesInInterleavedPassesMatchEager) {
  // Float32 sums of exp run four vectors per iteration whose inline exps share one
  // rare-path test (scalar_ops.cpp, share_rare_tests): a rare argument in any lane of any
  // of them must send its vector down the full-range path. Row r holds one at column
  // r mod cols: 88.5 (finite, past the single scaling's range: 2^128 there), -95 (a
  // subnormal result) or NaN, in row sums of exp, logsumexp (max, then the shared test
  // after subtracting it) and softmax, against eager. Rows of 10 run across rows, the ten
  // exps of a group of rows sharing one test (the row sum's adds moved after it).
  for (int64_t cols : {int64_t{10}, int64_t{1024}, int64_t{4099}}) {
    SCOPED_TRACE(cols);
    const int64_t rows = 64;
    for (float rare : {88.5f, -95.0f, std::numeric_limits<float>::quiet_NaN()}) {
      SCOPED_TRACE(rare);
      std::vector<float> v(static_cast<size_t>(rows * cols));
      for (int64_t i = 0; i < rows * cols; ++i) v[static_cast<size_t>(i)] = static_cast<float>((i * 37) % 201) / 100.0f - 1.0f;
      for (int64_t r = 0; r < rows; ++r) v[static_cast<size_t>(r * cols + r % cols)] = rare;
      const Array x(v, {rows, cols});
      const std::string n = std::to_string(rows), m = std::to_string(cols);
      check("{ lambda ; a:f32[" + n + "," + m + "]. let\n    b:f32[" + n + "," + m + "] = exp a\n    c:f32[" + n +
                "] = reduce_sum[axes=(1,)] b\n  in (c) }",
            "reduction", 2e-6, 0, {x});
      check(jx::testing::logsumexp_text(rows, cols), "rows", 2e-6, 1e-6, {x});
      check(softmax_text("f32", rows, cols), "rows", 2e-6, 1e-30, {x});
    }
  }
}

TEST(ReductionAccuracy, Float32SumsOfExpStayWithinAFewUlps) {
  const int64_t n = 1000000;
  // exp(log 0.1) = 0.1 (about) 10^6 times: every chunk partial errs the same way.
  const Array tenths(std::vector<float>(n, std::log(0.1f)), Shape{n});
  const Array random = uniform_f32({n}, 7);
  for (const Array* x : {&tenths, &random}) {
    expect_accurate_f32_sum({4, n / 4}, {1}, x->reshape({4, n / 4}), true);          // rows (blocks of 4096)
    expect_accurate_f32_sum({250, 4000}, {1}, x->reshape({250, 4000}), true);        // rows of one block
    expect_accurate_f32_sum({1000, 1000}, {0, 1}, x->reshape({1000, 1000}), true);  // full
  }
}

TEST(DotKernel, LargeAndEmpty) {
  check(R"({ lambda ; a:f32[300,64] b:f32[64,400] c:f32[300,400]. let
    d:f32[300,400] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b
    e:f32[300,400] = max d c
  in (e) })",
        "dot", 1e-5, 1e-4);
  check(R"({ lambda ; a:f64[3,0] b:f64[0,4]. let
    d:f64[3,4] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b
    e:f64[3,4] = exp d
  in (e, d) })",
        "dot");
  check(R"({ lambda ; a:f32[0,5] b:f32[5,4]. let
    d:f32[0,4] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b
  in (d) })",
        "dot");
}

TEST(DotKernel, Epilogue) {
  check(R"({ lambda ; a:f32[33,20] b:f32[20,17] c:f32[17]. let
    d:f32[33,17] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b
    e:f32[33,17] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(33, 17)] c
    f:f32[33,17] = add d e
    g:f32[33,17] = tanh f
  in (g, d) })",
        "dot", 1e-5, 1e-5);
  check(R"({ lambda ; a:f64[20,33] b:f64[17,20]. let
    d:f64[33,17] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(0,) rhs_batch_dimensions=() rhs_contracting_dimensions=(1,)] a b
    k:f64[33,17] = broadcast_in_dim[broadcast_dimensions=() shape=(33, 17)] 2.0:f64[]
    e:f64[33,17] = mul d k
  in (e) })",
        "dot", 1e-12, 1e-12);
}

TEST(DotKernel, EpilogueOnEachThreadsFinishedRows) {
  // Products jx's kernel takes (packed_gemm.h) run their epilogue on each thread's rows as
  // they finish: a bias over 200 rows (bands of whole 12-row tiles, 96 and 104), the
  // product itself a second output, float64 with both operands transposed. And an
  // epilogue whose units do not tile the rows (96 columns in 64-element vector blocks),
  // which runs after the product instead.
  check(R"({ lambda ; a:f32[200,96] b:f32[96,130] c:f32[130]. let
    d:f32[200,130] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b
    e:f32[200,130] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(200, 130)] c
    f:f32[200,130] = add d e
    g:f32[200,130] = tanh f
  in (g, d) })",
        "dot", 1e-5, 1e-5);
  check(R"({ lambda ; a:f64[100,70] b:f64[90,100]. let
    d:f64[70,90] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(0,) rhs_batch_dimensions=() rhs_contracting_dimensions=(1,)] a b
    k:f64[70,90] = broadcast_in_dim[broadcast_dimensions=() shape=(70, 90)] 0.01:f64[]
    e:f64[70,90] = mul d k
    f:f64[70,90] = exp e
  in (f) })",
        "dot", 1e-12, 1e-12);
  check(R"({ lambda ; a:f32[64,80] b:f32[80,96]. let
    d:f32[64,96] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b
    k:f32[64,96] = broadcast_in_dim[broadcast_dimensions=() shape=(64, 96)] 0.1:f32[]
    e:f32[64,96] = mul d k
    f:f32[64,96] = exp e
  in (f) })",
        "dot", 1e-5, 1e-6);
}

}  // namespace
}  // namespace jx::compiler
