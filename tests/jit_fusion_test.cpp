// The fusion pass (src/jit/passes/fusion.h) on small text IR: which fusions form, their
// exact text, the notes explaining merges and refusals, and that a fused program computes
// what the original did (the fusion primitive evaluates its body eagerly).
#include <algorithm>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "jit/fusion_primitive.h"
#include "jit/passes/fusion.h"
#include "jx/jaxpr.h"
#include "jx/random.h"
#include "row_programs.h"
#include "test_util.h"

namespace jx::compiler {
namespace {

Array random_input(const Aval& aval, int64_t seed) {
  Array k = random::key(seed);
  switch (aval.dtype) {
    case DType::Float32:
    case DType::Float64:
      return random::uniform(k, aval.shape, aval.dtype, 0.5, 2.0);
    case DType::Complex64:
    case DType::Complex128:
      return random::normal(k, aval.shape, aval.dtype);
    case DType::Bool:
      return random::bernoulli(k, 0.5, aval.shape);
    default:
      return random::randint(k, aval.shape, -5, 5, aval.dtype);
  }
}

// Every variable a program or its sub-programs binds, each exactly once.
void collect_binders(const Jaxpr& j, std::vector<int64_t>& ids) {
  for (const Var& v : j.constvars) ids.push_back(v.id);
  for (const Var& v : j.invars) ids.push_back(v.id);
  for (const Equation& e : j.eqns) {
    for (const Var& v : e.outputs) ids.push_back(v.id);
    for (const auto& [name, value] : e.params.items())
      if (const auto* sub = std::get_if<JaxprRef>(&value)) collect_binders((*sub)->jaxpr, ids);
  }
}

struct Fused {
  bool changed = false;
  std::string text;
  std::vector<std::string> notes;
  ClosedJaxpr program;
  int fusions(std::string_view kind = "") const {
    int n = 0;
    for (const Equation& e : program.jaxpr.eqns)
      if (e.primitive == &fusion_primitive() && (kind.empty() || e.params.get_string("kind") == kind)) ++n;
    return n;
  }
  bool has_note(std::string_view line) const { return std::find(notes.begin(), notes.end(), line) != notes.end(); }
  std::string all_notes() const {
    std::string s;
    for (const std::string& n : notes) s += n + "\n";
    return s;
  }
};

// Fuses the program, checks that it verifies, binds every id once and computes the same
// values as before on random inputs.
// With `notes` off, as a pipeline that writes no dump runs it.
Fused fuse_text(std::string_view text, FusionOptions options = {}, bool notes = true) {
  ClosedJaxpr before{parse_jaxpr(text), {}};
  Fused r;
  r.program = before;
  PassContext ctx(r.program.jaxpr);
  ctx.set_records_notes(notes);
  r.changed = fuse(r.program, ctx, options);
  r.text = r.program.str();
  r.notes = ctx.notes();
  verify_jaxpr(r.program.jaxpr);
  std::vector<int64_t> ids;
  collect_binders(r.program.jaxpr, ids);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end()) << "a variable id is bound twice in\n" << r.text;

  std::vector<Array> args;
  int64_t seed = 1;
  for (const Aval& a : before.in_avals()) args.push_back(random_input(a, seed++));
  std::vector<Array> want = eval_jaxpr(before, args);
  std::vector<Array> got = eval_jaxpr(r.program, args);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    EXPECT_ALLCLOSE(got[i], want[i], 1e-6, 1e-6) << "output " << i << " of\n" << r.text;
  return r;
}

// ---- loop fusion ----

TEST(LoopFusion, LongChainsSplitIntoKernelsOfBoundedSize) {
  // 600 elementwise ops: fusions of at most 256 ops, so compile time stays linear
  // in the chain's length (LLVM's time on one kernel grows faster than its body).
  std::string text = "{ lambda ; v0:f32[8] w:f32[8]. let\n";
  const int n = 600;
  for (int i = 1; i <= n; ++i)
    text += "    v" + std::to_string(i) + ":f32[8] = " + (i % 3 == 0 ? "sin" : i % 3 == 1 ? "mul" : "add") + " v" +
            std::to_string(i - 1) + (i % 3 == 0 ? "" : " w") + "\n";
  text += "  in (v" + std::to_string(n) + ",) }";
  Fused r = fuse_text(text);
  EXPECT_EQ(r.fusions("loop"), 3);
  for (const Equation& e : r.program.jaxpr.eqns)
    EXPECT_LE(e.params.get_jaxpr("jaxpr")->jaxpr.eqns.size(), 256u);
  bool refused = false;
  for (const std::string& note : r.notes)
    refused = refused || note.find("ops, more than 256 (a kernel's compile time grows faster than its size)") !=
                             std::string::npos;
  EXPECT_TRUE(refused) << r.all_notes();
}

TEST(LoopFusion, BoundedKernelsStillTakeTheBroadcastsTheyRead) {
  // 600 ops reading one broadcast literal: its copies cost no op of a fusion's 256, so
  // every kernel computes 0.5 inline and none is left to be materialized (before, the
  // copies counted and the kernels' bound refused the last ones: a fill of the whole
  // shape and one more input per copy on every call).
  std::string text = "{ lambda ; v0:f32[8] w:f32[8]. let\n    h:f32[8] = broadcast_in_dim[broadcast_dimensions=() shape=(8,)] 0.5:f32[]\n";
  const int n = 600;
  for (int i = 1; i <= n; ++i)
    text += "    v" + std::to_string(i) + ":f32[8] = " + (i % 3 == 0 ? "sin" : i % 3 == 1 ? "mul" : "add") + " v" +
            std::to_string(i - 1) + (i % 3 == 0 ? "" : i % 3 == 1 ? " w" : " h") + "\n";
  text += "  in (v" + std::to_string(n) + ",) }";
  Fused r = fuse_text(text);
  EXPECT_EQ(r.fusions("loop"), 3);
  EXPECT_EQ(r.program.jaxpr.eqns.size(), 3u) << r.text;  // the three fusions alone
  for (const Equation& e : r.program.jaxpr.eqns) {
    ASSERT_EQ(e.primitive->name(), "fusion") << r.text;
    const Jaxpr& body = e.params.get_jaxpr("jaxpr")->jaxpr;
    EXPECT_LE(body.invars.size(), 2u);  // the chain's value (or v0) and w
    int64_t ops = 0;
    for (const Equation& b : body.eqns) ops += b.primitive->name() != "broadcast_in_dim";
    EXPECT_LE(ops, 256);
  }
}

TEST(LoopFusion, ElementwiseChainIsOneFusion) {
  Fused r = fuse_text(R"({ lambda ; a:f32[3] b:f32[3]. let
    c:f32[3] = sin a
    d:f32[3] = mul c b
    e:f32[3] = exp d
  in (e,) })");
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.text, R"({ lambda ; a:f32[3] b:f32[3]. let
    c:f32[3] = fusion[jaxpr={ lambda ; a:f32[3] b:f32[3]. let
        c:f32[3] = sin a
        d:f32[3] = mul c b
        e:f32[3] = exp d
      in (e,) } kind='loop' name='fusion.0'] a b
  in (c,) })");
  EXPECT_TRUE(r.has_note("fusion.0: loop over f32[3] of sin (c), mul (d), exp (e); 2 inputs, 1 output")) << r.all_notes();
  EXPECT_TRUE(r.has_note("fusion.0: merged mul (d) into loop over f32[3]")) << r.all_notes();
  EXPECT_TRUE(r.has_note("fusion.0: merged sin (c) into loop over f32[3]")) << r.all_notes();
}

TEST(LoopFusion, BroadcastProducersAndLiteralsAreFused) {
  // a * broadcast(b) + broadcast(2.0): the broadcasts are index maps, the literal stays.
  Fused r = fuse_text(R"({ lambda ; a:f32[2,3] b:f32[3]. let
    c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] b
    d:f32[2,3] = mul a c
    e:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3)] 2.0:f32[]
    f:f32[2,3] = add d e
  in (f,) })");
  EXPECT_EQ(r.text, R"({ lambda ; a:f32[2,3] b:f32[3]. let
    c:f32[2,3] = fusion[jaxpr={ lambda ; a:f32[3] b:f32[2,3]. let
        c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] a
        d:f32[2,3] = mul b c
        e:f32[2,3] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 3)] 2.0:f32[]
        f:f32[2,3] = add d e
      in (f,) } kind='loop' name='fusion.0'] b a
  in (c,) })");
}

TEST(LoopFusion, ValueNeededOutsideBecomesAnExtraOutput) {
  Fused r = fuse_text(R"({ lambda ; a:f32[4]. let
    b:f32[4] = exp a
    c:f32[4] = mul b b
  in (b, c) })");
  EXPECT_EQ(r.text, R"({ lambda ; a:f32[4]. let
    b:f32[4] c:f32[4] = fusion[jaxpr={ lambda ; a:f32[4]. let
        b:f32[4] = exp a
        c:f32[4] = mul b b
      in (b, c) } kind='loop' name='fusion.0'] a
  in (b, c) })");
}

TEST(LoopFusion, ExpensiveProducerOfTwoConsumersIsFusedOnce) {
  // exp feeds two consumers that end up in one fusion: exp is computed once there.
  Fused r = fuse_text(R"({ lambda ; a:f32[4]. let
    b:f32[4] = exp a
    c:f32[4] = sin b
    d:f32[4] = cos b
    e:f32[4] = add c d
  in (e,) })");
  EXPECT_EQ(r.fusions(), 1);
  EXPECT_EQ(r.program.jaxpr.eqns.at(0).params.get_jaxpr("jaxpr")->jaxpr.eqns.size(), 4u);
}

TEST(LoopFusion, ZeroDimensionalComputationsFuse) {
  Fused r = fuse_text(R"({ lambda ; a:f32[] b:f32[]. let
    c:f32[] = mul a b
    d:f32[] = add c 1.0:f32[]
  in (d,) })");
  EXPECT_EQ(r.fusions("loop"), 1);
  EXPECT_EQ(r.program.jaxpr.eqns.size(), 1u);
}

TEST(LoopFusion, LoneIndexMapsStayViews) {
  // transpose(broadcast(x)) with no arithmetic: the eager ops return views, a kernel
  // would copy; without merging, the transpose is its own (copy) kernel as every op is.
  const char* text = R"({ lambda ; a:f32[3]. let
    b:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] a
    c:f32[3,2] = transpose[permutation=(1, 0)] b
  in (c,) })";
  Fused r = fuse_text(text);
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(r.text, text);
  EXPECT_TRUE(r.has_note("refused: broadcast_in_dim (b), transpose (c) only moves data: kept as a runtime call (the "
                         "eager op returns a view, no copy)"))
      << r.all_notes();
  Fused single = fuse_text(text, {.merge = false});
  EXPECT_EQ(single.fusions("loop"), 2);
  EXPECT_TRUE(single.has_note(
      "fusion.1: loop over f32[3,2] of transpose (c); 1 input, 1 output (no arithmetic: a copy kernel) (merging "
      "disabled)"))
      << single.all_notes();
}

TEST(LoopFusion, IotaAndIntegersFuse) {
  Fused r = fuse_text(R"({ lambda ; a:i32[4]. let
    b:i32[4] = iota[dimension=0 dtype=int32 shape=(4,)]
    c:i32[4] = mul a b
    d:bool[4] = gt c a
    e:i32[4] = select_n d a c
  in (e,) })");
  EXPECT_EQ(r.text, R"({ lambda ; a:i32[4]. let
    b:i32[4] = fusion[jaxpr={ lambda ; a:i32[4]. let
        b:i32[4] = iota[dimension=0 dtype=int32 shape=(4,)]
        c:i32[4] = mul a b
        d:bool[4] = gt c a
        e:i32[4] = select_n d a c
      in (e,) } kind='loop' name='fusion.0'] a
  in (b,) })");
}

TEST(LoopFusion, ConstvarsBecomeInputs) {
  ClosedJaxpr p{parse_jaxpr(R"({ lambda a:f32[3]; b:f32[3]. let
    c:f32[3] = mul a b
    d:f32[3] = exp c
  in (d,) })"),
                {Array(std::vector<float>{1, 2, 3}, Shape{3})}};
  Array x(std::vector<float>{0.5f, -1, 0.25f}, Shape{3});
  std::vector<Array> want = eval_jaxpr(p, std::vector<Array>{x});
  PassContext ctx(p.jaxpr);
  EXPECT_TRUE(fuse(p, ctx, {}));
  verify_jaxpr(p.jaxpr);
  EXPECT_EQ(p.str(), R"({ lambda a:f32[3]; b:f32[3]. let
    c:f32[3] = fusion[jaxpr={ lambda ; a:f32[3] b:f32[3]. let
        c:f32[3] = mul a b
        d:f32[3] = exp c
      in (d,) } kind='loop' name='fusion.0'] a b
  in (c,) })");
  EXPECT_ALLCLOSE(eval_jaxpr(p, std::vector<Array>{x})[0], want[0]);
}

TEST(LoopFusion, CheapBroadcastIsDuplicatedIntoEachConsumer) {
  // The broadcast feeds a reduction and a loop: each reads through its own copy, nothing
  // of shape f32[4,3] is materialized for it.
  Fused r = fuse_text(R"({ lambda ; a:f32[4,3] b:f32[3]. let
    c:f32[4,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4, 3)] b
    d:f32[4,3] = mul a c
    e:f32[3] = reduce_sum[axes=(0,)] d
    f:f32[4,3] = sub a c
  in (e, f) })");
  EXPECT_TRUE(r.has_note("fusion: duplicated broadcast_in_dim (c) for 1 more consumer (cheap to recompute, so it is "
                         "not materialized for them)"))
      << r.all_notes();
  EXPECT_EQ(r.fusions(), 2);
  EXPECT_EQ(r.fusions("reduction"), 1);
  // Both fusions read only a and b.
  for (const Equation& e : r.program.jaxpr.eqns) EXPECT_EQ(e.inputs.size(), 2u) << r.text;
}

TEST(LoopFusion, ChainsOfIndexMapsAreDuplicatedWhole) {
  // transpose(broadcast(x)) read by a loop and a reduction: both fusions read x alone.
  Fused r = fuse_text(R"({ lambda ; a:f32[3]. let
    b:f32[4,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4, 3)] a
    c:f32[3,4] = transpose[permutation=(1, 0)] b
    d:f32[3,4] = sin c
    e:f32[4] = reduce_sum[axes=(0,)] c
  in (d, e) })");
  EXPECT_EQ(r.text, R"({ lambda ; a:f32[3]. let
    b:f32[3,4] = fusion[jaxpr={ lambda ; a:f32[3]. let
        b:f32[4,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4, 3)] a
        c:f32[3,4] = transpose[permutation=(1, 0)] b
        d:f32[3,4] = sin c
      in (d,) } kind='loop' name='fusion.0'] a
    c:f32[4] = fusion[jaxpr={ lambda ; a:f32[3]. let
        b:f32[4,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4, 3)] a
        c:f32[3,4] = transpose[permutation=(1, 0)] b
        d:f32[4] = reduce_sum[axes=(0,)] c
      in (d,) } kind='reduction' name='fusion.1'] a
  in (b, c) })");
  EXPECT_TRUE(r.has_note("fusion: duplicated transpose (c) for 1 more consumer (cheap to recompute, so it is not "
                         "materialized for them)"))
      << r.all_notes();
  EXPECT_TRUE(r.has_note("fusion: duplicated broadcast_in_dim (b) for 1 more consumer (cheap to recompute, so it is "
                         "not materialized for them)"))
      << r.all_notes();
}

// A few cheap ops reading one array (a label's negative index wrapped) are recomputed
// in each consumer that fuses them instead of written out for them: each reads that
// array where it read the result. A chain reading two arrays, or a costly op, is
// materialized (recomputing would read more than the result).
TEST(LoopFusion, CheapChainsOfOneArrayAreDuplicatedIntoEachConsumer) {
  Fused r = fuse_text(R"({ lambda ; a:i32[6] b:f32[6,5]. let
    c:i32[6] = broadcast_in_dim[broadcast_dimensions=() shape=(6,)] 0:i32[]
    d:bool[6] = lt a c
    e:i32[6] = broadcast_in_dim[broadcast_dimensions=() shape=(6,)] 5:i32[]
    f:i32[6] = add a e
    g:i32[6] = select_n d a f
    h:i32[] = reduce_sum[axes=(0,)] g
    i:f32[6] = convert_element_type[new_dtype=float32 weak_type=False] g
    j:f32[6,5] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(6, 5)] i
    k:f32[6,5] = mul b j
    l:f32[6] = reduce_sum[axes=(1,)] k
  in (h, l) })");
  EXPECT_EQ(r.fusions(), 2) << r.text << r.all_notes();
  // Both fusions read only the arguments: nothing of the chain is materialized.
  const std::vector<Var>& args = r.program.jaxpr.invars;
  for (const Equation& e : r.program.jaxpr.eqns)
    for (const Atom& in : e.inputs)
      EXPECT_TRUE(in.is_var() && (in.var().id == args[0].id || in.var().id == args[1].id)) << r.text;
  Fused costly = fuse_text(R"({ lambda ; a:f32[6] b:f32[6]. let
    c:f32[6] = mul a b
    d:f32[] = reduce_sum[axes=(0,)] c
    e:f32[6] = sin c
  in (d, e) })");
  bool reads_a_result = false;  // c, materialized, is read by the other fusion
  for (const Equation& e : costly.program.jaxpr.eqns)
    for (const Atom& in : e.inputs)
      reads_a_result = reads_a_result || (in.is_var() && in.var().id != costly.program.jaxpr.invars[0].id &&
                                          in.var().id != costly.program.jaxpr.invars[1].id);
  EXPECT_TRUE(reads_a_result) << costly.text;
}

// A few cheap ops computing one value per row (a label with its negative index
// wrapped) merge into the reduction over those rows that reads them broadcast along the
// row: the kernel computes them once a row, not once per element.
TEST(ReductionFusion, CheapRowValuesMergeIntoTheirRowsReduction) {
  Fused r = fuse_text(R"({ lambda ; a:i32[6,1] b:f32[6,40]. let
    c:i32[6,1] = broadcast_in_dim[broadcast_dimensions=() shape=(6, 1)] 0:i32[]
    d:bool[6,1] = lt a c
    e:i32[6,1] = broadcast_in_dim[broadcast_dimensions=() shape=(6, 1)] 40:i32[]
    f:i32[6,1] = add a e
    g:i32[6,1] = select_n d a f
    h:i32[6,40] = iota[dimension=1 dtype=int32 shape=(6, 40)]
    i:i32[6,40] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(6, 40)] g
    j:bool[6,40] = eq h i
    k:f32[6,40] = broadcast_in_dim[broadcast_dimensions=() shape=(6, 40)] 0.0:f32[]
    l:f32[6,40] = select_n j k b
    m:f32[6] = reduce_sum[axes=(1,)] l
  in (m,) })");
  EXPECT_EQ(r.fusions(), 1) << r.text << r.all_notes();
}

TEST(LoopFusion, CopiesOfABroadcastInOneFusionAreComputedOnce) {
  Fused r = fuse_text(R"({ lambda ; a:f32[4,3] b:f32[3]. let
    c:f32[4,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4, 3)] b
    d:f32[4,3] = mul a c
    e:f32[4,3] = add d c
  in (e,) })");
  EXPECT_EQ(r.text, R"({ lambda ; a:f32[4,3] b:f32[3]. let
    c:f32[4,3] = fusion[jaxpr={ lambda ; a:f32[3] b:f32[4,3]. let
        c:f32[4,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4, 3)] a
        d:f32[4,3] = mul b c
        e:f32[4,3] = add d c
      in (e,) } kind='loop' name='fusion.0'] b a
  in (c,) })");
}

// ---- reductions ----

TEST(ReductionFusion, SumOfAnElementwiseExpressionReadsEachInputOnce) {
  // sum(x + 2*y + z*z)
  Fused r = fuse_text(R"({ lambda ; a:f32[4,5] b:f32[4,5] c:f32[4,5]. let
    d:f32[4,5] = broadcast_in_dim[broadcast_dimensions=() shape=(4, 5)] 2.0:f32[]
    e:f32[4,5] = mul d b
    f:f32[4,5] = add a e
    g:f32[4,5] = mul c c
    h:f32[4,5] = add f g
    i:f32[] = reduce_sum[axes=(0, 1)] h
  in (i,) })");
  EXPECT_EQ(r.text, R"({ lambda ; a:f32[4,5] b:f32[4,5] c:f32[4,5]. let
    d:f32[] = fusion[jaxpr={ lambda ; a:f32[4,5] b:f32[4,5] c:f32[4,5]. let
        d:f32[4,5] = broadcast_in_dim[broadcast_dimensions=() shape=(4, 5)] 2.0:f32[]
        e:f32[4,5] = mul d a
        f:f32[4,5] = add b e
        g:f32[4,5] = mul c c
        h:f32[4,5] = add f g
        i:f32[] = reduce_sum[axes=(0, 1)] h
      in (i,) } kind='reduction' name='fusion.0'] b a c
  in (d,) })");
  EXPECT_TRUE(r.has_note("fusion.0: reduction over f32[4,5] axes=(0, 1) of broadcast_in_dim (d), mul (e), add (f), "
                         "mul (g), add (h), reduce_sum (i); 3 inputs, 1 output"))
      << r.all_notes();
}

TEST(ReductionFusion, SoftmaxBecomesFourFusions) {
  // max -> (sub, exp) -> sum -> div: a reduction's result starts a new iteration space,
  // and exp's result, needed by the sum and the div, is materialized once.
  Fused r = fuse_text(R"({ lambda ; a:f32[2,3]. let
    b:f32[2] = reduce_max[axes=(1,)] a
    c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 3)] b
    d:f32[2,3] = sub a c
    e:f32[2,3] = exp d
    f:f32[2] = reduce_sum[axes=(1,)] e
    g:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 3)] f
    h:f32[2,3] = div e g
  in (h,) })");
  EXPECT_EQ(r.text, R"({ lambda ; a:f32[2,3]. let
    b:f32[2] = fusion[jaxpr={ lambda ; a:f32[2,3]. let
        b:f32[2] = reduce_max[axes=(1,)] a
      in (b,) } kind='reduction' name='fusion.0'] a
    c:f32[2,3] = fusion[jaxpr={ lambda ; a:f32[2] b:f32[2,3]. let
        c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 3)] a
        d:f32[2,3] = sub b c
        e:f32[2,3] = exp d
      in (e,) } kind='loop' name='fusion.1'] b a
    d:f32[2] = fusion[jaxpr={ lambda ; a:f32[2,3]. let
        b:f32[2] = reduce_sum[axes=(1,)] a
      in (b,) } kind='reduction' name='fusion.2'] c
    e:f32[2,3] = fusion[jaxpr={ lambda ; a:f32[2] b:f32[2,3]. let
        c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(2, 3)] a
        d:f32[2,3] = div b c
      in (d,) } kind='loop' name='fusion.3'] d c
  in (e,) })");
  EXPECT_TRUE(r.has_note("refused: exp (e) into loop over f32[2,3]: would create a cycle through reduce_sum (f)"))
      << r.all_notes();
  EXPECT_TRUE(r.has_note("refused: exp (e) into reduction over f32[2,3] axes=(1,): its result is also used outside "
                         "the fusion (materialized)"))
      << r.all_notes();
}

TEST(ReductionFusion, SiblingReductionsShareTheirProducer) {
  // sum(exp(x)) and max(exp(x)): one reduction fusion computing exp once, two outputs.
  Fused r = fuse_text(R"({ lambda ; a:f32[4,5]. let
    b:f32[4,5] = exp a
    c:f32[4] = reduce_sum[axes=(1,)] b
    d:f32[4] = reduce_max[axes=(1,)] b
  in (c, d) })");
  EXPECT_EQ(r.text, R"({ lambda ; a:f32[4,5]. let
    b:f32[4] c:f32[4] = fusion[jaxpr={ lambda ; a:f32[4,5]. let
        b:f32[4,5] = exp a
        c:f32[4] = reduce_sum[axes=(1,)] b
        d:f32[4] = reduce_max[axes=(1,)] b
      in (c, d) } kind='reduction' name='fusion.0'] a
  in (b, c) })");
  // The refusal of the first round was undone by the second: it is not reported.
  for (const std::string& n : r.notes) EXPECT_EQ(n.find("refused"), std::string::npos) << n;
}

TEST(ReductionFusion, DifferentAxesAreNotSiblings) {
  Fused r = fuse_text(R"({ lambda ; a:f32[4,5]. let
    b:f32[4] = reduce_sum[axes=(1,)] a
    c:f32[5] = reduce_max[axes=(0,)] a
  in (b, c) })");
  EXPECT_EQ(r.fusions("reduction"), 2);
}

TEST(ReductionFusion, ReductionResultIsNotFusedIntoItsConsumer) {
  Fused r = fuse_text(R"({ lambda ; a:f32[4,5]. let
    b:f32[4] = reduce_sum[axes=(1,)] a
    c:f32[4] = sqrt b
  in (c,) })");
  EXPECT_EQ(r.fusions("reduction"), 1);
  EXPECT_EQ(r.fusions("loop"), 1);
}

// ---- rows: reductions and the elementwise work around them, one kernel per row block ----

TEST(RowsFusion, SoftmaxIsOneRowsFusion) {
  // 16 rows (at least kMinRows): max, sub, exp, sum and div in one fusion reading x once;
  // four without rows fusions.
  const std::string softmax = jx::testing::softmax_text("f32", 16, 32);
  Fused r = fuse_text(softmax);
  FusionOptions no_rows;
  no_rows.rows = false;
  EXPECT_EQ(fuse_text(softmax, no_rows).fusions(), 4);
  EXPECT_EQ(r.fusions(), 1) << r.text;
  EXPECT_EQ(r.fusions("rows"), 1) << r.text;
  EXPECT_TRUE(r.has_note("fusion.0: rows over f32[16,32] axes=(1,) of reduce_max (b), expand_dims (c), "
                         "broadcast_in_dim (d), sub (e), exp (f), reduce_sum (g), expand_dims (h), "
                         "broadcast_in_dim (i), div (j); 1 input, 1 output"))
      << r.all_notes();
}

TEST(RowsFusion, LogsumexpGivesAPerRowOutput) {
  // jnp::logsumexp's program: the row values feed work over the row shape (is_finite,
  // select, log, add) that ends in a per-row output.
  Fused r = fuse_text(jx::testing::logsumexp_text(12, 40));
  EXPECT_EQ(r.fusions(), 1) << r.text;
  EXPECT_EQ(r.fusions("rows"), 1) << r.text;
}

TEST(RowsFusion, LayerNormAndItsStatisticsAreOneFusion) {
  // mean and variance (two passes over the row) as outputs beside the normalized rows.
  Fused r = fuse_text(jx::testing::layer_norm_text("f64", 10, 30, /*with_statistics=*/true));
  EXPECT_EQ(r.fusions(), 1) << r.text;
  EXPECT_EQ(r.fusions("rows"), 1) << r.text;
}

TEST(RowsFusion, NormalizationByAKeepdimsRowNorm) {
  // x / sqrt(sum(x * x, keepdims)): the sqrt runs over the row shape spelled (16, 1).
  Fused r = fuse_text(R"({ lambda ; a:f32[16,24]. let
    b:f32[16,24] = mul a a
    c:f32[16] = reduce_sum[axes=(1,)] b
    d:f32[16,1] = expand_dims[dimensions=(1,)] c
    e:f32[16,1] = sqrt d
    f:f32[16,24] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(16, 24)] e
    g:f32[16,24] = div a f
  in (g, e) })");
  EXPECT_EQ(r.fusions(), 1) << r.text << r.all_notes();
  EXPECT_EQ(r.fusions("rows"), 1) << r.text;
}

TEST(RowsFusion, SoftmaxCrossEntropyGradientIsOneFusion) {
  // grad of -sum(y * log_softmax(x)) / n as jx traces it: the row sums of the cotangent
  // (a reduction the rows only read) join as a producer, and its elementwise producer,
  // then read only by the rows, with it.
  Fused r = fuse_text(R"({ lambda ; a:f32[16,40] b:f32[16,40]. let
    c:f32[16] = reduce_max[axes=(1,)] a
    d:f32[16] = broadcast_in_dim[broadcast_dimensions=() shape=(16,)] 0.0:f32[]
    e:bool[16] = is_finite c
    f:f32[16] = select_n e d c
    g:f32[16] = stop_gradient f
    h:f32[16,1] = expand_dims[dimensions=(1,)] g
    i:f32[16,40] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(16, 40)] h
    j:f32[16,40] = sub a i
    k:f32[16,40] = exp j
    l:f32[16] = reduce_sum[axes=(1,)] k
    m:f32[16,40] = broadcast_in_dim[broadcast_dimensions=() shape=(16, 40)] -0.0625:f32[]
    n:f32[16,40] = mul b m
    o:f32[16,40] = neg n
    p:f32[16] = reduce_sum[axes=(1,)] o
    q:f32[16,1] = reshape[new_sizes=(16, 1)] p
    r:f32[16] = squeeze[dimensions=(1,)] q
    s:f32[16] = div r l
    t:f32[16,40] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(16, 40)] s
    u:f32[16,40] = mul t k
    v:f32[16,40] = add n u
  in (v,) })");
  EXPECT_EQ(r.fusions(), 1) << r.text << r.all_notes();
  EXPECT_EQ(r.fusions("rows"), 1) << r.text;
  // The one-hot scale (n, read by the sum and by the output) is copied into the sum's
  // reduction (cheap, one array read) and that reduction merged into the rows.
  EXPECT_NE(r.all_notes().find("merged broadcast_in_dim (m), mul (n), neg (o), reduce_sum (p) into rows over "
                               "f32[16,40] axes=(1,) (a producer of the rows)"),
            std::string::npos)
      << r.all_notes();
}

TEST(RowsFusion, ARowValueReadAlongTheRowIsRefused) {
  // The row maxima broadcast along the other axis (m[j] read at element (i, j)): each
  // element needs another row's value, so the second reduction stays a kernel of its own.
  Fused r = fuse_text(R"({ lambda ; a:f32[16,16]. let
    b:f32[16] = reduce_max[axes=(1,)] a
    c:f32[16,16] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(16, 16)] b
    d:f32[16,16] = sub a c
    e:f32[16,16] = exp d
    f:f32[16] = reduce_sum[axes=(1,)] e
  in (f,) })");
  EXPECT_EQ(r.fusions("rows"), 0) << r.text;
  EXPECT_EQ(r.fusions("reduction"), 2) << r.text;
  bool refused = false;
  for (const std::string& n : r.notes)
    refused = refused || (n.rfind("refused: rows fusion of ", 0) == 0 &&
                          n.find("into reduction over f32[16,16] axes=(1,): ") != std::string::npos &&
                          n.find("another row") != std::string::npos);
  EXPECT_TRUE(refused) << r.all_notes();
}

// A rows group grows by merges checked only when it has doubled (or stops growing): here
// an invalid merge (the row sums of k read along the row) is followed by more merges
// before the check at 16 ops, which then fails; the merges since the last good state are
// undone and redone one checked merge at a time, which refuses that one, as checking
// every merge would have.
TEST(RowsFusion, AnInvalidMergeAmongUncheckedOnesIsUndoneAndRefused) {
  Fused r = fuse_text(R"({ lambda ; a:f32[16,16]. let
    b:f32[16] = reduce_max[axes=(1,)] a
    c:f32[16,16] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(16, 16)] b
    d:f32[16,16] = sub a c
    e:f32[16,16] = exp d
    f:f32[16,16] = mul e e
    g:f32[16,16] = add f e
    h:f32[16,16] = tanh g
    i:f32[16,16] = mul h a
    j:f32[16] = reduce_sum[axes=(1,)] i
    k:f32[16,16] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(16, 16)] j
    l:f32[16,16] = sub i k
    m:f32[16] = reduce_sum[axes=(1,)] l
    n:f32[16,16] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(16, 16)] m
    o:f32[16,16] = mul a n
    p:f32[16,16] = exp o
    q:f32[16,16] = sin p
    s:f32[16,16] = mul q p
    t:f32[16,16] = tanh s
    u:f32[16,16] = add t a
    v:f32[16] = reduce_sum[axes=(1,)] u
  in (v,) })");
  EXPECT_EQ(r.fusions("rows"), 2) << r.text;  // b to j; k to v, seeded by m
  EXPECT_EQ(r.fusions(), 2) << r.text;
  bool refused = false;
  for (const std::string& n : r.notes)
    refused = refused || (n.rfind("refused: rows fusion of ", 0) == 0 && n.find("another row") != std::string::npos);
  EXPECT_TRUE(refused) << r.all_notes();
}

// A reduction over every axis of a rows group's row space (a loss's mean over its rows'
// losses) joins the rows kernel as a total (codegen/kernel_plan.h, PlanOutput::total);
// one that work over the rows reads cannot (the kernel would need it before its rows).
TEST(RowsFusion, TotalsOverTheRowsJoinTheirRows) {
  Fused r = fuse_text(jx::testing::cross_entropy_text(64, 10));
  EXPECT_EQ(r.fusions(), 1) << r.text << r.all_notes();
  EXPECT_EQ(r.fusions("rows"), 1) << r.text;
  Fused read_back = fuse_text(R"({ lambda ; a:f32[64,10]. let
    b:f32[64] = reduce_max[axes=(1,)] a
    c:f32[] = reduce_sum[axes=(0,)] b
    d:f32[64,10] = broadcast_in_dim[broadcast_dimensions=() shape=(64, 10)] c
    e:f32[64,10] = sub a d
  in (e,) })");
  EXPECT_EQ(read_back.fusions(), 2) << read_back.text << read_back.all_notes();
}

// Work over the row shape that only the rows read (a gradient's wrapped labels and their
// one-hot values, too long a chain to copy into each reader, and reshaped, which keeps
// it out of the loop that reads it) joins the rows kernel as a producer, computed per
// row there.
TEST(RowsFusion, RowShapedProducersJoinTheirRows) {
  const std::string text = R"({ lambda ; a:f32[64,10] b:i32[64]. let
    c:i32[64] = broadcast_in_dim[broadcast_dimensions=() shape=(64,)] 0:i32[]
    d:i32[64] = broadcast_in_dim[broadcast_dimensions=() shape=(64,)] 10:i32[]
    e:i32[64] = add b d
    f:bool[64] = lt b c
    g:i32[64] = select_n f b e
    ha:bool[64] = lt g d
    hb:bool[64] = ge g c
    h:bool[64] = and ha hb
    i:f32[64] = broadcast_in_dim[broadcast_dimensions=() shape=(64,)] 0.0:f32[]
    j:f32[64] = broadcast_in_dim[broadcast_dimensions=() shape=(64,)] -0.5:f32[]
    ja:f32[64] = neg j
    jb:f32[64] = add ja i
    k:f32[64] = select_n h i jb
    l:f32[64] = reduce_max[axes=(1,)] a
    m:f32[64,10] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(64, 10)] l
    n:f32[64,10] = sub a m
    o:f32[64,10] = exp n
    p:f32[64] = reduce_sum[axes=(1,)] o
    qa:f32[64,1] = reshape[new_sizes=(64, 1)] k
    qb:f32[64,1] = expand_dims[dimensions=(1,)] p
    q:f32[64,1] = div qa qb
    s:f32[64,10] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(64, 10)] q
    t:i32[64,10] = iota[dimension=1 dtype=int32 shape=(64, 10)]
    u:i32[64,10] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(64, 10)] g
    v:bool[64,10] = eq t u
    w:f32[64,10] = broadcast_in_dim[broadcast_dimensions=() shape=(64, 10)] 0.0:f32[]
    x:f32[64,10] = broadcast_in_dim[broadcast_dimensions=() shape=(64, 10)] -0.5:f32[]
    y:f32[64,10] = select_n v w x
    z:f32[64,10] = mul s o
    ba:f32[64,10] = add y z
  in (ba,) })";
  Fused r = fuse_text(text);
  EXPECT_EQ(r.fusions(), 1) << r.text << r.all_notes();
  EXPECT_EQ(r.fusions("rows"), 1) << r.text;
  // A transcendental among them stays out: the first pass would run it at every point.
  std::string costly = text;
  costly.replace(costly.find("jb:f32[64] = add ja i"), 21, "jb:f32[64] = exp ja  ");
  EXPECT_EQ(fuse_text(costly).fusions(), 2) << fuse_text(costly).text;
}

TEST(RowsFusion, FewRowsAndNarrowColumnsStayApart) {
  // 4 rows are too few to split among threads; a reduction over the leading axis of 8
  // columns fills no vector (kMinColumns).
  const char* few = R"({ lambda ; a:f32[4,64]. let
    b:f32[4] = reduce_max[axes=(1,)] a
    c:f32[4,64] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(4, 64)] b
    d:f32[4,64] = sub a c
  in (d,) })";
  const char* narrow = R"({ lambda ; a:f32[32,8]. let
    b:f32[8] = reduce_max[axes=(0,)] a
    c:f32[32,8] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(32, 8)] b
    d:f32[32,8] = sub a c
  in (d,) })";
  for (const char* text : {few, narrow}) EXPECT_EQ(fuse_text(text).fusions("rows"), 0) << text;
}

// ---- rows fusions over columns: reductions that keep the innermost axis ----

TEST(RowsFusion, AReductionOverTheLeadingAxisAndItsConsumerAreOneFusion) {
  // x - max(x, 0): a rows fusion (codegen runs it over blocks of columns), as is the
  // softmax over the leading axis (four kernels otherwise).
  Fused r = fuse_text(R"({ lambda ; a:f32[32,16]. let
    b:f32[16] = reduce_max[axes=(0,)] a
    c:f32[32,16] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(32, 16)] b
    d:f32[32,16] = sub a c
  in (d,) })");
  EXPECT_EQ(r.fusions(), 1) << r.text;
  EXPECT_EQ(r.fusions("rows"), 1) << r.text;
  EXPECT_TRUE(r.has_note("fusion.0: rows over f32[32,16] axes=(0,) of reduce_max (b), broadcast_in_dim (c), sub (d); "
                         "1 input, 1 output"))
      << r.all_notes();
  Fused softmax = fuse_text(jx::testing::softmax_text("f32", 3, 64, 0));
  EXPECT_EQ(softmax.fusions(), 1) << softmax.text;
  EXPECT_EQ(softmax.fusions("rows"), 1) << softmax.text;
}

TEST(RowsFusion, LeapfrogStepIsOneFusion) {
  // Two sums over the 3 coordinates, the second of positions the first moved: four
  // kernels (reduction, loop, reduction, loop) without rows fusions, one with.
  const std::string step = jx::testing::leapfrog_text(256);
  FusionOptions no_rows;
  no_rows.rows = false;
  EXPECT_EQ(fuse_text(step, no_rows).fusions(), 4);
  Fused r = fuse_text(step);
  EXPECT_EQ(r.fusions(), 1) << r.text << r.all_notes();
  EXPECT_EQ(r.fusions("rows"), 1) << r.text;
}

TEST(RowsFusion, MiddleAxisReductionKeepsTheColumns) {
  // A sum over axis 1 of [4, 6, 32], its mean read back: the innermost axis is kept.
  Fused r = fuse_text(R"({ lambda ; a:f64[4,6,32]. let
    b:f64[4,32] = reduce_sum[axes=(1,)] a
    c:f64[4,6,32] = broadcast_in_dim[broadcast_dimensions=(0, 2) shape=(4, 6, 32)] b
    d:f64[4,6,32] = sub a c
  in (d, b) })");
  EXPECT_EQ(r.fusions(), 1) << r.text << r.all_notes();
  EXPECT_EQ(r.fusions("rows"), 1) << r.text;
}

// ---- siblings ----

TEST(SiblingFusion, TwoConsumersOfOneInputBecomeOneFusion) {
  Fused r = fuse_text(R"({ lambda ; a:f32[8] b:f32[8]. let
    c:f32[8] = exp a
    d:f32[8] = mul a b
  in (c, d) })");
  EXPECT_EQ(r.text, R"({ lambda ; a:f32[8] b:f32[8]. let
    c:f32[8] d:f32[8] = fusion[jaxpr={ lambda ; a:f32[8] b:f32[8]. let
        c:f32[8] = exp a
        d:f32[8] = mul a b
      in (c, d) } kind='loop' name='fusion.0'] a b
  in (c, d) })");
  EXPECT_TRUE(r.has_note("fusion.0: sibling fusion with mul (d) (both read a, read once)")) << r.all_notes();
}

TEST(SiblingFusion, DifferentShapesStayApart) {
  Fused r = fuse_text(R"({ lambda ; a:f32[8] b:f32[2,8]. let
    c:f32[8] = exp a
    d:f32[2,8] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 8)] a
    e:f32[2,8] = add d b
  in (c, e) })");
  EXPECT_EQ(r.fusions("loop"), 2);
}

TEST(SiblingFusion, DependentSiblingsAreNotMerged) {
  // Both read a, but the second needs the first's result through a runtime call.
  Fused r = fuse_text(R"({ lambda ; a:f32[8]. let
    b:f32[8] = exp a
    c:f32[8] = cumsum[axis=0 reverse=False] b
    d:f32[8] = add a c
  in (d,) })");
  EXPECT_EQ(r.fusions("loop"), 2);
  EXPECT_TRUE(r.has_note("refused: sibling fusion of exp (b) and add (d) (both read a): one depends on the other"))
      << r.all_notes();
}

// A value read by many groups: each reader joins the first open sibling fusion it fits
// in (up to the op limit of 256), so 600 readers make three fusions, in time linear in
// their number (pairs of readers were tried after every merge: seconds at 1500).
TEST(SiblingFusion, ManyReadersOfOneValueFillFusionsInTurn) {
  const char* ops[] = {"exp", "sin", "neg", "tanh"};
  std::string body, outs;
  for (int i = 0; i < 600; ++i) {
    body += "    t" + std::to_string(i) + ":f32[8] = " + ops[i % 4] + " a\n";
    outs += "t" + std::to_string(i) + ", ";
  }
  Fused r = fuse_text("{ lambda ; a:f32[8]. let\n" + body + "  in (" + outs + ") }");
  EXPECT_EQ(r.fusions("loop"), 3);
  EXPECT_EQ(r.program.jaxpr.eqns.size(), 3u);
}

TEST(SiblingFusion, ManySiblingReductionsFillFusionsInTurn) {
  std::string body, outs;
  for (int i = 0; i < 300; ++i) {
    const std::string n = std::to_string(i);
    body += "    m" + n + ":f32[4,8] = mul a " + (i % 2 ? "a" : "b") + "\n";
    body += "    s" + n + ":f32[4] = reduce_sum[axes=(1,)] m" + n + "\n";
    outs += "s" + n + ", ";
  }
  Fused r = fuse_text("{ lambda ; a:f32[4,8] b:f32[4,8]. let\n" + body + "  in (" + outs + ") }", {.rows = false});
  EXPECT_EQ(r.fusions("reduction"), 10);  // at most 32 sums (and their products) each
}

// ---- dot epilogue ----

TEST(DotFusion, ElementwiseEpilogueWithBroadcastBias) {
  // gelu-like tanh epilogue of a @ w + bias.
  Fused r = fuse_text(R"({ lambda ; a:f32[4,3] b:f32[3,5] c:f32[5]. let
    d:f32[4,5] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b
    e:f32[4,5] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4, 5)] c
    f:f32[4,5] = add d e
    g:f32[4,5] = tanh f
    h:f32[4,5] = mul f g
  in (h,) })");
  EXPECT_EQ(r.text, R"({ lambda ; a:f32[4,3] b:f32[3,5] c:f32[5]. let
    d:f32[4,5] = fusion[jaxpr={ lambda ; a:f32[4,3] b:f32[3,5] c:f32[5]. let
        d:f32[4,5] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b
        e:f32[4,5] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(4, 5)] c
        f:f32[4,5] = add d e
        g:f32[4,5] = tanh f
        h:f32[4,5] = mul f g
      in (h,) } kind='dot' name='fusion.0'] a b c
  in (d,) })");
}

TEST(DotFusion, DotUsedElsewhereIsRefused) {
  Fused r = fuse_text(R"({ lambda ; a:f32[4,3] b:f32[3,5]. let
    c:f32[4,5] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b
    d:f32[4,5] = exp c
  in (c, d) })");
  EXPECT_EQ(r.fusions("dot"), 1);  // the product alone, its result read by the loop
  EXPECT_EQ(r.fusions("loop"), 1);
  EXPECT_TRUE(r.has_note("refused: dot_general (c) result used by 2 consumers (the epilogue must be its only user)"))
      << r.all_notes();
}

TEST(DotFusion, BatchedAndIntegerDotsStayRuntimeCalls) {
  Fused r = fuse_text(R"({ lambda ; a:f32[2,4,3] b:f32[2,3,5] c:i32[4,3] d:i32[3,5]. let
    e:f32[2,4,5] = dot_general[lhs_batch_dimensions=(0,) lhs_contracting_dimensions=(2,) preferred_element_type=float32 rhs_batch_dimensions=(0,) rhs_contracting_dimensions=(1,)] a b
    f:f32[2,4,5] = exp e
    g:i32[4,5] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) preferred_element_type=int32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] c d
    h:i32[4,5] = neg g
  in (f, h) })");
  EXPECT_EQ(r.fusions("dot"), 0);
  EXPECT_TRUE(r.has_note("refused: dot_general (e) stays a runtime call: batch dimensions (epilogues are fused only "
                         "for plain products)"))
      << r.all_notes();
  EXPECT_TRUE(r.has_note(
      "refused: dot_general (g) stays a runtime call: i32 result (epilogues are fused only for f32 and f64)"))
      << r.all_notes();
}

TEST(DotFusion, DotWithoutEpilogueIsADotKernelOfItsOwn) {
  Fused r = fuse_text(R"({ lambda ; a:f32[4,3] b:f32[3,5]. let
    c:f32[4,5] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b
  in (c,) })");
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.fusions("dot"), 1);
  EXPECT_TRUE(r.has_note("fusion.0: dot over f32[4,5] of dot_general (c); 2 inputs, 1 output")) << r.all_notes();
}

TEST(DotFusion, VectorAndOuterProductsTakeEpilogues) {
  Fused r = fuse_text(R"({ lambda ; a:f32[3] b:f32[3,5] c:f32[4]. let
    d:f32[5] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(0,) preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b
    e:f32[5] = tanh d
    f:f32[4,3] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=() preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=()] c a
    g:f32[4,3] = exp f
  in (e, g) })");
  EXPECT_EQ(r.fusions("dot"), 2) << r.all_notes();
  EXPECT_EQ(r.fusions(), 2) << r.all_notes();
}

// ---- refusals ----

TEST(Refusals, UnsupportedDtypeRunsAsARuntimeCall) {
  Fused r = fuse_text(R"({ lambda ; a:c64[3] b:f32[3]. let
    c:c64[3] = exp a
    d:f32[3] = sin b
  in (c, d) })");
  EXPECT_EQ(r.fusions(), 1);
  EXPECT_EQ(r.program.jaxpr.eqns.at(0).primitive->name(), "exp");
  EXPECT_TRUE(r.has_note("refused: exp (c): complex64 is not supported by native kernels (exp)")) << r.all_notes();
}

TEST(Refusals, ReshapeOfAValueComputedInsideTheFusion) {
  Fused r = fuse_text(R"({ lambda ; a:f32[6]. let
    b:f32[6] = exp a
    c:f32[2,3] = reshape[new_sizes=(2, 3)] b
    d:f32[2,3] = sin c
  in (d,) })");
  EXPECT_EQ(r.fusions("loop"), 2);
  EXPECT_TRUE(r.has_note("refused: exp (b) into loop over f32[2,3]: reshape (c) of a value computed inside the "
                         "fusion (the loop cannot index it linearly)"))
      << r.all_notes();
}

TEST(Refusals, ReshapeOfAnInputFuses) {
  Fused r = fuse_text(R"({ lambda ; a:f32[6]. let
    b:f32[2,3] = reshape[new_sizes=(2, 3)] a
    c:f32[2,3] = sin b
  in (c,) })");
  EXPECT_EQ(r.fusions("loop"), 1);
  EXPECT_EQ(r.program.jaxpr.eqns.size(), 1u);
}

TEST(Refusals, CycleThroughARuntimeCall) {
  // Fusing a = exp(x) with c = a + cumsum(a) would need cumsum inside the fusion.
  Fused r = fuse_text(R"({ lambda ; a:f32[8]. let
    b:f32[8] = exp a
    c:f32[8] = cumsum[axis=0 reverse=False] b
    d:f32[8] = add b c
  in (d,) })");
  EXPECT_EQ(r.fusions("loop"), 2);
  EXPECT_TRUE(r.has_note("refused: exp (b) into loop over f32[8]: would create a cycle through cumsum (c)"))
      << r.all_notes();
}

TEST(Refusals, CycleThroughADot) {
  // a = exp(x); b = dot(a, w); c = a + b, with b also an output (so no epilogue):
  // fusing a into c would create a cycle through the dot.
  Fused r = fuse_text(R"({ lambda ; a:f32[3,3] b:f32[3,3]. let
    c:f32[3,3] = exp a
    d:f32[3,3] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] c b
    e:f32[3,3] = add c d
  in (e, d) })");
  EXPECT_EQ(r.fusions("loop"), 2);
  EXPECT_TRUE(r.has_note("refused: exp (c) into loop over f32[3,3]: would create a cycle through dot_general (d)"))
      << r.all_notes();
  EXPECT_TRUE(r.has_note("refused: dot_general (d) result used by 2 consumers (the epilogue must be its only user)"))
      << r.all_notes();
}

TEST(Refusals, DotOperandsStayKernelInputs) {
  // The dot takes c + its epilogue; exp(x), its operand, cannot join that fusion.
  Fused r = fuse_text(R"({ lambda ; a:f32[3,3] b:f32[3,3]. let
    c:f32[3,3] = exp a
    d:f32[3,3] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] c b
    e:f32[3,3] = add c d
  in (e,) })");
  EXPECT_EQ(r.fusions("dot"), 1);
  EXPECT_EQ(r.fusions("loop"), 1);
  EXPECT_TRUE(r.has_note("refused: exp (c) into dot over f32[3,3]: dot_general (d) reads its operands as kernel "
                         "inputs"))
      << r.all_notes();
}

TEST(Refusals, BroadcastOfAComputedSmallerValueIsNotRecomputed) {
  Fused r = fuse_text(R"({ lambda ; a:f32[3] b:f32[2,3]. let
    c:f32[3] = exp a
    d:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(2, 3)] c
    e:f32[2,3] = mul d b
  in (e,) })");
  EXPECT_EQ(r.fusions("loop"), 2);
  EXPECT_TRUE(r.has_note("refused: exp (c) into loop over f32[2,3]: computed over f32[3], not the iteration space "
                         "(it would be recomputed per element)"))
      << r.all_notes();
}

TEST(Fusion, AFewPlainOpsOverASmallerSpaceAreRecomputed) {
  // a + a over [1, 3], read by a [rows, 3] loop.
  auto fuse_rows = [](int rows) {
    const std::string r = std::to_string(rows);
    return fuse_text("{ lambda ; a:f32[1,3] b:f32[" + r + ",3]. let\n    c:f32[1,3] = add a a\n    d:f32[" + r +
                     ",3] = broadcast_in_dim[broadcast_dimensions=(0, 1) shape=(" + r + ", 3)] c\n    e:f32[" + r +
                     ",3] = mul d b\n  in (e,) }");
  };
  // Recomputed 4 times rather than given a kernel of its own.
  Fused r = fuse_rows(4);
  EXPECT_EQ(r.fusions("loop"), 1) << r.all_notes();
  EXPECT_EQ(r.program.jaxpr.eqns.size(), 1u);
  // Recomputed 16 times is too many: the add gets a kernel of its own.
  Fused wide = fuse_rows(16);
  EXPECT_EQ(wide.fusions("loop"), 2) << wide.all_notes();
  EXPECT_TRUE(wide.has_note("refused: add (c) into loop over f32[16,3]: computed over f32[1,3], not the iteration "
                            "space (it would be recomputed per element)"))
      << wide.all_notes();
}

TEST(Refusals, UnusedResultsAreLeftForDce) {
  Fused r = fuse_text(R"({ lambda ; a:f32[3]. let
    b:f32[3] = sin a
    c:f32[3] = cos a
  in (c,) })");
  EXPECT_EQ(r.fusions(), 1);
  EXPECT_EQ(r.program.jaxpr.eqns.at(0).primitive->name(), "sin");
  EXPECT_TRUE(r.has_note("refused: sin (b): its result is unused (left for dce)")) << r.all_notes();
}

TEST(Refusals, NothingFusibleLeavesTheProgramAlone) {
  const char* text = R"({ lambda ; a:f32[8]. let
    b:f32[8] = cumsum[axis=0 reverse=False] a
  in (b,) })";
  Fused r = fuse_text(text);
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(r.text, text);
}

// ---- options, names, the pass ----

TEST(FusionOptions, NoMergeGivesOneFusionPerEquation) {
  Fused r = fuse_text(R"({ lambda ; a:f32[3] b:f32[3]. let
    c:f32[3] = sin a
    d:f32[3] = mul c b
    e:f32[] = reduce_sum[axes=(0,)] d
    f:f32[3,3] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=() preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=()] a b
    g:f32[3,3] = exp f
  in (e, g) })",
                      {.merge = false});
  EXPECT_EQ(r.fusions(), 5);  // the product too: a dot kernel of its own
  EXPECT_EQ(r.fusions("reduction"), 1);
  EXPECT_EQ(r.program.jaxpr.eqns.size(), 5u);
  EXPECT_TRUE(r.has_note("fusion.1: loop over f32[3] of mul (d); 2 inputs, 1 output (merging disabled)"))
      << r.all_notes();
}

TEST(FusionOptions, NamesContinueAfterExistingFusions) {
  Fused first = fuse_text(R"({ lambda ; a:f32[3]. let
    b:f32[3] = sin a
    c:f32[3] = cumsum[axis=0 reverse=False] b
    d:f32[3] = exp c
  in (d,) })");
  ASSERT_EQ(first.fusions(), 2);
  // Fusing again leaves the fusions alone; a new fusible equation gets a fresh name.
  Fused second = fuse_text(first.text.substr(0, first.text.rfind("  in")) + "    e:f32[3] = cos d\n  in (e,) }");
  EXPECT_EQ(second.fusions(), 3);
  std::unordered_set<std::string> names;
  for (const Equation& e : second.program.jaxpr.eqns)
    if (e.primitive == &fusion_primitive()) names.insert(e.params.get_string("name"));
  EXPECT_EQ(names, (std::unordered_set<std::string>{"fusion.0", "fusion.1", "fusion.2"}));
}

TEST(FusionPass, IsNamedFusionAndUsesDefaultOptions) {
  EXPECT_EQ(kFusionPass.name, "fusion");
  ClosedJaxpr p{parse_jaxpr(R"({ lambda ; a:f32[3]. let
    b:f32[3] = sin a
    c:f32[3] = exp b
  in (c,) })"),
                {}};
  PassContext ctx(p.jaxpr);
  EXPECT_TRUE(kFusionPass.run(p, ctx));
  EXPECT_EQ(p.jaxpr.eqns.size(), 1u);
}

TEST(FusionValues, LargerProgramComputesTheSame) {
  // A mix of everything: broadcasts, a softmax row, a dot epilogue, sibling reductions,
  // an integer path and a runtime call.
  Fused r = fuse_text(R"({ lambda ; a:f32[6,4] b:f32[4,5] c:f32[5] d:i32[6,4]. let
    e:f32[6] = reduce_max[axes=(1,)] a
    f:f32[6,4] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(6, 4)] e
    g:f32[6,4] = sub a f
    h:f32[6,4] = exp g
    i:f32[6] = reduce_sum[axes=(1,)] h
    j:f32[6,4] = broadcast_in_dim[broadcast_dimensions=(0,) shape=(6, 4)] i
    k:f32[6,4] = div h j
    l:f32[6,5] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] k b
    m:f32[6,5] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(6, 5)] c
    n:f32[6,5] = add l m
    zero:f32[6,5] = broadcast_in_dim[broadcast_dimensions=() shape=(6, 5)] 0.0:f32[]
    o:f32[6,5] = max n zero
    p:f32[6,4] = convert_element_type[new_dtype=float32 weak_type=False] d
    q:f32[6,4] = mul p k
    r:f32[4] = reduce_sum[axes=(0,)] q
    s:f32[4] = reduce_min[axes=(0,)] q
    t:f32[6,4] = cumsum[axis=1 reverse=False] q
    u:f32[6,4] = sin t
    v:f32[6,4] = add u p
  in (o, r, s, v) })");
  EXPECT_TRUE(r.changed);
  EXPECT_GE(r.fusions(), 5) << r.text;
}

// ---- random programs ----

// A random program over a few shapes mixing every kind of equation the pass meets:
// elementwise ops, index maps, reductions, reshapes, dots and runtime calls (cumsum).
std::string random_program(uint32_t seed, int length = 24, int64_t rows = 4, int64_t cols = 6) {
  const std::string R = std::to_string(rows), C = std::to_string(cols), RC = R + "," + C, CR = C + "," + R,
                    RR = R + "," + R;
  std::mt19937 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  struct Value {
    std::string name, shape;
  };
  std::vector<Value> values = {{"x", RC}, {"y", RC}, {"z", C}, {"w", CR}};
  std::string body;
  int next = 0;
  auto of_shape = [&](const std::string& shape) -> const Value* {
    std::vector<const Value*> c;
    for (const Value& v : values)
      if (v.shape == shape) c.push_back(&v);
    return c.empty() ? nullptr : c[c.size() - 1 - pick(std::min<size_t>(c.size(), 4))];
  };
  auto add = [&](const std::string& shape, const std::string& rhs) {
    std::string name = "t";
    name += std::to_string(next++);
    body += "    " + name + ":f32[" + shape + "] = " + rhs + "\n";
    values.push_back({name, shape});
  };
  const char* unary[] = {"sin", "tanh", "neg", "abs", "exp"};
  const char* binary[] = {"add", "mul", "sub", "max"};
  const std::string shapes[] = {RC, CR, R, C, RR};
  for (int i = 0; i < length; ++i) {
    const std::string shape = shapes[pick(5)];
    const Value* a = of_shape(shape);
    switch (pick(10)) {
      case 0:
      case 1:
        if (a) add(shape, std::string(unary[pick(5)]) + " " + a->name);
        break;
      case 2:
      case 3:
      case 4:
        if (const Value* b = of_shape(shape); a && b) add(shape, std::string(binary[pick(4)]) + " " + a->name + " " + b->name);
        break;
      case 5:  // broadcasts up to 2-d
        if (const Value* v = of_shape(R)) add(RC, "broadcast_in_dim[broadcast_dimensions=(0,) shape=(" + R + ", " + C + ")] " + v->name);
        else if (const Value* u = of_shape(C)) add(RC, "broadcast_in_dim[broadcast_dimensions=(1,) shape=(" + R + ", " + C + ")] " + u->name);
        break;
      case 6:  // reductions of 2-d values
        if (const Value* v = of_shape(RC)) {
          const bool along_rows = pick(2);
          add(along_rows ? R : C, std::string(pick(2) ? "reduce_sum" : "reduce_max") + "[axes=(" + (along_rows ? "1" : "0") +
                                    ",)] " + v->name);
        }
        break;
      case 7:  // transpose, reshape
        if (const Value* v = of_shape(RC))
          add(CR, pick(2) ? "transpose[permutation=(1, 0)] " + v->name : "reshape[new_sizes=(" + C + ", " + R + ")] " + v->name);
        break;
      case 8:  // dot and slice
        if (const Value* l = of_shape(RC); l && pick(2)) {
          if (const Value* r = of_shape(CR))
            add(RR, "dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) "
                       "preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] " +
                           l->name + " " + r->name);
        } else if (const Value* v = of_shape(CR)) {
          add(RR, "slice[limit_indices=(" + C + ", " + R + ") start_indices=(" + std::to_string(cols - rows) +
                      ", 0) strides=(1, 1)] " + v->name);
        }
        break;
      default:  // a runtime call
        if (const Value* v = of_shape(RC)) add(RC, "cumsum[axis=1 reverse=False] " + v->name);
        break;
    }
  }
  std::string outs;
  for (size_t k = values.size() > 7 ? values.size() - 3 : 4; k < values.size(); ++k) outs += values[k].name + ", ";
  outs += values[values.size() > 4 ? 4 + pick(values.size() - 4) : 0].name + ",";
  return "{ lambda ; x:f32[" + RC + "] y:f32[" + RC + "] z:f32[" + C + "] w:f32[" + CR + "]. let\n" + body + "  in (" +
         outs + ") }";
}

TEST(FusionValues, RandomProgramsComputeTheSame) {
  int fused = 0;
  for (uint32_t seed = 0; seed < 60; ++seed) {
    const std::string text = random_program(seed);
    SCOPED_TRACE(text);
    Fused r = fuse_text(text);
    fused += r.fusions();
    Fused single = fuse_text(text, {.merge = false});
    EXPECT_GE(single.fusions(), r.fusions());
  }
  EXPECT_GT(fused, 60);
}

// Long programs: many merges, each keeping the pass's topological order of the groups
// (which bounds its cycle checks) through reorderings; a wrong order would let a merge
// make a cycle (emission fails) or a wrong program (the values differ).
TEST(FusionValues, LongRandomProgramsComputeTheSame) {
  for (uint32_t seed = 100; seed < 112; ++seed) {
    const std::string text = random_program(seed, 400);
    SCOPED_TRACE(seed);
    Fused r = fuse_text(text);
    Fused single = fuse_text(text, {.merge = false});
    EXPECT_GT(r.fusions(), 0);
    EXPECT_LT(r.fusions(), single.fusions() / 2);
  }
}

// Programs over 8 x 16 values, where row reductions seed rows fusions (8 rows) and column
// reductions columns fusions (16 columns): rows groups grow by unchecked merges checked
// when they double and when they stop, undone and redone one checked merge at a time
// when a check fails; every outcome must still compute the same values.
TEST(FusionValues, RandomProgramsWithRowsFusionsComputeTheSame) {
  int rows = 0;
  for (uint32_t seed = 200; seed < 260; ++seed) {
    const std::string text = random_program(seed, seed < 230 ? 40 : 300, 8, 16);
    SCOPED_TRACE(seed);
    Fused r = fuse_text(text);
    rows += r.fusions("rows");
  }
  EXPECT_GT(rows, 30);
}

// Notes are only written down when a dump will read them (their texts cost a third of
// the pass on long programs): the decisions, and so the program, are the same without.
TEST(FusionValues, DecisionsDoNotDependOnRecordingNotes) {
  int noted = 0;
  for (uint32_t seed = 0; seed < 60; ++seed) {
    const std::string text = random_program(seed);
    SCOPED_TRACE(text);
    Fused with = fuse_text(text);
    Fused without = fuse_text(text, {}, false);
    EXPECT_EQ(without.text, with.text);
    EXPECT_EQ(without.changed, with.changed);
    EXPECT_TRUE(without.notes.empty()) << without.all_notes();
    noted += !with.notes.empty();
  }
  EXPECT_GT(noted, 30);
}

}  // namespace
}  // namespace jx::compiler

