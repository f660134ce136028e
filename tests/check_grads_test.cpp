// jx::test_util::check_grads: it accepts correct derivatives and rejects wrong ones,
// naming the mode, order and argument. The wrong ones come from test-only primitives
// registered below with deliberately broken rules.
#include <gtest/gtest-spi.h>

#include <cmath>

#include "grad_test_util.h"
#include "jx/jx.h"
#include "jx/test_util.h"
#include "test_util.h"

namespace jx {
namespace {
namespace jnp = jx::numpy;
using test_util::check_grads;
using test_util::CheckGradsOptions;
using test_util::Modes;

std::vector<Aval> same_aval(std::span<const Aval> in, const Params&) { return {in[0]}; }

// Impls evaluate eagerly whatever transformation is around.
template <class Fn>
ImplRule eager_impl(Fn fn) {
  return [fn](std::span<const Array> in, const Params&, std::span<const Aval>) {
    detail::TraceScope eager(nullptr);
    return std::vector<Array>{fn(in[0])};
  };
}

BatchRule elementwise_batch(const Primitive& p) {
  return [&p](std::span<const Array> args, std::span<const int64_t> dims, const Params& params, const BatchAxis&) {
    return BatchResult{jx::bind(p, args, params), {dims[0]}};
  };
}

// sin whose jvp rule is off by a factor 2.
extern const Primitive bad_jvp_sin_p;
const Primitive bad_jvp_sin_p(
    "test_bad_jvp_sin",
    {.traits = kElementwise,
     .abstract_eval = same_aval,
     .impl = eager_impl([](const Array& x) { return lax::sin(x); }),
     .jvp =
         [](std::span<const Array> primals, std::span<const Array> tangents, const Params&) {
           Array t = tangents[0] * lax::cos(primals[0]) * 2.0;
           return JvpResult{{jx::bind1(bad_jvp_sin_p, {primals[0]})}, {t}};
         },
     .transpose = {},
     .batch = elementwise_batch(bad_jvp_sin_p)});

// y = 3x, linear, with a correct jvp but a transpose multiplying by 2.
extern const Primitive bad_transpose_scale_p;
const Primitive bad_transpose_scale_p(
    "test_bad_transpose_scale",
    {.traits = kElementwise | kLinear,
     .abstract_eval = same_aval,
     .impl = eager_impl([](const Array& x) { return x * 3.0; }),
     .jvp =
         [](std::span<const Array> primals, std::span<const Array> tangents, const Params&) {
           return JvpResult{{jx::bind1(bad_transpose_scale_p, {primals[0]})},
                            {jx::bind1(bad_transpose_scale_p, {tangents[0]})}};
         },
     .transpose =
         [](std::span<const Array> cts, std::span<const TransposeOperand> ops, const Params&) {
           if (!cts[0].valid()) return std::vector<Array>{Array()};
           return std::vector<Array>{cts[0] * 2.0};
         },
     .batch = elementwise_batch(bad_transpose_scale_p)});

Array bad_sin(const Array& x) { return jx::bind1(bad_jvp_sin_p, {x}); }
Array bad_scale(const Array& x) { return jx::bind1(bad_transpose_scale_p, {x}); }

Array vec(std::vector<double> v, DType d = DType::Float32) { return lax::convert_element_type(Array(v), d); }

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CheckGrads, AcceptsCorrectDerivatives) {
  Array x = vec({0.3, -1.2, 2.0});
  Array y = vec({1.5, 0.7, -0.4});
  JX_EXPECT_GRADS_OK([](const Array& a) { return jnp::sin(a); }, std::tuple{x}, {.order = 2});
  JX_EXPECT_GRADS_OK([](const Array& a, const Array& b) { return a * b; }, std::tuple{x, y}, {.order = 2});
  JX_EXPECT_GRADS_OK([](const Array& a) { return jnp::exp(a); }, std::tuple{x}, {.order = 3});
  JX_EXPECT_GRADS_OK([](const Array& a) { return jnp::sum(jnp::sin(a) * a); }, std::tuple{x}, {.order = 2});
}

TEST(CheckGrads, Float64AndFloat16) {
  JX_EXPECT_GRADS_OK([](const Array& a) { return jnp::sin(a) * jnp::cos(a); },
                     std::tuple{vec({0.1, 0.9, -2.5}, DType::Float64)}, {.order = 2});
  JX_EXPECT_GRADS_OK([](const Array& a) { return jnp::sin(a); }, std::tuple{vec({0.1, 0.9, -2.5}, DType::Float16)});
}

TEST(CheckGrads, Complex) {
  Array z = lax::convert_element_type(vec({0.3, -0.5}), DType::Complex64);
  z = z * Array(complex64_t(1.0f, 0.5f));
  JX_EXPECT_GRADS_OK([](const Array& a) { return a * a; }, std::tuple{z}, {.order = 2});
  JX_EXPECT_GRADS_OK([](const Array& a) { return jnp::sin(a); }, std::tuple{z});
}

TEST(CheckGrads, MatmulViaDotGeneral) {
  Array a = lax::reshape(vec({0.1, 0.2, -0.3, 0.4, 0.5, -0.6}), {2, 3});
  Array b = lax::reshape(vec({1.0, -1.0, 0.5, 2.0, 0.25, 0.75}), {3, 2});
  auto mm = [](const Array& l, const Array& r) { return lax::dot_general(l, r, {{1}, {0}, {}, {}}); };
  JX_EXPECT_GRADS_OK(mm, std::tuple{a, b}, {.order = 2});
}

TEST(CheckGrads, FlatFunctionWithSeveralOutputsAndAnIntegerArgument) {
  // The int32 argument is passed through unperturbed; the bool output carries no tangent.
  test_util::FlatFunction f = [](std::span<const Array> xs) {
    Array scaled = xs[0] * lax::convert_element_type(xs[1], xs[0].dtype());
    return std::vector<Array>{jnp::tanh(scaled), xs[0] > 0, jnp::sum(scaled * scaled)};
  };
  std::vector<Array> args{vec({0.5, -0.25, 1.0}), Array(std::vector<int32_t>{1, 2, 3})};
  EXPECT_NO_THROW(check_grads(f, args, {.order = 2}));
}

TEST(CheckGrads, RejectsAWrongJvpRule) {
  Array x = vec({0.3, -1.2, 2.0});
  std::string msg = message_of([&] { check_grads(bad_sin, std::tuple{x}); });
  for (const char* part : {"[check_grads]", "forward mode (JVP) mismatch", "order 1", "argument 0 (f32[3])",
                           "output 0", "max abs error", "max rel error", "atol 0.002", "rtol 0.002"})
    EXPECT_NE(msg.find(part), std::string::npos) << msg << "\n lacks: " << part;
  // Reverse mode alone is wrong too (it is built from the jvp rule).
  EXPECT_JX_ERROR(check_grads(bad_sin, std::tuple{x}, {.modes = Modes::Rev}), "[check_grads]",
                  "reverse mode (VJP) mismatch", "argument 0");
  // The second argument is the one named when the bug only touches it.
  auto f2 = [](const Array& a, const Array& b) { return jnp::sin(a) + bad_sin(b); };
  EXPECT_JX_ERROR(check_grads(f2, std::tuple{x, x}), "forward mode (JVP) mismatch", "argument 1");
}

TEST(CheckGrads, RejectsAWrongTransposeRuleOnlyInReverseMode) {
  Array x = vec({0.3, -1.2, 2.0});
  EXPECT_NO_THROW(check_grads(bad_scale, std::tuple{x}, {.modes = Modes::Fwd}));
  EXPECT_JX_ERROR(check_grads(bad_scale, std::tuple{x}), "[check_grads]", "reverse mode (VJP) mismatch", "order 1",
                  "argument 0 (f32[3])", "<v, J^T u>", "atol", "rtol");
}

TEST(CheckGrads, SecondOrder) {
  auto f = [](const Array& a) { return jnp::cos(a) * jnp::cos(a); };
  JX_EXPECT_GRADS_OK(f, std::tuple{vec({0.4, 1.1})}, {.order = 2});
  // bad_scale has a correct jvp, so forward mode passes at every order but reverse mode
  // fails in the VJP function too.
  EXPECT_JX_ERROR(check_grads([](const Array& a) { return bad_scale(a * a); }, std::tuple{vec({0.4, 1.1})},
                              {.order = 2, .modes = Modes::Rev}),
                  "reverse mode (VJP) mismatch", "order 1");
  EXPECT_NO_THROW(check_grads([](const Array& a) { return bad_scale(a * a); }, std::tuple{vec({0.4, 1.1})},
                              {.order = 2, .modes = Modes::Fwd}));
}

TEST(CheckGrads, ToleranceOptionsAndDeterminism) {
  Array x = vec({0.3, -1.2, 2.0});
  // Off by a factor 2 passes with a huge tolerance.
  EXPECT_NO_THROW(check_grads(bad_sin, std::tuple{x}, {.modes = Modes::Fwd, .atol = 10.0, .rtol = 10.0}));
  std::string a = message_of([&] { check_grads(bad_sin, std::tuple{x}, {.seed = 7}); });
  std::string b = message_of([&] { check_grads(bad_sin, std::tuple{x}, {.seed = 7}); });
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

TEST(CheckGrads, BadOptions) {
  Array x = vec({1.0});
  auto f = [](const Array& a) { return jnp::sin(a); };
  EXPECT_JX_ERROR(check_grads(f, std::tuple{x}, {.order = 0}), "[check_grads]", "order must be at least 1");
  EXPECT_JX_ERROR(check_grads(f, std::tuple{x}, {.eps = 0.0}), "[check_grads]", "eps must be positive");
  std::vector<Array> null_args(1);
  test_util::FlatFunction g = [](std::span<const Array> xs) { return std::vector<Array>(xs.begin(), xs.end()); };
  EXPECT_JX_ERROR(check_grads(g, null_args), "[check_grads]", "null");
}

TEST(CheckGrads, MacroReportsFailures) {
  Array x = vec({0.3});
  // The macro turns the error into a non-fatal gtest failure carrying the message.
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    JX_EXPECT_GRADS_OK(bad_sin, std::tuple{x});
  }
  ASSERT_EQ(failures.size(), 1);
  EXPECT_NE(std::string(failures.GetTestPartResult(0).message()).find("forward mode (JVP) mismatch"),
            std::string::npos);
}

}  // namespace
}  // namespace jx
