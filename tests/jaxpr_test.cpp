// The jaxpr IR: text form round trips, the verifier, the parser's errors, eval_jaxpr.
#include <cmath>
#include <limits>

#include "jx/jaxpr.h"
#include "jx/lax.h"
#include "jx/transforms.h"
#include "test_util.h"

namespace jx {
namespace {

// ---- test-only primitives ----

// Calls the sub-program in its `jaxpr` parameter on its operands (a stand-in for
// closed_call until the transforms add it).
std::vector<Aval> test_call_rule(std::span<const Aval> in, const Params& params) {
  const ClosedJaxpr& sub = *params.get_jaxpr("jaxpr");
  (void)params.get_string("name");
  std::vector<Aval> want = sub.in_avals();
  if (std::vector<Aval>(in.begin(), in.end()) != want)
    detail::fail("jaxpr_test_call", "operand types do not match the sub-program's inputs");
  return sub.out_avals();
}
const Primitive jaxpr_test_call_p(
    "jaxpr_test_call",
    {.traits = 0,
     .num_outputs = -1,
     .abstract_eval = test_call_rule,
     .impl = [](std::span<const Array> in, const Params& params, std::span<const Aval>) {
       return eval_jaxpr(*params.get_jaxpr("jaxpr"), in);
     },
     .jvp = nullptr,
     .transpose = nullptr,
     .batch = nullptr});

// The identity, with parameters of every kind, each checked for its alternative.
const Primitive jaxpr_test_params_p(
    "jaxpr_test_params",
    {.traits = 0,
     .abstract_eval =
         [](std::span<const Aval> in, const Params& p) {
           for (const auto& [k, v] : p.items()) {
             if (k.starts_with("b")) (void)p.get_bool(k);
             if (k.starts_with("i")) (void)p.get_int(k);
             if (k.starts_with("f")) (void)p.get_double(k);
             if (k.starts_with("t")) (void)p.get_ints(k);
             if (k.starts_with("d")) (void)p.get_dtype(k);
             if (k.starts_with("s")) (void)p.get_string(k);
           }
           return std::vector<Aval>{in[0]};
         },
     .impl = [](std::span<const Array> in, const Params&, std::span<const Aval>) {
       return std::vector<Array>{in[0]};
     },
     .jvp = nullptr,
     .transpose = nullptr,
     .batch = nullptr});

Array f32(std::vector<float> v, Shape shape) { return Array(v, std::move(shape)); }

// ---- round trips: canonical text prints back unchanged ----

class RoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(RoundTrip, PrintOfParseIsIdentity) {
  const std::string text = GetParam();
  Jaxpr j = parse_jaxpr(text);
  EXPECT_EQ(j.str(), text);
  // And once more through the printed form.
  EXPECT_EQ(parse_jaxpr(j.str()).str(), text);
}

INSTANTIATE_TEST_SUITE_P(
    Texts, RoundTrip,
    ::testing::Values(
        // constvars, several outputs, a literal
        R"({ lambda a:f32[3]; b:f32[3] c:f32[]. let
    d:f32[3] = sin b
    e:f32[3] = mul d a
    f:f32[] = reduce_sum[axes=(0,)] e
    g:f32[] = add f 2.0:f32[]
  in (g, d) })",
        // literals of many dtypes, specials, complex
        R"({ lambda ; a:i32[] b:f64[] c:bool[] d:c64[]. let
    e:i32[] = add a 3:i32[]
    f:i32[] = mul e -7:i32[]
    g:f64[] = add b 0.1:f64[]
    h:f64[] = max g inf:f64[]
    i:f64[] = min h -inf:f64[]
    j:f64[] = add i nan:f64[]
    k:bool[] = and c True:bool[]
    l:bool[] = or k False:bool[]
    m:c64[] = mul d (1+2j):c64[]
    n:c64[] = add m (-0.5-1e-10j):c64[]
  in (f, j, l, n) })",
        R"({ lambda ; a:f16[] b:bf16[] c:u8[] d:i8[] e:u32[] f:i64[] g:f32[] h:c128[]. let
    i:f16[] = add a 0.1:f16[]
    j:bf16[] = mul b 3.14:bf16[]
    k:u8[] = add c 255:u8[]
    l:i8[] = sub d -128:i8[]
    m:u32[] = add e 4294967295:u32[]
    n:i64[] = add f -9223372036854775808:i64[]
    o:f32[] = mul g 0.1:f32[]
    p:f32[] = add o 1e+30:f32[]
    q:f32[] = add p -0.0:f32[]
    r:f64[] = convert_element_type[new_dtype=float64 weak_type=False] q
    s:f64[] = add r 0.30000000000000004:f64[]
    t:c128[] = add h (inf+nanj):c128[]
  in (i, j, k, l, m, n, s, t) })",
        // weak types: variables and literals
        R"({ lambda ; a:f32{weak}[] b:i32{weak}[]. let
    c:f32{weak}[] = mul a 2.0:f32{weak}[]
    d:f32[] = add c 1.5:f32[]
    e:i32{weak}[] = add b 1:i32{weak}[]
    f:f32{weak}[] = convert_element_type[new_dtype=float32 weak_type=True] d
  in (c, d, e, f) })",
        // shape and contraction parameters, dtype parameters
        R"({ lambda ; a:f32[2,3] b:f32[3,4] c:i32[4,5]. let
    d:f32[2,4] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b
    e:f32[5,2,4] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(5, 2, 4)] d
    f:f32[4,2,5] = transpose[permutation=(2, 1, 0)] e
    g:i32[4,5] = argmax[axes=(1,) index_dtype=int32] f
    h:f32[4,2,5] = cumsum[axis=2 reverse=True] f
    i:f32[4,2,5] = integer_pow[y=3] h
    j:i32[3,4] = iota[dimension=1 dtype=int32 shape=(3, 4)]
    k:i32[4,5] = add g c
  in (i, j, k) })",
        // sort with several outputs
        R"({ lambda ; a:f32[5] b:i32[5]. let
    c:f32[5] d:i32[5] = sort[dimension=0 is_stable=True num_keys=1] a b
  in (c, d) })",
        // no inputs, no equations, literal output
        R"({ lambda ; . let
  in (1.0:f32[],) })",
        R"({ lambda ; a:f32[]. let
  in () })",
        // parameters of every kind
        R"({ lambda ; a:f32[2]. let
    b:f32[2] = jaxpr_test_params[b_flag=False d_type=bfloat16 f_half=0.5 f_inf=-inf f_two=2.0 i_count=-3 s_label='hello world' t_empty=() t_one=(7,) t_two=(0, -1)] a
  in (b,) })",
        // a nested sub-program, which starts its own naming
        R"({ lambda ; a:f32[3] b:f32[]. let
    c:f32[3] d:f32[] = jaxpr_test_call[jaxpr={ lambda ; a:f32[3] b:f32[]. let
        c:f32[3] = sin a
        d:f32[] = reduce_sum[axes=(0,)] c
        e:f32[] = mul d b
      in (c, e) } name='inner'] a b
    e:f32[] = add d 1.0:f32[]
  in (c, e) })",
        // two levels of nesting
        R"({ lambda ; a:f32[]. let
    b:f32[] = jaxpr_test_call[jaxpr={ lambda ; a:f32[]. let
        b:f32[] = jaxpr_test_call[jaxpr={ lambda ; a:f32[]. let
            b:f32[] = cos a
          in (b,) } name='innermost'] a
      in (b,) } name='middle'] a
  in (b,) })"));

TEST(JaxprText, ParamsParseIntoTheirAlternatives) {
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[2]. let
    b:f32[2] = jaxpr_test_params[b_flag=True d_type=complex64 f_big=1e+100 f_int_looking=3.0 i_count=12
                                 s_label='x' t_two=(0, -1,)] a
  in (b,) })");
  const Params& p = j.eqns.at(0).params;
  EXPECT_EQ(p.get_bool("b_flag"), true);
  EXPECT_EQ(p.get_dtype("d_type"), DType::Complex64);
  EXPECT_EQ(p.get_double("f_big"), 1e100);
  EXPECT_EQ(p.get_double("f_int_looking"), 3.0);
  EXPECT_EQ(p.get_int("i_count"), 12);
  EXPECT_EQ(p.get_string("s_label"), "x");
  EXPECT_EQ(p.get_ints("t_two"), (std::vector<int64_t>{0, -1}));
}

TEST(JaxprText, WhitespaceIsFreeAndTheOutputIsCanonical) {
  Jaxpr j = parse_jaxpr("{lambda;a:f32[3].let b:f32[3]=sin a c:f32[3]=cos b in(c)}");
  EXPECT_EQ(j.str(), "{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n    c:f32[3] = cos b\n  in (c,) }");
}

TEST(JaxprText, LiteralsHoldTheirValuesExactly) {
  Jaxpr j = parse_jaxpr(R"({ lambda ; . let
  in (0.1:f32[], 0.1:f64[], -128:i8[], 4294967295:u32[], (1+2j):c64[], True:bool[], 2:f32{weak}[], nan:f16[]) })");
  const auto& o = j.outvars;
  ASSERT_EQ(o.size(), 8u);
  EXPECT_EQ(o[0].literal().value.item<float>(), 0.1f);
  EXPECT_EQ(o[1].literal().value.item<double>(), 0.1);
  EXPECT_EQ(o[2].literal().value.item<int64_t>(), -128);
  EXPECT_EQ(o[3].literal().value.dtype(), DType::UInt32);
  EXPECT_EQ(o[3].literal().value.item<int64_t>(), 4294967295LL);
  EXPECT_EQ(o[4].literal().value.item<complex64_t>(), complex64_t(1, 2));
  EXPECT_EQ(o[5].literal().value.item<bool>(), true);
  EXPECT_TRUE(o[6].literal().value.weak_type());
  EXPECT_EQ(o[6].literal().value.item<float>(), 2.0f);
  EXPECT_TRUE(std::isnan(o[7].literal().value.item<float>()));
  // Printed without ".0" in the input, printed canonically on the way out.
  EXPECT_NE(j.str().find("2.0:f32{weak}[]"), std::string::npos);
}

TEST(JaxprText, PrintsProgramsBuiltInCode) {
  const Primitive* sin_p = find_primitive("sin");
  const Primitive* add_p = find_primitive("add");
  Var x{10, Aval{{2}, DType::Float32}}, y{4, Aval{{2}, DType::Float32}}, z{7, Aval{{2}, DType::Float32}};
  Jaxpr j;
  j.invars = {x};
  j.eqns.push_back(Equation{sin_p, {x}, {y}, {}});
  j.eqns.push_back(Equation{add_p, {y, Literal{Array(1.0f)}}, {z}, {}});
  j.outvars = {z, y};
  // Literal Array(1.0f) is weak (a C++ scalar); names follow first appearance, not ids.
  EXPECT_EQ(j.str(), "{ lambda ; a:f32[2]. let\n    b:f32[2] = sin a\n    c:f32[2] = add b 1.0:f32{weak}[]\n"
                     "  in (c, b) }");
  std::ostringstream os;
  os << j;
  EXPECT_EQ(os.str(), j.str());
  ClosedJaxpr closed{j, {}};
  std::ostringstream os2;
  os2 << closed;
  EXPECT_EQ(os2.str(), j.str());
  EXPECT_EQ(closed.in_avals(), (std::vector<Aval>{Aval{{2}, DType::Float32}}));
  EXPECT_EQ(closed.out_avals(), (std::vector<Aval>{Aval{{2}, DType::Float32}, Aval{{2}, DType::Float32}}));
}

TEST(JaxprText, VariableNamesFollowJaxAndSkipKeywords) {
  // 26 -> ba; names that are keywords ("in") are skipped so that text parses back.
  Jaxpr j;
  for (int i = 0; i < 300; ++i) j.invars.push_back(Var{i, Aval{{}, DType::Float32}});
  j.outvars = {j.invars[26], j.invars[27], j.invars.back()};
  std::string s = j.str();
  EXPECT_NE(s.find(" ba:f32[] bb:f32[] "), std::string::npos);
  EXPECT_EQ(s.find(" in:"), std::string::npos);
  EXPECT_NE(s.find(" im:f32[] io:f32[] "), std::string::npos);
  EXPECT_NE(s.find("in (ba, bb, "), std::string::npos);
  EXPECT_EQ(parse_jaxpr(s).str(), s);
}

// ---- eval_jaxpr against the same computation done directly with lax ----

TEST(EvalJaxpr, ConstantsArgumentsAndLiterals) {
  Jaxpr j = parse_jaxpr(R"({ lambda a:f32[3]; b:f32[3] c:f32[]. let
    d:f32[3] = sin b
    e:f32[3] = mul d a
    f:f32[] = reduce_sum[axes=(0,)] e
    g:f32[] = add f 2.0:f32[]
    h:f32[] = mul g c
  in (h, d, 3:i32[]) })");
  Array a = f32({1, 2, 3}, {3}), b = f32({0.5f, -1, 2}, {3}), c = Array(std::vector<float>{4.0f}, Shape{});
  std::vector<Array> consts{a}, args{b, c};
  std::vector<Array> out = eval_jaxpr(j, consts, args);
  ASSERT_EQ(out.size(), 3u);
  // An independent oracle: the loop in double precision.
  double sum = 0;
  std::vector<float> av{1, 2, 3}, bv{0.5f, -1, 2};
  for (int i = 0; i < 3; ++i) sum += std::sin(static_cast<double>(bv[i])) * av[i];
  EXPECT_NEAR(out[0].item<double>(), (sum + 2.0) * 4.0, 1e-5);
  EXPECT_EQ(out[0].dtype(), DType::Float32);
  EXPECT_ALLCLOSE(out[1], lax::sin(b));
  EXPECT_EQ(out[2].item<int32_t>(), 3);
  EXPECT_EQ(out[2].dtype(), DType::Int32);
}

TEST(EvalJaxpr, ManyPrimitivesMatchDirectLaxCalls) {
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[2,3] b:f32[3,4]. let
    c:f32[2,4] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b
    d:f32[5,2,4] = broadcast_in_dim[broadcast_dimensions=(1, 2) shape=(5, 2, 4)] c
    e:f32[4,2,5] = transpose[permutation=(2, 1, 0)] d
    f:f32[4,2,5] = cumsum[axis=2 reverse=True] e
    g:f16[4,2,5] = convert_element_type[new_dtype=float16 weak_type=False] f
    h:f32[8] = reshape[new_sizes=(8,)] c
    i:f32[8] = neg h
    j:i32[8] = iota[dimension=0 dtype=int32 shape=(8,)]
    k:f32[8] l:i32[8] = sort[dimension=0 is_stable=True num_keys=1] i j
  in (g, k, l) })");
  Array a = f32({1, -2, 3, 0.5f, 4, -1}, {2, 3});
  Array b = f32({1, 2, 3, 4, -1, 0, 2, 1, 0.25f, -3, 1, 2}, {3, 4});
  std::vector<Array> args{a, b};
  std::vector<Array> out = eval_jaxpr(j, {}, args);
  ASSERT_EQ(out.size(), 3u);
  Array c = lax::dot_general(a, b, lax::DotDimensionNumbers{{1}, {0}, {}, {}});
  Array f = lax::cumsum(lax::transpose(lax::broadcast_in_dim(c, {5, 2, 4}, {1, 2}), {2, 1, 0}), 2, true);
  EXPECT_ALLCLOSE(out[0], lax::convert_element_type(f, DType::Float16), 1e-3, 1e-3);
  std::vector<Array> sorted = lax::sort({lax::neg(lax::reshape(c, {8})), lax::iota(DType::Int32, 8)}, 0, true, 1);
  EXPECT_ALLCLOSE(out[1], sorted[0]);
  EXPECT_ALLCLOSE(out[2], sorted[1]);
}

TEST(EvalJaxpr, NestedSubProgramThroughACallPrimitive) {
  ClosedJaxpr closed{parse_jaxpr(R"({ lambda ; a:f32[3] b:f32[]. let
    c:f32[3] d:f32[] = jaxpr_test_call[jaxpr={ lambda ; a:f32[3] b:f32[]. let
        c:f32[3] = sin a
        d:f32[] = reduce_sum[axes=(0,)] c
        e:f32[] = mul d b
      in (c, e) } name='inner'] a b
    e:f32[] = add d 1.0:f32[]
  in (c, e) })"),
                     {}};
  Array x = f32({0.1f, 0.2f, 0.3f}, {3});
  Array s = Array(std::vector<float>{3.0f}, Shape{});
  std::vector<Array> args{x, s};
  std::vector<Array> out = eval_jaxpr(closed, args);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_ALLCLOSE(out[0], lax::sin(x));
  double expect = (std::sin(0.1f) + std::sin(0.2f) + std::sin(0.3f)) * 3.0 + 1.0;
  EXPECT_NEAR(out[1].item<double>(), expect, 1e-5);
}

TEST(EvalJaxpr, RunsUnderTheCurrentTransformation) {
  // Forward mode through eval_jaxpr: d/da sin(sin(a)) = cos(sin(a)) * cos(a).
  Jaxpr j = parse_jaxpr(R"({ lambda ; a:f32[3]. let
    b:f32[3] = sin a
    c:f32[3] = sin b
  in (c,) })");
  auto f = [&](const Array& a) {
    std::vector<Array> args{a};
    return eval_jaxpr(j, {}, args).at(0);
  };
  std::vector<float> av{0.5f, -1.0f, 2.0f}, tv{1.0f, 2.0f, -0.5f};
  auto [out, tangent_out] = jx::jvp(f, f32(av, {3}), f32(tv, {3}));
  std::vector<float> got = tangent_out.to_vector<float>();
  for (int i = 0; i < 3; ++i) {
    double a = av[i];
    EXPECT_NEAR(got[i], std::cos(std::sin(a)) * std::cos(a) * tv[i], 1e-5);
  }
}

TEST(EvalJaxpr, ArityAndTypeMismatchesNameBothSides) {
  Jaxpr j = parse_jaxpr(R"({ lambda a:f32[3]; b:f32[3] c:f32[]. let
    d:f32[3] = mul b a
  in (d, c) })");
  Array v = f32({1, 2, 3}, {3});
  std::vector<Array> consts{v}, one_arg{v}, no_consts{}, two_args{v, Array(std::vector<float>{1}, Shape{})};
  EXPECT_JX_ERROR(eval_jaxpr(j, consts, one_arg), "[eval_jaxpr]", "expected 2 arguments",
                  "(f32[3], f32[])", "got 1", "(f32[3])");
  EXPECT_JX_ERROR(eval_jaxpr(j, no_consts, two_args), "[eval_jaxpr]", "expected 1 constants", "(f32[3])",
                  "got 0", "()");
  std::vector<Array> wrong_shape{v, v};
  EXPECT_JX_ERROR(eval_jaxpr(j, consts, wrong_shape), "[eval_jaxpr]", "(f32[3], f32[])", "(f32[3], f32[3])");
  // A weak scalar is accepted where the strong type of the same dtype is declared.
  std::vector<Array> weak_args{v, Array(2.0f)};
  std::vector<Array> out = eval_jaxpr(j, consts, weak_args);
  EXPECT_EQ(out[1].item<float>(), 2.0f);
}

TEST(EvalJaxpr, UnverifiedProgramReadingAnUndefinedVariable) {
  Jaxpr j;
  Var x{0, Aval{{}, DType::Float32}}, ghost{1, Aval{{}, DType::Float32}}, y{2, Aval{{}, DType::Float32}};
  j.invars = {x};
  j.eqns.push_back(Equation{find_primitive("add"), {x, ghost}, {y}, {}});
  j.outvars = {y};
  std::vector<Array> args{Array(std::vector<float>{1}, Shape{})};
  EXPECT_JX_ERROR(eval_jaxpr(j, {}, args), "[eval_jaxpr]", "equation 0", "not defined");
}

// ---- verify_jaxpr ----

TEST(VerifyJaxpr, OperandTypesRejectedByTheShapeRule) {
  EXPECT_JX_ERROR(parse_jaxpr(R"({ lambda ; a:f32[3] b:i32[3]. let
    c:f32[3] = add a b
  in (c,) })"),
                  "[verify_jaxpr] equation 0 (add): [add]", "f32[3]", "i32[3]");
}

TEST(VerifyJaxpr, DeclaredOutputTypeDiffersFromTheRule) {
  EXPECT_JX_ERROR(parse_jaxpr(R"({ lambda ; a:f32[3]. let
    b:f32[3] = sin a
    c:f32[4] = cos b
  in (c,) })"),
                  "[verify_jaxpr] equation 1 (cos): output 0 (c) is declared f32[4] but the shape rule gives f32[3]");
  EXPECT_JX_ERROR(parse_jaxpr(R"({ lambda ; a:f32[]. let
    b:f32{weak}[] = sin a
  in (b,) })"),
                  "declared f32{weak}[]", "gives f32[]");
}

TEST(VerifyJaxpr, OutputArity) {
  EXPECT_JX_ERROR(parse_jaxpr(R"({ lambda ; a:f32[3]. let
    b:f32[3] c:f32[3] = sin a
  in (b,) })"),
                  "[verify_jaxpr] equation 0 (sin): declares 2 outputs but the shape rule gives 1");
}

Jaxpr two_sins(Var x, Var y, Var z) {
  Jaxpr j;
  j.invars = {x};
  j.eqns.push_back(Equation{find_primitive("sin"), {x}, {y}, {}});
  j.eqns.push_back(Equation{find_primitive("sin"), {y}, {z}, {}});
  j.outvars = {z};
  return j;
}

TEST(VerifyJaxpr, UseBeforeDefinition) {
  const Aval s{{}, DType::Float32};
  Jaxpr j = two_sins(Var{0, s}, Var{1, s}, Var{2, s});
  EXPECT_NO_THROW(verify_jaxpr(j));
  std::swap(j.eqns[0], j.eqns[1]);
  // Printed names: a (input), b (first seen as the operand of equation 0), c.
  EXPECT_JX_ERROR(verify_jaxpr(j), "[verify_jaxpr] equation 0 (sin): variable b is used before it is defined");
  Jaxpr k = two_sins(Var{0, s}, Var{1, s}, Var{2, s});
  k.outvars = {Var{9, s}};
  EXPECT_JX_ERROR(verify_jaxpr(k), "[verify_jaxpr] output 0: variable d is used before it is defined");
}

TEST(VerifyJaxpr, DoubleDefinition) {
  const Aval s{{}, DType::Float32};
  Jaxpr j = two_sins(Var{0, s}, Var{1, s}, Var{1, s});
  EXPECT_JX_ERROR(verify_jaxpr(j), "[verify_jaxpr] equation 1 (sin): variable b is defined twice");
  Jaxpr k = two_sins(Var{0, s}, Var{1, s}, Var{2, s});
  k.invars.push_back(Var{0, s});
  EXPECT_JX_ERROR(verify_jaxpr(k), "[verify_jaxpr] variable a is defined twice (again as an input)");
  Jaxpr m = two_sins(Var{0, s}, Var{0, s}, Var{2, s});
  EXPECT_JX_ERROR(verify_jaxpr(m), "equation 0 (sin): variable a is defined twice (again as an equation output)");
}

TEST(VerifyJaxpr, VariableUsedWithAnotherTypeThanItsDefinition) {
  const Aval s{{}, DType::Float32}, t{{2}, DType::Float32};
  Jaxpr j = two_sins(Var{0, s}, Var{1, s}, Var{2, t});
  j.eqns[1].inputs = {Var{1, t}};
  EXPECT_JX_ERROR(verify_jaxpr(j), "equation 1 (sin): variable b is used as f32[2] but was defined as f32[]");
}

TEST(VerifyJaxpr, LiteralsMustBe0D) {
  const Aval s{{2}, DType::Float32};
  Jaxpr j;
  j.invars = {Var{0, s}};
  j.eqns.push_back(Equation{find_primitive("add"), {Var{0, s}, Literal{f32({1, 2}, {2})}}, {Var{1, s}}, {}});
  j.outvars = {Var{1, s}};
  EXPECT_JX_ERROR(verify_jaxpr(j), "equation 0 (add): a literal must be 0-d, got f32[2]");
}

TEST(VerifyJaxpr, NullPrimitive) {
  const Aval s{{}, DType::Float32};
  Jaxpr j = two_sins(Var{0, s}, Var{1, s}, Var{2, s});
  j.eqns[1].primitive = nullptr;
  EXPECT_JX_ERROR(verify_jaxpr(j), "equation 1 (null): has no primitive");
}

TEST(VerifyJaxpr, SubProgramsAreVerifiedRecursively) {
  EXPECT_JX_ERROR(parse_jaxpr(R"({ lambda ; a:f32[3]. let
    b:f32[3] = jaxpr_test_call[jaxpr={ lambda ; a:f32[3]. let
        b:f32[2] = sin a
      in (b,) } name='bad'] a
  in (b,) })"),
                  "[verify_jaxpr] equation 0 (jaxpr_test_call): in the sub-program of parameter 'jaxpr': "
                  "[verify_jaxpr] equation 0 (sin): output 0 (b) is declared f32[2] but the shape rule gives f32[3]");
}

TEST(VerifyJaxpr, SubProgramsMayNotHaveConstvars) {
  EXPECT_JX_ERROR(parse_jaxpr(R"({ lambda ; a:f32[]. let
    b:f32[] = jaxpr_test_call[jaxpr={ lambda c:f32[]; a:f32[]. let
        b:f32[] = mul a c
      in (b,) } name='closes_over'] a
  in (b,) })"),
                  "[verify_jaxpr] equation 0 (jaxpr_test_call):", "sub-program in parameter 'jaxpr' has 1 constvars",
                  "as operands");
  // Built in code, with consts held by the ClosedJaxpr.
  const Aval s{{}, DType::Float32};
  Jaxpr inner;
  inner.invars = {Var{0, s}};
  inner.outvars = {Var{0, s}};
  auto sub = std::make_shared<const ClosedJaxpr>(ClosedJaxpr{inner, {Array(1.0f)}});
  Jaxpr outer;
  outer.invars = {Var{0, s}};
  outer.eqns.push_back(Equation{&jaxpr_test_call_p, {Var{0, s}}, {Var{1, s}}, {{"jaxpr", sub}, {"name", std::string("x")}}});
  outer.outvars = {Var{1, s}};
  EXPECT_JX_ERROR(verify_jaxpr(outer), "has 0 constvars; a sub-program takes its constants as operands");
}

// ---- parse errors: each names the line and column ----

struct ParseErrorCase {
  const char* text;
  const char* message;
};

class ParseErrors : public ::testing::TestWithParam<ParseErrorCase> {};

TEST_P(ParseErrors, NameLineColumnAndProblem) {
  EXPECT_JX_ERROR(parse_jaxpr(GetParam().text), "[parse_jaxpr] ", GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseErrors,
    ::testing::Values(
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n    b:f32[3] = frobnicate a\n  in (b,) }",
                       "line 2, column 16: unknown primitive 'frobnicate'"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n    b:f32[3] = sin q\n  in (b,) }",
                       "line 2, column 20: undefined variable 'q'"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (z,) }",
                       "line 3, column 7: undefined variable 'z'"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n    a:f32[3] = sin a\n  in (a,) }",
                       "line 2, column 5: variable 'a' is defined twice (first at line 1, column 12)"},
        ParseErrorCase{"{ lambda ; a:f32[3] a:f32[3]. let\n  in (a,) }",
                       "line 1, column 21: variable 'a' is defined twice"},
        ParseErrorCase{"{ lambda ; a:f33[3]. let\n  in (a,) }",
                       "line 1, column 14: expected a dtype such as f32 or i32, got 'f33'"},
        ParseErrorCase{"{ lambda ; a:f32[3. let\n  in (a,) }", "line 1, column 19: expected ']', got '.'"},
        ParseErrorCase{"{ lambda ; a:f32{strong}[3]. let\n  in (a,) }",
                       "line 1, column 18: expected 'weak', got 'strong'"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,)", "line 3, column 10: expected '}', got end of input"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n  in (a,) } x", "line 2, column 13: expected end of input, got 'x'"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n", "line 3, column 1: expected an equation or 'in', got end of input"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a }\n  in (b,) }",
                       "line 2, column 22: expected an equation 'name:type ... = primitive ...' or 'in', got '}'"},
        ParseErrorCase{"( lambda ; a:f32[3]. let in (a,) }", "line 1, column 1: expected '{', got '('"},
        ParseErrorCase{"{ lambda ; a:f32[]. let\n    b:f32[] = add a True:f32[]\n  in (b,) }",
                       "line 2, column 21: expected a real number for a literal of type f32[], got 'True'"},
        ParseErrorCase{"{ lambda ; a:i8[]. let\n    b:i8[] = add a 300:i8[]\n  in (b,) }",
                       "line 2, column 20: integer literal 300 is out of the range of i8[]"},
        ParseErrorCase{"{ lambda ; a:i32[]. let\n    b:i32[] = add a 1.5:i32[]\n  in (b,) }",
                       "expected an integer for a literal of type i32[], got '1.5'"},
        ParseErrorCase{"{ lambda ; a:bool[]. let\n    b:bool[] = and a 1:bool[]\n  in (b,) }",
                       "expected True or False for a literal of type bool[], got '1'"},
        ParseErrorCase{"{ lambda ; a:f32[2]. let\n    b:f32[2] = add a 1.0:f32[2]\n  in (b,) }",
                       "line 2, column 26: expected a 0-d type for a literal, got f32[2]"},
        ParseErrorCase{"{ lambda ; a:c64[]. let\n    b:c64[] = add a (1*2j):c64[]\n  in (b,) }",
                       "line 2, column 23: expected '+' or '-' and the imaginary part of a complex literal, got '*'"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n    b:f32[] = reduce_sum[axes=(0.5,)] a\n  in (b,) }",
                       "line 2, column 32: expected an integer, got '0.5'"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n    b:f16[3] = convert_element_type[new_dtype=float33 weak_type=False] a\n  in (b,) }",
                       "line 2, column 47: expected a parameter value, got 'float33', which is not a dtype name"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n    b:f32[] = reduce_sum[axes=(0,) axes=(0,)] a\n  in (b,) }",
                       "line 2, column 36: parameter 'axes' is given twice"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n    b:f32[] = reduce_sum[axes=(0,)\n", "expected ']' closing the parameters, got end of input"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n    b:f32[3] = jaxpr_test_params[s_x='open a\n  in (b,) }",
                       "line 2, column 38: expected a closing ' for this string, got end of input"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n    b:f32[] = reduce_sum[axes=] a\n  in (b,) }",
                       "line 2, column 31: expected a parameter value, got ']'"},
        ParseErrorCase{"{ lambda ; in:f32[3]. let\n  in (in,) }",
                       "line 1, column 12: expected a variable name, got the keyword 'in'"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n    let:f32[3] = sin a\n  in (a,) }",
                       "line 2, column 5: expected a variable name, got the keyword 'let'"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n    b:f32[3] sin a\n  in (b,) }",
                       "line 2, column 14: expected '=' or another output 'name:type', got 'sin'"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n  in (a b) }", "line 2, column 9: expected ',', got 'b'"},
        ParseErrorCase{"{ lambda ; a:f32[3]. let\n  in (a,) b }", "line 2, column 11: expected '}', got 'b'"},
        ParseErrorCase{"{ lambda ; a:f32[3] b:f32[3]. let\n    c:f32[3] = add a b\n    d:f32[3] = jaxpr_test_call[jaxpr={ lambda ; a:f32[3]. let\n        b:f32[3] = sin c\n      in (b,) } name='x'] c\n  in (d,) }",
                       "line 4, column 24: undefined variable 'c'"},
        ParseErrorCase{"{ lambda ; a:i64[]. let\n    b:i64[] = add a 99999999999999999999:i64[]\n  in (b,) }",
                       "line 2, column 21: integer '99999999999999999999' is out of the range of int64"}));

}  // namespace
}  // namespace jx
