// jx::numpy core: JAX's type promotion table (fixture generated with jax), weak C++
// scalars, broadcasting, asarray/astype, creation defaults and the Array operators.
#include <functional>
#include <map>
#include <span>

#include "core/array_internal.h"

#include "test_util.h"

namespace jnp = jx::numpy;
using jx::Array;
using jx::DType;

namespace {

constexpr int kDTypes = jx::kNumDTypes;

DType dtype_at(int i) { return static_cast<DType>(i); }

// A 0-d weak scalar of each kind, as C++ literals make them: 1, 1.0, 1i.
Array weak_scalar(int kind) {
  if (kind == 0) return Array(1);
  if (kind == 1) return Array(1.0);
  return Array(jx::complex128_t(0, 1));
}

Array strong_zeros(DType d) { return jnp::zeros({2}, d); }

}  // namespace

TEST(NumpyCore, PromotionTableMatchesJax) {
  auto t = jx::testing::fixture_npz("numpy_core/promotion");
  std::vector<int8_t> table = t.at("promotion_dtype").to_vector<int8_t>();
  std::vector<bool> weak;
  for (int8_t w : t.at("promotion_weak").to_vector<int8_t>()) weak.push_back(w != 0);
  ASSERT_EQ(table.size(), static_cast<size_t>(kDTypes * (kDTypes + 3)));
  int checked = 0;
  for (int i = 0; i < kDTypes; ++i) {
    for (int j = 0; j < kDTypes + 3; ++j) {
      size_t at = static_cast<size_t>(i * (kDTypes + 3) + j);
      DType expected = dtype_at(table[at]);
      Array a = strong_zeros(dtype_at(i));
      Array b = j < kDTypes ? strong_zeros(dtype_at(j)) : weak_scalar(j - kDTypes);
      SCOPED_TRACE(std::string(jx::dtype_name(dtype_at(i))) + " with " +
                   (j < kDTypes ? std::string(jx::dtype_name(dtype_at(j))) : "weak kind " + std::to_string(j - kDTypes)));
      jx::TypedDType r = jnp::result_typed({a, b});
      EXPECT_EQ(r.dtype, expected);
      EXPECT_EQ(r.weak, weak[at]);
      if (j < kDTypes) {
        EXPECT_EQ(jnp::promote_types(dtype_at(i), dtype_at(j)), expected);
      }
      // The operator result has the promoted dtype and weakness too (bools add as or).
      Array sum = a + b;
      EXPECT_EQ(sum.dtype(), expected);
      EXPECT_EQ(sum.weak_type(), weak[at]);
      ++checked;
    }
  }
  EXPECT_EQ(checked, kDTypes * (kDTypes + 3));
}

TEST(NumpyCore, PromotionExamples) {
  Array i32 = jnp::zeros({3}, jx::int32), f32 = jnp::zeros({3}), f16 = jnp::zeros({3}, jx::float16);
  EXPECT_EQ((i32 * 2.0).dtype(), jx::float32);  // int32 array * weak float -> float32 (weak, as JAX)
  EXPECT_TRUE((i32 * 2.0).weak_type());
  EXPECT_EQ((f32 * 2.0).dtype(), jx::float32);  // a weak double does not widen float32
  EXPECT_FALSE((f32 * 2.0).weak_type());
  EXPECT_EQ((f16 + jnp::zeros({3}, jx::int64)).dtype(), jx::float16);
  EXPECT_EQ((jnp::zeros({3}, jx::uint32) + i32).dtype(), jx::int64);
  EXPECT_EQ((jnp::zeros({3}, jx::uint8) + jnp::zeros({3}, jx::int8)).dtype(), jx::int16);
  EXPECT_EQ((jnp::zeros({3}, jx::bfloat16) + f16).dtype(), jx::float32);
  EXPECT_EQ((Array({true}) + Array({true})).dtype(), jx::bool_);
  EXPECT_EQ((Array({true}) + 1).dtype(), jx::int32);
  EXPECT_TRUE((Array({true}) + 1).weak_type());
  EXPECT_EQ((jnp::zeros({3}, jx::int8) + 1000).dtype(), jx::int8);
  EXPECT_EQ((jnp::zeros({3}, jx::complex64) * 2.0).dtype(), jx::complex64);
  EXPECT_EQ((f32 * jx::complex128_t(1, 1)).dtype(), jx::complex64);
  EXPECT_EQ((jnp::zeros({3}, jx::float64) + f32).dtype(), jx::float64);
  // weak + weak: both weak stays weak; jx keeps a C++ double's precision (see dtype.h).
  Array ww = Array(2) + Array(3);
  EXPECT_EQ(ww.dtype(), jx::int32);
  EXPECT_TRUE(ww.weak_type());
  Array wf = Array(2) * Array(0.5);
  EXPECT_EQ(wf.dtype(), jx::float64);
  EXPECT_TRUE(wf.weak_type());
  EXPECT_EQ(wf.item<double>(), 1.0);
  EXPECT_EQ(jnp::result_type({i32, f16}), jx::float16);
  auto promoted = jnp::promote_dtypes({i32, f32, 1});
  EXPECT_EQ(promoted[2].dtype(), jx::float32);
  EXPECT_FALSE(promoted[2].weak_type());
}

// Integer true division (and every float-valued function of integers) computes in float64
// for 64-bit integers and in float32 for the narrower ones and bool: JAX 0.10.2 with x64
// gives int64 / int64 -> float64, int32 / int32 -> float32 (checked in /work/venv).
TEST(NumpyCore, IntegerTrueDivisionPromotion) {
  const int64_t big = (int64_t{1} << 53) - 1;  // not representable in float32
  Array a(std::vector<int64_t>{big, 16777217, 7}), b(std::vector<int64_t>{1, 1, 2});
  Array q = jnp::divide(a, b);
  EXPECT_EQ(q.dtype(), jx::float64);
  EXPECT_EQ(q.to_vector<double>(), (std::vector<double>{9007199254740991.0, 16777217.0, 3.5}));
  EXPECT_EQ((a / b).dtype(), jx::float64);
  EXPECT_EQ((a / 2).dtype(), jx::float64);
  EXPECT_EQ(jnp::true_divide(a, jnp::zeros({3}, jx::int32) + 1).dtype(), jx::float64);
  EXPECT_EQ((jnp::zeros({3}, jx::uint32) / jnp::ones({3}, jx::int32)).dtype(), jx::float64);  // via int64
  for (DType d : {jx::int8, jx::int16, jx::int32, jx::uint8, jx::uint32, jx::bool_})
    EXPECT_EQ(jnp::divide(jnp::ones({2}, d), jnp::ones({2}, d)).dtype(), jx::float32) << dtype_name(d);
  // An inexact operand decides: int64 / float32 -> float32, as JAX.
  EXPECT_EQ((a / jnp::ones({3})).dtype(), jx::float32);
  // The same rule for the other float-valued functions of integers.
  EXPECT_EQ(jnp::sqrt(a).dtype(), jx::float64);
  EXPECT_EQ(jnp::mean(a).dtype(), jx::float64);
  EXPECT_EQ(jnp::mean(a).item<double>(), (9007199254740991.0 + 16777217.0 + 7.0) / 3.0);
  EXPECT_EQ(jnp::linalg::det(jnp::ones({2, 2}, jx::int64)).dtype(), jx::float64);
  EXPECT_EQ(jnp::sqrt(jnp::ones({2}, jx::int32)).dtype(), jx::float32);
}

TEST(NumpyCore, Broadcasting) {
  EXPECT_EQ(jnp::broadcast_shapes({{3, 1}, {4}, {}}), (jx::Shape{3, 4}));
  EXPECT_EQ(jnp::broadcast_shapes({{0, 1}, {1, 5}}), (jx::Shape{0, 5}));
  EXPECT_EQ(jnp::broadcast_shapes({{2, 1, 3}, {5, 1}}), (jx::Shape{2, 5, 3}));
  Array b = jnp::broadcast_to(Array({1, 2, 3}), {2, 3});
  EXPECT_ALLCLOSE(b, Array({{1, 2, 3}, {1, 2, 3}}));
  auto both = jnp::broadcast_arrays({jnp::reshape(Array({1, 2}), {2, 1}), Array({10, 20, 30})});
  EXPECT_EQ(both[0].shape(), (jx::Shape{2, 3}));
  EXPECT_ALLCLOSE(both[0] + both[1], Array({{11, 21, 31}, {12, 22, 32}}));
  auto pb = jnp::promote_and_broadcast({Array({1, 2}), jnp::reshape(Array({0.5f, 1.5f}), {2, 1})}, "test");
  EXPECT_EQ(pb[0].shape(), (jx::Shape{2, 2}));
  EXPECT_EQ(pb[0].dtype(), jx::float32);
  // Broadcasting a size-0 dimension and a 0-d operand.
  EXPECT_EQ((jnp::zeros({0, 3}) + 1.f).shape(), (jx::Shape{0, 3}));
  EXPECT_EQ((jnp::zeros({}) + jnp::zeros({2, 2})).shape(), (jx::Shape{2, 2}));
  EXPECT_JX_ERROR(jnp::broadcast_shapes({{3}, {4}}, "add"),
                  "[add] operands could not be broadcast together with shapes (3,) (4,)");
  EXPECT_JX_ERROR(jnp::broadcast_shapes({{2, 3}, {3, 2}}), "[broadcast_shapes]", "(2, 3) (3, 2)");
  EXPECT_JX_ERROR(jnp::broadcast_to(jnp::zeros({3}), {4}), "[broadcast_to] cannot broadcast an array of shape (3,)");
  EXPECT_JX_ERROR(jnp::broadcast_to(jnp::zeros({2, 3}), {3}), "[broadcast_to]");
  EXPECT_JX_ERROR(jnp::broadcast_arrays({jnp::zeros({2}), jnp::zeros({3})}), "[broadcast_arrays]");
}

TEST(NumpyCore, AsarrayAstype) {
  Array w = jnp::asarray(2.0);
  EXPECT_EQ(w.dtype(), jx::float32);  // jnp.asarray(2.0): float32, weak
  EXPECT_TRUE(w.weak_type());
  EXPECT_EQ(jnp::asarray(Array(2L)).dtype(), jx::int32);
  EXPECT_EQ(jnp::asarray(2.0, jx::float64).dtype(), jx::float64);
  EXPECT_FALSE(jnp::asarray(2.0, jx::float64).weak_type());
  Array x = Array({1.7f, -2.5f});
  EXPECT_EQ(jnp::asarray(x).id(), x.id());
  EXPECT_ALLCLOSE(jnp::astype(x, jx::int32), Array({1, -2}));
  EXPECT_ALLCLOSE(x.astype(jx::bool_), Array({true, true}));
  EXPECT_ALLCLOSE(jnp::astype(Array({NAN}), jx::int32), Array({0}));
  EXPECT_EQ(jnp::array(std::vector<double>{1, 2}).dtype(), jx::float64);
  EXPECT_EQ(jnp::array(std::vector<double>{1, 2}, jx::float32).dtype(), jx::float32);
  EXPECT_EQ(jnp::array({{1, 2}, {3, 4}}).shape(), (jx::Shape{2, 2}));
  EXPECT_EQ(jnp::array({1.5, 2.5}).dtype(), jx::float32);
  EXPECT_EQ(jnp::array({1, 2}, jx::float16).dtype(), jx::float16);
  EXPECT_EQ(jnp::array(std::vector<int32_t>{1, 2, 3, 4}, jx::Shape{2, 2}).shape(), (jx::Shape{2, 2}));
  EXPECT_EQ(jnp::asarray(std::vector<uint8_t>{1}).dtype(), jx::uint8);
}

TEST(NumpyCore, CreationDefaults) {
  EXPECT_EQ(jnp::zeros({2, 3}).dtype(), jx::float32);
  EXPECT_ALLCLOSE(jnp::ones({2}, jx::int8), Array(std::vector<int8_t>{1, 1}));
  EXPECT_ALLCLOSE(jnp::full({2}, 7), Array({7, 7}));
  EXPECT_TRUE(jnp::full({2}, 7).weak_type());  // as jnp.full(2, 7)
  EXPECT_EQ(jnp::full({2}, 7.5).dtype(), jx::float32);
  EXPECT_EQ(jnp::full({2}, 7.5, jx::float64).dtype(), jx::float64);
  EXPECT_ALLCLOSE(jnp::full({2, 2}, Array({1, 2})), Array({{1, 2}, {1, 2}}));
  EXPECT_EQ(jnp::empty({0, 2}).shape(), (jx::Shape{0, 2}));
  Array x = jnp::zeros({2, 3}, jx::int16);
  EXPECT_EQ(jnp::zeros_like(x).dtype(), jx::int16);
  EXPECT_ALLCLOSE(jnp::ones_like(x, jx::float32), jnp::ones({2, 3}));
  EXPECT_ALLCLOSE(jnp::full_like(x, 3), jnp::full({2, 3}, 3, jx::int16));
  EXPECT_EQ(jnp::empty_like(x, std::nullopt, jx::Shape{4}).shape(), (jx::Shape{4}));
  EXPECT_TRUE(jnp::zeros_like(2.0).weak_type());
  EXPECT_EQ(jnp::zeros({}).shape(), (jx::Shape{}));
  EXPECT_EQ(jnp::arange(5).dtype(), jx::int32);
  EXPECT_EQ(jnp::arange(0.0, 1.0, 0.25).dtype(), jx::float32);
  EXPECT_EQ(jnp::arange(0, 3, 1, jx::float64).dtype(), jx::float64);
  EXPECT_EQ(jnp::linspace(0, 1, 5).dtype(), jx::float32);
  EXPECT_EQ(jnp::linspace(jnp::zeros({}, jx::float64), 1, 5).dtype(), jx::float64);
  EXPECT_EQ(jnp::eye(2).dtype(), jx::float32);
}

TEST(NumpyCore, OperatorsAndMethods) {
  Array a = Array({1.f, 2.f, 3.f});
  EXPECT_ALLCLOSE(a + 1, Array({2.f, 3.f, 4.f}));
  EXPECT_ALLCLOSE(1 - a, Array({0.f, -1.f, -2.f}));
  EXPECT_ALLCLOSE(a * a, Array({1.f, 4.f, 9.f}));
  EXPECT_ALLCLOSE(a / 2, Array({0.5f, 1.f, 1.5f}));
  EXPECT_ALLCLOSE(Array({1, 2}) / Array({2, 4}), Array({0.5f, 0.5f}));
  EXPECT_ALLCLOSE(-a, Array({-1.f, -2.f, -3.f}));
  EXPECT_ALLCLOSE(+a, a);
  EXPECT_ALLCLOSE(a == 2, Array({false, true, false}));
  EXPECT_ALLCLOSE(a != 2, Array({true, false, true}));
  EXPECT_ALLCLOSE(a < 2, Array({true, false, false}));
  EXPECT_ALLCLOSE(a <= 2, Array({true, true, false}));
  EXPECT_ALLCLOSE(a > 2, Array({false, false, true}));
  EXPECT_ALLCLOSE(a >= 2, Array({false, true, true}));
  EXPECT_ALLCLOSE(Array({6, 5}) & 3, Array({2, 1}));
  EXPECT_ALLCLOSE(Array({6, 5}) | 3, Array({7, 7}));
  EXPECT_ALLCLOSE(Array({6, 5}) ^ 3, Array({5, 6}));
  EXPECT_ALLCLOSE(Array({7, -7}) % 3, Array({1, 2}));
  Array b = Array({1, 2});
  b += 1;
  EXPECT_ALLCLOSE(b, Array({2, 3}));
  b -= 1;
  b *= 3;
  EXPECT_ALLCLOSE(b, Array({3, 6}));
  b /= 2;  // true division promotes to float32, as Python rebinding does
  EXPECT_ALLCLOSE(b, Array({1.5f, 3.f}));
  Array m = Array({{1.f, 2.f}, {3.f, 4.f}});
  EXPECT_ALLCLOSE(m.T(), Array({{1.f, 3.f}, {2.f, 4.f}}));
  EXPECT_ALLCLOSE(m.reshape({4}), Array({1.f, 2.f, 3.f, 4.f}));
  EXPECT_ALLCLOSE(m.reshape({-1, 1}).reshape({1, 4}), jnp::reshape(Array({1.f, 2.f, 3.f, 4.f}), {1, 4}));
  EXPECT_EQ(m.astype(jx::float64).dtype(), jx::float64);
  EXPECT_EQ(m.sum().item<float>(), 10.f);
  EXPECT_EQ(m.mean().item<float>(), 2.5f);
  EXPECT_EQ(m.max().item<float>(), 4.f);
  EXPECT_EQ(m.min().item<float>(), 1.f);
  EXPECT_TRUE(static_cast<bool>(m.sum() > 9));
}

TEST(NumpyCore, OperatorErrorsNameTheFunction) {
  Array a = jnp::zeros({2, 3});
  EXPECT_JX_ERROR(a + jnp::zeros({3, 2}), "[add] operands could not be broadcast together with shapes (2, 3) (3, 2)");
  EXPECT_JX_ERROR(a - jnp::zeros({4}), "[subtract]");
  EXPECT_JX_ERROR(a / jnp::zeros({4}), "[divide]");
  EXPECT_JX_ERROR(a % jnp::zeros({4}), "[remainder]");
  EXPECT_JX_ERROR(a < jnp::zeros({4}), "[less]");
  EXPECT_JX_ERROR(a == jnp::zeros({4}), "[equal]");
  EXPECT_JX_ERROR(a & a, "[bitwise_and]", "float32");
  EXPECT_JX_ERROR(~a, "[invert]", "float32");
  EXPECT_JX_ERROR(jnp::result_type({}), "[result_type]");
  EXPECT_JX_ERROR(Array() + a, "null");
}

// ---- jnp functions under a transformation ----
// A trace that only runs shape rules: every jnp function must reach its result through
// bind alone (no kernels, no concrete reads), with the avals eager evaluation gives.

namespace {

class AbstractTrace;

struct AbstractTracer : jx::detail::Tracer {
  jx::detail::Trace* owner = nullptr;
  jx::detail::Trace* trace() const override { return owner; }
};

class AbstractTrace : public jx::detail::Trace {
 public:
  int binds = 0;
  std::vector<Array> process(const jx::Primitive& p, std::span<const Array> in, const jx::Params& params) override {
    std::vector<jx::Aval> avals;
    for (const Array& a : in) avals.push_back(a.aval());
    ++binds;
    std::vector<Array> out;
    for (const jx::Aval& av : p.abstract_eval(avals, params)) out.push_back(make(av));
    return out;
  }
  std::string_view transformation() const override { return "abstract"; }
  Array make(const jx::Aval& av) {
    auto impl = std::make_shared<jx::detail::ArrayImpl>();
    impl->aval = av;
    auto t = std::make_shared<AbstractTracer>();
    t->owner = this;
    impl->tracer = t;
    return Array(std::move(impl));
  }
};

// A concrete array of `aval` (ones; values do not matter, only avals are compared).
Array concrete_of(const jx::Aval& av) {
  Array x = jnp::ones(av.shape, av.dtype);
  return av.weak_type ? jx::detail::with_weak_type(jx::detail::contiguous(x), true) : x;
}

struct TraceCase {
  const char* name;
  std::vector<jx::Aval> inputs;
  std::function<Array(const std::vector<Array>&)> fn;
};

}  // namespace

TEST(NumpyCore, FunctionsTraceThroughBindWithEagerAvals) {
  using jx::Aval;
  const Aval f32{{3, 4}, jx::float32, false}, i32{{3, 4}, jx::int32, false}, f64{{4}, jx::float64, false};
  const Aval b{{3, 4}, jx::bool_, false}, u8{{4}, jx::uint8, false}, wf{{}, jx::float64, true}, wi{{}, jx::int32, true};
  const Aval row{{4}, jx::float32, false}, q{{2}, jx::float32, false}, c64{{3, 4}, jx::complex64, false};
  const Aval f16{{3, 4}, jx::float16, false}, s0{{}, jx::float32, false};
  using V = const std::vector<Array>&;
  std::vector<TraceCase> cases = {
      {"add_int_weakfloat", {i32, wf}, [](V a) { return a[0] + a[1]; }},
      {"add_weak_weak", {wi, wf}, [](V a) { return a[0] + a[1]; }},
      {"mul_bool_weakint", {b, wi}, [](V a) { return a[0] * a[1]; }},
      {"sub_u8_f64", {u8, f64}, [](V a) { return a[0] - a[1]; }},
      {"divide_ints", {i32, i32}, [](V a) { return jnp::divide(a[0], a[1]); }},
      {"floor_divide", {i32, row}, [](V a) { return jnp::floor_divide(a[0], a[1]); }},
      {"floor_divide_int", {i32, i32}, [](V a) { return jnp::floor_divide(a[0], a[1]); }},
      {"remainder", {f32, wi}, [](V a) { return jnp::remainder(a[0], a[1]); }},
      {"fmod", {i32, i32}, [](V a) { return jnp::fmod(a[0], a[1]); }},
      {"power_int", {i32, i32}, [](V a) { return jnp::power(a[0], a[1]); }},
      {"power_float", {f32, row}, [](V a) { return jnp::power(a[0], a[1]); }},
      {"sin_int", {i32}, [](V a) { return jnp::sin(a[0]); }},
      {"sin_weak", {wi}, [](V a) { return jnp::sin(a[0]); }},
      {"log10_f16", {f16}, [](V a) { return jnp::log10(a[0]); }},
      {"abs_complex", {c64}, [](V a) { return jnp::abs(a[0]); }},
      {"angle_complex", {c64}, [](V a) { return jnp::angle(a[0]); }},
      {"round_dec", {f16}, [](V a) { return jnp::round(a[0], 2); }},
      {"round_int_neg", {i32}, [](V a) { return jnp::round(a[0], -1); }},
      {"trunc", {f32}, [](V a) { return jnp::trunc(a[0]); }},
      {"where", {b, i32, wf}, [](V a) { return jnp::where(a[0], a[1], a[2]); }},
      {"clip", {i32, wi, wi}, [](V a) { return jnp::clip(a[0], a[1], a[2]); }},
      {"fmax", {f32, row}, [](V a) { return jnp::fmax(a[0], a[1]); }},
      {"hypot", {f32, row}, [](V a) { return jnp::hypot(a[0], a[1]); }},
      {"logaddexp", {f32, wf}, [](V a) { return jnp::logaddexp(a[0], a[1]); }},
      {"isclose", {f32, i32}, [](V a) { return jnp::isclose(a[0], a[1]); }},
      {"isinf_complex", {c64}, [](V a) { return jnp::isinf(a[0]); }},
      {"signbit", {f16}, [](V a) { return jnp::signbit(a[0]); }},
      {"copysign", {f32, i32}, [](V a) { return jnp::copysign(a[0], a[1]); }},
      {"heaviside", {f32, wf}, [](V a) { return jnp::heaviside(a[0], a[1]); }},
      {"nan_to_num", {c64}, [](V a) { return jnp::nan_to_num(a[0]); }},
      {"logical_xor", {i32, b}, [](V a) { return jnp::logical_xor(a[0], a[1]); }},
      {"right_shift_u8", {u8, wi}, [](V a) { return jnp::right_shift(a[0], a[1]); }},
      {"sum_bool", {b}, [](V a) { return jnp::sum(a[0], 1); }},
      {"sum_weak", {wf}, [](V a) { return jnp::sum(a[0]); }},
      {"prod_keep", {i32}, [](V a) { return jnp::prod(a[0], 0, true); }},
      {"mean_int", {i32}, [](V a) { return jnp::mean(a[0], {0, 1}, true); }},
      {"var_complex", {c64}, [](V a) { return jnp::var(a[0], 1, 1); }},
      {"std_f16", {f16}, [](V a) { return jnp::std(a[0]); }},
      {"max_initial", {f32, wf}, [](V a) { return jnp::max(a[0], 0, false, a[1]); }},
      {"ptp", {i32}, [](V a) { return jnp::ptp(a[0], 1); }},
      {"argmax_none_keep", {f32}, [](V a) { return jnp::argmax(a[0], std::nullopt, true); }},
      {"argmin_bool", {b}, [](V a) { return jnp::argmin(a[0], 1); }},
      {"any", {f32}, [](V a) { return jnp::any(a[0], -1, true); }},
      {"cumsum_none", {b}, [](V a) { return jnp::cumsum(a[0]); }},
      {"cumprod_f16", {f16}, [](V a) { return jnp::cumprod(a[0], 1); }},
      {"median", {i32}, [](V a) { return jnp::median(a[0], 1, true); }},
      {"quantile_traced_q", {f32, q}, [](V a) { return jnp::quantile(a[0], a[1], 0); }},
      {"average", {f32, row}, [](V a) { return jnp::average(a[0], 1, a[1]); }},
      {"count_nonzero", {f32}, [](V a) { return jnp::count_nonzero(a[0], 0); }},
      {"logsumexp_b", {f32, row}, [](V a) { return jnp::logsumexp(a[0], 1, a[1], true); }},
      {"nanmax", {f32}, [](V a) { return jnp::nanmax(a[0], 1); }},
      {"nanmean", {f64}, [](V a) { return jnp::nanmean(a[0]); }},
      {"reshape", {f32}, [](V a) { return jnp::reshape(a[0], {2, -1}); }},
      {"transpose", {f32}, [](V a) { return jnp::transpose(a[0]); }},
      {"moveaxis", {f32}, [](V a) { return jnp::moveaxis(a[0], 0, 1); }},
      {"squeeze_expand", {f32}, [](V a) { return jnp::squeeze(jnp::expand_dims(a[0], {0, 3})); }},
      {"concatenate", {f32, i32}, [](V a) { return jnp::concatenate({a[0], a[1]}, 1); }},
      {"concatenate_none", {f32, row}, [](V a) { return jnp::concatenate({a[0], a[1]}, std::nullopt); }},
      {"stack", {f32, i32}, [](V a) { return jnp::stack({a[0], a[1]}, -1); }},
      {"split", {f32}, [](V a) { return jnp::split(a[0], 2, 1)[1]; }},
      {"tile", {row}, [](V a) { return jnp::tile(a[0], {2, 3}); }},
      {"repeat", {f32}, [](V a) { return jnp::repeat(a[0], 2, 1); }},
      {"repeat_traced_counts", {row, {{4}, jx::int32, false}},
       [](V a) { return jnp::repeat(a[0], a[1], 0, 7); }},
      {"repeat_per_element", {f32}, [](V a) { return jnp::repeat(a[0], std::vector<int64_t>{1, 0, 2}, 0); }},
      {"flip", {f32}, [](V a) { return jnp::flip(a[0]); }},
      {"roll", {f32}, [](V a) { return jnp::roll(a[0], 5); }},
      {"rot90", {f32}, [](V a) { return jnp::rot90(a[0], 3); }},
      {"pad_reflect", {f32}, [](V a) { return jnp::pad(a[0], {5, 1}, "reflect"); }},
      {"pad_wrap", {f32}, [](V a) { return jnp::pad(a[0], 6, "wrap"); }},
      {"pad_edge", {f32}, [](V a) { return jnp::pad(a[0], {{0, 2}, {1, 0}}, "edge"); }},
      {"pad_constant", {i32, wf}, [](V a) { return jnp::pad(a[0], 1, "constant", a[1]); }},
      {"diagonal", {f32}, [](V a) { return jnp::diagonal(a[0], 1); }},
      {"diag", {row}, [](V a) { return jnp::diag(a[0], -1); }},
      {"trace", {i32}, [](V a) { return jnp::trace(a[0]); }},
      {"tril", {f32}, [](V a) { return jnp::tril(a[0], 1); }},
      {"broadcast_to", {row}, [](V a) { return jnp::broadcast_to(a[0], {2, 4}); }},
      {"zeros_like", {wf}, [](V a) { return jnp::zeros_like(a[0]); }},
      {"full_like", {i32, wf}, [](V a) { return jnp::full_like(a[0], a[1]); }},
      {"full", {wi}, [](V a) { return jnp::full({2}, a[0]); }},
      {"linspace", {s0, s0}, [](V a) { return jnp::linspace(a[0], a[1], 5); }},
      {"logspace", {s0, s0}, [](V a) { return jnp::logspace(a[0], a[1], 5); }},
      {"meshgrid", {row, q}, [](V a) { return jnp::meshgrid({a[0], a[1]})[1]; }},
      {"astype", {f32}, [](V a) { return a[0].astype(jx::int8); }},
      {"asarray_weak", {wf}, [](V a) { return jnp::asarray(a[0]); }},
      {"method_sum", {i32}, [](V a) { return a[0].sum(); }},
      {"ravel_multi_index", {{{3}, jx::int32, false}, {{3}, jx::int32, false}},
       [](V a) { return jnp::ravel_multi_index({a[0], a[1]}, {3, 4}); }},
  };
  for (const TraceCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Array> eager_in;
    for (const Aval& av : c.inputs) eager_in.push_back(concrete_of(av));
    Array eager = c.fn(eager_in);
    AbstractTrace trace;
    Array traced;
    {
      jx::detail::TraceScope scope(&trace);
      std::vector<Array> traced_in;
      for (const Aval& av : c.inputs) traced_in.push_back(trace.make(av));
      try {
        traced = c.fn(traced_in);
      } catch (const jx::Error& e) {
        ADD_FAILURE() << "under a trace: " << e.what();
        continue;
      }
    }
    EXPECT_GT(trace.binds, 0);
    EXPECT_FALSE(traced.is_concrete());
    EXPECT_EQ(traced.aval().str(), eager.aval().str());
  }
}
