// The call primitives jit adds (jit, linear_jit, fusion) and closed_call share one shape
// rule (src/transforms/call_rules.h): every way a call can disagree with its sub-program
// raises an error naming the primitive, the sub-program and the types.
#include <memory>

#include "jx/jx.h"
#include "test_util.h"

namespace jx {
namespace {

// { lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }
JaxprRef sin_body() {
  auto body = std::make_shared<ClosedJaxpr>();
  body->jaxpr = parse_jaxpr("{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }");
  return body;
}

const Primitive& prim(const char* name) {
  const Primitive* p = find_primitive(name);
  EXPECT_NE(p, nullptr) << name;
  return *p;
}

TEST(CallPrimitives, AcceptTheBodysTypes) {
  Aval f32_3{{3}, DType::Float32, false};
  for (const char* name : {"jit", "closed_call"}) {
    auto out = prim(name).abstract_eval(std::vector<Aval>{f32_3}, Params{{"jaxpr", sin_body()}, {"name", "f"}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0], f32_3);
  }
  auto out = prim("fusion").abstract_eval(std::vector<Aval>{f32_3},
                                          Params{{"jaxpr", sin_body()}, {"kind", "loop"}, {"name", "fusion.0"}});
  EXPECT_EQ(out[0], f32_3);
}

TEST(CallPrimitives, OperandMismatchesNameTheSubProgramAndTypes) {
  Aval f32_4{{4}, DType::Float32, false}, i32_3{{3}, DType::Int32, false};
  Params params{{"jaxpr", sin_body()}, {"name", "f"}};
  EXPECT_JX_ERROR(prim("jit").abstract_eval(std::vector<Aval>{f32_4}, params),
                  "[jit] operand 0 of 'f' is f32[4] but the sub-program expects f32[3]");
  EXPECT_JX_ERROR(prim("closed_call").abstract_eval(std::vector<Aval>{i32_3}, params),
                  "[closed_call] operand 0 of 'f' is i32[3] but the sub-program expects f32[3]");
  EXPECT_JX_ERROR(prim("jit").abstract_eval(std::vector<Aval>{}, params),
                  "[jit] sub-program 'f' takes 1 operands, got 0");
  EXPECT_JX_ERROR(prim("jit").abstract_eval(std::vector<Aval>{}, Params{{"jaxpr", JaxprRef()}, {"name", "f"}}),
                  "[jit] has a null sub-program");
}

TEST(CallPrimitives, SubProgramsHoldNoConstants) {
  auto body = std::make_shared<ClosedJaxpr>();
  body->jaxpr = parse_jaxpr("{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = add a b in (c,) }");
  EXPECT_JX_ERROR(prim("jit").abstract_eval(std::vector<Aval>{Aval{{3}, DType::Float32, false}},
                                            Params{{"jaxpr", JaxprRef(body)}, {"name", "f"}}),
                  "[jit] sub-program must have no constvars (constants are leading operands)");
}

TEST(CallPrimitives, FusionKindAndLinearJitResiduals) {
  Aval f32_3{{3}, DType::Float32, false};
  EXPECT_JX_ERROR(prim("fusion").abstract_eval(std::vector<Aval>{f32_3},
                                               Params{{"jaxpr", sin_body()}, {"kind", "scan"}, {"name", "fusion.0"}}),
                  "[fusion] kind must be loop, reduction, rows, dot or scalar_loop, got 'scan'");
  EXPECT_JX_ERROR(prim("linear_jit")
                      .abstract_eval(std::vector<Aval>{f32_3}, Params{{"jaxpr", sin_body()},
                                                                      {"name", "f"},
                                                                      {"num_residuals", int64_t{2}}}),
                  "[linear_jit] num_residuals=2 but there are 1 operands");
}

// A jit equation evaluated eagerly (eval_jaxpr of a program that holds one) compiles
// its body once and runs it natively.
TEST(CallPrimitives, JitEquationRunsEagerly) {
  Array x = Array({0.5f, 1.0f, 2.0f});
  std::vector<Array> out = jx::bind(prim("jit"), std::vector<Array>{x}, Params{{"jaxpr", sin_body()}, {"name", "f"}});
  EXPECT_ALLCLOSE(out[0], numpy::sin(x), 1e-6, 1e-7);
}

}  // namespace
}  // namespace jx
