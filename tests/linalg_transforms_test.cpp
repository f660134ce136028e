// jvp / vjp / vmap rules of dot_general, conv_general_dilated and the linalg primitives,
// checked against central finite differences in float64 (jvp), the adjoint identity
// <J t, c> == <t, J^T c> (vjp, i.e. the transpose rules) and a loop over batch members
// (vmap). Eigen- and singular-vector outputs are checked only through sign-invariant
// functions of them.
#include <cmath>
#include <functional>
#include <random>

#include "jx/jx.h"
#include "test_util.h"

namespace jx {
namespace {
namespace jnp = jx::numpy;
using Fn = std::function<Array(const Array&)>;

Array random_array(const Shape& shape, uint32_t seed, double shift = 0.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(static_cast<size_t>(shape_size(shape)));
  for (double& x : v) x = dist(gen) + shift;
  return jnp::array(v, shape);
}

double inner(const Array& a, const Array& b) {
  return lax::reduce_sum(jnp::multiply(a, b), [&] {
           std::vector<int64_t> axes(static_cast<size_t>(a.ndim()));
           for (int64_t i = 0; i < a.ndim(); ++i) axes[i] = i;
           return axes;
         }())
      .item<double>();
}

// jvp vs central differences along v, and the vjp adjoint identity with a random c.
void check_derivatives(const Fn& f, const Array& x, uint32_t seed, double tol = 1e-6) {
  Array v = random_array(x.shape(), seed + 1);
  auto [y, ty] = jvp(f, x, v);
  const double eps = 1e-6;
  Array fd = jnp::divide(jnp::subtract(f(jnp::add(x, jnp::multiply(v, Array(eps)))), f(jnp::subtract(x, jnp::multiply(v, Array(eps))))),
                      Array(2 * eps));
  EXPECT_ALLCLOSE(ty, fd, 1e-5, 1e-5);
  Array c = random_array(y.shape(), seed + 2);
  auto [y2, pullback] = vjp(f, x);
  auto [ct] = pullback(c);
  EXPECT_NEAR(inner(ty, c), inner(v, ct), tol * (1 + std::abs(inner(ty, c))));
}

// Second order: the derivative checks applied to x -> (jvp of f along a fixed v).
void check_second_order(const Fn& f, const Array& x, uint32_t seed) {
  Array v = random_array(x.shape(), seed + 7);
  Fn df = [f, v](const Array& z) { return jvp(f, z, v).second; };
  check_derivatives(df, x, seed + 11, 1e-5);
}

// vmap(f) over xs (batched at `axis`) equals stacking f over the members.
void check_vmap2(const std::function<Array(const Array&, const Array&)>& f, const Array& a, const Array& b,
                 std::optional<int64_t> ax, std::optional<int64_t> bx, int64_t n) {
  Array out = vmap(f, {.in_axes = {ax, bx}})(a, b);
  std::vector<Array> rows;
  for (int64_t i = 0; i < n; ++i) {
    Array ai = ax ? jnp::take(a, Array(static_cast<int>(i)), *ax) : a;
    Array bi = bx ? jnp::take(b, Array(static_cast<int>(i)), *bx) : b;
    rows.push_back(f(ai, bi));
  }
  EXPECT_ALLCLOSE(out, jnp::stack(rows), 1e-9, 1e-9);
}

// Puts a batch of `n` copies-with-noise of base's shape with the batch at `axis`.
Array batched(const Shape& base, int64_t n, int64_t axis, uint32_t seed, double shift = 0.0) {
  Shape s = base;
  s.insert(s.begin() + axis, n);
  return random_array(s, seed, shift);
}

// Every in_axes combination (axis 0, last axis, unmapped) with at least one mapped.
void check_vmap_all(const std::function<Array(const Array&, const Array&)>& f, const Shape& sa, const Shape& sb,
                    uint32_t seed, double shift_a = 0.0) {
  for (int64_t n : {3, 1}) {
    for (int ka = 0; ka < 3; ++ka) {
      for (int kb = 0; kb < 3; ++kb) {
        if (ka == 2 && kb == 2) continue;
        std::optional<int64_t> ax = ka == 0 ? std::optional<int64_t>(0)
                                    : ka == 1 ? std::optional<int64_t>(static_cast<int64_t>(sa.size()))
                                              : std::nullopt;
        std::optional<int64_t> bx = kb == 0 ? std::optional<int64_t>(0)
                                    : kb == 1 ? std::optional<int64_t>(static_cast<int64_t>(sb.size()))
                                              : std::nullopt;
        Array a = ax ? batched(sa, n, *ax, seed, shift_a) : random_array(sa, seed, shift_a);
        Array b = bx ? batched(sb, n, *bx, seed + 3) : random_array(sb, seed + 3);
        SCOPED_TRACE(::testing::Message() << "n=" << n << " ka=" << ka << " kb=" << kb);
        check_vmap2(f, a, b, ax, bx, n);
      }
    }
  }
}

// ---- dot_general ----

TEST(LinalgTransforms, DotGeneralDerivatives) {
  const lax::DotDimensionNumbers batched_mm{{2}, {1}, {0}, {0}};
  Array lhs = random_array({2, 3, 4}, 1), rhs = random_array({2, 4, 5}, 2);
  check_derivatives([&](const Array& x) { return lax::dot_general(x, rhs, batched_mm); }, lhs, 10);
  check_derivatives([&](const Array& y) { return lax::dot_general(lhs, y, batched_mm); }, rhs, 20);
  // Contracting dims in different orders on each side, free dims interleaved.
  const lax::DotDimensionNumbers odd{{0, 2}, {1, 0}, {}, {}};
  Array l2 = random_array({4, 2, 3}, 3), r2 = random_array({3, 4, 5}, 4);
  check_derivatives([&](const Array& x) { return lax::dot_general(x, r2, odd); }, l2, 30);
  check_derivatives([&](const Array& y) { return lax::dot_general(l2, y, odd); }, r2, 40);
  // Batch dims not leading.
  const lax::DotDimensionNumbers mid{{0}, {2}, {2}, {0}};
  Array l3 = random_array({3, 2, 4}, 5), r3 = random_array({4, 5, 3}, 6);
  check_derivatives([&](const Array& x) { return lax::dot_general(x, r3, mid); }, l3, 50);
  check_derivatives([&](const Array& y) { return lax::dot_general(l3, y, mid); }, r3, 60);
  // Both operands tangent at once (x . x^T), and second order.
  Fn gram = [](const Array& x) { return lax::dot_general(x, x, {{1}, {1}, {}, {}}); };
  check_derivatives(gram, random_array({3, 4}, 7), 70);
  check_second_order(gram, random_array({3, 4}, 8), 80);
}

TEST(LinalgTransforms, DotGeneralPreferredElementType) {
  Array x = lax::convert_element_type(random_array({2, 3}, 9), DType::Float32);
  Array y = lax::convert_element_type(random_array({3, 2}, 10), DType::Float32);
  auto f = [&](const Array& a) {
    return lax::reduce_sum(lax::dot_general(a, y, {{1}, {0}, {}, {}}, DType::Float64), {0, 1});
  };
  Array g = grad(f)(x);
  EXPECT_EQ(g.dtype(), DType::Float32);
  // d/dx sum(x y) = ones(2,2) y^T: each row is the row sums of y.
  Array want = lax::broadcast_in_dim(lax::reduce_sum(y, {1}), {2, 3}, {1});
  EXPECT_ALLCLOSE(g, want, 1e-6, 1e-6);
}

TEST(LinalgTransforms, DotGeneralVmap) {
  check_vmap_all([](const Array& a, const Array& b) { return lax::dot_general(a, b, {{1}, {0}, {}, {}}); },
                 {2, 3}, {3, 4}, 100);
  check_vmap_all([](const Array& a, const Array& b) { return lax::dot_general(a, b, {{2}, {1}, {0}, {0}}); },
                 {2, 3, 4}, {2, 4, 5}, 110);
  check_vmap_all([](const Array& a, const Array& b) { return lax::dot_general(a, b, {{0}, {2}, {2}, {0}}); },
                 {3, 2, 4}, {4, 5, 3}, 120);
}

TEST(LinalgTransforms, DotGeneralGradOfGradAndVmapOfGrad) {
  // f(x) = sum((x x^T)^2): its Hessian-vector product via grad of grad vs differences.
  auto f = [](const Array& x) {
    Array g = lax::dot_general(x, x, {{1}, {1}, {}, {}});
    return lax::reduce_sum(jnp::multiply(g, g), {0, 1});
  };
  Array x = random_array({3, 2}, 130), v = random_array({3, 2}, 131);
  auto hvp = [&](const Array& z) { return jvp(grad(f), z, v).second; };
  const double eps = 1e-6;
  Array fd = jnp::divide(jnp::subtract(grad(f)(jnp::add(x, jnp::multiply(v, Array(eps)))),
                               grad(f)(jnp::subtract(x, jnp::multiply(v, Array(eps))))),
                      Array(2 * eps));
  EXPECT_ALLCLOSE(hvp(x), fd, 1e-5, 1e-5);
  Array xs = random_array({4, 3, 2}, 132);
  Array batched_grads = vmap(grad(f))(xs);
  std::vector<Array> rows;
  for (int i = 0; i < 4; ++i) rows.push_back(grad(f)(jnp::take(xs, Array(i), 0)));
  EXPECT_ALLCLOSE(batched_grads, jnp::stack(rows), 1e-9, 1e-9);
}

// ---- conv_general_dilated ----

Array conv2d(const Array& lhs, const Array& rhs, int64_t groups = 1, int64_t batch_groups = 1) {
  return lax::conv_general_dilated(lhs, rhs, {2, 1}, {{1, 2}, {0, 1}}, {1, 2}, {2, 1}, std::nullopt, groups,
                                   batch_groups);
}

TEST(LinalgTransforms, ConvDerivatives) {
  Array lhs = random_array({2, 3, 7, 6}, 200), rhs = random_array({4, 3, 3, 2}, 201);
  check_derivatives([&](const Array& x) { return conv2d(x, rhs); }, lhs, 210);
  check_derivatives([&](const Array& w) { return conv2d(lhs, w); }, rhs, 220);
  // Feature groups (2 groups of 2 channels).
  Array lg = random_array({2, 4, 5, 5}, 230), rg = random_array({6, 2, 2, 3}, 231);
  check_derivatives([&](const Array& x) { return conv2d(x, rg, 2); }, lg, 240);
  check_derivatives([&](const Array& w) { return conv2d(lg, w, 2); }, rg, 250);
  // NHWC / HWIO / NHWC layouts with a plain stride.
  const lax::ConvDimensionNumbers nhwc{{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}};
  Array ln = random_array({2, 6, 5, 3}, 260), rn = random_array({3, 2, 3, 4}, 261);
  auto conv_nhwc = [&](const Array& x, const Array& w) {
    return lax::conv_general_dilated(x, w, {2, 2}, {{1, 1}, {0, 1}}, {}, {}, nhwc);
  };
  check_derivatives([&](const Array& x) { return conv_nhwc(x, rn); }, ln, 270);
  check_derivatives([&](const Array& w) { return conv_nhwc(ln, w); }, rn, 280);
  // Second order through the bilinear rule: x -> conv(x, x-derived kernel).
  Fn self = [](const Array& x) {
    return lax::conv_general_dilated(x, lax::slice(x, {0, 0, 0}, {1, 1, 3}), {1}, {{1, 1}}, {}, {});
  };
  check_second_order(self, random_array({1, 1, 6}, 290), 291);
}

TEST(LinalgTransforms, ConvBatchGroupsTransposeOfRhsAndLhsError) {
  // batch_group_count=2: the rhs cotangent is supported, the lhs one raises.
  Array lhs = random_array({4, 2, 5}, 300), rhs = random_array({4, 2, 2}, 301);
  auto conv = [](const Array& x, const Array& w) {
    return lax::conv_general_dilated(x, w, {1}, {{0, 0}}, {}, {}, std::nullopt, 1, 2);
  };
  check_derivatives([&](const Array& w) { return conv(lhs, w); }, rhs, 310);
  auto g = [&](const Array& x) { return lax::reduce_sum(conv(x, rhs), {0, 1, 2}); };
  EXPECT_JX_ERROR(grad(g)(lhs), "[conv_general_dilated]", "batch_group_count=2");
}

TEST(LinalgTransforms, ConvVmap) {
  check_vmap_all([](const Array& a, const Array& b) { return conv2d(a, b); }, {2, 3, 7, 6}, {4, 3, 3, 2}, 400);
  check_vmap_all([](const Array& a, const Array& b) { return conv2d(a, b, 2); }, {2, 4, 5, 5}, {6, 2, 2, 3}, 410);
  check_vmap_all(
      [](const Array& a, const Array& b) {
        return lax::conv_general_dilated(a, b, {1}, {{0, 0}}, {}, {}, std::nullopt, 1, 2);
      },
      {4, 2, 5}, {4, 2, 2}, 420);
}

// ---- triangular_solve ----

// A well-conditioned matrix (diagonally dominant) for solves.
Array well_conditioned(const Shape& shape, uint32_t seed) {
  const int64_t n = shape.back();
  Array eye = lax::broadcast_in_dim(jnp::eye(n, std::nullopt, 0, DType::Float64), shape,
                                    {static_cast<int64_t>(shape.size()) - 2, static_cast<int64_t>(shape.size()) - 1});
  return jnp::add(random_array(shape, seed), jnp::multiply(eye, Array(4.0)));
}

TEST(LinalgTransforms, TriangularSolveDerivatives) {
  for (bool left : {true, false})
    for (bool lower : {true, false})
      for (bool trans : {false, true})
        for (bool unit : {false, true}) {
          SCOPED_TRACE(::testing::Message() << left << lower << trans << unit);
          Array a = well_conditioned({2, 3, 3}, 500);
          Array b = random_array(left ? Shape{2, 3, 4} : Shape{2, 4, 3}, 501);
          auto solve = [=](const Array& aa, const Array& bb) {
            return lax::triangular_solve(aa, bb, left, lower, trans, false, unit);
          };
          check_derivatives([&](const Array& x) { return solve(a, x); }, b, 510);
          check_derivatives([&](const Array& x) { return solve(x, b); }, a, 520);
        }
  Fn both = [](const Array& x) { return lax::triangular_solve(x, x, true, true); };
  check_second_order(both, well_conditioned({3, 3}, 530), 531);
}

TEST(LinalgTransforms, TriangularSolveVmap) {
  auto f = [](const Array& a, const Array& b) {
    return lax::triangular_solve(jnp::add(a, jnp::multiply(jnp::eye(3, std::nullopt, 0, DType::Float64), Array(4.0))), b,
                                 true, true);
  };
  check_vmap_all(f, {3, 3}, {3, 2}, 540);
}

// ---- decompositions ----

Array symmetrize(const Array& x) { return jnp::multiply(jnp::add(x, jnp::swapaxes(x, -1, -2)), Array(0.5)); }

Array spd(const Shape& shape, uint32_t seed) {
  Array b = random_array(shape, seed);
  const int64_t n = shape.back();
  Array eye = lax::broadcast_in_dim(jnp::eye(n, std::nullopt, 0, DType::Float64), shape,
                                    {static_cast<int64_t>(shape.size()) - 2, static_cast<int64_t>(shape.size()) - 1});
  return jnp::add(jnp::matmul(b, jnp::swapaxes(b, -1, -2)), jnp::multiply(eye, Array(static_cast<double>(n))));
}

TEST(LinalgTransforms, CholeskyDerivatives) {
  Fn f = [](const Array& x) { return lax::cholesky(symmetrize(x)); };
  check_derivatives(f, spd({4, 4}, 600), 610);
  check_derivatives(f, spd({2, 3, 3}, 601), 620);
  check_second_order(f, spd({3, 3}, 602), 630);
}

TEST(LinalgTransforms, LuDerivatives) {
  Fn f = [](const Array& x) { return lax::lu(x).lu; };
  check_derivatives(f, random_array({4, 4}, 700), 710);
  check_derivatives(f, random_array({5, 3}, 701), 720);
  check_derivatives(f, random_array({3, 5}, 702), 730);
  check_derivatives(f, random_array({2, 3, 3}, 703), 740);
}

TEST(LinalgTransforms, QrDerivatives) {
  for (Shape s : {Shape{5, 3}, Shape{3, 3}, Shape{2, 4, 3}}) {
    check_derivatives([](const Array& x) { return lax::qr(x, false).q; }, random_array(s, 800), 810);
    check_derivatives([](const Array& x) { return lax::qr(x, false).r; }, random_array(s, 801), 820);
  }
  check_second_order([](const Array& x) { return lax::qr(x, false).r; }, random_array({4, 3}, 802), 830);
  Array wide = random_array({3, 5}, 840), tall = random_array({5, 3}, 841);
  EXPECT_JX_ERROR(jvp([](const Array& x) { return lax::qr(x, false).q; }, wide, wide), "[qr]", "f64[3,5]");
  EXPECT_JX_ERROR(jvp([](const Array& x) { return lax::qr(x, true).q; }, tall, tall), "[qr]",
                  "full_matrices=True");
}

TEST(LinalgTransforms, EighDerivatives) {
  // Eigenvalues, and V f(w) V^T (independent of the eigenvectors' signs).
  Fn values = [](const Array& x) { return lax::eigh(symmetrize(x)).eigenvalues; };
  Fn recon = [](const Array& x) {
    auto [v, w] = lax::eigh(symmetrize(x));
    Array sw = lax::sin(w);
    Array scaled = jnp::multiply(v, lax::broadcast_in_dim(sw, v.shape(), {static_cast<int64_t>(v.ndim()) - 1}));
    return jnp::matmul(scaled, jnp::swapaxes(v, -1, -2));
  };
  Fn squares = [](const Array& x) {
    Array v = lax::eigh(symmetrize(x)).eigenvectors;
    return jnp::multiply(v, v);
  };
  Array x = random_array({4, 4}, 900);
  check_derivatives(values, x, 910);
  check_derivatives([&](const Array& z) { return recon(z); }, random_array({4, 4}, 901), 920);
  check_derivatives(squares, x, 930);
  check_second_order(values, x, 940);
}

TEST(LinalgTransforms, SvdDerivatives) {
  Fn values = [](const Array& x) { return lax::svd(x, false, false).s; };
  Fn recon = [](const Array& x) {
    auto [u, s, vh] = lax::svd(x, false, true);
    Array scaled = jnp::multiply(u, lax::broadcast_in_dim(lax::sin(s), u.shape(), {1}));
    return jnp::matmul(scaled, vh);
  };
  Fn squares = [](const Array& x) {
    auto [u, s, vh] = lax::svd(x, false, true);
    return jnp::concatenate({lax::reshape(jnp::multiply(u, u), {u.size()}), lax::reshape(jnp::multiply(vh, vh), {vh.size()})});
  };
  for (Shape sh : {Shape{4, 3}, Shape{3, 4}, Shape{3, 3}}) {
    SCOPED_TRACE(sh.size());
    check_derivatives(values, random_array(sh, 1000), 1010);
    check_derivatives(recon, random_array(sh, 1001), 1020);
    check_derivatives(squares, random_array(sh, 1002), 1030);
  }
  Array tall = random_array({4, 3}, 1040);
  EXPECT_JX_ERROR(jvp([](const Array& x) { return lax::svd(x, true, true).u; }, tall, tall), "[svd]",
                  "full_matrices=True");
}

// vmap of a one-operand f over axis 0 and the last axis, batch sizes 3 and 1.
void check_vmap_unary(const Fn& f, const Shape& shape, uint32_t seed) {
  for (int64_t n : {3, 1})
    for (int64_t axis : {int64_t{0}, static_cast<int64_t>(shape.size())}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " axis=" << axis);
      Array xs = batched(shape, n, axis, seed);
      Array out = vmap(f, {.in_axes = {axis}})(xs);
      std::vector<Array> rows;
      for (int64_t i = 0; i < n; ++i) rows.push_back(f(jnp::take(xs, Array(static_cast<int>(i)), axis)));
      EXPECT_ALLCLOSE(out, jnp::stack(rows), 1e-9, 1e-9);
    }
}

TEST(LinalgTransforms, DecompositionVmap) {
  Fn make_spd = [](const Array& a) {
    return jnp::add(jnp::matmul(a, jnp::swapaxes(a, -1, -2)),
                    jnp::multiply(jnp::eye(3, std::nullopt, 0, DType::Float64), Array(3.0)));
  };
  check_vmap_unary([&](const Array& a) { return lax::cholesky(make_spd(a)); }, {3, 3}, 1100);
  check_vmap_unary([](const Array& a) { return lax::lu(a).lu; }, {3, 3}, 1110);
  check_vmap_unary([](const Array& a) { return lax::lu(a).permutation; }, {4, 3}, 1111);
  check_vmap_unary([](const Array& a) { return lax::qr(a, false).r; }, {4, 3}, 1120);
  check_vmap_unary([](const Array& a) { return lax::eigh(symmetrize(a)).eigenvalues; }, {3, 3}, 1130);
  check_vmap_unary([](const Array& a) { return lax::svd(a, false, false).s; }, {4, 3}, 1140);
  // vmap of grad through cholesky and eigh.
  Fn loss = [&](const Array& x) {
    return jnp::add(lax::reduce_sum(lax::cholesky(make_spd(x)), {0, 1}),
                    lax::reduce_sum(lax::sin(lax::eigh(symmetrize(x)).eigenvalues), {0}));
  };
  check_vmap_unary([&](const Array& x) { return grad(loss)(x); }, {3, 3}, 1150);
  // grad of grad (a Hessian-vector product) of the same loss, against differences.
  Array x = random_array({3, 3}, 1160), v = random_array({3, 3}, 1161);
  const double eps = 1e-6;
  Array fd = jnp::divide(jnp::subtract(grad(loss)(jnp::add(x, jnp::multiply(v, Array(eps)))),
                               grad(loss)(jnp::subtract(x, jnp::multiply(v, Array(eps))))),
                      Array(2 * eps));
  EXPECT_ALLCLOSE(jvp(grad(loss), x, v).second, fd, 1e-5, 1e-5);
}


// ---- det and slogdet: JAX's derivatives ----

Array mat(std::vector<double> v, Shape shape) { return jnp::array(v, shape); }
Array c128(std::vector<complex128_t> v, Shape shape) { return Array(v.data(), std::move(shape)); }

// grad(det) is the cofactor matrix adj(a)^T also where a is singular (det is a polynomial).
// Expected values computed with JAX 0.10.2 (jax.grad(jnp.linalg.det), x64) in /work/venv.
TEST(LinalgTransforms, DetGradientIsTheCofactorMatrixAtSingularMatrices) {
  struct Case {
    std::vector<double> a, want;
    Shape shape;
  };
  const std::vector<Case> cases = {
      {{1, 2, 2, 4}, {4, -2, -2, 1}, {2, 2}},
      {{0, 1, 0, 1}, {1, 0, -1, 0}, {2, 2}},  // the zero pivot comes first
      {{0, 1, 0, 0}, {0, 0, -1, 0}, {2, 2}},  // two zero pivots, rank 1
      {{1, 2, 3, 4, 5, 6, 7, 8, 9}, {-3, 6, -3, 6, -12, 6, -3, 6, -3}, {3, 3}},
      {{1, 2, 3, 2, 4, 6, 1, 1, 1}, {-2, 4, -2, 1, -2, 1, 0, 0, 0}, {3, 3}},
      {{0, 0, 0, 0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 0, 0, 0, 0, 0}, {3, 3}},  // rank 1 of 3: adj = 0
      {{2, 1, 1, 3}, {3, -1, -1, 2}, {2, 2}},
  };
  auto det = [](const Array& a) { return jnp::linalg::det(a); };
  for (const Case& c : cases) EXPECT_ALLCLOSE(grad(det)(mat(c.a, c.shape)), mat(c.want, c.shape), 1e-12, 1e-12);
  // Under jit: the rule is staged into the compiled program.
  EXPECT_ALLCLOSE(jit(grad(det))(mat(cases[1].a, {2, 2})), mat(cases[1].want, {2, 2}), 1e-12, 1e-12);
  // float32 keeps its dtype and the same values.
  Array a32 = lax::convert_element_type(mat({1, 2, 2, 4}, {2, 2}), DType::Float32);
  EXPECT_ALLCLOSE(grad(det)(a32), lax::convert_element_type(mat({4, -2, -2, 1}, {2, 2}), DType::Float32), 1e-6, 1e-6);
  // vmap of grad and grad of a batched det: each matrix takes its own branch.
  Array batch = mat({1, 2, 2, 4, 2, 1, 1, 3, 0, 1, 0, 1}, {3, 2, 2});
  Array want = mat({4, -2, -2, 1, 3, -1, -1, 2, 1, 0, -1, 0}, {3, 2, 2});
  EXPECT_ALLCLOSE(vmap(grad(det))(batch), want, 1e-12, 1e-12);
  EXPECT_ALLCLOSE(grad([&](const Array& a) { return jnp::sum(det(a)); })(batch), want, 1e-12, 1e-12);
  EXPECT_ALLCLOSE(grad([&](const Array& a) { return jnp::sum(vmap(det)(a)); })(batch), want, 1e-12, 1e-12);
}

TEST(LinalgTransforms, DetDerivativesMatchDifferencesAndJax) {
  Fn det = [](const Array& a) { return jnp::linalg::det(a); };
  check_derivatives(det, random_array({3, 3}, 1200), 1210);
  check_derivatives(det, random_array({2, 4, 4}, 1201), 1220);
  check_second_order(det, random_array({3, 3}, 1202), 1230);
  // Hessian at a regular matrix; JAX 0.10.2: jax.hessian(jnp.linalg.det)([[2, 1], [1, 3]]).
  Array h = hessian(det)(mat({2, 1, 1, 3}, {2, 2}));
  EXPECT_ALLCLOSE(h, mat({0, 0, 0, 1, 0, 0, -1, 0, 0, -1, 0, 0, 1, 0, 0, 0}, {2, 2, 2, 2}), 1e-12, 1e-12);
  // Complex jvps; JAX 0.10.2: jax.jvp(jnp.linalg.det, (a,), (t,)).
  Array t = c128({{1, 0}, {0, 0.5}, {0, 0}, {1, 0}}, {2, 2});
  auto [d, td] = jvp(det, c128({{1, 1}, {2, 0}, {0, 0.5}, {3, 0}}, {2, 2}), t);
  EXPECT_ALLCLOSE(d, c128({{3, 2}}, {}), 1e-12, 1e-12);
  EXPECT_ALLCLOSE(td, c128({{4.25, 1}}, {}), 1e-12, 1e-12);
  auto [ds, tds] = jvp(det, c128({{1, 1}, {2, 0}, {1, 1}, {2, 0}}, {2, 2}), t);  // singular
  EXPECT_ALLCLOSE(ds, c128({{0, 0}}, {}), 1e-12, 1e-12);
  EXPECT_ALLCLOSE(tds, c128({{3.5, 0.5}}, {}), 1e-12, 1e-12);
  // Staged, det is one custom_jvp_call equation (its rule inside); grad stages the rule's work.
  EXPECT_NE(make_jaxpr(det)(mat({2, 1, 1, 3}, {2, 2})).str().find("custom_jvp_call"), std::string::npos);
}

TEST(LinalgTransforms, SlogdetSignHasAZeroTangent) {
  auto sign = [](const Array& a) { return jnp::linalg::slogdet(a).sign; };
  Array a = random_array({3, 3}, 1300);
  Array tangent = jvp(sign, a, random_array({3, 3}, 1301)).second;
  EXPECT_EQ(tangent.item<double>(), 0.0);  // exactly, not rounding noise
  EXPECT_EQ(jnp::max(jnp::abs(grad(sign)(a))).item<double>(), 0.0);
  // The log-determinant's derivative is still tr(a^-1 da).
  check_derivatives([](const Array& x) { return jnp::linalg::slogdet(x).logabsdet; }, a, 1310);
  // Complex: the sign's phase does move; JAX 0.10.2 jax.jvp(jnp.linalg.slogdet, ...).
  Array za = c128({{1, 1}, {2, 0}, {0, 0.5}, {3, 0}}, {2, 2}), zt = c128({{1, 0}, {0, 0.5}, {0, 0}, {1, 0}}, {2, 2});
  auto [r, tr] = jvp([](const Array& x) { auto s = jnp::linalg::slogdet(x); return std::pair{s.sign, s.logabsdet}; },
                     za, zt);
  EXPECT_ALLCLOSE(tr.first, c128({{0.23468085224913535, -0.35202127837370306}}, {}), 1e-12, 1e-12);
  EXPECT_ALLCLOSE(tr.second, Array(1.1346153846153848), 1e-12, 1e-12);
}

}  // namespace
}  // namespace jx
