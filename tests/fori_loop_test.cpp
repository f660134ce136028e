// lax::fori_loop with jx::Array bounds (jx/control_flow/while_loop.h): a scan when both
// values are known now, a while_loop carrying (i, upper, carry) when either is traced
// (jit, vmap). Oracles: plain C++ loops, eager for jit, a loop over the batch for vmap,
// finite differences and forward mode for reverse mode.
#include <cmath>

#include "jx/jx.h"
#include "jx/test_util.h"
#include "test_util.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;

Array f64(std::vector<double> v) { return Array(v); }
Array i32(int v) { return lax::convert_element_type(Array(v), DType::Int32); }
const Array kX = f64({0.3, -1.2, 0.7});

// c <- c * 0.9 + sin(i * x) for i in [lower, upper).
Array damped(const Array& lower, const Array& upper, const Array& x) {
  return lax::fori_loop(lower, upper,
                        [&x](const Array& i, const Array& c) { return c * 0.9 + jnp::sin(lax::convert_element_type(i, DType::Float64) * x); },
                        jnp::zeros_like(x));
}
std::vector<double> damped_oracle(int lower, int upper, const std::vector<double>& x) {
  std::vector<double> c(x.size(), 0.0);
  for (int i = lower; i < upper; ++i)
    for (size_t k = 0; k < x.size(); ++k) c[k] = c[k] * 0.9 + std::sin(i * x[k]);
  return c;
}

TEST(ForiLoopArrayBounds, ValuesMatchACppLoop) {
  for (auto [lo, hi] : {std::pair{2, 7}, {0, 1}, {-3, 4}, {5, 5}, {6, 2}}) {
    SCOPED_TRACE(::testing::Message() << lo << ".." << hi);
    EXPECT_ALLCLOSE(damped(i32(lo), i32(hi), kX), f64(damped_oracle(lo, hi, kX.to_vector<double>())), 1e-14, 1e-14);
    // Mixed with C++ ints (weakly typed arrays).
    EXPECT_ALLCLOSE(damped(lo, i32(hi), kX), f64(damped_oracle(lo, hi, kX.to_vector<double>())), 1e-14, 1e-14);
  }
}

TEST(ForiLoopArrayBounds, KnownBoundsStageAScanTracedOnesAWhile) {
  // Bounds made outside the trace are concrete there (made inside, they would be staged).
  const Array one = i32(1), four = i32(4);
  const std::string known = make_jaxpr([&](const Array& x) { return damped(one, four, x); })(kX).str();
  EXPECT_NE(known.find("scan["), std::string::npos) << known;
  EXPECT_NE(known.find("length=3"), std::string::npos) << known;
  EXPECT_EQ(known.find("while["), std::string::npos) << known;
  const std::string traced = make_jaxpr(damped)(i32(1), i32(4), kX).str();
  EXPECT_NE(traced.find("while["), std::string::npos) << traced;
  EXPECT_EQ(traced.find("scan["), std::string::npos) << traced;
}

TEST(ForiLoopArrayBounds, UnderJitWithTracedBounds) {
  auto f = jit(damped);
  for (auto [lo, hi] : {std::pair{2, 7}, {0, 0}, {-3, 4}, {6, 2}}) {
    SCOPED_TRACE(::testing::Message() << lo << ".." << hi);
    EXPECT_ALLCLOSE(f(i32(lo), i32(hi), kX), damped(i32(lo), i32(hi), kX), 1e-14, 1e-14);
    EXPECT_ALLCLOSE(f(i32(lo), i32(hi), kX), f64(damped_oracle(lo, hi, kX.to_vector<double>())), 1e-14, 1e-14);
  }
}

TEST(ForiLoopArrayBounds, VmapOverTheBounds) {
  const Array lowers = Array({0, 1, 3, 2}), uppers = Array({4, 1, 7, 9});
  auto f = [](const Array& lo, const Array& hi) { return damped(lo, hi, kX); };
  Array got = vmap(f)(lowers, uppers);
  const std::vector<int> lo = lowers.to_vector<int>(), hi = uppers.to_vector<int>();
  for (int64_t b = 0; b < 4; ++b) {
    const auto k = static_cast<size_t>(b);
    EXPECT_ALLCLOSE(got(b), f64(damped_oracle(lo[k], hi[k], kX.to_vector<double>())), 1e-14, 1e-14) << b;
  }
  // Only the upper bound batched, and under jit.
  Array only_upper = jit(vmap([](const Array& hi) { return damped(i32(2), hi, kX); }))(uppers);
  for (int64_t b = 0; b < 4; ++b)
    EXPECT_ALLCLOSE(only_upper(b), f64(damped_oracle(2, hi[static_cast<size_t>(b)], kX.to_vector<double>())), 1e-14, 1e-14);
}

TEST(ForiLoopArrayBounds, TheCounterTakesTheBoundsCommonDtype) {
  DType seen = DType::Bool;
  auto record = [&](const Array& lo, const Array& hi) {
    lax::fori_loop(lo, hi, [&](const Array& i, const Array& c) { seen = i.dtype(); return c; }, Array(0.0));
    return seen;
  };
  EXPECT_EQ(record(i32(0), i32(3)), DType::Int32);
  EXPECT_EQ(record(0, lax::convert_element_type(Array(3), DType::Int64)), DType::Int64);
  EXPECT_EQ(record(lax::convert_element_type(Array(0), DType::Int16), Array(3)), DType::Int16);  // weak 3
}

TEST(ForiLoopArrayBounds, Differentiation) {
  // Known bounds: a scan, so reverse mode works, under jit of the derivative too.
  const Array one = i32(1), six = i32(6);
  auto loss = [&](const Array& x) { return jnp::sum(damped(one, six, x)); };
  test_util::check_grads(loss, std::tuple{kX}, {.order = 2, .modes = test_util::Modes::Rev});
  EXPECT_ALLCLOSE(jit(grad(loss))(kX), grad(loss)(kX), 1e-14, 1e-14);
  // Traced bounds: forward and reverse mode work.
  auto traced = [](const Array& lo, const Array& hi, const Array& x) { return damped(lo, hi, x); };
  Array t = f64({1.0, 0.5, -2.0});
  auto jvp_traced = jit([&](const Array& lo, const Array& hi, const Array& x) {
    return jvp([&](const Array& y) { return traced(lo, hi, y); }, x, t).second;
  });
  auto known = [&](const Array& x) { return damped(one, six, x); };
  EXPECT_ALLCLOSE(jvp_traced(i32(1), i32(6), kX), jnp::matmul(jacrev(known)(kX), t), 1e-13, 1e-13);
  auto grad_traced = jit([&](const Array& lo, const Array& hi, const Array& x) {
    return grad([&](const Array& y) { return jnp::sum(traced(lo, hi, y)); })(x);
  });
  // Reverse mode with traced bounds: the while's backward pass counts its trips at run time.
  EXPECT_ALLCLOSE(grad_traced(i32(1), i32(6), kX), grad([&](const Array& y) { return jnp::sum(known(y)); })(kX), 1e-13,
                  1e-13);
}

TEST(ForiLoopArrayBounds, BoundErrors) {
  auto body = [](const Array&, const Array& c) { return c; };
  EXPECT_JX_ERROR(lax::fori_loop(Array({0, 1}), i32(3), body, Array(1.0)), "[fori_loop]",
                  "lower must be an integer scalar", "i32[2]");
  EXPECT_JX_ERROR(lax::fori_loop(i32(0), Array(3.0), body, Array(1.0)), "[fori_loop]",
                  "upper must be an integer scalar", "f64");
  EXPECT_JX_ERROR(lax::fori_loop(Array(), i32(3), body, Array(1.0)), "[fori_loop]", "lower is a null jx::Array");
  EXPECT_JX_ERROR(lax::fori_loop(i32(0), Array(true), body, Array(1.0)), "[fori_loop]",
                  "upper must be an integer scalar", "bool[]");
  // The carry's structure, traced bounds (the while path) and known ones (the scan path).
  auto pair_body = [](const Array&, const Array& c) { return std::pair(c, c); };
  EXPECT_JX_ERROR(jit([&](const Array& hi) { return lax::fori_loop(i32(0), hi, pair_body, Array(1.0)); })(i32(2)),
                  "[fori_loop]", "body_fn must return a carry with the structure");
  EXPECT_JX_ERROR(lax::fori_loop(i32(0), i32(2), pair_body, Array(1.0)), "[fori_loop]",
                  "body_fn must return a carry with the structure");
}

}  // namespace
}  // namespace jx
