// The optimizer's passes, text in, text out: each pass (and each simplify rule) fires on a
// small program, giving exactly the expected text, and leaves a program it cannot improve
// untouched (returning false). Every rewrite is also checked for what matters most: the
// program computes the same values before and after (eval_jaxpr on random inputs), and
// it still verifies. Then the pipeline and the dump directory.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "jit/dump.h"
#include "jit/passes/constant_folding.h"
#include "jit/passes/cse.h"
#include "jit/passes/dce.h"
#include "jit/passes/inline_calls.h"
#include "jit/passes/pass.h"
#include "jit/passes/simplify.h"
#include "jit/pipeline.h"
#include "jx/jaxpr.h"
#include "jx/lax.h"
#include "jx/transforms.h"
#include "test_util.h"

namespace jx::compiler {
namespace {

namespace fs = std::filesystem;

// Tests always verify after every pass in the pipeline.
const bool kVerifyPasses = [] {
  jx::config::set_verify_passes(true);
  return true;
}();

// ---- test-only primitive: an effect (printing, say) that must stay where it is ----

const Primitive passes_test_effect_p("passes_test_effect",
                                     {.traits = kSideEffects,
                                      .num_outputs = 0,
                                      .abstract_eval = [](std::span<const Aval>, const Params&) {
                                        return std::vector<Aval>{};
                                      },
                                      .impl = [](std::span<const Array>, const Params&, std::span<const Aval>) {
                                        return std::vector<Array>{};
                                      },
                                      .jvp = nullptr,
                                      .transpose = nullptr,
                                      .batch = nullptr});

// ---- helpers ----

ClosedJaxpr program(std::string_view text, std::vector<Array> consts = {}) {
  return ClosedJaxpr{parse_jaxpr(text), std::move(consts)};
}

// Random values of each input's type: floats in [-3, 3), integers in [-5, 5) (unsigned
// [0, 10)), bools either way.
std::vector<Array> random_inputs(const Jaxpr& j, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<Array> args;
  for (const Var& v : j.invars) {
    std::vector<double> values(static_cast<size_t>(v.aval.size()));
    for (double& x : values) {
      if (is_floating(v.aval.dtype) || is_complex(v.aval.dtype)) x = std::uniform_real_distribution<double>(-3, 3)(rng);
      else if (is_bool(v.aval.dtype)) x = rng() % 2;
      else if (v.aval.dtype == DType::UInt8 || v.aval.dtype == DType::UInt32) x = rng() % 10;
      else x = static_cast<double>(rng() % 10) - 5;
    }
    args.push_back(Array(values, v.aval.shape).astype(v.aval.dtype));
  }
  return args;
}

// Runs `pass` on p and checks the invariants every pass keeps: the program verifies,
// its signature is unchanged, consts stay aligned, and on random inputs it computes
// bit-for-bit what it computed before (folding and rewrites use eager's own kernels).
// `rtol` is 0 except where the program before runs compiled code (a jit equation).
bool run_checked(const Pass& pass, ClosedJaxpr& p, double rtol = 0.0) {
  const std::vector<Aval> in_before = p.in_avals(), out_before = p.out_avals();
  std::vector<std::vector<Array>> inputs, before;
  for (unsigned seed = 1; seed <= 3; ++seed) {
    inputs.push_back(random_inputs(p.jaxpr, seed));
    before.push_back(eval_jaxpr(p, inputs.back()));
  }
  PassContext ctx(p.jaxpr);
  bool changed = pass.run(p, ctx);
  verify_jaxpr(p.jaxpr);
  EXPECT_EQ(p.in_avals(), in_before) << pass.name << " changed the inputs";
  EXPECT_EQ(p.out_avals(), out_before) << pass.name << " changed the output types";
  EXPECT_EQ(p.consts.size(), p.jaxpr.constvars.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::vector<Array> after = eval_jaxpr(p, inputs[k]);
    EXPECT_EQ(after.size(), before[k].size());
    for (size_t i = 0; i < after.size() && i < before[k].size(); ++i)
      EXPECT_ALLCLOSE(after[i], before[k][i], rtol, 0.0) << pass.name << ": output " << i << " changed value";
  }
  return changed;
}

// `pass` rewrites `text` into exactly `expected`.
void expect_rewrite(const Pass& pass, std::string_view text, std::string_view expected,
                    std::vector<Array> consts = {}, double rtol = 0.0) {
  ClosedJaxpr p = program(text, std::move(consts));
  EXPECT_TRUE(run_checked(pass, p, rtol)) << pass.name << " did not fire on\n" << text;
  EXPECT_EQ(p.str(), expected);
}

// `pass` leaves `text` as it is and says so.
void expect_unchanged(const Pass& pass, std::string_view text, std::vector<Array> consts = {}) {
  ClosedJaxpr p = program(text, std::move(consts));
  const std::string before = p.str();
  EXPECT_FALSE(run_checked(pass, p)) << pass.name << " fired on\n" << text;
  EXPECT_EQ(p.str(), before);
}

Array f32(std::vector<float> v, Shape shape) { return Array(v, std::move(shape)); }

// ---- PassContext ----

TEST(PassContext, FreshIdsStartAboveEveryIdIncludingSubPrograms) {
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[]. let
    b:f32[] = closed_call[jaxpr={ lambda ; a:f32[]. let
        b:f32[] = sin a
        c:f32[] = cos b
      in (c,) } name='f'] a
  in (b,) })");
  // The parser numbers the sub-program's variables too: 5 ids in all, 0..4.
  EXPECT_EQ(max_var_id(j), 4);
  PassContext ctx(j);
  EXPECT_EQ(ctx.fresh_id(), 5);
  Var v = ctx.fresh_var(Aval{{2}, DType::Int32});
  EXPECT_EQ(v.id, 6);
  EXPECT_EQ(v.aval, (Aval{{2}, DType::Int32}));
  EXPECT_EQ(max_var_id(Jaxpr{}), -1);
}

TEST(PassContext, NotesAreKeptInOrderAndTaken) {
  PassContext ctx;
  ctx.note("one");
  ctx.note("two");
  EXPECT_EQ(ctx.notes(), (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(ctx.take_notes().size(), 2u);
  EXPECT_TRUE(ctx.notes().empty());
  // A pipeline that writes no dump turns them off: notes are then dropped.
  EXPECT_TRUE(ctx.records_notes());
  ctx.set_records_notes(false);
  ctx.note("three");
  EXPECT_TRUE(ctx.notes().empty());
}

// ---- dce ----

TEST(Dce, RemovesUnusedEquationsAndKeepsTheOutputsDependencies) {
  expect_rewrite(kDcePass, R"({ lambda ; a:f32[3]. let
    b:f32[3] = sin a
    c:f32[3] = cos b
    d:f32[3] = exp a
    e:f32[3] = log d
  in (c,) })",
                 R"({ lambda ; a:f32[3]. let
    b:f32[3] = sin a
    c:f32[3] = cos b
  in (c,) })");
}

TEST(Dce, RemovesUnusedConstvarsWithTheirValues) {
  Array unused = f32({1, 2, 3}, {3}), used = f32({4, 5, 6}, {3});
  ClosedJaxpr p = program(R"({ lambda a:f32[3] b:f32[3]; c:f32[3]. let
    d:f32[3] = mul c b
  in (d,) })",
                          {unused, used});
  EXPECT_TRUE(run_checked(kDcePass, p));
  EXPECT_EQ(p.str(), R"({ lambda a:f32[3]; b:f32[3]. let
    c:f32[3] = mul b a
  in (c,) })");
  ASSERT_EQ(p.consts.size(), 1u);
  EXPECT_ALLCLOSE(p.consts[0], used);
}

TEST(Dce, KeepsSideEffectsAndUnusedInputs) {
  expect_unchanged(kDcePass, R"({ lambda ; a:f32[3] b:f32[]. let
    _ = passes_test_effect a
  in (a,) })");
}

// A call stays while any of its outputs is used, and prunes its body (its dce rule).
TEST(Dce, KeepsACallWhileAnyOfItsOutputsIsUsedAndPrunesItsBody) {
  expect_rewrite(kDcePass, R"({ lambda ; a:f32[3]. let
    b:f32[3] c:f32[3] = closed_call[jaxpr={ lambda ; a:f32[3]. let
        b:f32[3] = sin a
        c:f32[3] = cos a
      in (b, c) } name='two'] a
  in (c,) })",
                 R"({ lambda ; a:f32[3]. let
    b:f32[3] = closed_call[jaxpr={ lambda ; a:f32[3]. let
        b:f32[3] = cos a
      in (b,) } name='two'] a
  in (b,) })");
}

TEST(Dce, DoesNotFireWhenEverythingIsUsed) {
  expect_unchanged(kDcePass, R"({ lambda ; a:f32[3]. let
    b:f32[3] = sin a
    c:f32[3] = add a b
  in (c, b) })");
}

// ---- cse ----

TEST(Cse, MergesEqualEquationsAndRenamesTheirUses) {
  expect_rewrite(kCsePass, R"({ lambda ; a:f32[3]. let
    b:f32[3] = sin a
    c:f32[3] = sin a
    d:f32[3] = cos b
    e:f32[3] = cos c
    f:f32[3] = add d e
  in (f, e) })",
                 R"({ lambda ; a:f32[3]. let
    b:f32[3] = sin a
    c:f32[3] = cos b
    d:f32[3] = add c c
  in (d, c) })");
}

TEST(Cse, MergesOperationsWithTheSameLiteral) {
  expect_rewrite(kCsePass, R"({ lambda ; a:f32[]. let
    b:f32[] = add a 1.5:f32[]
    c:f32[] = add a 1.5:f32[]
    d:f32[] = mul b c
  in (d,) })",
                 R"({ lambda ; a:f32[]. let
    b:f32[] = add a 1.5:f32[]
    c:f32[] = mul b b
  in (c,) })");
}

TEST(Cse, DoesNotMergeDifferentLiterals) {
  // Different values, signed zeros, weak and strong types are all different operands.
  expect_unchanged(kCsePass, R"({ lambda ; a:f32[]. let
    b:f32[] = add a 1.5:f32[]
    c:f32[] = add a 2.5:f32[]
    d:f32[] = add a 0.0:f32[]
    e:f32[] = add a -0.0:f32[]
    f:f32[] = add a 1.5:f32{weak}[]
  in (b, c, d, e, f) })");
}

TEST(Cse, DoesNotMergeDifferentParamsOrOperandOrder) {
  expect_unchanged(kCsePass, R"({ lambda ; a:f32[2,3] b:f32[2,3]. let
    c:f32[3] = reduce_sum[axes=(0,)] a
    d:f32[2] = reduce_sum[axes=(1,)] a
    e:f32[2,3] = sub a b
    f:f32[2,3] = sub b a
  in (c, d, e, f) })");
}

TEST(Cse, NeverMergesSideEffects) {
  expect_unchanged(kCsePass, R"({ lambda ; a:f32[3]. let
    _ = passes_test_effect a
    _ = passes_test_effect a
  in (a,) })");
}

TEST(Cse, MergesRandomBitsOfTheSameKey) {
  // threefry2x32 is a pure function of key and counter.
  expect_rewrite(kCsePass, R"({ lambda ; a:u32[4] b:u32[4] c:u32[4] d:u32[4]. let
    e:u32[4] f:u32[4] = threefry2x32 a b c d
    g:u32[4] h:u32[4] = threefry2x32 a b c d
    i:u32[4] = xor e g
    j:u32[4] = xor f h
  in (i, j) })",
                 R"({ lambda ; a:u32[4] b:u32[4] c:u32[4] d:u32[4]. let
    e:u32[4] f:u32[4] = threefry2x32 a b c d
    g:u32[4] = xor e e
    h:u32[4] = xor f f
  in (g, h) })");
}

TEST(Cse, MergesConstvarsHoldingTheSameArray) {
  Array c = f32({1, 2, 3}, {3});
  ClosedJaxpr p = program(R"({ lambda a:f32[3] b:f32[3]; c:f32[3]. let
    d:f32[3] = mul c a
    e:f32[3] = mul c b
  in (d, e) })",
                          {c, c});
  EXPECT_TRUE(run_checked(kCsePass, p));
  EXPECT_EQ(p.str(), R"({ lambda a:f32[3]; b:f32[3]. let
    c:f32[3] = mul b a
  in (c, c) })");
  EXPECT_EQ(p.consts.size(), 1u);
  // Equal values in different arrays are not looked at (comparing contents costs).
  expect_unchanged(kCsePass, R"({ lambda a:f32[3] b:f32[3]; c:f32[3]. let
    d:f32[3] = mul c a
    e:f32[3] = mul c b
  in (d, e) })",
                   {c, f32({1, 2, 3}, {3})});
}

// ---- constant_folding ----

// The recomputation of a checkpoint reads its inputs through barriers: two of them are
// never one value, so a recomputation is not merged with the forward pass.
TEST(Cse, NeverMergesOptimizationBarriers) {
  expect_unchanged(kCsePass, R"({ lambda ; a:f32[3]. let
    b:f32[3] = optimization_barrier a
    c:f32[3] = optimization_barrier a
    d:f32[3] = sin b
    e:f32[3] = sin a
  in (c, d, e) })");
}

TEST(ConstantFolding, KeepsOptimizationBarriers) {
  expect_unchanged(kConstantFoldingPass, R"({ lambda ; . let
    a:f32[] = optimization_barrier 2.0:f32[]
    b:f32[] = sin a
  in (b,) })");
}

TEST(ConstantFolding, FoldsLiteralArithmeticIntoALiteral) {
  expect_rewrite(kConstantFoldingPass, R"({ lambda ; a:f32[]. let
    b:f32[] = mul 2.0:f32[] 3.0:f32[]
    c:f32[] = sin 0.0:f32[]
    d:f32[] = add b c
    e:f32[] = add a d
  in (e,) })",
                 R"({ lambda ; a:f32[]. let
    b:f32[] = add a 6.0:f32[]
  in (b,) })");
}

TEST(ConstantFolding, UsesEagerSemanticsForTheValue) {
  // Integer division truncates toward zero; the weak type of the result is kept.
  expect_rewrite(kConstantFoldingPass, R"({ lambda ; a:i32[]. let
    b:i32[] = div -7:i32[] 2:i32[]
    c:f32{weak}[] = mul 0.5:f32{weak}[] 3.0:f32{weak}[]
    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c
    e:i32[] = add a b
    f:i32[] = add e d
  in (f,) })",
                 R"({ lambda ; a:i32[]. let
    b:i32[] = add a -3:i32[]
    c:i32[] = add b 1:i32[]
  in (c,) })");
}

TEST(ConstantFolding, FoldsConstvarsIntoNewConstvars) {
  Array k = f32({0.5f, 1.0f, 2.0f}, {3});
  ClosedJaxpr p = program(R"({ lambda a:f32[3]; b:f32[3]. let
    c:f32[3] = sin a
    d:f32[3] = mul c c
    e:f32[3] = add b d
  in (e,) })",
                          {k});
  EXPECT_TRUE(run_checked(kConstantFoldingPass, p));
  // The old constvar stays until dce; the folded value is the last constvar.
  EXPECT_EQ(p.str(), R"({ lambda a:f32[3] b:f32[3] c:f32[3]; d:f32[3]. let
    e:f32[3] = add d c
  in (e,) })");
  ASSERT_EQ(p.consts.size(), 3u);
  EXPECT_ALLCLOSE(p.consts[2], lax::mul(lax::sin(k), lax::sin(k)), 0.0, 0.0);
  EXPECT_ALLCLOSE(p.consts[1], lax::sin(k), 0.0, 0.0);
}

TEST(ConstantFolding, TurnsZeroDimConstvarsIntoLiterals) {
  ClosedJaxpr p = program(R"({ lambda a:f32[]; b:f32[]. let
    c:f32[] = mul b a
  in (c,) })",
                          {Array(std::vector<float>{2.5f}, Shape{})});
  EXPECT_TRUE(run_checked(kConstantFoldingPass, p));
  EXPECT_EQ(p.str(), R"({ lambda a:f32[]; b:f32[]. let
    c:f32[] = mul b 2.5:f32[]
  in (c,) })");
}

TEST(ConstantFolding, RefusesLargeResultsAndSaysWhy) {
  Array big = lax::broadcast_in_dim(Array(std::vector<float>{1.0f}, Shape{}), {1001, 1000}, {});
  ClosedJaxpr p = program(R"({ lambda a:f32[1001,1000]; b:f32[1001,1000]. let
    c:f32[1001,1000] = neg a
    d:f32[1001,1000] = add b c
  in (d,) })",
                          {big});
  PassContext ctx(p.jaxpr);
  EXPECT_FALSE(fold_constants(p, ctx));
  ASSERT_EQ(ctx.notes().size(), 1u);
  EXPECT_EQ(ctx.notes()[0],
            "not folded: neg giving f32[1001,1000] has 1001000 elements (more than 1000000): the constant would "
            "bloat the program");
}

TEST(ConstantFolding, RefusesResultsLargerThanTheirOperands) {
  ClosedJaxpr p = program(R"({ lambda ; a:f32[4]. let
    b:f32[4] = broadcast_in_dim[broadcast_dimensions=() shape=(4,)] 2.0:f32[]
    c:i32[4] = iota[dimension=0 dtype=int32 shape=(4,)]
    d:f32[4] = mul a b
  in (d, c) })");
  const std::string before = p.str();
  PassContext ctx(p.jaxpr);
  EXPECT_FALSE(run_checked(kConstantFoldingPass, p));
  EXPECT_EQ(p.str(), before);
  PassContext ctx2(p.jaxpr);
  fold_constants(p, ctx2);
  EXPECT_EQ(ctx2.notes(), (std::vector<std::string>{
                              "not folded: broadcast_in_dim giving f32[4] is larger than its operands (4 > 1 "
                              "elements): cheaper to compute at run time than to hold",
                              "not folded: iota giving i32[4] is larger than its operands (4 > 1 elements): "
                              "cheaper to compute at run time than to hold"}));
}

// An elementwise op of splats is a splat of its value: a broadcast of the folded scalar
// (left to fusion to recompute where read), through a chain; an op with an operand that
// is not a splat, or whose result is 0-d, stays.
TEST(ConstantFolding, ElementwiseOpsOfSplatsBecomeSplats) {
  expect_rewrite(kConstantFoldingPass, R"({ lambda ; a:f32[2,3]. let
    b:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3)] 0.0:f32[]
    c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3)] -6.25:f32[]
    d:f32[2,3] = add b c
    e:f32[2,3] = neg d
    f:f32[2,3] = mul e a
  in (f,) })",
                 R"({ lambda ; a:f32[2,3]. let
    b:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3)] 0.0:f32[]
    c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3)] -6.25:f32[]
    d:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3)] -6.25:f32[]
    e:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3)] 6.25:f32[]
    f:f32[2,3] = mul e a
  in (f,) })");
  ClosedJaxpr p = program(R"({ lambda ; a:f32[2,3]. let
    b:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3)] 2.0:f32[]
    c:f32[2,3] = add a b
  in (c,) })");
  PassContext ctx(p.jaxpr);
  EXPECT_FALSE(fold_constants(p, ctx));
}

TEST(ConstantFolding, DoesNotFireOnUnknownOperandsOrSideEffects) {
  expect_unchanged(kConstantFoldingPass, R"({ lambda ; a:f32[]. let
    b:f32[] = mul a 2.0:f32[]
    _ = passes_test_effect 1.0:f32[]
  in (b,) })");
}

TEST(ConstantFolding, FoldsACallOfConstants) {
  expect_rewrite(kConstantFoldingPass, R"({ lambda ; a:f32[]. let
    b:f32[] = closed_call[jaxpr={ lambda ; a:f32[]. let
        b:f32[] = mul a a
      in (b,) } name='square'] 3.0:f32[]
    c:f32[] = add a b
  in (c,) })",
                 R"({ lambda ; a:f32[]. let
    b:f32[] = add a 9.0:f32[]
  in (b,) })");
}

// ---- simplify: one fires / does-not-fire pair per rule ----

struct RuleCase {
  const char* name;
  const char* before;
  const char* after;  // nullptr: the rule must not fire
};

class SimplifyRule : public ::testing::TestWithParam<RuleCase> {};

TEST_P(SimplifyRule, RewritesExactlyAsExpected) {
  const RuleCase& c = GetParam();
  if (c.after) expect_rewrite(kSimplifyPass, c.before, c.after);
  else expect_unchanged(kSimplifyPass, c.before);
}

const RuleCase kRuleCases[] = {
    // x * 1, 1 * x
    {"MulByOne", "{ lambda ; a:f32[]. let\n    b:f32[] = mul a 1.0:f32[]\n  in (b,) }",
     "{ lambda ; a:f32[]. let\n  in (a,) }"},
    {"OneMul", "{ lambda ; a:i32[]. let\n    b:i32[] = mul 1:i32[] a\n    c:i32[] = neg b\n  in (c,) }",
     "{ lambda ; a:i32[]. let\n    b:i32[] = neg a\n  in (b,) }"},
    {"MulByBroadcastOne",
     "{ lambda ; a:f32[3]. let\n    b:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,)] 1.0:f32[]\n"
     "    c:f32[3] = mul a b\n  in (c,) }",
     "{ lambda ; a:f32[3]. let\n    b:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,)] 1.0:f32[]\n"
     "  in (a,) }"},
    {"MulByTwoStays", "{ lambda ; a:f32[]. let\n    b:f32[] = mul a 2.0:f32[]\n  in (b,) }", nullptr},
    // weak x times a strong 1 is strong: replacing it by x would change its type
    {"MulWeakByStrongOneStays", "{ lambda ; a:f32{weak}[]. let\n    b:f32[] = mul a 1.0:f32[]\n  in (b,) }", nullptr},
    // x / 1
    {"DivByOne", "{ lambda ; a:f64[]. let\n    b:f64[] = div a 1.0:f64[]\n  in (b,) }",
     "{ lambda ; a:f64[]. let\n  in (a,) }"},
    {"OneDivStays", "{ lambda ; a:f64[]. let\n    b:f64[] = div 1.0:f64[] a\n  in (b,) }", nullptr},
    // x + (-0.0) is x for every x; x + 0.0 is not (-0.0 + 0.0 = +0.0)
    {"AddNegativeZero", "{ lambda ; a:f32[]. let\n    b:f32[] = add a -0.0:f32[]\n  in (b,) }",
     "{ lambda ; a:f32[]. let\n  in (a,) }"},
    {"NegativeZeroAdd", "{ lambda ; a:f32[]. let\n    b:f32[] = add -0.0:f32[] a\n  in (b,) }",
     "{ lambda ; a:f32[]. let\n  in (a,) }"},
    {"AddPositiveZeroStaysForFloats", "{ lambda ; a:f32[]. let\n    b:f32[] = add a 0.0:f32[]\n  in (b,) }",
     nullptr},
    {"AddIntegerZero", "{ lambda ; a:i32[]. let\n    b:i32[] = add 0:i32[] a\n  in (b,) }",
     "{ lambda ; a:i32[]. let\n  in (a,) }"},
    // x - 0.0 is x + (-0.0); x - (-0.0) is x + 0.0
    {"SubZero", "{ lambda ; a:f32[]. let\n    b:f32[] = sub a 0.0:f32[]\n  in (b,) }",
     "{ lambda ; a:f32[]. let\n  in (a,) }"},
    {"SubNegativeZeroStays", "{ lambda ; a:f32[]. let\n    b:f32[] = sub a -0.0:f32[]\n  in (b,) }", nullptr},
    {"ZeroSubStays", "{ lambda ; a:f32[]. let\n    b:f32[] = sub 0.0:f32[] a\n  in (b,) }", nullptr},
    // neg(neg(x))
    {"DoubleNegation", "{ lambda ; a:f32[3]. let\n    b:f32[3] = neg a\n    c:f32[3] = neg b\n    d:f32[3] = sin c\n"
                       "  in (d,) }",
     "{ lambda ; a:f32[3]. let\n    b:f32[3] = neg a\n    c:f32[3] = sin a\n  in (c,) }"},
    {"SingleNegationStays", "{ lambda ; a:f32[3]. let\n    b:f32[3] = neg a\n    c:f32[3] = sin b\n  in (c,) }",
     nullptr},
    // reshape chains
    {"ReshapeOfReshape",
     "{ lambda ; a:f32[2,3]. let\n    b:f32[6] = reshape[new_sizes=(6,)] a\n"
     "    c:f32[3,2] = reshape[new_sizes=(3, 2)] b\n  in (c,) }",
     "{ lambda ; a:f32[2,3]. let\n    b:f32[6] = reshape[new_sizes=(6,)] a\n"
     "    c:f32[3,2] = reshape[new_sizes=(3, 2)] a\n  in (c,) }"},
    {"ReshapeOfSqueezeBackToTheOriginalShape",
     "{ lambda ; a:f32[1,6]. let\n    b:f32[6] = squeeze[dimensions=(0,)] a\n"
     "    c:f32[1,6] = reshape[new_sizes=(1, 6)] b\n  in (c,) }",
     "{ lambda ; a:f32[1,6]. let\n    b:f32[6] = squeeze[dimensions=(0,)] a\n  in (a,) }"},
    {"ReshapeOfSinStays",
     "{ lambda ; a:f32[2,3]. let\n    b:f32[2,3] = sin a\n    c:f32[6] = reshape[new_sizes=(6,)] b\n  in (c,) }",
     nullptr},
    {"ReshapeToTheSameShape", "{ lambda ; a:f32[2,3]. let\n    b:f32[2,3] = reshape[new_sizes=(2, 3)] a\n  in (b,) }",
     "{ lambda ; a:f32[2,3]. let\n  in (a,) }"},
    // transposes
    {"TransposeOfTranspose",
     "{ lambda ; a:f32[2,3,4]. let\n    b:f32[3,4,2] = transpose[permutation=(1, 2, 0)] a\n"
     "    c:f32[4,3,2] = transpose[permutation=(1, 0, 2)] b\n  in (c,) }",
     "{ lambda ; a:f32[2,3,4]. let\n    b:f32[3,4,2] = transpose[permutation=(1, 2, 0)] a\n"
     "    c:f32[4,3,2] = transpose[permutation=(2, 1, 0)] a\n  in (c,) }"},
    {"TransposeBackIsTheIdentity",
     "{ lambda ; a:f32[2,3,4]. let\n    b:f32[3,4,2] = transpose[permutation=(1, 2, 0)] a\n"
     "    c:f32[2,3,4] = transpose[permutation=(2, 0, 1)] b\n  in (c,) }",
     "{ lambda ; a:f32[2,3,4]. let\n    b:f32[3,4,2] = transpose[permutation=(1, 2, 0)] a\n  in (a,) }"},
    {"IdentityTranspose", "{ lambda ; a:f32[2,3]. let\n    b:f32[2,3] = transpose[permutation=(0, 1)] a\n  in (b,) }",
     "{ lambda ; a:f32[2,3]. let\n  in (a,) }"},
    // the transpose of a product is the product of the swapped operands
    {"TransposeOfProduct",
     "{ lambda ; a:f32[4,3] b:f32[3,5]. let\n    c:f32[4,5] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b\n"
     "    d:f32[5,4] = transpose[permutation=(1, 0)] c\n  in (d,) }",
     "{ lambda ; a:f32[4,3] b:f32[3,5]. let\n    c:f32[4,5] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b\n"
     "    d:f32[5,4] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(0,) preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(1,)] b a\n  in (d,) }"},
    // an outer product is a multiply of broadcasts, which fuses as elementwise work
    {"OuterProductIsAMultiply",
     "{ lambda ; a:f32[4] b:f32[2,5]. let\n    c:f32[4,2,5] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=() preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=()] a b\n  in (c,) }",
     "{ lambda ; a:f32[4] b:f32[2,5]. let\n"
     "    c:f32[4,2,5] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(4, 2, 5)] a\n"
     "    d:f32[4,2,5] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(4, 2, 5)] b\n"
     "    e:f32[4,2,5] = mul c d\n  in (e,) }"},
    {"MixedPrecisionOuterProductStays",
     "{ lambda ; a:f32[4] b:f32[5]. let\n    c:f64[4,5] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=() preferred_element_type=float64 rhs_batch_dimensions=() rhs_contracting_dimensions=()] a b\n  in (c,) }",
     nullptr},
    // a product read elsewhere too would be computed twice
    {"TransposeOfProductReadTwiceStays",
     "{ lambda ; a:f32[4,3] b:f32[3,5]. let\n    c:f32[4,5] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b\n"
     "    d:f32[5,4] = transpose[permutation=(1, 0)] c\n  in (c, d) }",
     nullptr},
    // a square transpose keeps the type but not the values
    {"SquareTransposeStays", "{ lambda ; a:f32[3,3]. let\n    b:f32[3,3] = transpose[permutation=(1, 0)] a\n  in (b,) }",
     nullptr},
    // convert_element_type
    {"ConvertToTheSameType",
     "{ lambda ; a:f32[3]. let\n    b:f32[3] = convert_element_type[new_dtype=float32 weak_type=False] a\n  in (b,) }",
     "{ lambda ; a:f32[3]. let\n  in (a,) }"},
    {"ConvertToAnotherDtypeStays",
     "{ lambda ; a:f32[3]. let\n    b:f64[3] = convert_element_type[new_dtype=float64 weak_type=False] a\n  in (b,) }",
     nullptr},
    {"ConvertToWeakStays",
     "{ lambda ; a:f32[3]. let\n    b:f32{weak}[3] = convert_element_type[new_dtype=float32 weak_type=True] a\n"
     "  in (b,) }",
     nullptr},
    // broadcast_in_dim
    {"BroadcastToTheSameShape",
     "{ lambda ; a:f32[2,3]. let\n    b:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(2, 3)] a\n"
     "  in (b,) }",
     "{ lambda ; a:f32[2,3]. let\n  in (a,) }"},
    {"BroadcastOfBroadcast",
     "{ lambda ; a:f32[3]. let\n    b:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 3)] a\n"
     "    c:f32[2,4,3] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(2, 4, 3)] b\n  in (c,) }",
     "{ lambda ; a:f32[3]. let\n    b:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 3)] a\n"
     "    c:f32[2,4,3] = broadcast_in_dim[broadcast_dimensions=(2,) shape=(2, 4, 3)] a\n  in (c,) }"},
    {"BroadcastStays",
     "{ lambda ; a:f32[3]. let\n    b:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] a\n"
     "  in (b,) }",
     nullptr},
    // squeeze / expand_dims of nothing
    {"SqueezeOfNothing", "{ lambda ; a:f32[2]. let\n    b:f32[2] = squeeze[dimensions=()] a\n  in (b,) }",
     "{ lambda ; a:f32[2]. let\n  in (a,) }"},
    {"ExpandDimsOfNothing", "{ lambda ; a:f32[2]. let\n    b:f32[2] = expand_dims[dimensions=()] a\n  in (b,) }",
     "{ lambda ; a:f32[2]. let\n  in (a,) }"},
    {"SqueezeStays", "{ lambda ; a:f32[1,2]. let\n    b:f32[2] = squeeze[dimensions=(0,)] a\n  in (b,) }", nullptr},
    {"ExpandDimsStays", "{ lambda ; a:f32[2]. let\n    b:f32[2,1] = expand_dims[dimensions=(1,)] a\n  in (b,) }",
     nullptr},
    // select_n
    {"SelectWithTruePredicate",
     "{ lambda ; a:f32[3] b:f32[3]. let\n    c:f32[3] = select_n True:bool[] a b\n  in (c,) }",
     "{ lambda ; a:f32[3] b:f32[3]. let\n  in (b,) }"},
    {"SelectWithFalsePredicate",
     "{ lambda ; a:f32[3] b:f32[3]. let\n    c:f32[3] = select_n False:bool[] a b\n  in (c,) }",
     "{ lambda ; a:f32[3] b:f32[3]. let\n  in (a,) }"},
    {"SelectWithOutOfRangeIntegerClamps",
     "{ lambda ; a:f32[3] b:f32[3] c:f32[3]. let\n    d:f32[3] = select_n 7:i32[] a b c\n  in (d,) }",
     "{ lambda ; a:f32[3] b:f32[3] c:f32[3]. let\n  in (c,) }"},
    {"SelectBetweenEqualCases",
     "{ lambda ; a:bool[3] b:f32[3]. let\n    c:f32[3] = select_n a b b\n  in (c,) }",
     "{ lambda ; a:bool[3] b:f32[3]. let\n  in (b,) }"},
    {"SelectStays", "{ lambda ; a:bool[3] b:f32[3] c:f32[3]. let\n    d:f32[3] = select_n a b c\n  in (d,) }",
     nullptr},
    // checkpoint names (jx::checkpoint) are for partial evaluation only; barriers stay
    {"DropCheckpointName", "{ lambda ; a:f32[3]. let\n    b:f32[3] = checkpoint_name[name='h'] a\n  in (b,) }",
     "{ lambda ; a:f32[3]. let\n  in (a,) }"},
    {"OptimizationBarrierStays",
     "{ lambda ; a:f32[3]. let\n    b:f32[3] = optimization_barrier a\n  in (b,) }", nullptr},
};

INSTANTIATE_TEST_SUITE_P(Rules, SimplifyRule, ::testing::ValuesIn(kRuleCases),
                         [](const ::testing::TestParamInfo<RuleCase>& info) { return std::string(info.param.name); });

TEST(Simplify, ChainsCollapseInOneSweep) {
  // (x * 1) + -0.0, reshaped twice and back: all of it is x.
  expect_rewrite(kSimplifyPass, R"({ lambda ; a:f32[2,3]. let
    b:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3)] 1.0:f32[]
    c:f32[2,3] = mul b a
    d:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3)] -0.0:f32[]
    e:f32[2,3] = add c d
    f:f32[6] = reshape[new_sizes=(6,)] e
    g:f32[3,2] = reshape[new_sizes=(3, 2)] f
    h:f32[2,3] = reshape[new_sizes=(2, 3)] g
    i:f32[2,3] = neg h
    j:f32[2,3] = neg i
  in (j,) })",
                 R"({ lambda ; a:f32[2,3]. let
    b:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3)] 1.0:f32[]
    c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3)] -0.0:f32[]
    d:f32[6] = reshape[new_sizes=(6,)] a
    e:f32[3,2] = reshape[new_sizes=(3, 2)] a
    f:f32[2,3] = neg a
  in (a,) })");
}

// A slice of a broadcast is a broadcast of its operand where each operand dim is size 1
// or sliced whole; slicing part of a dim the operand spans stays a slice.
TEST(Simplify, SliceOfABroadcastIsABroadcast) {
  expect_rewrite(kSimplifyPass, R"({ lambda ; a:i32[5,1]. let
    b:i32[5,7] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(5, 7)] a
    c:i32[5,1] = slice[limit_indices=(5, 1) start_indices=(0, 0) strides=(1, 1)] b
    d:i32[5,3] = slice[limit_indices=(5, 5) start_indices=(0, 2) strides=(1, 1)] b
  in (c, d) })",
                 R"({ lambda ; a:i32[5,1]. let
    b:i32[5,7] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(5, 7)] a
    c:i32[5,3] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(5, 3)] a
  in (a, c) })");
  expect_unchanged(kSimplifyPass, R"({ lambda ; a:i32[5,1]. let
    b:i32[5,7] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(5, 7)] a
    c:i32[2,7] = slice[limit_indices=(3, 7) start_indices=(1, 0) strides=(1, 1)] b
  in (c,) })");
}

TEST(Simplify, NegativeZeroAdditionKeepsTheSignOfZero) {
  // The exactness argument, checked: -0.0 + -0.0 is -0.0, and +0.0 would make it +0.0.
  ClosedJaxpr p = program("{ lambda ; a:f32[]. let\n    b:f32[] = add a -0.0:f32[]\n  in (b,) }");
  PassContext ctx(p.jaxpr);
  ASSERT_TRUE(simplify(p, ctx));
  std::vector<Array> args{Array(std::vector<float>{-0.0f}, Shape{})};
  EXPECT_TRUE(std::signbit(eval_jaxpr(p, args)[0].item<float>()));
  ClosedJaxpr q = program("{ lambda ; a:f32[]. let\n    b:f32[] = add a 0.0:f32[]\n  in (b,) }");
  EXPECT_FALSE(std::signbit(eval_jaxpr(q, args)[0].item<float>()));
}

// ---- inline_calls ----

TEST(InlineCalls, SplicesANestedClosedCall) {
  expect_rewrite(kInlineCallsPass, R"({ lambda ; a:f32[3] b:f32[]. let
    c:f32[3] d:f32[] = closed_call[jaxpr={ lambda ; a:f32[3] b:f32[]. let
        c:f32[3] = closed_call[jaxpr={ lambda ; a:f32[3]. let
            b:f32[3] = sin a
          in (b,) } name='inner'] a
        d:f32[] = reduce_sum[axes=(0,)] c
        e:f32[] = mul d b
      in (c, e) } name='outer'] a b
    e:f32[] = add d 1.0:f32[]
  in (c, e) })",
                 R"({ lambda ; a:f32[3] b:f32[]. let
    c:f32[3] = sin a
    d:f32[] = reduce_sum[axes=(0,)] c
    e:f32[] = mul d b
    f:f32[] = add e 1.0:f32[]
  in (c, f) })");
}

TEST(InlineCalls, ABodyReturningItsInputForwardsTheOperand) {
  expect_rewrite(kInlineCallsPass, R"({ lambda ; a:f32[3] b:f32[3]. let
    c:f32[3] d:f32[3] = closed_call[jaxpr={ lambda ; a:f32[3] b:f32[3]. let
        c:f32[3] = mul a b
      in (b, c) } name='f'] a b
    e:f32[3] = sub c d
  in (e, c) })",
                 R"({ lambda ; a:f32[3] b:f32[3]. let
    c:f32[3] = mul a b
    d:f32[3] = sub b c
  in (d, b) })");
}

TEST(InlineCalls, ConvertsAWeakOperandToTheBodysType) {
  // The call's rule ignores weak_type; the body was verified with a strong input.
  expect_rewrite(kInlineCallsPass, R"({ lambda ; a:f32{weak}[]. let
    b:f32[] = closed_call[jaxpr={ lambda ; a:f32[]. let
        b:f32[] = sin a
      in (b,) } name='f'] a
  in (b,) })",
                 R"({ lambda ; a:f32{weak}[]. let
    b:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a
    c:f32[] = sin b
  in (c,) })");
}

TEST(InlineCalls, BodiesTracedSeparatelyGetFreshIds) {
  // named_call traces the body on its own, so its ids repeat the caller's.
  auto f = [](const Array& x, const Array& y) {
    auto g = jx::named_call([](const Array& u, const Array& v) { return lax::mul(lax::sin(u), v); }, "g");
    Array once = g(x, y);
    return g(once, x);
  };
  Array x = f32({0.1f, 0.2f}, {2}), y = f32({1.5f, -2.0f}, {2});
  ClosedJaxpr p = jx::make_jaxpr(f)(x, y);
  ASSERT_EQ(p.jaxpr.eqns.size(), 2u);
  EXPECT_TRUE(run_checked(kInlineCallsPass, p));
  EXPECT_EQ(p.str(), R"({ lambda ; a:f32[2] b:f32[2]. let
    c:f32[2] = sin a
    d:f32[2] = mul c b
    e:f32[2] = sin d
    f:f32[2] = mul e a
  in (f,) })");
}

TEST(InlineCalls, InlinesJitCallsWhenJitIsRegistered) {
  if (!find_primitive("jit")) GTEST_SKIP() << "the jit primitive is not registered in this build";
  // Evaluating the jit equation runs compiled code: a few ULP from eager's cos.
  expect_rewrite(kInlineCallsPass, R"({ lambda ; a:f32[3]. let
    b:f32[3] = jit[jaxpr={ lambda ; a:f32[3]. let
        b:f32[3] = cos a
      in (b,) } name='f'] a
  in (b,) })",
                 R"({ lambda ; a:f32[3]. let
    b:f32[3] = cos a
  in (b,) })",
                 {}, 1e-6);
}

TEST(InlineCalls, DoesNotFireWithoutCalls) {
  expect_unchanged(kInlineCallsPass, R"({ lambda ; a:f32[3]. let
    b:f32[3] = sin a
  in (b,) })");
}

// ---- the pipeline ----

// A temporary directory removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("jx_passes_test." + std::to_string(getpid()) + "." +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> file_names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

const char* const kPipelineProgram = R"({ lambda ; a:f32[4] b:f32[4]. let
    c:f32[4] = closed_call[jaxpr={ lambda ; a:f32[4] b:f32[4]. let
        c:f32[4] = broadcast_in_dim[broadcast_dimensions=() shape=(4,)] 1.0:f32[]
        d:f32[4] = mul a c
        e:f32[4] = sin d
        f:f32[4] = sin a
        g:f32[4] = add e f
        h:f32[4] = mul g b
      in (h,) } name='body'] a b
    d:f32[] = mul 2.0:f32[] 3.0:f32[]
    e:f32[4] = broadcast_in_dim[broadcast_dimensions=() shape=(4,)] d
    f:f32[4] = add c e
    g:f32[4] = cos a
  in (f,) })";

TEST(Pipeline, OptimizesAndPreservesValues) {
  ClosedJaxpr p = program(kPipelineProgram);
  std::vector<Array> args = random_inputs(p.jaxpr, 7);
  std::vector<Array> expected = eval_jaxpr(p, args);
  ClosedJaxpr optimized = optimize_program(p, PipelineOptions{.verify = true}, Dump("unused", ""));
  verify_jaxpr(optimized.jaxpr);
  std::vector<Array> got = eval_jaxpr(optimized, args);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_ALLCLOSE(got[0], expected[0]);
  // Whatever fusion made of it, no call, no x * 1, no duplicate sin and no dead cos stay.
  std::string text = optimized.str();
  EXPECT_EQ(text.find("closed_call"), std::string::npos) << text;
  EXPECT_EQ(text.find("cos"), std::string::npos) << text;
  EXPECT_EQ(text.find("1.0:f32[]"), std::string::npos) << text;
}

size_t count(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

TEST(Pipeline, OptimizesATracedNumpyProgram) {
  namespace jnp = jx::numpy;
  auto f = [](const Array& x, const Array& y) {
    Array a = x * 1.0 - 0.0;
    Array b = jnp::reshape(jnp::reshape(a, {6}), {3, 2});
    Array c = jnp::transpose(jnp::transpose(b));
    return c * y.sum() + jnp::sin(x).sum() + jnp::sin(x).sum();
  };
  Array x = f32({0.5f, -1, 2, 0.25f, 3, -2}, {3, 2}), y = f32({1, 2, 3, 4}, {4});
  ClosedJaxpr p = jx::make_jaxpr(f)(x, y);
  ClosedJaxpr optimized = optimize_program(p, PipelineOptions{.verify = true}, Dump("numpy", ""));
  std::vector<Array> args{x, y};
  EXPECT_ALLCLOSE(eval_jaxpr(optimized, args)[0], f(x, y));
  const std::string text = optimized.str();
  EXPECT_EQ(count(text, "sin"), 1u) << text;
  EXPECT_EQ(count(text, "transpose"), 0u) << text;
  EXPECT_EQ(count(text, "reshape"), 0u) << text;
  EXPECT_EQ(count(text, "mul"), 1u) << text;  // by y.sum(); x * 1.0 is gone
  EXPECT_EQ(count(text, "convert_element_type"), 0u) << text;  // the scalars were folded
}

TEST(Pipeline, WritesTheProgramAfterEachChangingPass) {
  TempDir tmp;
  ClosedJaxpr p = program(kPipelineProgram);
  Dump dump("pipeline test", tmp.path.string());
  ClosedJaxpr optimized = optimize_program(p, PipelineOptions{.verify = true}, dump);
  std::vector<std::string> names = file_names(dump.dir());
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(names[0], "00-traced.txt");
  EXPECT_EQ(names[1], "01-inline_calls.txt");
  EXPECT_EQ(names[2], "02-simplify.txt");
  EXPECT_EQ(names.back(), "fusion.txt");
  EXPECT_EQ(read_text(fs::path(dump.dir()) / "00-traced.txt"), p.str() + "\n");
  // The last numbered file is the program the pipeline returned.
  EXPECT_EQ(read_text(fs::path(dump.dir()) / names[names.size() - 2]), optimized.str() + "\n");
  std::string notes = read_text(fs::path(dump.dir()) / "fusion.txt");
  EXPECT_NE(notes.find("[inline_calls] inlined 1 calls\n"), std::string::npos) << notes;
  EXPECT_NE(notes.find("[constant_folding] not folded: broadcast_in_dim giving f32[4]"), std::string::npos) << notes;
}

TEST(Pipeline, WithoutOptimizationOnlyInlinesAndFusesSingleEquations) {
  ClosedJaxpr p = program(kPipelineProgram);
  std::vector<Array> args = random_inputs(p.jaxpr, 3);
  std::vector<Array> expected = eval_jaxpr(p, args);
  TempDir tmp;
  Dump dump("unoptimized", tmp.path.string());
  ClosedJaxpr out = optimize_program(p, PipelineOptions{.optimize = false, .verify = true}, dump);
  verify_jaxpr(out.jaxpr);
  EXPECT_ALLCLOSE(eval_jaxpr(out, args)[0], expected[0]);
  std::vector<std::string> names = file_names(dump.dir());
  ASSERT_GE(names.size(), 3u);
  EXPECT_EQ(names[0], "00-traced.txt");
  EXPECT_EQ(names[1], "01-inline_calls.txt");
  for (const std::string& n : names)
    EXPECT_TRUE(n == "00-traced.txt" || n == "01-inline_calls.txt" || n == "02-fusion.txt" || n == "fusion.txt")
        << n;
  // Nothing simplified: the multiplication by one and the dead cos are still there.
  EXPECT_NE(read_text(fs::path(dump.dir()) / "01-inline_calls.txt").find("cos a"), std::string::npos);
}

TEST(Pipeline, RejectsAnInvalidProgramNamingWhatBrokeIt) {
  ClosedJaxpr p = program("{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,) }");
  p.jaxpr.eqns[0].outputs[0].aval = Aval{{4}, DType::Float32};
  p.jaxpr.outvars[0] = p.jaxpr.eqns[0].outputs[0];
  EXPECT_JX_ERROR(optimize_program(p, PipelineOptions{.verify = true}, Dump("bad", "")), "[jit] the traced program is invalid:",
                  "[verify_jaxpr] equation 0 (sin): output 0 (b) is declared f32[4]");
}

// ---- the dump directory ----

TEST(Dump, IsDisabledWithoutADirectory) {
  Dump dump("f");
  EXPECT_FALSE(dump.enabled());
  EXPECT_EQ(dump.dir(), "");
  dump.write("x.txt", "ignored");  // a no-op
}

TEST(Dump, MakesOneNewDirectoryPerProgram) {
  TempDir tmp;
  Dump first("my/prog", tmp.path.string()), second("my/prog", tmp.path.string());
  ASSERT_TRUE(first.enabled());
  EXPECT_NE(first.dir(), second.dir());
  for (const Dump* d : {&first, &second}) {
    fs::path dir(d->dir());
    EXPECT_EQ(dir.parent_path(), tmp.path);
    EXPECT_TRUE(dir.filename().string().starts_with("my_prog.")) << dir;
    EXPECT_TRUE(fs::is_directory(dir));
  }
  first.write("00-traced.txt", "hello\n");
  EXPECT_EQ(read_text(fs::path(first.dir()) / "00-traced.txt"), "hello\n");
  EXPECT_TRUE(fs::is_empty(second.dir()));
}

TEST(Dump, SkipsDirectoriesThatAlreadyExist) {
  // Another process may have made <name>.<n> already: the next free n is taken.
  TempDir tmp;
  Dump probe("taken", tmp.path.string());
  fs::path probed(probe.dir());
  std::string stem = "taken.";
  int64_t n = std::stoll(probed.filename().string().substr(stem.size()));
  for (int64_t k = n + 1; k <= n + 3; ++k) fs::create_directory(tmp.path / (stem + std::to_string(k)));
  Dump next("taken", tmp.path.string());
  EXPECT_EQ(fs::path(next.dir()).filename().string(), stem + std::to_string(n + 4));
}

TEST(Dump, ReportsFilesItCannotWrite) {
  TempDir tmp;
  Dump dump("gone", tmp.path.string());
  fs::remove_all(dump.dir());
  const std::string path = (fs::path(dump.dir()) / "00-traced.txt").string();
  EXPECT_JX_ERROR(dump.write("00-traced.txt", "x"), "[jit] cannot write dump file ", path.c_str(),
                  ": No such file or directory");
}

TEST(Dump, ReportsADirectoryItCannotCreate) {
  TempDir tmp;
  fs::path file = tmp.path / "a_file";
  std::ofstream(file) << "x";
  EXPECT_JX_ERROR(Dump("f", (file / "sub").string()), "[jit] cannot create dump directory ");
}

}  // namespace
}  // namespace jx::compiler
