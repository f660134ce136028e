// Transformation rules of the binary-elementwise, reduction and cumulative families:
// derivatives against finite differences (jx::test_util::check_grads) and hand-derived
// values at the non-smooth points (ties, zeros), batching against a C++ loop over every
// in_axes combination, and the rule coverage of each primitive.
#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <string>

#include "grad_test_util.h"
#include "jx/jx.h"
#include "jx/test_util.h"
#include "op_table.h"
#include "test_util.h"

namespace jx {
namespace {
namespace jnp = jx::numpy;
using jx::testing::allclose;

// ---- data ----

// Uniform values in [lo, hi) (integers for integer dtypes), deterministic per seed.
Array random_array(const Shape& shape, DType dtype, uint64_t seed, double lo = -2.0, double hi = 2.0) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(shape_size(shape)));
  for (double& e : v) e = is_integer(dtype) || dtype == DType::Bool ? std::floor(dist(gen)) : dist(gen);
  if (dtype == DType::Bool) {
    for (double& e : v) e = e >= 0 ? 1 : 0;
  }
  return jnp::array(v, shape, dtype);
}

Array f64(std::vector<double> v) { return jnp::array(v, DType::Float64); }
Array f64(std::vector<double> v, const Shape& shape) { return jnp::array(v, shape, DType::Float64); }
Array scalar64(double v) { return jnp::array(std::vector<double>{v}, Shape{}, DType::Float64); }

using Fn1 = std::function<Array(const Array&)>;
using Fn2 = std::function<Array(const Array&, const Array&)>;

// ---- derivatives vs finite differences (away from non-smooth points) ----

// The op table's binary elementwise rows (operands of shape (2, 3) from the row).
bool is_binary_elementwise(const op_table::OpRow& row) {
  const Primitive* p = find_primitive(row.primitive);
  return row.arity == 2 && p && p->has(kElementwise);
}

// Each differentiable binary row to second order, in its smooth domain (rem: x / y away
// from integers; pow: positive bases, or integer exponents), the fixed operands held.
TEST(BinaryGrads, ElementwiseBinaryOrder2) {
  int checked = 0;
  for (const op_table::OpRow& row : op_table::rows()) {
    if (!is_binary_elementwise(row) || find_primitive(row.primitive)->has(kNotDifferentiable)) continue;
    if (!row.smooth && !row.example) continue;
    SCOPED_TRACE(row.label());
    std::vector<Array> args = row.operands(1);
    const bool hold_first = row.fixed_operands & 1u;
    auto f = [&](const Array& a, const Array& b) { return row.call1(std::vector<Array>{hold_first ? args[0] : a, b}); };
    JX_EXPECT_GRADS_OK(f, std::tuple{args[0], args[1]}, {.order = row.second_order ? 2 : 1});
    ++checked;
  }
  EXPECT_GE(checked, 11);  // add sub mul div pow (2) max min atan2 rem polygamma zeta
}

TEST(BinaryGrads, PowWithIntegerExponent) {
  // Negative bases are fine with integer exponents; the exponent carries no tangent.
  Array x = f64({-1.5, 0.7, 2.0, -0.3}, {4});
  Array n = jnp::array(std::vector<int>{3, -2, 0, 1}, Shape{4}, DType::Int32);
  JX_EXPECT_GRADS_OK([](const Array& a, const Array& b) { return lax::pow(a, b); }, std::tuple{x, n}, {.order = 2});
  // d/dx x^0 = 0 even at x = 0 (the y = 0 mask), d/dx x^1 = 1 at 0.
  Array zero = f64({0.0, 0.0});
  Array exps = jnp::array(std::vector<int>{0, 1}, Shape{2}, DType::Int32);
  auto [out, t] = jvp([&](const Array& a) { return lax::pow(a, exps); }, zero, f64({1.0, 1.0}));
  EXPECT_ALLCLOSE(t, f64({0.0, 1.0}));
}

TEST(BinaryGrads, PowAtZeroBase) {
  // JAX: d/dy x^y = log(x) x^y taken as 0 at x = 0; d/dx 0^2 = 2 * 0^1 = 0.
  Array x = f64({0.0, 0.0}), y = f64({2.0, 3.0});
  auto [out, tx] = jvp([&](const Array& a) { return lax::pow(a, y); }, x, f64({1.0, 1.0}));
  EXPECT_ALLCLOSE(tx, f64({0.0, 0.0}));
  auto [out2, ty] = jvp([&](const Array& b) { return lax::pow(x, b); }, y, f64({1.0, 1.0}));
  EXPECT_ALLCLOSE(ty, f64({0.0, 0.0}));
  EXPECT_FALSE(std::isnan(ty.to_vector<double>()[0]));
}

TEST(BinaryGrads, IntegerPow) {
  Array x = f64({-1.5, 0.7, 2.0, -0.3}, {4});
  for (int64_t n : {3, 2, 1, -2}) {
    SCOPED_TRACE("y=" + std::to_string(n));
    JX_EXPECT_GRADS_OK([n](const Array& a) { return lax::integer_pow(a, n); }, std::tuple{x}, {.order = 2});
  }
  // y = 0: a constant, so a zero tangent.
  auto [out, t] = jvp([](const Array& a) { return lax::integer_pow(a, 0); }, x, jnp::ones_like(x));
  EXPECT_ALLCLOSE(t, jnp::zeros_like(x));
  // 3 x^2 at 2 by hand; second derivative 6x.
  auto cube = [](const Array& a) { return lax::integer_pow(a, 3); };
  EXPECT_NEAR(grad(cube)(scalar64(2.0)).item<double>(), 12.0, 1e-12);
  EXPECT_NEAR(grad(grad(cube))(scalar64(2.0)).item<double>(), 12.0, 1e-12);
}

TEST(BinaryGrads, RemTangentsByHand) {
  // rem(x, y) = x - trunc(x / y) y: dx = 1, dy = -trunc(x / y).
  Array x = f64({7.5, -7.5}), y = f64({2.0, 2.0});
  auto [out, ty] = jvp([&](const Array& b) { return lax::rem(x, b); }, y, f64({1.0, 1.0}));
  EXPECT_ALLCLOSE(ty, f64({-3.0, 3.0}));
  auto [out2, tx] = jvp([&](const Array& a) { return lax::rem(a, y); }, x, f64({1.0, 1.0}));
  EXPECT_ALLCLOSE(tx, f64({1.0, 1.0}));
}

TEST(BinaryGrads, MaxMinSplitTiesInHalf) {
  Array x = f64({1.0, 2.0, 3.0}), y = f64({1.0, 5.0, 0.0});
  for (auto op : {lax::max, lax::min}) {
    auto [gx, gy] = grad([op](const Array& a, const Array& b) { return lax::reduce_sum(op(a, b), {0}); },
                         argnums<0, 1>)(x, y);
    bool is_max = op == static_cast<Array (*)(const Array&, const Array&)>(lax::max);
    EXPECT_ALLCLOSE(gx, is_max ? f64({0.5, 0.0, 1.0}) : f64({0.5, 1.0, 0.0}));
    EXPECT_ALLCLOSE(gy, is_max ? f64({0.5, 1.0, 0.0}) : f64({0.5, 0.0, 1.0}));
  }
}

TEST(BinaryGrads, Clamp) {
  // x strictly inside, below and above the bounds (away from the kinks for differences).
  Array lo = f64({0.0, 0.0, 0.0, -1.0}), hi = f64({1.0, 1.0, 1.0, 2.0});
  Array x = f64({0.5, -0.7, 1.6, 0.3});
  JX_EXPECT_GRADS_OK([](const Array& l, const Array& v, const Array& h) { return lax::clamp(l, v, h); },
                     std::tuple{lo, x, hi}, {.order = 2});
  auto f = [](const Array& l, const Array& v, const Array& h) { return lax::reduce_sum(lax::clamp(l, v, h), {0}); };
  auto [gl, gx, gh] = grad(f, argnums<0, 1, 2>)(lo, x, hi);
  EXPECT_ALLCLOSE(gx, f64({1.0, 0.0, 0.0, 1.0}));
  EXPECT_ALLCLOSE(gl, f64({0.0, 1.0, 0.0, 0.0}));
  EXPECT_ALLCLOSE(gh, f64({0.0, 0.0, 1.0, 0.0}));
  // 0-d bounds: their gradients sum over the elements they bound.
  auto [sl, sx, sh] = grad(f, argnums<0, 1, 2>)(scalar64(0.0), f64({-1.0, 0.5, 2.0, 3.0}), scalar64(1.0));
  EXPECT_NEAR(sl.item<double>(), 1.0, 1e-12);
  EXPECT_NEAR(sh.item<double>(), 2.0, 1e-12);
  EXPECT_ALLCLOSE(sx, f64({0.0, 1.0, 0.0, 0.0}));
  JX_EXPECT_GRADS_OK([](const Array& l, const Array& v, const Array& h) { return lax::clamp(l, v, h); },
                     std::tuple{scalar64(0.0), f64({-1.0, 0.5, 2.0}), scalar64(1.0)}, {.order = 2});
}

TEST(BinaryGrads, NotDifferentiableOutputsCarryZeroTangents) {
  Array x = f64({1.0, 2.0, 3.0}), y = f64({2.0, 2.0, 2.0});
  auto [out, t] = jvp([&](const Array& a) { return lax::nextafter(a, y); }, x, jnp::ones_like(x));
  EXPECT_ALLCLOSE(t, jnp::zeros_like(x));
  // A comparison used as a mask: only the multiplied value carries the derivative.
  auto masked = [&](const Array& a) {
    return lax::reduce_sum(lax::mul(a, lax::convert_element_type(lax::lt(a, y), DType::Float64)), {0});
  };
  EXPECT_ALLCLOSE(grad(masked)(x), f64({1.0, 0.0, 0.0}));
}

// ---- reductions ----

TEST(ReductionGrads, FiniteDifferences) {
  Array x = random_array({2, 3, 4}, DType::Float64, 7, 0.5, 1.5);
  for (std::vector<int64_t> axes : std::vector<std::vector<int64_t>>{{0}, {1}, {2, 0}, {0, 1, 2}, {}}) {
    SCOPED_TRACE("axes size " + std::to_string(axes.size()));
    JX_EXPECT_GRADS_OK([axes](const Array& a) { return lax::reduce_prod(a, axes); }, std::tuple{x}, {.order = 2});
    JX_EXPECT_GRADS_OK([axes](const Array& a) { return lax::reduce_max(a, axes); }, std::tuple{x}, {.order = 2});
    JX_EXPECT_GRADS_OK([axes](const Array& a) { return lax::reduce_min(a, axes); }, std::tuple{x}, {.order = 2});
  }
}

TEST(ReductionGrads, ProdWithZeros) {
  auto prod = [](const Array& a) { return lax::reduce_prod(a, {0}); };
  // d/dx_i prod = product of the others, by hand.
  EXPECT_ALLCLOSE(grad(prod)(f64({2.0, 0.0, 3.0})), f64({0.0, 6.0, 0.0}));
  EXPECT_ALLCLOSE(grad(prod)(f64({0.0, 0.0, 3.0})), f64({0.0, 0.0, 0.0}));
  EXPECT_ALLCLOSE(grad(prod)(f64({5.0})), f64({1.0}));
  // Several reduced axes, one zero: only the zero's gradient survives.
  Array m = f64({2.0, 0.0, 3.0, 4.0, 1.0, 5.0}, {2, 3});
  auto prod_all = [](const Array& a) { return lax::reduce_prod(a, {1, 0}); };
  EXPECT_ALLCLOSE(grad(prod_all)(m), f64({0.0, 120.0, 0.0, 0.0, 0.0, 0.0}, {2, 3}));
  // Second derivative at a zero: d2/dx0 dx1 of x0 x1 x2 = x2.
  auto d0 = [&](const Array& a) { return lax::reduce_sum(lax::mul(grad(prod)(a), f64({1.0, 0.0, 0.0})), {0}); };
  EXPECT_ALLCLOSE(grad(d0)(f64({0.0, 0.0, 3.0})), f64({0.0, 3.0, 0.0}));
  // Along axis 1 of a matrix with zeros, per row.
  auto prod_rows = [](const Array& a) { return lax::reduce_sum(lax::reduce_prod(a, {1}), {0}); };
  EXPECT_ALLCLOSE(grad(prod_rows)(m), f64({0.0, 6.0, 0.0, 5.0, 20.0, 4.0}, {2, 3}));
}

TEST(ReductionGrads, MaxMinAverageTies) {
  Array x = f64({3.0, 1.0, 3.0, 2.0});
  auto [out, t] = jvp([](const Array& a) { return lax::reduce_max(a, {0}); }, x, f64({1.0, 10.0, 3.0, 7.0}));
  EXPECT_NEAR(t.item<double>(), 2.0, 1e-12);  // (1 + 3) / 2
  EXPECT_ALLCLOSE(grad([](const Array& a) { return lax::reduce_min(a, {0}); })(f64({1.0, 1.0, 1.0, 2.0})),
                  f64({1.0 / 3, 1.0 / 3, 1.0 / 3, 0.0}));
}

// ---- cumulative ----

TEST(CumulativeGrads, FiniteDifferences) {
  Array x = random_array({3, 5}, DType::Float64, 11, 0.5, 1.5);
  for (int64_t axis : {0, 1}) {
    for (bool reverse : {false, true}) {
      SCOPED_TRACE("axis " + std::to_string(axis) + (reverse ? " reverse" : ""));
      JX_EXPECT_GRADS_OK([=](const Array& a) { return lax::cumsum(a, axis, reverse); }, std::tuple{x}, {.order = 2});
      JX_EXPECT_GRADS_OK([=](const Array& a) { return lax::cumprod(a, axis, reverse); }, std::tuple{x}, {.order = 2});
      JX_EXPECT_GRADS_OK([=](const Array& a) { return lax::cummax(a, axis, reverse); }, std::tuple{x}, {.order = 2});
      JX_EXPECT_GRADS_OK([=](const Array& a) { return lax::cummin(a, axis, reverse); }, std::tuple{x}, {.order = 2});
    }
  }
}

TEST(CumulativeGrads, CumsumTransposeIsReverseCumsum) {
  Array c = f64({1.0, 2.0, 3.0, 4.0});
  auto [out, pullback] = vjp([](const Array& a) { return lax::cumsum(a, 0); }, f64({0.0, 0.0, 0.0, 0.0}));
  EXPECT_ALLCLOSE(std::get<0>(pullback(c)), f64({10.0, 9.0, 7.0, 4.0}));
  auto [out2, pullback2] = vjp([](const Array& a) { return lax::cumsum(a, 0, true); }, f64({0.0, 0.0, 0.0, 0.0}));
  EXPECT_ALLCLOSE(std::get<0>(pullback2(c)), f64({1.0, 3.0, 6.0, 10.0}));
}

TEST(CumulativeGrads, CumprodWithZeros) {
  // sum(cumprod([a, b, c])) = a + ab + abc: gradient (1 + b + bc, a + ac, ab).
  auto f = [](const Array& x) { return lax::reduce_sum(lax::cumprod(x, 0), {0}); };
  EXPECT_ALLCLOSE(grad(f)(f64({2.0, 0.0, 3.0})), f64({1.0, 8.0, 0.0}));
  EXPECT_ALLCLOSE(grad(f)(f64({0.0, 0.0, 3.0})), f64({1.0, 0.0, 0.0}));
  // Reverse: c + bc + abc: gradient (bc, c + ac, 1 + b + ab).
  auto r = [](const Array& x) { return lax::reduce_sum(lax::cumprod(x, 0, true), {0}); };
  EXPECT_ALLCLOSE(grad(r)(f64({2.0, 0.0, 3.0})), f64({0.0, 9.0, 1.0}));
  // Hessian entry d2/da db of a + ab + abc = 1 + c.
  auto dfa = [&](const Array& x) { return lax::reduce_sum(lax::mul(grad(f)(x), f64({1.0, 0.0, 0.0})), {0}); };
  EXPECT_ALLCLOSE(grad(dfa)(f64({2.0, 0.0, 3.0})), f64({0.0, 4.0, 0.0}));
}

TEST(CumulativeGrads, CummaxTakesTheSelectedTangent) {
  // Running max of [1, 3, 2, 3, 5]: selected positions 0, 1, 1, 3 (latest tie), 4.
  Array x = f64({1.0, 3.0, 2.0, 3.0, 5.0});
  Array t = f64({1.0, 10.0, 100.0, 1000.0, 10000.0});
  auto [out, tan] = jvp([](const Array& a) { return lax::cummax(a, 0); }, x, t);
  EXPECT_ALLCLOSE(out, f64({1.0, 3.0, 3.0, 3.0, 5.0}));
  EXPECT_ALLCLOSE(tan, f64({1.0, 10.0, 10.0, 1000.0, 10000.0}));
  // Reverse cummin of [4, 2, 3, 2, 5]: selected 1 (latest in reverse order: the smallest
  // index of the tie), 1, 3, 3, 4.
  auto [out2, tan2] = jvp([](const Array& a) { return lax::cummin(a, 0, true); }, f64({4.0, 2.0, 3.0, 2.0, 5.0}), t);
  EXPECT_ALLCLOSE(out2, f64({2.0, 2.0, 2.0, 2.0, 5.0}));
  EXPECT_ALLCLOSE(tan2, f64({10.0, 10.0, 1000.0, 1000.0, 10000.0}));
}

// ---- compositions ----

TEST(Compositions, VmapOfGradAndGradOfGrad) {
  auto f = [](const Array& x) { return lax::reduce_prod(lax::max(x, lax::integer_pow(x, 2)), {0}); };
  Array xs = random_array({4, 3}, DType::Float64, 5, 0.2, 1.8);
  Array g = vmap(grad(f))(xs);
  for (int64_t i = 0; i < 4; ++i) {
    Array row = lax::reshape(lax::slice(xs, {i, 0}, {i + 1, 3}), {3});
    Array want = grad(f)(row);
    EXPECT_ALLCLOSE(lax::reshape(lax::slice(g, {i, 0}, {i + 1, 3}), {3}), want, 1e-12, 1e-12);
  }
  auto h = [](const Array& x) { return lax::reduce_sum(lax::cumprod(lax::atan2(x, lax::integer_pow(x, 2)), 0), {0}); };
  Array gh = vmap(grad(h), {.in_axes = {1}})(lax::transpose(xs, {1, 0}));
  for (int64_t i = 0; i < 4; ++i) {
    Array row = lax::reshape(lax::slice(xs, {i, 0}, {i + 1, 3}), {3});
    EXPECT_ALLCLOSE(lax::reshape(lax::slice(gh, {i, 0}, {i + 1, 3}), {3}), grad(h)(row), 1e-12, 1e-12);
  }
  // grad of grad of a scalar function: d2/dx2 pow(x, 2.5) = 2.5 * 1.5 * x^0.5.
  auto p = [](const Array& x) { return lax::pow(x, scalar64(2.5)); };
  EXPECT_NEAR(grad(grad(p))(scalar64(4.0)).item<double>(), 2.5 * 1.5 * 2.0, 1e-10);
  // vmap of grad of clamp with an unmapped scalar bound.
  auto c = [](const Array& x) { return lax::reduce_sum(lax::clamp(scalar64(0.0), x, scalar64(1.0)), {0}); };
  Array cg = vmap(grad(c))(f64({-1.0, 0.5, 2.0, 0.2, 0.3, 0.4}, {2, 3}));
  EXPECT_ALLCLOSE(cg, f64({0.0, 1.0, 0.0, 1.0, 1.0, 1.0}, {2, 3}));
}

// ---- batching vs a loop ----

using FlatFn = std::function<Array(std::span<const Array>)>;

// For every in_axes combination (each operand at axis 0, at its last axis, or not
// mapped; at least one mapped) and batch sizes 3 and 1: vmap(f) equals stacking f over
// the batch members.
void check_batching(const std::string& name, const FlatFn& f, const std::vector<Array>& unbatched_examples,
                    uint64_t seed = 0) {
  const size_t n = unbatched_examples.size();
  size_t combos = 1;
  for (size_t i = 0; i < n; ++i) combos *= 3;
  for (int64_t batch : {3, 1}) {
    for (size_t code = 0; code < combos; ++code) {
      std::vector<std::optional<int64_t>> in_axes;
      std::vector<Array> args;
      std::vector<std::vector<Array>> members(n);
      size_t c = code;
      bool any = false;
      std::string desc = name + " batch " + std::to_string(batch) + " in_axes (";
      for (size_t i = 0; i < n; ++i, c /= 3) {
        const Array& ex = unbatched_examples[i];
        int kind = static_cast<int>(c % 3);
        if (kind == 2) {
          in_axes.push_back(std::nullopt);
          args.push_back(ex);
          desc += "none ";
          continue;
        }
        any = true;
        int64_t axis = kind == 0 ? 0 : ex.ndim();
        std::vector<Array> ms;
        for (int64_t b = 0; b < batch; ++b)
          ms.push_back(random_array(ex.shape(), ex.dtype(), seed + 1000 * i + 17 * b + code, -3.0, 3.0));
        members[i] = ms;
        in_axes.push_back(axis);
        args.push_back(jnp::stack(ms, axis));
        desc += std::to_string(axis) + " ";
      }
      if (!any) continue;
      desc += ")";
      SCOPED_TRACE(desc);
      std::vector<Array> loop;
      for (int64_t b = 0; b < batch; ++b) {
        std::vector<Array> xs;
        for (size_t i = 0; i < n; ++i) xs.push_back(in_axes[i] ? members[i][b] : args[i]);
        loop.push_back(f(xs));
      }
      Array want = jnp::stack(loop, 0);
      jx::detail::FlatFn flat = [&](std::span<const Array> xs) { return std::vector<Array>{f(xs)}; };
      std::vector<std::optional<int64_t>> out_axes{0};
      Array got = jx::detail::vmap_flat(flat, args, in_axes, out_axes, BatchAxis{})[0];
      EXPECT_ALLCLOSE(got, want, 1e-12, 1e-12);
    }
  }
}

// Every binary elementwise row and integer_pow's exponents, with the row's operand
// dtypes (float, integer and bool operands; pow with an integer exponent).
TEST(Batching, ElementwiseBinary) {
  int checked = 0;
  for (const op_table::OpRow& row : op_table::rows()) {
    if (!is_binary_elementwise(row) && row.primitive != "integer_pow") continue;
    check_batching(row.label(), [&row](std::span<const Array> a) { return row.call1(a); }, row.operands(1));
    ++checked;
  }
  EXPECT_GE(checked, 30);  // 27 binary rows and integer_pow's exponents: the table is not silently empty
}

TEST(Batching, Clamp) {
  auto clamp = [](std::span<const Array> a) { return lax::clamp(a[0], a[1], a[2]); };
  Array x = random_array({2, 3}, DType::Float64, 9);
  // Scalar bounds (mapped or not), array bounds.
  check_batching("clamp scalar bounds", clamp, {scalar64(-1.0), x, scalar64(1.0)});
  check_batching("clamp array bounds", clamp,
                 {random_array({2, 3}, DType::Float64, 10, -2, 0), x, random_array({2, 3}, DType::Float64, 11, 0, 2)});
  check_batching("clamp mixed", clamp, {scalar64(-0.5), x, random_array({2, 3}, DType::Float64, 12, 0, 2)});
}

TEST(Batching, Reductions) {
  Array x = random_array({2, 3, 4}, DType::Float64, 13);
  Array bits = random_array({2, 3, 4}, DType::Bool, 14);
  for (std::vector<int64_t> axes : std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {0, 2}, {}}) {
    auto r = [axes](Array (*op)(const Array&, const std::vector<int64_t>&)) {
      return [op, axes](std::span<const Array> a) { return op(a[0], axes); };
    };
    check_batching("reduce_prod", r(lax::reduce_prod), {x});
    check_batching("reduce_max", r(lax::reduce_max), {x});
    check_batching("reduce_min", r(lax::reduce_min), {x});
    check_batching("reduce_and", r(lax::reduce_and), {bits});
    check_batching("reduce_or", r(lax::reduce_or), {bits});
  }
  for (int64_t axis : {0, 1, 2}) {
    auto am = [axis](std::span<const Array> a) { return lax::argmax(a[0], axis, DType::Int64); };
    auto an = [axis](std::span<const Array> a) { return lax::argmin(a[0], axis, DType::Int32); };
    check_batching("argmax", am, {x});
    check_batching("argmin", an, {x});
  }
  // argmax keeps its index dtype under vmap.
  EXPECT_EQ(vmap([](const Array& a) { return lax::argmax(a, 0, DType::Int64); })(x).dtype(), DType::Int64);
}

TEST(Batching, Cumulative) {
  Array x = random_array({3, 4}, DType::Float64, 15);
  for (int64_t axis : {0, 1}) {
    for (bool reverse : {false, true}) {
      auto c = [axis, reverse](Array (*op)(const Array&, int64_t, bool)) {
        return [op, axis, reverse](std::span<const Array> a) { return op(a[0], axis, reverse); };
      };
      check_batching("cumsum", c(lax::cumsum), {x});
      check_batching("cumprod", c(lax::cumprod), {x});
      check_batching("cummax", c(lax::cummax), {x});
      check_batching("cummin", c(lax::cummin), {x});
    }
  }
}

TEST(Batching, OfJvpRules) {
  // vmap over the tangent rules themselves (every in_axes combination).
  auto jvp_of = [](Array (*op)(const Array&, const Array&)) {
    return [op](std::span<const Array> a) {
      return jvp([&](const Array& x, const Array& y) { return op(x, y); }, std::tuple{a[0], a[1]},
                 std::tuple{a[2], a[3]})
          .second;
    };
  };
  Array f = random_array({3}, DType::Float64, 20, 0.5, 2.0), g = random_array({3}, DType::Float64, 21, 0.5, 2.0);
  check_batching("jvp pow", jvp_of(lax::pow), {f, g, f, g});
  check_batching("jvp max", jvp_of(lax::max), {f, g, g, f});
  auto cumprod_jvp = [](std::span<const Array> a) {
    return jvp([](const Array& x) { return lax::cumprod(x, 0); }, a[0], a[1]).second;
  };
  check_batching("jvp cumprod", cumprod_jvp, {f, g});
  auto prod_jvp = [](std::span<const Array> a) {
    return jvp([](const Array& x) { return lax::reduce_prod(x, {0}); }, a[0], a[1]).second;
  };
  check_batching("jvp reduce_prod", prod_jvp, {f, g});
}

// ---- coverage and errors ----

// Every primitive of the op table has the rules its traits promise.
TEST(Rules, EveryPrimitiveOfTheFamilyHasItsRules) {
  for (const op_table::OpRow& row : op_table::rows()) {
    SCOPED_TRACE(row.label());
    const Primitive* p = find_primitive(row.primitive);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(static_cast<bool>(p->rules().batch));
    EXPECT_NE(static_cast<bool>(p->rules().jvp), p->has(kNotDifferentiable));
    EXPECT_EQ(static_cast<bool>(p->rules().transpose), p->has(kLinear));
  }
  EXPECT_TRUE(find_primitive("cumsum")->has(kLinear));
}

TEST(Rules, TheGradientOracleIsLive) {
  // check_grads must reject a function whose derivative is wrong (stop_gradient hides
  // half of d(x^2)), or the checks above would prove nothing.
  EXPECT_ANY_THROW(jx::test_util::check_grads([](const Array& a) { return lax::mul(a, stop_gradient(a)); },
                                              std::tuple{f64({0.5, 1.5})}));
}

TEST(Rules, ErrorsUnderTransformations) {
  // A clamp bound of the wrong shape is rejected by the shape rule under vmap too.
  auto c = [](const Array& lo, const Array& x) { return lax::clamp(lo, x, scalar64(1.0)); };
  EXPECT_JX_ERROR((vmap(c, {.in_axes = {0, not_mapped}})(jnp::zeros({2, 2}, DType::Float64),
                                                          jnp::zeros({3}, DType::Float64))),
                  "[clamp]", "lo must be a scalar or have the shape of x");
  // Differentiating through the integer output of argmax yields no gradient path, and
  // an integer input cannot be differentiated.
  EXPECT_JX_ERROR(grad([](const Array& a) { return lax::convert_element_type(lax::argmax(a, 0), DType::Float32); })(
                      jnp::array(std::vector<int>{1, 2}, Shape{2}, DType::Int32)),
                  "grad", "i32[2]");
}

}  // namespace
}  // namespace jx
