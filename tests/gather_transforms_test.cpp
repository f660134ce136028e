// Transformation rules of gather and the scatter family: jvp against central finite
// differences in float64, transposes against the vjp identity <J t, c> == <t, J^T c>,
// second order through the same checks, and vmap against a loop over the batch.
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "jx/jx.h"
#include "test_util.h"

namespace jx {
namespace {
namespace jnp = jx::numpy;

using Args = std::vector<Array>;
using Fn = std::function<Array(const Args&)>;

// ---- data ----

// Deterministic pseudo-random doubles in [-1, 1) (an LCG, so tests are reproducible).
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed * 6364136223846793005ull + 1442695040888963407ull) {}
  double next() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) / static_cast<double>(1ull << 53) * 2.0 - 1.0;
  }
  int64_t below(int64_t n) { return static_cast<int64_t>((next() + 1.0) / 2.0 * static_cast<double>(n)) % n; }
};

Array random_f64(const Shape& shape, uint64_t seed) {
  Rng rng(seed);
  std::vector<double> v(static_cast<size_t>(shape_size(shape)));
  for (double& x : v) x = rng.next();
  return Array(v, shape);
}

Array random_indices(const Shape& shape, int64_t bound, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> v(static_cast<size_t>(shape_size(shape)));
  for (int32_t& x : v) x = static_cast<int32_t>(rng.below(bound));
  return Array(v, shape);
}

Array axpy(double a, const Array& x, const Array& y) { return x * a + y; }

double dot_all(const Array& a, const Array& b) {
  auto x = lax::convert_element_type(a, DType::Float64).to_vector<double>();
  auto y = lax::convert_element_type(b, DType::Float64).to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

// ---- derivative oracles ----

std::pair<Array, Array> jvp_of(const Fn& f, const Args& xs, const Args& ts) {
  return jx::jvp(f, std::tuple<Args>(xs), std::tuple<Args>(ts));
}

// jvp along random directions equals the central difference (f(x+eps t) - f(x-eps t)) / 2eps.
void check_jvp_fd(const Fn& f, const Args& xs, uint64_t seed, double tol = 1e-6) {
  Args ts, plus, minus;
  const double eps = 1e-5;
  for (size_t i = 0; i < xs.size(); ++i) {
    ts.push_back(random_f64(xs[i].shape(), seed + 17 * i));
    plus.push_back(axpy(eps, ts[i], xs[i]));
    minus.push_back(axpy(-eps, ts[i], xs[i]));
  }
  auto [y, ty] = jvp_of(f, xs, ts);
  EXPECT_ALLCLOSE(y, f(xs), 1e-12, 1e-12);
  Array fd = (f(plus) - f(minus)) / (2 * eps);
  EXPECT_ALLCLOSE(ty, fd, tol, tol);
}

// The vjp is the transpose of the jvp: <J t, c> == <t, J^T c>.
void check_vjp_identity(const Fn& f, const Args& xs, uint64_t seed) {
  Args ts;
  for (size_t i = 0; i < xs.size(); ++i) ts.push_back(random_f64(xs[i].shape(), seed + 31 * i));
  auto [y, jt] = jvp_of(f, xs, ts);
  Array c = random_f64(y.shape(), seed + 1000);
  auto [y2, pullback] = jx::vjp(f, xs);
  auto [jtc] = pullback(c);
  ASSERT_EQ(jtc.size(), xs.size());
  double rhs = 0;
  for (size_t i = 0; i < xs.size(); ++i) rhs += dot_all(ts[i], jtc[i]);
  EXPECT_NEAR(dot_all(jt, c), rhs, 1e-10 * (1 + std::abs(rhs)));
}

// First and second order: the checks above on f, and the jvp check on x -> J(x) t.
void check_all(const Fn& f, const Args& xs, uint64_t seed, bool second_order = true) {
  check_jvp_fd(f, xs, seed);
  check_vjp_identity(f, xs, seed);
  if (!second_order) return;
  Args fixed;
  for (size_t i = 0; i < xs.size(); ++i) fixed.push_back(random_f64(xs[i].shape(), seed + 77 * i));
  Fn tangent_of_f = [f, fixed](const Args& x) { return jvp_of(f, x, fixed).second; };
  check_jvp_fd(tangent_of_f, xs, seed + 5);
  check_vjp_identity(tangent_of_f, xs, seed + 6);
}

// ---- the primitives under test ----

// x[idx, :] for x of shape (5, 4): one index component, whole rows.
const lax::GatherDimensionNumbers kRows{{1}, {0}, {0}};
const Shape kRowSizes{1, 4};
// 2x2 windows at (i, j): two index components, nothing collapsed.
const lax::GatherDimensionNumbers kBlocks{{1, 2}, {}, {0, 1}};
const Shape kBlockSizes{2, 2};
// Rows of updates written into rows of x.
const lax::ScatterDimensionNumbers kRowScatter{{1}, {0}, {0}};

Array gather_rows(const Array& x, const Array& idx, lax::GatherScatterMode mode = lax::GatherScatterMode::Clip,
                  const Array& fill = Array()) {
  return lax::gather(x, idx, kRows, kRowSizes, mode, fill);
}

using ScatterFn = Array (*)(const Array&, const Array&, const Array&, const lax::ScatterDimensionNumbers&,
                            lax::GatherScatterMode);

// ---- gather ----

TEST(GatherTransforms, GatherRowsDerivatives) {
  Array x = random_f64({5, 4}, 1);
  Array idx = Array(std::vector<int32_t>{3, 0, 3}, {3, 1});  // a repeated row sums in the transpose
  check_all([idx](const Args& a) { return lax::mul(gather_rows(a[0], idx), gather_rows(a[0], idx)); }, {x}, 2);
}

TEST(GatherTransforms, GatherBlocksClipMatchesItsTranspose) {
  // Out-of-range starts are clamped; the transpose must scatter into the clamped windows.
  Array x = random_f64({5, 4}, 3);
  Array idx = Array(std::vector<int32_t>{0, 0, 4, 3, -2, 1, 2, 9}, {4, 2});
  check_all([idx](const Args& a) { return lax::gather(a[0], idx, kBlocks, kBlockSizes); }, {x}, 4, false);
  // The clamped window of (4, 3) is rows 3..4, cols 2..3: its cotangent lands there.
  auto [y, pullback] = jx::vjp([idx](const Array& a) { return lax::gather(a, idx, kBlocks, kBlockSizes); }, x);
  Array ct = jnp::zeros({4, 2, 2}, DType::Float64);
  ct = lax::dynamic_update_slice(ct, jnp::ones({1, 2, 2}, DType::Float64), {Array(1), Array(0), Array(0)});
  auto [gx] = pullback(ct);
  std::vector<double> want(20, 0.0);
  for (int r = 3; r < 5; ++r)
    for (int c = 2; c < 4; ++c) want[static_cast<size_t>(r * 4 + c)] = 1.0;
  EXPECT_ALLCLOSE(gx, Array(want, {5, 4}));
}

TEST(GatherTransforms, GatherFillOrDropDerivatives) {
  Array x = random_f64({5, 4}, 5);
  Array idx = Array(std::vector<int32_t>{1, 7, -1, 4}, {4, 1});  // two windows out of bounds
  auto fill_mode = lax::GatherScatterMode::FillOrDrop;
  // Without a fill value the out-of-bounds tangent is zero (not the NaN fill).
  auto [y, t] = jx::jvp([&](const Array& a) { return gather_rows(a, idx, fill_mode); }, x, jnp::ones({5, 4}, DType::Float64));
  std::vector<double> want(16, 1.0);
  for (int k = 4; k < 12; ++k) want[static_cast<size_t>(k)] = 0.0;
  EXPECT_ALLCLOSE(t, Array(want, {4, 4}));
  // With a differentiable fill value: it reaches exactly the out-of-bounds windows.
  Fn f = [idx, fill_mode](const Args& a) { return gather_rows(a[0], idx, fill_mode, a[1]); };
  check_all(f, {x, Array(0.25)}, 6);
  auto [y2, pullback] = jx::vjp(f, Args{x, Array(0.25)});
  auto [g] = pullback(jnp::ones({4, 4}, DType::Float64));
  EXPECT_NEAR(g[1].item<double>(), 8.0, 1e-12);
}

// ---- scatter family ----

TEST(GatherTransforms, ScatterSetDerivatives) {
  Array x = random_f64({5, 4}, 7), u = random_f64({3, 4}, 8);
  Array idx = Array(std::vector<int32_t>{4, 0, 2}, {3, 1});
  Fn f = [idx](const Args& a) { return lax::scatter(a[0], idx, a[1], kRowScatter); };
  check_all(f, {x, u}, 9);
  // Out-of-bounds (dropped) and clamped updates.
  Array oob = Array(std::vector<int32_t>{4, 9, -3}, {3, 1});
  check_all([oob](const Args& a) { return lax::scatter(a[0], oob, a[1], kRowScatter); }, {x, u}, 10, false);
  // Clamped: 9 -> 4 and -3 -> 0, still unique.
  Array clipped = Array(std::vector<int32_t>{2, 9, -3}, {3, 1});
  check_all([clipped](const Args& a) {
    return lax::scatter(a[0], clipped, a[1], kRowScatter, lax::GatherScatterMode::Clip);
  }, {x, u}, 12, false);
}

TEST(GatherTransforms, ScatterAddDerivatives) {
  Array x = random_f64({5, 4}, 13), u = random_f64({4, 4}, 14);
  Array idx = Array(std::vector<int32_t>{1, 3, 1, 7}, {4, 1});  // repeated and dropped
  check_all([idx](const Args& a) {
    Array s = lax::scatter_add(a[0], idx, a[1], kRowScatter);
    return lax::mul(s, s);
  }, {x, u}, 15);
  Array clip_idx = Array(std::vector<int32_t>{1, 3, -1, 7}, {4, 1});
  check_all([clip_idx](const Args& a) {
    return lax::scatter_add(a[0], clip_idx, a[1], kRowScatter, lax::GatherScatterMode::Clip);
  }, {x, u}, 16, false);
}

TEST(GatherTransforms, ScatterMulDerivatives) {
  Array x = random_f64({5, 4}, 17), u = random_f64({3, 4}, 18);
  Array idx = Array(std::vector<int32_t>{4, 0, 2}, {3, 1});  // unique: the updates' rule is exact
  check_all([idx](const Args& a) { return lax::scatter_mul(a[0], idx, a[1], kRowScatter); }, {x, u}, 19);
  // Repeated indices: the operand's tangent stays exact.
  Array rep = Array(std::vector<int32_t>{2, 2, 0}, {3, 1});
  check_all([rep, u](const Args& a) { return lax::scatter_mul(a[0], rep, u, kRowScatter); }, {x}, 20);
  // A zero update is differentiated exactly (no division by the update).
  Array z = Array(std::vector<double>{2.0, 5.0}, {2});
  Array one = Array(std::vector<int32_t>{1}, {1, 1});
  const lax::ScatterDimensionNumbers elems{{}, {0}, {0}};
  auto [y, t] = jx::jvp([&](const Array& v) { return lax::scatter_mul(z, one, v, elems); },
                        Array(std::vector<double>{0.0}, {1}), Array(std::vector<double>{1.0}, {1}));
  EXPECT_ALLCLOSE(t, Array(std::vector<double>{0.0, 5.0}, {2}));
}

TEST(GatherTransforms, ScatterMinMaxDerivatives) {
  Array x = random_f64({5, 4}, 21), u = random_f64({4, 4}, 22);
  Array idx = Array(std::vector<int32_t>{1, 3, 1, 8}, {4, 1});  // repeated and dropped
  check_all([idx](const Args& a) { return lax::scatter_max(a[0], idx, a[1], kRowScatter); }, {x, u}, 23, false);
  check_all([idx](const Args& a) { return lax::scatter_min(a[0], idx, a[1], kRowScatter); }, {x, u}, 24, false);
  check_all([idx](const Args& a) {
    return lax::scatter_min(a[0], idx, a[1], kRowScatter, lax::GatherScatterMode::Clip);
  }, {x, u}, 25, false);
}

TEST(GatherTransforms, ScatterExtremalTiesAverage) {
  // out[0] = max(1, 1, 1) is a three-way tie: the tangent is the mean of the three.
  const lax::ScatterDimensionNumbers elems{{}, {0}, {0}};
  Array x = Array(std::vector<double>{1.0, 2.0}, {2});
  Array u = Array(std::vector<double>{1.0, 1.0, 0.5}, {3});
  Array idx = Array(std::vector<int32_t>{0, 0, 1}, {3, 1});
  auto f = [&](const Args& a) { return lax::scatter_max(a[0], idx, a[1], elems); };
  auto [y, t] = jvp_of(f, {x, u}, {Array(std::vector<double>{3.0, 1.0}, {2}), Array(std::vector<double>{6.0, 9.0, 4.0}, {3})});
  EXPECT_ALLCLOSE(t, Array(std::vector<double>{6.0, 1.0}, {2}));
  auto g = [&](const Args& a) { return lax::scatter_min(a[0], idx, a[1], elems); };
  auto [y2, t2] = jvp_of(g, {x, u}, {Array(std::vector<double>{3.0, 1.0}, {2}), Array(std::vector<double>{6.0, 9.0, 4.0}, {3})});
  EXPECT_ALLCLOSE(t2, Array(std::vector<double>{6.0, 4.0}, {2}));
}

// ---- higher order ----

TEST(GatherTransforms, GradOfGradAndVmapOfGrad) {
  Array idx = Array(std::vector<int32_t>{2, 0, 2}, {3, 1});
  Array u = random_f64({3, 4}, 26);
  auto f = [idx, u](const Array& x) {
    Array g = gather_rows(lax::scatter_mul(x, idx, u, kRowScatter), idx);
    return lax::reduce_sum(lax::mul(lax::sin(g), x(Slice{0, 3})), {0, 1});
  };
  Array x = random_f64({5, 4}, 27);
  // grad of grad, checked as the jvp of grad against finite differences of grad.
  Fn df = [f](const Args& a) { return jx::grad(f)(a[0]); };
  check_jvp_fd(df, {x}, 28);
  check_vjp_identity(df, {x}, 29);  // a hessian is symmetric in this sense too
  // vmap of grad against a loop.
  Array xs = random_f64({3, 5, 4}, 30);
  Array batched = jx::vmap(jx::grad(f))(xs);
  for (int64_t b = 0; b < 3; ++b) {
    Array xb = lax::squeeze(lax::slice(xs, {b, 0, 0}, {b + 1, 5, 4}), {0});
    Array gb = lax::squeeze(lax::slice(batched, {b, 0, 0}, {b + 1, 5, 4}), {0});
    EXPECT_ALLCLOSE(gb, jx::grad(f)(xb), 1e-12, 1e-12);
  }
}

// ---- vmap ----

// One batched argument: its batch axis position (nullopt: not mapped) and how to make
// it given that batch size and position.
using Maker = std::function<Array(int64_t size, std::optional<int64_t> axis, uint64_t seed)>;

Shape with_axis(Shape s, int64_t size, std::optional<int64_t> axis) {
  if (axis) s.insert(s.begin() + (*axis < 0 ? static_cast<int64_t>(s.size()) + 1 + *axis : *axis), size);
  return s;
}
Maker floats(Shape s) {
  return [s](int64_t n, std::optional<int64_t> axis, uint64_t seed) { return random_f64(with_axis(s, n, axis), seed); };
}
// Index arrays with values in [lo, hi).
Maker ints(Shape s, int64_t lo, int64_t hi) {
  return [s, lo, hi](int64_t n, std::optional<int64_t> axis, uint64_t seed) {
    Array r = random_indices(with_axis(s, n, axis), hi - lo, seed);
    return r + static_cast<int>(lo);
  };
}

// Member b of x along `axis`.
Array member(const Array& x, std::optional<int64_t> axis, int64_t b) {
  if (!axis) return x;
  int64_t ax = *axis < 0 ? *axis + x.ndim() : *axis;
  std::vector<int64_t> start(static_cast<size_t>(x.ndim()), 0), stop(x.shape().begin(), x.shape().end());
  start[static_cast<size_t>(ax)] = b;
  stop[static_cast<size_t>(ax)] = b + 1;
  return lax::squeeze(lax::slice(x, start, stop), {ax});
}

// vmap(f) over every in_axes combination (axis 0, the last axis, not mapped; at least one
// mapped) and batch sizes 3 and 1, against stacking f over the members.
void check_vmap(const Fn& f, const std::vector<Maker>& makers) {
  const std::vector<std::optional<int64_t>> choices{0, -1, std::nullopt};
  size_t combos = 1;
  for (size_t i = 0; i < makers.size(); ++i) combos *= choices.size();
  for (int64_t size : {3, 1}) {
    for (size_t c = 0; c < combos; ++c) {
      std::vector<std::optional<int64_t>> axes;
      size_t k = c;
      bool any = false;
      for (size_t i = 0; i < makers.size(); ++i, k /= choices.size()) {
        axes.push_back(choices[k % choices.size()]);
        any |= axes.back().has_value();
      }
      if (!any) continue;
      Args args;
      for (size_t i = 0; i < makers.size(); ++i) args.push_back(makers[i](size, axes[i], 100 * c + i + size));
      jx::detail::FlatFn flat = [&](std::span<const Array> a) { return std::vector<Array>{f(Args(a.begin(), a.end()))}; };
      std::vector<std::optional<int64_t>> out_axes{0};
      Array got = jx::detail::vmap_flat(flat, args, axes, out_axes, BatchAxis{})[0];
      std::vector<Array> rows;
      for (int64_t b = 0; b < size; ++b) {
        Args mb;
        for (size_t i = 0; i < args.size(); ++i) mb.push_back(member(args[i], axes[i], b));
        rows.push_back(lax::expand_dims(f(mb), {0}));
      }
      SCOPED_TRACE(::testing::Message() << "batch size " << size << ", combination " << c);
      EXPECT_ALLCLOSE(got, lax::concatenate(rows, 0), 0, 0);
    }
  }
}

TEST(GatherTransforms, VmapGather) {
  check_vmap([](const Args& a) { return gather_rows(a[0], a[1]); }, {floats({5, 4}), ints({3, 1}, 0, 5)});
  check_vmap([](const Args& a) { return lax::gather(a[0], a[1], kBlocks, kBlockSizes); },
             {floats({5, 4}), ints({3, 2}, -1, 6)});
  // Out-of-bounds windows take the fill value, batched or not.
  auto fill = lax::GatherScatterMode::FillOrDrop;
  check_vmap([fill](const Args& a) { return gather_rows(a[0], a[1], fill); }, {floats({5, 4}), ints({4, 1}, -2, 7)});
  check_vmap([fill](const Args& a) { return gather_rows(a[0], a[1], fill, a[2]); },
             {floats({5, 4}), ints({4, 1}, -2, 7), floats({})});
  // A scalar index vector axis of rank-1 indices (batch axis after the vector axis).
  check_vmap([](const Args& a) { return lax::gather(a[0], a[1], {{}, {0}, {0}}, {1}); }, {floats({6}), ints({1}, 0, 6)});
}

void check_vmap_scatter(ScatterFn scatter, int64_t lo, int64_t hi) {
  for (auto mode : {lax::GatherScatterMode::FillOrDrop, lax::GatherScatterMode::Clip}) {
    check_vmap([scatter, mode](const Args& a) { return scatter(a[0], a[1], a[2], kRowScatter, mode); },
               {floats({5, 4}), ints({3, 1}, lo, hi), floats({3, 4})});
  }
}

TEST(GatherTransforms, VmapScatterFamily) {
  // Distinct rows for scatter (set) so the result does not depend on write order.
  check_vmap([](const Args& a) { return lax::scatter(a[0], a[1], a[2], kRowScatter); },
             {floats({5, 4}), [](int64_t n, std::optional<int64_t> axis, uint64_t) {
                std::vector<int32_t> rows{4, 0, 2};
                Array r(rows, {3, 1});
                return axis ? lax::broadcast_in_dim(r, with_axis({3, 1}, n, axis),
                                                    *axis == 0 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{0, 1})
                            : r;
              }, floats({3, 4})});
  check_vmap_scatter(&lax::scatter_add, -1, 7);
  check_vmap_scatter(&lax::scatter_mul, -1, 7);
  check_vmap_scatter(&lax::scatter_min, -1, 7);
  check_vmap_scatter(&lax::scatter_max, -1, 7);
}

TEST(GatherTransforms, VmapOfJvpOfScatterMax) {
  // Batching the tangent program (gather, eq, scatter_add) too.
  Array idx = Array(std::vector<int32_t>{1, 3, 1}, {3, 1});
  auto tangent = [idx](const Args& a) {
    return jvp_of([idx](const Args& v) { return lax::scatter_max(v[0], idx, v[1], kRowScatter); }, {a[0], a[1]},
                  {a[2], a[3]}).second;
  };
  check_vmap(tangent, {floats({5, 4}), floats({3, 4}), floats({5, 4}), floats({3, 4})});
}

// ---- errors ----

TEST(GatherTransforms, IndicesAreNotDifferentiable) {
  Array x = random_f64({5, 4}, 40);
  auto f = [x](const Array& idx) { return lax::reduce_sum(gather_rows(x, idx), {0, 1}); };
  EXPECT_JX_ERROR(jx::grad(f)(Array(std::vector<int32_t>{1, 2}, {2, 1})), "grad", "i32[2,1]", "floating");
}

}  // namespace
}  // namespace jx
