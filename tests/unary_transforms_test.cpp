// Transformation rules of the elementwise unary family, select_n, the conversions and
// stop_gradient: derivatives against central finite differences (float64), reverse mode
// against forward mode (<J t, c> == <t, J^T c>), second order, and vmap against a loop
// over the batch members.
#include <cmath>
#include <complex>
#include <functional>
#include <numbers>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "jx/jx.h"
#include "op_table.h"
#include "test_util.h"

namespace jx {
namespace {

using Fn = std::function<Array(const std::vector<Array>&)>;
using FlatFn = detail::FlatFn;

// ---- host-side helpers (independent of the rules under test) ----

// Uniform values in [lo, hi) of the given shape and dtype (complex: both parts).
Array uniform(const Shape& shape, double lo, double hi, DType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (is_complex(dtype)) {
    std::vector<complex128_t> v(static_cast<size_t>(n));
    for (auto& z : v) z = complex128_t(u(rng), u(rng));
    return lax::convert_element_type(Array(v, shape), dtype);
  }
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& z : v) z = u(rng);
  return lax::convert_element_type(Array(v, shape), dtype);
}

// A float64 vector (Array's initializer lists make float32).
Array f64(std::initializer_list<double> v) { return Array(std::vector<double>(v)); }

// The scalar s in x's dtype, broadcast to x's shape (lax ops take operands of one shape).
Array like(const Array& x, double s) {
  return lax::broadcast_in_dim(lax::convert_element_type(Array(s), x.dtype()), x.shape(), {});
}

// Re(sum(a * b)) computed on the host: the pairing under which a transpose is checked.
double pairing(const Array& a, const Array& b) {
  auto av = a.to_vector<complex128_t>();
  auto bv = b.to_vector<complex128_t>();
  EXPECT_EQ(av.size(), bv.size());
  double s = 0;
  for (size_t i = 0; i < av.size() && i < bv.size(); ++i) s += (av[i] * bv[i]).real();
  return s;
}

double max_abs_diff(const Array& a, const Array& b) {
  auto av = a.to_vector<complex128_t>();
  auto bv = b.to_vector<complex128_t>();
  double m = 0;
  for (size_t i = 0; i < av.size(); ++i) m = std::max(m, std::abs(av[i] - bv[i]));
  return m;
}

// x + s * v for inexact x; integer and bool operands are not perturbed.
Array shifted(const Array& x, const Array& v, double s) {
  if (!is_inexact(x.dtype())) return x;
  return lax::add(x, lax::mul(v, like(x, s)));
}

// Checks f (one output) at args: forward mode against central differences along a random
// direction, and reverse mode against forward mode. Integer/bool args are held fixed.
void check_first_order(const Fn& f, const std::vector<Array>& args, double tol, uint64_t seed,
                       const std::string& what) {
  SCOPED_TRACE(what);
  const double eps = 1e-5;
  std::vector<Array> dirs;
  for (size_t i = 0; i < args.size(); ++i) {
    const Array& x = args[i];
    dirs.push_back(is_inexact(x.dtype()) ? uniform(x.shape(), -1, 1, x.dtype(), seed + 17 * i)
                                         : Array());
  }
  std::vector<Array> plus, minus;
  for (size_t i = 0; i < args.size(); ++i) {
    plus.push_back(shifted(args[i], dirs[i], eps));
    minus.push_back(shifted(args[i], dirs[i], -eps));
  }
  Array out = f(args);
  Array fd = lax::div(lax::sub(f(plus), f(minus)), like(out, 2 * eps));
  FlatFn flat = [&](std::span<const Array> xs) { return std::vector<Array>{f(std::vector<Array>(xs.begin(), xs.end()))}; };
  auto [outs, touts] = detail::jvp_flat(flat, args, dirs, "jvp");
  double scale = 1 + std::sqrt(pairing(fd, lax::conj(fd)) / std::max<int64_t>(1, fd.size()));
  EXPECT_LT(max_abs_diff(touts[0], fd), tol * scale) << "jvp " << touts[0] << " vs differences " << fd;
  // <J t, c> == <t, J^T c>
  Array c = uniform(out.shape(), -1, 1, out.dtype(), seed + 1000);
  detail::Linearized lin = detail::linearize_flat(flat, args, "vjp");
  std::vector<Array> cts = detail::transpose_linear(*lin.linear, std::vector<Array>{c});
  double lhs = pairing(touts[0], c), rhs = 0;
  for (size_t i = 0; i < args.size(); ++i)
    if (dirs[i].valid()) rhs += pairing(dirs[i], cts[i]);
  EXPECT_NEAR(lhs, rhs, tol * (1 + std::abs(lhs))) << "vjp identity";
}

// First and second order: the second applies the same check to x -> J(x) t.
void check_derivatives(const Fn& f, const std::vector<Array>& args, double tol, uint64_t seed,
                       const std::string& what, bool second_order = true) {
  check_first_order(f, args, tol, seed, what);
  if (!second_order) return;
  std::vector<Array> dirs;
  for (size_t i = 0; i < args.size(); ++i)
    dirs.push_back(is_inexact(args[i].dtype()) ? uniform(args[i].shape(), -1, 1, args[i].dtype(), seed + 91 * i)
                                               : Array());
  Fn df = [f, dirs](const std::vector<Array>& xs) {
    FlatFn flat = [&](std::span<const Array> ys) { return std::vector<Array>{f(std::vector<Array>(ys.begin(), ys.end()))}; };
    return detail::jvp_flat(flat, xs, dirs, "jvp").second[0];
  };
  check_first_order(df, args, tol * 10, seed + 7, what + " (second order)");
}

// Member b of x along `axis`.
Array member(const Array& x, int64_t axis, int64_t b) {
  std::vector<int64_t> start(x.ndim(), 0), limit(x.shape().begin(), x.shape().end());
  start[axis] = b;
  limit[axis] = b + 1;
  return lax::squeeze(lax::slice(x, start, limit), {axis});
}

// Batched argument: `unbatched` members stacked along `axis` (uniform values, so every
// member differs).
Array batched(const Array& like, int64_t axis, int64_t size, double lo, double hi, uint64_t seed) {
  Shape s = like.shape();
  s.insert(s.begin() + axis, size);
  if (!is_inexact(like.dtype())) {  // integer/bool predicates: random values in range
    Array u = uniform(s, lo, hi, DType::Float64, seed);
    return lax::convert_element_type(lax::floor(u), like.dtype());
  }
  return uniform(s, lo, hi, like.dtype(), seed);
}

// vmap(f) with the given in_axes (nullopt: not mapped) against f on each member.
void check_vmap(const Fn& f, const std::vector<Array>& unbatched, const std::vector<std::optional<int64_t>>& axes,
                int64_t size, double lo, double hi, const std::string& what) {
  std::string desc = what + " in_axes=(";
  for (auto& a : axes) desc += (a ? std::to_string(*a) : std::string("None")) + ",";
  SCOPED_TRACE(desc + ") size=" + std::to_string(size));
  std::vector<Array> args;
  for (size_t i = 0; i < unbatched.size(); ++i) {
    if (!axes[i]) {
      args.push_back(unbatched[i]);
    } else {
      int64_t ax = *axes[i] < 0 ? unbatched[i].ndim() + 1 + *axes[i] : *axes[i];
      args.push_back(batched(unbatched[i], ax, size, lo, hi, 300 + i));
    }
  }
  FlatFn flat = [&](std::span<const Array> xs) { return std::vector<Array>{f(std::vector<Array>(xs.begin(), xs.end()))}; };
  std::vector<std::optional<int64_t>> out_axes{0};
  Array out = detail::vmap_flat(flat, args, axes, out_axes, {})[0];
  ASSERT_EQ(out.shape()[0], size);
  for (int64_t b = 0; b < size; ++b) {
    std::vector<Array> m;
    for (size_t i = 0; i < args.size(); ++i) {
      if (!axes[i]) m.push_back(args[i]);
      else m.push_back(member(args[i], *axes[i] < 0 ? args[i].ndim() + *axes[i] : *axes[i], b));
    }
    EXPECT_ALLCLOSE(member(out, 0, b), f(m), 1e-12, 1e-12);
  }
}

// Every in_axes combination (0, last, not mapped; at least one mapped) for sizes 3 and 1.
void check_vmap_all(const Fn& f, const std::vector<Array>& unbatched, double lo, double hi, const std::string& what) {
  const std::vector<std::optional<int64_t>> choices{0, -1, std::nullopt};
  size_t n = unbatched.size();
  size_t combos = 1;
  for (size_t i = 0; i < n; ++i) combos *= 3;
  for (int64_t size : {3, 1}) {
    for (size_t c = 0; c < combos; ++c) {
      std::vector<std::optional<int64_t>> axes;
      size_t k = c;
      bool any = false;
      for (size_t i = 0; i < n; ++i, k /= 3) {
        axes.push_back(choices[k % 3]);
        any |= axes.back().has_value();
      }
      if (any) check_vmap(f, unbatched, axes, size, lo, hi, what);
    }
  }
}

// ---- the elementwise unary functions ----

// The op table's unary elementwise rows (float64 operands) with a smooth domain and a
// derivative: the ones checked against finite differences here.
bool is_unary_elementwise(const op_table::OpRow& row) {
  const Primitive* p = find_primitive(row.primitive);
  return row.arity == 1 && p && p->has(kElementwise) && !row.example;
}
std::vector<const op_table::OpRow*> smooth_unary_rows() {
  std::vector<const op_table::OpRow*> out;
  for (const op_table::OpRow& row : op_table::rows()) {
    const bool float64 = row.dtypes.empty() || row.dtypes[0] == DType::Float64;
    if (is_unary_elementwise(row) && float64 && row.smooth && !find_primitive(row.primitive)->has(kNotDifferentiable) &&
        !(row.skip & op_table::kCheckGrad))
      out.push_back(&row);
  }
  return out;
}

TEST(UnaryTransforms, DerivativesMatchFiniteDifferences) {
  uint64_t seed = 1;
  const auto rows = smooth_unary_rows();
  EXPECT_GE(rows.size(), 28u);  // every unary function of the elementwise family
  for (const op_table::OpRow* c : rows) {
    Fn f = [c](const std::vector<Array>& xs) { return c->call1(xs); };
    const bool is_abs = c->primitive == "abs";
    // abs is not smooth at 0: keep both signs but away from it.
    double lo = is_abs ? -3 : c->smooth->lo;
    Array x = uniform({5}, lo, c->smooth->hi, DType::Float64, seed++);
    if (is_abs) x = lax::add(x, lax::mul(lax::sign(x), like(x, 0.3)));
    check_derivatives(f, {x}, 1e-6, seed++, c->label(), c->second_order);
    if (c->complex_derivatives) {
      Array z = uniform({4}, c->smooth->lo, c->smooth->hi, DType::Complex128, seed++);
      if (is_abs) z = lax::add(z, lax::mul(like(z, 0.5), lax::broadcast_in_dim(Array(complex128_t(1, 1)), z.shape(), {})));
      check_derivatives(f, {z}, 1e-6, seed++, c->label() + " complex", c->second_order);
    }
  }
}

TEST(UnaryTransforms, KnownDerivativeValues) {
  // Closed forms at a point, independent of the rules' formulas.
  double x = 0.4;
  auto d = [](Array (*fn)(const Array&), double at) { return grad(fn)(Array(at)).item<double>(); };
  EXPECT_NEAR(d(lax::erf, x), 2 / std::sqrt(std::numbers::pi) * std::exp(-x * x), 1e-12);
  EXPECT_NEAR(d(lax::tanh, x), 1 / (std::cosh(x) * std::cosh(x)), 1e-12);
  EXPECT_NEAR(d(lax::logistic, x), std::exp(-x) / ((1 + std::exp(-x)) * (1 + std::exp(-x))), 1e-12);
  EXPECT_NEAR(d(lax::cbrt, 8.0), 1.0 / 12.0, 1e-12);
  EXPECT_NEAR(d(lax::acosh, 2.0), 1 / std::sqrt(3.0), 1e-12);
  EXPECT_NEAR(d(lax::erf_inv, 0.0), std::sqrt(std::numbers::pi) / 2, 1e-12);
  EXPECT_NEAR(d(lax::lgamma, 1.0), -0.5772156649015329, 1e-10);  // digamma(1) = -gamma
  // JAX's conventions at the kinks: abs'(0) = 1 (select(x >= 0, t, -t)); float32 works too.
  EXPECT_EQ(grad(lax::abs)(Array(0.0f)).item<float>(), 1.0f);
  EXPECT_EQ(grad(lax::abs)(Array(-2.0f)).item<float>(), -1.0f);
  EXPECT_NEAR(grad(lax::sqrt)(Array(4.0f)).item<float>(), 0.25f, 1e-7);
}

TEST(UnaryTransforms, ComplexAbsAtZeroHasZeroTangent) {
  auto [y, t] = jvp(lax::abs, Array(complex128_t(0, 0)), Array(complex128_t(1, 1)));
  EXPECT_EQ(t.dtype(), DType::Float64);
  EXPECT_EQ(t.item<double>(), 0.0);
  // |z| at 3+4i moves by Re(conj(z) t)/|z| = (3*1 + 4*2)/5 for t = 1+2i.
  auto [y2, t2] = jvp(lax::abs, Array(complex128_t(3, 4)), Array(complex128_t(1, 2)));
  EXPECT_NEAR(t2.item<double>(), 11.0 / 5.0, 1e-12);
}

TEST(UnaryTransforms, RealImagConjDerivatives) {
  Array z = uniform({4}, -2, 2, DType::Complex128, 50);
  Fn re = [](const std::vector<Array>& xs) { return lax::real(xs[0]); };
  Fn im = [](const std::vector<Array>& xs) { return lax::imag(xs[0]); };
  Fn cj = [](const std::vector<Array>& xs) { return lax::conj(xs[0]); };
  // Nonlinear compositions so the transposes meet nonzero cotangents from products.
  Fn mix = [](const std::vector<Array>& xs) {
    return lax::mul(lax::real(lax::mul(xs[0], xs[0])), lax::imag(lax::exp(lax::conj(xs[0]))));
  };
  check_derivatives(re, {z}, 1e-6, 51, "real");
  check_derivatives(im, {z}, 1e-6, 52, "imag");
  check_derivatives(cj, {z}, 1e-6, 53, "conj");
  check_derivatives(mix, {z}, 1e-6, 54, "real/imag/conj mix");
  Array x = uniform({4}, -2, 2, DType::Float64, 55);
  check_derivatives(cj, {x}, 1e-6, 56, "conj of real");
  // JAX's transposes: real -> complex(ct, 0), imag -> complex(0, -ct).
  auto [v1, pull_re] = vjp(lax::real, Array(complex128_t(1, 2)));
  EXPECT_EQ(std::get<0>(pull_re(Array(3.0))).item<complex128_t>(), complex128_t(3, 0));
  auto [v2, pull_im] = vjp(lax::imag, Array(complex128_t(1, 2)));
  EXPECT_EQ(std::get<0>(pull_im(Array(3.0))).item<complex128_t>(), complex128_t(0, -3));
  auto [v3, pull_cj] = vjp(lax::conj, Array(2.0));
  EXPECT_EQ(std::get<0>(pull_cj(Array(complex128_t(3, 4)))).item<double>(), 3.0);
}

TEST(UnaryTransforms, FlatOpsCarryNoTangent) {
  Array x = f64({-1.5, 0.2, 2.7});
  for (auto fn : {lax::sign, lax::floor, lax::ceil}) {
    auto f = [fn](const Array& v) { return lax::reduce_sum(lax::add(fn(v), v), {0}); };
    EXPECT_ALLCLOSE(grad(f)(x), f64({1.0, 1.0, 1.0}));
  }
  auto r = [](const Array& v) { return lax::reduce_sum(lax::mul(lax::round(v, lax::RoundingMethod::ToNearestEven), v), {0}); };
  EXPECT_ALLCLOSE(grad(r)(x), f64({-2.0, 0.0, 3.0}));
  auto fin = [](const Array& v) {
    return lax::reduce_sum(lax::mul(lax::convert_element_type(lax::is_finite(v), DType::Float64), v), {0});
  };
  EXPECT_ALLCLOSE(grad(fin)(x), f64({1.0, 1.0, 1.0}));
}

TEST(UnaryTransforms, VmapMatchesLoop) {
  // Every unary elementwise row: float64 ones over their smooth domain (or [-3, 3) when
  // flat), complex ones (and the rows with complex derivatives) on complex128 too,
  // integer ones on int32.
  Array x = uniform({4}, 0.3, 0.8, DType::Float64, 70);
  Array z = uniform({2, 3}, -1, 1, DType::Complex128, 71);
  int checked = 0;
  for (const op_table::OpRow& c : op_table::rows()) {
    if (!is_unary_elementwise(c)) continue;
    Fn f = [&c](const std::vector<Array>& xs) { return c.call1(xs); };
    const DType d = c.dtypes.empty() ? DType::Float64 : c.dtypes[0];
    if (d == DType::Float64) check_vmap_all(f, {x}, c.smooth ? c.smooth->lo : -3, c.smooth ? c.smooth->hi : 3, c.label());
    else if (is_integer(d)) check_vmap_all(f, {lax::convert_element_type(Array({1, 2, 3}), d)}, -5, 5, c.label());
    if (d == DType::Complex128 || c.complex_derivatives) check_vmap_all(f, {z}, -1, 1, c.label() + " complex");
    ++checked;
  }
  EXPECT_GE(checked, 40);
}

TEST(UnaryTransforms, HigherOrderAndVmapOfGrad) {
  // d^2/dx^2 tanh = -2 tanh sech^2; d^3/dx^3 exp = exp.
  double x = 0.3;
  double sech2 = 1 / (std::cosh(x) * std::cosh(x));
  EXPECT_NEAR(grad(grad(lax::tanh))(Array(x)).item<double>(), -2 * std::tanh(x) * sech2, 1e-12);
  EXPECT_NEAR(grad(grad(grad(lax::exp)))(Array(x)).item<double>(), std::exp(x), 1e-12);
  EXPECT_NEAR(grad(grad(lax::log))(Array(x)).item<double>(), -1 / (x * x), 1e-10);
  Array xs = f64({0.1, 0.5, 0.9});
  Array g = vmap(grad(lax::asin))(xs);
  auto gv = g.to_vector<double>();
  for (int i = 0; i < 3; ++i) {
    double v = xs.to_vector<double>()[i];
    EXPECT_NEAR(gv[i], 1 / std::sqrt(1 - v * v), 1e-12);
  }
  Array h = vmap(grad(grad(lax::sqrt)))(xs);
  auto hv = h.to_vector<double>();
  for (int i = 0; i < 3; ++i) {
    double v = xs.to_vector<double>()[i];
    EXPECT_NEAR(hv[i], -0.25 * std::pow(v, -1.5), 1e-10);
  }
}

TEST(UnaryTransforms, DigammaDerivativeIsTrigamma) {
  // polygamma(1, x) at known points: pi^2 / 6 at 1, pi^2 / 2 at 1/2.
  const double pi2 = std::numbers::pi * std::numbers::pi;
  EXPECT_NEAR(grad(lax::digamma)(Array(1.0)).item<double>(), pi2 / 6, 1e-13);
  EXPECT_NEAR(grad(grad(lax::lgamma))(Array(0.5)).item<double>(), pi2 / 2, 1e-13);
}

// ---- select_n ----

TEST(SelectN, Derivatives) {
  Array a = uniform({5}, -2, 2, DType::Float64, 80), b = uniform({5}, -2, 2, DType::Float64, 81);
  Array c = uniform({5}, -2, 2, DType::Float64, 82);
  Array pred = Array({true, false, false, true, false});
  Fn two = [](const std::vector<Array>& v) { return lax::mul(lax::select_n(v[0], {lax::sin(v[1]), v[2]}), v[1]); };
  check_derivatives(two, {pred, a, b}, 1e-6, 83, "select_n bool");
  Array which = Array({2, 0, 1, 1, 2});
  Fn three = [](const std::vector<Array>& v) { return lax::select_n(v[0], {v[1], lax::exp(v[2]), lax::mul(v[3], v[3])}); };
  check_derivatives(three, {which, a, b, c}, 1e-6, 84, "select_n int");
  Fn scalar = [](const std::vector<Array>& v) { return lax::select_n(v[0], {v[1], lax::mul(v[2], v[2])}); };
  check_derivatives(scalar, {Array(true), a, b}, 1e-6, 85, "select_n scalar true");
  check_derivatives(scalar, {Array(false), a, b}, 1e-6, 86, "select_n scalar false");
  // The cotangent lands in the selected case only.
  auto f = [&](const Array& x, const Array& y) { return lax::reduce_sum(lax::select_n(pred, {x, y}), {0}); };
  auto [gx, gy] = grad(f, argnums<0, 1>)(a, b);
  EXPECT_ALLCLOSE(gx, f64({0.0, 1.0, 1.0, 0.0, 1.0}));
  EXPECT_ALLCLOSE(gy, f64({1.0, 0.0, 0.0, 1.0, 0.0}));
}

TEST(SelectN, VmapMatchesLoop) {
  Array a = uniform({4}, -2, 2, DType::Float64, 90), b = uniform({4}, -2, 2, DType::Float64, 91);
  Fn f = [](const std::vector<Array>& v) { return lax::select_n(v[0], {v[1], v[2]}); };
  check_vmap_all(f, {Array({true, false, true, false}), a, b}, 0, 2, "select_n bool");
  check_vmap_all(f, {Array(true), a, b}, 0, 2, "select_n scalar predicate");
  Fn g = [](const std::vector<Array>& v) { return lax::select_n(v[0], {v[1], v[2], v[3]}); };
  Array m = uniform({2, 3}, -2, 2, DType::Float64, 92);
  check_vmap_all(g, {Array({{0, 1, 2}, {2, 1, 0}}), m, m, m}, 0, 3, "select_n int");
  check_vmap_all(g, {Array(1), m, m, m}, 0, 3, "select_n int scalar");
  // vmap of grad through select_n.
  auto h = [](const Array& p, const Array& x) { return lax::select_n(p, {lax::sin(x), lax::mul(x, x)}); };
  Array ps = Array({true, false, true}), xs = f64({0.5, 1.5, 2.5});
  Array gs = vmap(grad(h, argnums<1>))(ps, xs);
  EXPECT_ALLCLOSE(gs, f64({1.0, std::cos(1.5), 5.0}), 1e-9, 1e-9);
}

// ---- conversions ----

TEST(Conversions, ConvertElementTypeDerivatives) {
  Array x = uniform({4}, -2, 2, DType::Float64, 100);
  Fn to_c = [](const std::vector<Array>& v) {
    return lax::mul(lax::convert_element_type(v[0], DType::Complex128), lax::exp(lax::convert_element_type(v[0], DType::Complex128)));
  };
  check_derivatives(to_c, {x}, 1e-6, 101, "f64 -> c128");
  Fn round_trip = [](const std::vector<Array>& v) {
    return lax::mul(v[0], lax::convert_element_type(lax::convert_element_type(v[0], DType::Float32), DType::Float64));
  };
  // Through float32 differences are too coarse: the product rule, with the float32
  // factor's tangent t itself (rounded to float32).
  Array t = uniform({4}, -1, 1, DType::Float64, 102);
  FlatFn flat = [&](std::span<const Array> xs) { return std::vector<Array>{round_trip({xs[0]})}; };
  Array jt = detail::jvp_flat(flat, std::vector<Array>{x}, std::vector<Array>{t}, "jvp").second[0];
  auto xv = x.to_vector<double>(), tv = t.to_vector<double>(), jv = jt.to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i)
    EXPECT_NEAR(jv[i], tv[i] * double(float(xv[i])) + xv[i] * double(float(tv[i])), 1e-12);
  check_first_order(round_trip, {x}, 1e-2, 103, "f64 -> f32 -> f64 (vjp identity)");
  // A float -> int conversion carries no tangent.
  auto trunc = [](const Array& v) {
    return lax::add(lax::convert_element_type(lax::convert_element_type(v, DType::Int32), DType::Float64), v);
  };
  EXPECT_EQ(grad(trunc)(Array(2.7)).item<double>(), 1.0);
  // The transpose converts back: the gradient has the operand's dtype.
  auto to32 = [](const Array& v) { return lax::mul(lax::convert_element_type(v, DType::Float32), Array(3.0f)); };
  Array g = grad(to32)(Array(2.0));
  EXPECT_EQ(g.dtype(), DType::Float64);
  EXPECT_EQ(g.item<double>(), 3.0);
}

TEST(Conversions, Vmap) {
  Array x = uniform({2, 3}, -2, 2, DType::Float64, 110);
  Fn f = [](const std::vector<Array>& v) { return lax::convert_element_type(v[0], DType::Float32); };
  check_vmap_all(f, {x}, -2, 2, "convert_element_type");
  // bitcast: same width, narrower (a trailing axis appears), wider (the last axis goes).
  Fn same = [](const std::vector<Array>& v) { return lax::bitcast_convert_type(v[0], DType::Int64); };
  check_vmap_all(same, {x}, -2, 2, "bitcast f64 -> i64");
  Fn narrower = [](const std::vector<Array>& v) { return lax::bitcast_convert_type(v[0], DType::Int32); };
  check_vmap_all(narrower, {x}, -2, 2, "bitcast f64 -> i32");
  Fn wider = [](const std::vector<Array>& v) { return lax::bitcast_convert_type(v[0], DType::Float64); };
  check_vmap_all(wider, {lax::bitcast_convert_type(x, DType::Int32)}, -100, 100, "bitcast i32 -> f64");
  // Not differentiable: a path through bitcast adds nothing to the tangent.
  auto f2 = [](const Array& v) {
    return lax::add(v, lax::bitcast_convert_type(lax::bitcast_convert_type(v, DType::Int64), DType::Float64));
  };
  auto [y, t] = jvp(f2, Array(1.5), Array(1.0));
  EXPECT_EQ(y.item<double>(), 3.0);
  EXPECT_EQ(t.item<double>(), 1.0);
}

// ---- stop_gradient ----

TEST(StopGradient, BlocksTheDerivative) {
  auto f = [](const Array& x) { return lax::mul(x, stop_gradient(x)); };
  EXPECT_EQ(grad(f)(Array(3.0)).item<double>(), 3.0);
  EXPECT_EQ(grad(f)(Array(3.0f)).item<float>(), 3.0f);
  // x^2 sg(x): first derivative 2x sg(x) = 18, second 2 sg(x) = 6 at 3.
  auto g = [](const Array& x) { return lax::mul(lax::mul(x, x), stop_gradient(x)); };
  EXPECT_EQ(grad(g)(Array(3.0)).item<double>(), 18.0);
  EXPECT_EQ(grad(grad(g))(Array(3.0)).item<double>(), 6.0);
  auto [y, t] = jvp(stop_gradient, Array(2.0), Array(1.0));
  EXPECT_EQ(y.item<double>(), 2.0);
  EXPECT_EQ(t.item<double>(), 0.0);
  // Integers pass through untouched.
  Array i = Array(7);
  EXPECT_EQ(stop_gradient(i).item<int>(), 7);
}

TEST(StopGradient, UnderVmap) {
  Array xs = f64({1.0, 2.0, 3.0});
  Fn sg = [](const std::vector<Array>& v) { return stop_gradient(v[0]); };
  check_vmap_all(sg, {f64({1.0, 2.0})}, -1, 1, "stop_gradient");
  auto f = [](const Array& x) { return lax::mul(x, stop_gradient(x)); };
  EXPECT_ALLCLOSE(vmap(grad(f))(xs), xs);
  // grad of a vmapped function: the batch trace re-binds stop_gradient for grad to see.
  auto total = [&](const Array& x) { return lax::reduce_sum(vmap(f)(x), {0}); };
  EXPECT_ALLCLOSE(grad(total)(xs), xs);
}

// ---- registry ----

// Every primitive of the op table has the rules its traits promise (registry_test walks
// the registry the same way).
TEST(UnaryTransforms, EveryPrimitiveHasItsRules) {
  for (const op_table::OpRow& row : op_table::rows()) {
    const Primitive* p = find_primitive(row.primitive);
    ASSERT_NE(p, nullptr) << row.label();
    const auto& r = p->rules();
    EXPECT_TRUE(r.batch) << row.label();
    EXPECT_NE(bool(r.jvp), p->has(kNotDifferentiable)) << row.label();
    EXPECT_EQ(bool(r.transpose), p->has(kLinear)) << row.label();
  }
}

}  // namespace
}  // namespace jx
