// The jaxpr-level transformation layer (src/transforms/jaxpr_transforms.h): each of
// jvp_jaxpr, batch_jaxpr, partial_eval_jaxpr, transpose_jaxpr and dce_jaxpr on programs
// written in the IR text, checked against independent oracles (finite differences and
// jx::jvp of the original, a loop over the batch, the original program, the inner-product
// identity), through nested sub-programs, and their error messages.
#include <chrono>
#include <memory>

#include "jx/jx.h"
#include "test_util.h"
#include "transforms/jaxpr_transforms.h"

namespace jx {
namespace {

using detail::batch_jaxpr;
using detail::dce_jaxpr;
using detail::jvp_jaxpr;
using detail::partial_eval_jaxpr;
using detail::transpose_jaxpr;
using testing::randn;
namespace jnp = jx::numpy;

ClosedJaxpr program(std::string_view text) { return ClosedJaxpr{parse_jaxpr(text), {}}; }

std::vector<Array> run(const ClosedJaxpr& p, std::vector<Array> args) { return eval_jaxpr(p, args); }

bool contains(const std::string& s, std::string_view sub) { return s.find(sub) != std::string::npos; }

// Primitive names of a program's top-level equations, space separated.
std::string eqn_names(const Jaxpr& j) {
  std::string s;
  for (const Equation& e : j.eqns) s += (s.empty() ? "" : " ") + e.primitive->name();
  return s;
}

double dot_all(std::span<const Array> a, std::span<const Array> b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += jnp::sum(a[i] * b[i]).item<double>();
  return s;
}

// f(a, b) = (sum(sin(a) * b), cos(a), exp(b)): the second output has no tangent from b,
// the third none from a.
constexpr const char* kTwoInputs = R"({ lambda ; a:f64[3] b:f64[3]. let
    c:f64[3] = sin a
    d:f64[3] = mul c b
    e:f64[] = reduce_sum[axes=(0,)] d
    f:f64[3] = cos a
    g:f64[3] = exp b
  in (e, f, g) })";

// The same computation with a closed_call nested inside a jit: sub-programs all the way down.
constexpr const char* kNested = R"({ lambda ; a:f64[3] b:f64[3]. let
    e:f64[] f:f64[3] g:f64[3] = jit[jaxpr={ lambda ; a:f64[3] b:f64[3]. let
        c:f64[3] f:f64[3] = closed_call[jaxpr={ lambda ; a:f64[3]. let
            c:f64[3] = sin a
            f:f64[3] = cos a
          in (c, f) } name='trig'] a
        d:f64[3] = mul c b
        e:f64[] = reduce_sum[axes=(0,)] d
        g:f64[3] = exp b
      in (e, f, g) } name='f'] a b
  in (e, f, g) })";

// ---- jvp_jaxpr ----

TEST(JvpJaxpr, MatchesFiniteDifferencesAndJvpOfTheProgram) {
  for (const char* text : {kTwoInputs, kNested}) {
    ClosedJaxpr p = program(text);
    detail::JvpJaxpr j = jvp_jaxpr(p, {true, false}, {});
    EXPECT_EQ(j.out_nonzero, (std::vector<bool>{true, true, false})) << j.jaxpr.str();
    Array a = randn({3}, DType::Float64, 1), b = randn({3}, DType::Float64, 2), v = randn({3}, DType::Float64, 3);
    std::vector<Array> out = run(j.jaxpr, {a, b, v});
    ASSERT_EQ(out.size(), 5u);  // 3 primal outputs, 2 nonzero tangents
    // Oracle 1: jx::jvp of evaluating the original program.
    detail::FlatFn f = [&](std::span<const Array> xs) { return eval_jaxpr(p, xs); };
    auto [po, to] = detail::jvp_flat(f, std::vector<Array>{a, b}, std::vector<Array>{v, Array()}, "jvp");
    for (int i = 0; i < 3; ++i) EXPECT_ALLCLOSE(out[i], po[i], 1e-12, 1e-12);
    EXPECT_ALLCLOSE(out[3], to[0], 1e-12, 1e-12);
    EXPECT_ALLCLOSE(out[4], to[1], 1e-12, 1e-12);
    // Oracle 2: central differences.
    const double h = 1e-6;
    std::vector<Array> hi = run(p, {a + v * h, b}), lo = run(p, {a - v * h, b});
    EXPECT_ALLCLOSE(out[3], (hi[0] - lo[0]) / (2 * h), 1e-6, 1e-6);
    EXPECT_ALLCLOSE(out[4], (hi[1] - lo[1]) / (2 * h), 1e-6, 1e-6);
  }
}

TEST(JvpJaxpr, InstantiateMaterializesZeroTangents) {
  ClosedJaxpr p = program(kTwoInputs);
  detail::JvpJaxpr j = jvp_jaxpr(p, {true, false}, {false, false, true});
  EXPECT_EQ(j.out_nonzero, (std::vector<bool>{true, true, true}));
  Array a = randn({3}, DType::Float64, 1), b = randn({3}, DType::Float64, 2);
  std::vector<Array> out = run(j.jaxpr, {a, b, jnp::ones({3}, DType::Float64)});
  ASSERT_EQ(out.size(), 6u);
  EXPECT_ALLCLOSE(out[5], jnp::zeros({3}, DType::Float64));
}

// ---- batch_jaxpr ----

TEST(BatchJaxpr, MatchesALoopOverTheBatch) {
  for (const char* text : {kTwoInputs, kNested}) {
    ClosedJaxpr p = program(text);
    // a batched along its axis 1 (a (3, 4) stack of columns), b not batched.
    detail::BatchedJaxpr bj = batch_jaxpr(p, 4, {1, kNotMapped}, {});
    EXPECT_EQ(bj.out_batched, (std::vector<bool>{true, true, false})) << bj.jaxpr.str();
    Array a = randn({3, 4}, DType::Float64, 4), b = randn({3}, DType::Float64, 5);
    std::vector<Array> out = run(bj.jaxpr, {a, b});
    for (int64_t k = 0; k < 4; ++k) {
      Array ak = lax::reshape(lax::slice(a, {0, k}, {3, k + 1}), {3});
      std::vector<Array> ref = run(p, {ak, b});
      EXPECT_ALLCLOSE(lax::reshape(lax::slice(out[0], {k}, {k + 1}), {}), ref[0], 1e-12, 1e-12);
      EXPECT_ALLCLOSE(lax::reshape(lax::slice(out[1], {k, 0}, {k + 1, 3}), {3}), ref[1], 1e-12, 1e-12);
      EXPECT_ALLCLOSE(out[2], ref[2], 1e-12, 1e-12);  // unbatched: one value for all
    }
    // instantiate broadcasts the unbatched output.
    detail::BatchedJaxpr all = batch_jaxpr(p, 4, {1, kNotMapped}, {true, true, true});
    EXPECT_EQ(all.out_batched, (std::vector<bool>{true, true, true}));
    std::vector<Array> out2 = run(all.jaxpr, {a, b});
    EXPECT_EQ(out2[2].shape(), (Shape{4, 3}));
    EXPECT_ALLCLOSE(lax::reshape(lax::slice(out2[2], {2, 0}, {3, 3}), {3}), out[2]);
  }
}

// ---- partial_eval_jaxpr ----

TEST(PartialEvalJaxpr, KnownThenUnknownEqualsTheOriginal) {
  ClosedJaxpr p = program(R"({ lambda ; a:f64[3] b:f64[3]. let
      c:f64[3] = sin a
      d:f64[3] = cos a
      e:f64[3] = mul c b
      f:f64[3] = add e d
      g:f64[3] = exp d
      h:f64[3] = tan a
    in (f, g) })");
  detail::PartialEvalJaxpr pe = partial_eval_jaxpr(p, {false, true}, {});
  EXPECT_EQ(pe.out_unknowns, (std::vector<bool>{true, false}));
  // Exactly the known work: sin, cos, exp (tan is dead); the residuals are c and d.
  EXPECT_EQ(eqn_names(pe.known.jaxpr), "sin cos exp") << pe.known.str();
  EXPECT_EQ(eqn_names(pe.unknown.jaxpr), "mul add") << pe.unknown.str();
  EXPECT_EQ(pe.num_residuals, 2u);
  Array a = randn({3}, DType::Float64, 6), b = randn({3}, DType::Float64, 7);
  std::vector<Array> known = run(pe.known, {a});  // g, then the residuals
  ASSERT_EQ(known.size(), 3u);
  std::vector<Array> unknown = run(pe.unknown, {known[1], known[2], b});
  std::vector<Array> ref = run(p, {a, b});
  EXPECT_ALLCLOSE(unknown[0], ref[0], 1e-12, 1e-12);
  EXPECT_ALLCLOSE(known[0], ref[1], 1e-12, 1e-12);

  // instantiate passes a known output through the unknown program as one more residual.
  detail::PartialEvalJaxpr inst = partial_eval_jaxpr(p, {false, true}, {false, true});
  EXPECT_EQ(inst.out_unknowns, (std::vector<bool>{true, true}));
  EXPECT_EQ(inst.num_residuals, 3u);
  std::vector<Array> k2 = run(inst.known, {a});
  std::vector<Array> res(k2.begin(), k2.end());
  res.push_back(b);
  std::vector<Array> u2 = run(inst.unknown, res);
  EXPECT_ALLCLOSE(u2[0], ref[0], 1e-12, 1e-12);
  EXPECT_ALLCLOSE(u2[1], ref[1], 1e-12, 1e-12);
}

// A jit inside the program splits by its partial_eval rule into a known `jit` and a
// `linear_jit` reading the residuals; the closed_call inside it, all known, stays whole
// in the known half.
TEST(PartialEvalJaxpr, SplitsCallsByTheirRules) {
  ClosedJaxpr p = program(kNested);
  detail::PartialEvalJaxpr pe = partial_eval_jaxpr(p, {false, true}, {});
  EXPECT_EQ(pe.out_unknowns, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(eqn_names(pe.known.jaxpr), "jit") << pe.known.str();
  EXPECT_EQ(eqn_names(pe.unknown.jaxpr), "linear_jit") << pe.unknown.str();
  // The known jit computes sin and cos (inside the closed_call); mul, reduce_sum and exp
  // read b, so they are all in the unknown half.
  const std::string known = pe.known.str(), unknown = pe.unknown.str();
  EXPECT_TRUE(contains(known, "sin") && contains(known, "cos") && !contains(known, "mul")) << known;
  EXPECT_TRUE(contains(unknown, "mul") && contains(unknown, "exp") && !contains(unknown, "sin")) << unknown;
  EXPECT_EQ(pe.num_residuals, 1u);  // sin a
  Array a = randn({3}, DType::Float64, 8), b = randn({3}, DType::Float64, 9);
  std::vector<Array> k = run(pe.known, {a});
  ASSERT_EQ(k.size(), 2u);
  std::vector<Array> u = run(pe.unknown, {k[1], b});
  std::vector<Array> ref = run(p, {a, b});
  EXPECT_ALLCLOSE(u[0], ref[0], 1e-12, 1e-12);
  EXPECT_ALLCLOSE(k[0], ref[1], 1e-12, 1e-12);
  EXPECT_ALLCLOSE(u[1], ref[2], 1e-12, 1e-12);
}

// closed_call's partial_eval rule is two lines on the layer: a known call and an
// unknown call of the two halves of its body.
TEST(PartialEvalJaxpr, ClosedCallSplitsIntoTwoCalls) {
  ClosedJaxpr p = program(R"({ lambda ; a:f64[3] b:f64[3]. let
      c:f64[3] = closed_call[jaxpr={ lambda ; a:f64[3] b:f64[3]. let
          c:f64[3] = sin a
          d:f64[3] = mul c b
        in (d,) } name='g'] a b
    in (c,) })");
  detail::PartialEvalJaxpr pe = partial_eval_jaxpr(p, {false, true}, {});
  EXPECT_EQ(eqn_names(pe.known.jaxpr), "closed_call");
  EXPECT_EQ(eqn_names(pe.unknown.jaxpr), "closed_call");
  EXPECT_TRUE(contains(pe.known.str(), "sin") && !contains(pe.known.str(), "mul")) << pe.known.str();
  Array a = randn({3}, DType::Float64, 10), b = randn({3}, DType::Float64, 11);
  std::vector<Array> k = run(pe.known, {a});
  EXPECT_ALLCLOSE(run(pe.unknown, {k[0], b})[0], run(p, {a, b})[0], 1e-12, 1e-12);
}

// ---- transpose_jaxpr ----

// <J v, u> = <v, J^T u> for a program linear in x (the matrix m is a non-linear input),
// through a linear_jit sub-program too.
TEST(TransposeJaxpr, SatisfiesTheInnerProductIdentity) {
  ClosedJaxpr p = program(R"({ lambda ; m:f64[2,3] x:f64[3] y:f64[2]. let
      a:f64[2] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] m x
      b:f64[2] = neg a
      c:f64[2] = linear_jit[jaxpr={ lambda ; m:f64[2,3] y:f64[2]. let
          d:f64[2] = reduce_sum[axes=(1,)] m
          e:f64[2] = mul y d
          f:f64[2] = neg e
        in (f,) } name='l' num_residuals=1] m y
      g:f64[2] = add b c
      h:f64[3] = neg x
    in (g, h) })");
  ClosedJaxpr t = transpose_jaxpr(p, {false, true, true});
  Array m = randn({2, 3}, DType::Float64, 12), x = randn({3}, DType::Float64, 13), y = randn({2}, DType::Float64, 14);
  Array ug = randn({2}, DType::Float64, 15), uh = randn({3}, DType::Float64, 16);
  std::vector<Array> jv = run(p, {m, x, y});
  std::vector<Array> jtu = run(t, {m, ug, uh});
  ASSERT_EQ(jtu.size(), 2u);
  std::vector<Array> u{ug, uh}, v{x, y};
  EXPECT_NEAR(dot_all(jv, u), dot_all(v, jtu), 1e-10);
  // Only some cotangents: the missing one counts as zero.
  ClosedJaxpr t1 = transpose_jaxpr(p, {false, true, true}, {false, true});
  std::vector<Array> only_h = run(t1, {m, uh});
  EXPECT_ALLCLOSE(only_h[0], -uh, 1e-12, 1e-12);
  EXPECT_ALLCLOSE(only_h[1], jnp::zeros({2}, DType::Float64));
}

// ---- dce_jaxpr ----

TEST(DceJaxpr, PrunesInsideCallBodies) {
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[3] b:f32[3]. let
      c:f32[3] d:f32[3] = jit[jaxpr={ lambda ; a:f32[3] b:f32[3]. let
          c:f32[3] d:f32[3] = closed_call[jaxpr={ lambda ; a:f32[3] b:f32[3]. let
              c:f32[3] = sin a
              d:f32[3] = cos b
            in (c, d) } name='inner'] a b
        in (c, d) } name='outer'] a b
      e:f32[3] = exp c
    in (e, d) })");
  detail::DcedJaxpr d = dce_jaxpr(j, {true, false});
  EXPECT_TRUE(d.changed);
  EXPECT_EQ(d.used_inputs, (std::vector<bool>{true, false}));
  verify_jaxpr(d.jaxpr);
  const std::string text = d.jaxpr.str();
  EXPECT_TRUE(contains(text, "sin") && !contains(text, "cos")) << text;
  ASSERT_EQ(d.jaxpr.eqns.size(), 2u);
  EXPECT_EQ(d.jaxpr.eqns[0].inputs.size(), 1u);
  EXPECT_EQ(d.jaxpr.eqns[0].outputs.size(), 1u);
  Array a = randn({3}, DType::Float32, 17);
  EXPECT_ALLCLOSE(eval_jaxpr(d.jaxpr, {}, std::vector<Array>{a})[0], jnp::exp(jnp::sin(a)), 1e-6, 1e-6);
  // Everything used: nothing changes, the bodies keep their identity.
  detail::DcedJaxpr same = dce_jaxpr(j, {true, true});
  EXPECT_FALSE(same.changed);
  EXPECT_EQ(same.jaxpr.eqns[0].params.get_jaxpr("jaxpr"), j.eqns[0].params.get_jaxpr("jaxpr"));
}

// ---- the call primitives' rules on the layer ----

// closed_call's batching rule is a call of batch_jaxpr(body): vmap keeps the call.
TEST(CallRules, ClosedCallUnderVmapStaysOneCall) {
  auto g = named_call([](const Array& x) { return jnp::sin(x) * 2.0; }, "g");
  Array x = randn({4, 3}, DType::Float32, 20);
  ClosedJaxpr j = make_jaxpr(vmap(g))(x);
  EXPECT_EQ(eqn_names(j.jaxpr), "closed_call") << j.str();
  EXPECT_ALLCLOSE(vmap(g)(x), jnp::sin(x) * 2.0, 1e-6, 1e-6);
}

// grad(jit(f)): the jvp jit is split by jit's partial_eval rule; both halves and the
// transpose are compiled calls, and a second trace reuses every transformed body.
TEST(CallRules, GradOfJitReusesTheTransformedBodies) {
  auto f = jit([](const Array& x) { return jnp::sum(jnp::sin(x) * x); });
  Array x = randn({5}, DType::Float32, 21);
  ClosedJaxpr a = make_jaxpr(grad(f))(x), b = make_jaxpr(grad(f))(x);
  ASSERT_EQ(a.jaxpr.eqns.size(), b.jaxpr.eqns.size());
  size_t calls = 0;
  for (size_t i = 0; i < a.jaxpr.eqns.size(); ++i) {
    if (!a.jaxpr.eqns[i].params.has("jaxpr")) continue;
    ++calls;
    EXPECT_EQ(a.jaxpr.eqns[i].params.get_jaxpr("jaxpr"), b.jaxpr.eqns[i].params.get_jaxpr("jaxpr")) << a.str();
  }
  EXPECT_EQ(calls, 2u) << a.str();  // the known jit and the transposed linear_jit
  EXPECT_ALLCLOSE(grad(f)(x), jnp::cos(x) * x + jnp::sin(x), 1e-5, 1e-6);
}

// ---- errors ----

TEST(JaxprTransforms, WrongNumberOfFlagsNamesTheFunction) {
  ClosedJaxpr p = program(kTwoInputs);
  EXPECT_JX_ERROR(jvp_jaxpr(p, {true}, {}), "[jvp_jaxpr] got 1 nonzero_tangents flags for a program of 2 inputs");
  EXPECT_JX_ERROR(jvp_jaxpr(p, {true, true}, {true}), "[jvp_jaxpr] got 1 instantiate flags for a program of 3 outputs");
  EXPECT_JX_ERROR(batch_jaxpr(p, 2, {0}, {}), "[batch_jaxpr] got 1 in_dims for a program of 2 inputs");
  EXPECT_JX_ERROR(batch_jaxpr(p, 2, {2, 0}, {}), "[batch_jaxpr] in_dims[0] = 2 is out of range for input 0 of type f64[3]");
  EXPECT_JX_ERROR(partial_eval_jaxpr(p, {true, false, true}, {}),
                  "[partial_eval_jaxpr] got 3 unknown flags for a program of 2 inputs");
  EXPECT_JX_ERROR(partial_eval_jaxpr(p, {true, false}, {true}),
                  "[partial_eval_jaxpr] got 1 instantiate flags for a program of 3 outputs");
  EXPECT_JX_ERROR(transpose_jaxpr(p, {true}), "[transpose_jaxpr] got 1 linear flags for a program of 2 inputs");
  EXPECT_JX_ERROR(transpose_jaxpr(p, {true, true}, {true}),
                  "[transpose_jaxpr] got 1 ct_nonzero flags for a program of 3 outputs");
  EXPECT_JX_ERROR(dce_jaxpr(p.jaxpr, {true}), "[dce_jaxpr] got 1 used_outputs flags for a program of 3 outputs");
  EXPECT_JX_ERROR(dce_jaxpr(p.jaxpr, {true, true, true}, {true}),
                  "[dce_jaxpr] got 1 keep_inputs flags for a program of 2 inputs");
}

TEST(JaxprTransforms, TransposeOfANonLinearProgramNamesThePrimitive) {
  ClosedJaxpr p = program(R"({ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) })");
  EXPECT_JX_ERROR(transpose_jaxpr(p, {true}), "[sin] is not linear (it has no transpose rule)",
                  "transpose_jaxpr cannot run it backwards");
  // Inside a sub-program too: the linear_jit's transpose stages the body's transpose.
  ClosedJaxpr nested = program(R"({ lambda ; a:f32[3]. let
      b:f32[3] = linear_jit[jaxpr={ lambda ; a:f32[3]. let b:f32[3] = exp a in (b,) } name='l' num_residuals=0] a
    in (b,) })");
  EXPECT_JX_ERROR(transpose_jaxpr(nested, {true}), "[exp] is not linear (it has no transpose rule)");
}

// ---- size: each function is one pass ----

// A 10000-equation chain goes through every function quickly (a quadratic walk would take minutes).
TEST(JaxprTransforms, LinearInProgramSize) {
  const int n = 10000;
  const Primitive* sin = find_primitive("sin");
  const Primitive* mul = find_primitive("mul");
  Jaxpr j;
  Aval f64{{4}, DType::Float64, false};
  j.invars = {Var{0, f64}, Var{1, f64}};
  int64_t prev = 0;
  for (int k = 0; k < n; ++k) {
    Equation e;
    Var out{k + 2, f64};
    e.primitive = k % 2 == 0 ? sin : mul;
    e.inputs = k % 2 == 0 ? std::vector<Atom>{Var{prev, f64}} : std::vector<Atom>{Var{prev, f64}, Var{1, f64}};
    e.outputs = {out};
    prev = out.id;
    j.eqns.push_back(std::move(e));
  }
  j.outvars = {Var{prev, f64}};
  ClosedJaxpr p{j, {}};
  auto start = std::chrono::steady_clock::now();
  detail::JvpJaxpr jv = jvp_jaxpr(p, {true, false}, {});
  detail::BatchedJaxpr bj = batch_jaxpr(p, 2, {0, kNotMapped}, {});
  detail::PartialEvalJaxpr pe = partial_eval_jaxpr(p, {false, true}, {});
  // The tangent half of the jvp program is linear in the tangent input.
  detail::PartialEvalJaxpr lin = partial_eval_jaxpr(jv.jaxpr, {false, false, true}, {});
  std::vector<bool> linear(lin.num_residuals, false);
  linear.push_back(true);
  ClosedJaxpr t = transpose_jaxpr(lin.unknown, linear);
  detail::DcedJaxpr d = dce_jaxpr(j, {true});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10.0);  // about 0.3 s in Release; generous for sanitizer builds
  EXPECT_GT(jv.jaxpr.jaxpr.eqns.size(), static_cast<size_t>(n));
  EXPECT_GE(bj.jaxpr.jaxpr.eqns.size(), static_cast<size_t>(n));
  EXPECT_EQ(t.jaxpr.invars.size(), lin.num_residuals + 1);
  EXPECT_EQ(pe.known.jaxpr.eqns.size(), 1u);  // only the first sin reads no b
  EXPECT_EQ(d.jaxpr.eqns.size(), static_cast<size_t>(n));
}

}  // namespace
}  // namespace jx
