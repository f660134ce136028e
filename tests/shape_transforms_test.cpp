// Transformation rules of the shape family (shape_ops, slicing, sort, prng):
// derivatives against central finite differences in float64 and the vjp identity
// <J t, c> == <t, J^T c>, second order through the jvp, and vmap against a loop over
// the batch members for every in_axes combination.
#include <cmath>
#include <functional>
#include <optional>
#include <random>

#include "jx/jx.h"
#include "test_util.h"

namespace jx {
namespace {
namespace jnp = jx::numpy;

using Fn = std::function<Array(const Array&)>;

Array f64(std::vector<double> v) { return Array(v, Shape{static_cast<int64_t>(v.size())}); }

Array random_f64(const Shape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist;
  std::vector<double> v(static_cast<size_t>(shape_size(shape)));
  for (double& e : v) e = dist(gen);
  return Array(v, shape);
}

double dot_all(const Array& a, const Array& b) {
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  EXPECT_EQ(va.size(), vb.size());
  double s = 0;
  for (size_t i = 0; i < va.size(); ++i) s += va[i] * vb[i];
  return s;
}

// x + s * v, computed on the host (independent of the code under test).
Array axpy(const Array& x, double s, const Array& v) {
  auto vx = x.to_vector<double>(), vv = v.to_vector<double>();
  for (size_t i = 0; i < vx.size(); ++i) vx[i] += s * vv[i];
  return Array(vx, x.shape());
}

// jvp against central differences along a random direction, and the vjp identity.
void check_first_order(const Fn& f, const Array& x, uint32_t seed, double tol = 1e-6) {
  Array v = random_f64(x.shape(), seed);
  const double eps = 1e-5;
  Array plus = f(axpy(x, eps, v)), minus = f(axpy(x, -eps, v));
  auto fd = plus.to_vector<double>();
  auto mv = minus.to_vector<double>();
  for (size_t i = 0; i < fd.size(); ++i) fd[i] = (fd[i] - mv[i]) / (2 * eps);
  auto [y, t] = jvp(f, x, v);
  ASSERT_EQ(t.shape(), y.shape());
  auto tv = t.to_vector<double>();
  ASSERT_EQ(tv.size(), fd.size());
  for (size_t i = 0; i < fd.size(); ++i) EXPECT_NEAR(tv[i], fd[i], tol * (1 + std::abs(fd[i]))) << "element " << i;
  Array c = random_f64(y.shape(), seed + 1);
  auto [y2, pullback] = vjp(f, x);
  auto [ct] = pullback(c);
  ASSERT_EQ(ct.shape(), x.shape());
  EXPECT_NEAR(dot_all(t, c), dot_all(v, ct), 1e-9 * (1 + std::abs(dot_all(t, c))));
}

// First order, then the same checks on x -> J(x) w (second order).
void check_grads(const Fn& f, const Array& x, uint32_t seed) {
  check_first_order(f, x, seed);
  Array w = random_f64(x.shape(), seed + 7);
  Fn tangent_of_f = [f, w](const Array& p) { return jvp(f, p, w).second; };
  check_first_order(tangent_of_f, x, seed + 11, 1e-5);
}

// vmap of f over its operands vs a loop: every in_axes combination (axis 0, the last
// axis, unmapped; at least one mapped) and batch sizes 3 and 1. make[i](k) builds batch
// member k of operand i (unbatched).
using Maker = std::function<Array(int)>;
void check_vmap(const std::function<Array(std::span<const Array>)>& f, const std::vector<Maker>& make) {
  const size_t n = make.size();
  size_t combos = 1;
  for (size_t i = 0; i < n; ++i) combos *= 3;
  for (int64_t size : {3, 1}) {
    for (size_t code = 0; code < combos; ++code) {
      std::vector<int> choice(n);  // 0: axis 0, 1: last axis, 2: unmapped
      size_t c = code;
      bool any = false;
      for (size_t i = 0; i < n; ++i, c /= 3) {
        choice[i] = static_cast<int>(c % 3);
        any |= choice[i] != 2;
      }
      if (!any) continue;
      std::vector<Array> args;
      std::vector<std::optional<int64_t>> in_dims;
      for (size_t i = 0; i < n; ++i) {
        if (choice[i] == 2) {
          args.push_back(make[i](0));
          in_dims.push_back(std::nullopt);
          continue;
        }
        std::vector<Array> members;
        for (int k = 0; k < size; ++k) members.push_back(make[i](k));
        const int64_t axis = choice[i] == 0 ? 0 : members[0].ndim();
        args.push_back(jnp::stack(members, axis));
        in_dims.push_back(axis);
      }
      std::vector<Array> expected_rows;
      for (int k = 0; k < size; ++k) {
        std::vector<Array> member;
        for (size_t i = 0; i < n; ++i) member.push_back(choice[i] == 2 ? make[i](0) : make[i](k));
        expected_rows.push_back(f(member));
      }
      std::vector<std::optional<int64_t>> out_dims{int64_t{0}};
      detail::FlatFn flat = [&](std::span<const Array> xs) { return std::vector<Array>{f(xs)}; };
      Array got = detail::vmap_flat(flat, args, in_dims, out_dims, {})[0];
      std::string where = "batch " + std::to_string(size) + ", in_axes code " + std::to_string(code);
      EXPECT_ALLCLOSE(got, jnp::stack(expected_rows, 0)) << where;
    }
  }
}

Maker rand_maker(const Shape& shape, uint32_t seed) {
  return [shape, seed](int k) { return random_f64(shape, seed + 100 * static_cast<uint32_t>(k)); };
}
Maker int_maker(std::vector<int> values) {
  return [values](int k) { return Array(values[static_cast<size_t>(k) % values.size()]); };
}

// Flat parameter vector p -> operand i of `shapes` (reshape of a slice).
std::vector<Array> split(const Array& p, const std::vector<Shape>& shapes) {
  std::vector<Array> out;
  int64_t at = 0;
  for (const Shape& s : shapes) {
    const int64_t n = shape_size(s);
    out.push_back(lax::reshape(lax::slice(p, {at}, {at + n}), s));
    at += n;
  }
  return out;
}

// Nonlinear outer map so second derivatives are not trivially zero.
Array nl(const Array& x) { return lax::mul(lax::sin(x), x); }

// ---- shape_ops ----

TEST(ShapeTransforms, ReshapeTransposeSqueezeExpandRevGrads) {
  Array x = random_f64({2, 3, 4}, 1);
  check_grads([](const Array& a) { return nl(lax::reshape(nl(a), {4, 6})); }, x, 10);
  check_grads([](const Array& a) { return nl(lax::transpose(nl(a), {2, 0, 1})); }, x, 20);
  check_grads([](const Array& a) { return nl(lax::rev(nl(a), {0, 2})); }, x, 30);
  Array y = random_f64({2, 1, 3}, 2);
  check_grads([](const Array& a) { return nl(lax::squeeze(nl(a), {1})); }, y, 40);
  check_grads([](const Array& a) { return nl(lax::expand_dims(nl(a), {0, 3})); }, x, 50);
}

TEST(ShapeTransforms, ShapeOpsVmap) {
  auto one = [](auto g) { return [g](std::span<const Array> a) { return g(a[0]); }; };
  check_vmap(one([](const Array& a) { return lax::reshape(a, {3, 2, 2}); }), {rand_maker({2, 6}, 1)});
  check_vmap(one([](const Array& a) { return lax::transpose(a, {1, 2, 0}); }), {rand_maker({2, 3, 4}, 2)});
  check_vmap(one([](const Array& a) { return lax::squeeze(a, {0, 2}); }), {rand_maker({1, 3, 1}, 3)});
  check_vmap(one([](const Array& a) { return lax::expand_dims(a, {0, 2}); }), {rand_maker({2, 3}, 4)});
  check_vmap(one([](const Array& a) { return lax::rev(a, {1}); }), {rand_maker({2, 3}, 5)});
  check_vmap(one([](const Array& a) { return lax::broadcast_in_dim(a, {2, 4, 3}, {0, 2}); }),
             {rand_maker({2, 3}, 6)});
}

TEST(ShapeTransforms, IotaHasNoTangentAndBatchRule) {
  const Primitive* p = find_primitive("iota");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->has(kNotDifferentiable));
  ASSERT_TRUE(p->rules().batch);
  Params params{{"dtype", DType::Float64}, {"shape", Shape{3}}, {"dimension", int64_t{0}}};
  BatchResult r = p->rules().batch({}, {}, params, BatchAxis{5, ""});
  ASSERT_EQ(r.dims.size(), 1u);
  EXPECT_EQ(r.dims[0], kNotMapped);
  EXPECT_ALLCLOSE(r.outs[0], f64({0.0, 1.0, 2.0}));
  // Under grad and vmap, iota is a constant.
  auto f = [](const Array& a) { return lax::reduce_sum(lax::mul(a, lax::iota(DType::Float64, 3)), {0}); };
  EXPECT_ALLCLOSE(grad(f)(random_f64({3}, 1)), f64({0.0, 1.0, 2.0}));
  Array xs = random_f64({2, 3}, 2);
  auto xv = xs.to_vector<double>();
  EXPECT_ALLCLOSE(vmap(f)(xs), f64({xv[1] + 2 * xv[2], xv[4] + 2 * xv[5]}), 1e-12, 1e-12);
}

// ---- slicing ----

TEST(ShapeTransforms, SliceGradsAndVmap) {
  Array x = random_f64({5, 7}, 3);
  check_grads([](const Array& a) { return nl(lax::slice(nl(a), {1, 0}, {5, 7}, {2, 3})); }, x, 60);
  check_grads([](const Array& a) { return nl(lax::slice(nl(a), {1, 2}, {4, 6})); }, x, 61);
  // Empty window: the cotangent is all zeros.
  auto [y, pullback] = vjp([](const Array& a) { return lax::slice(a, {2, 0}, {2, 7}); }, x);
  auto [ct] = pullback(jnp::zeros({0, 7}, DType::Float64));
  EXPECT_ALLCLOSE(ct, jnp::zeros({5, 7}, DType::Float64));
  check_vmap([](std::span<const Array> a) { return lax::slice(a[0], {0, 1}, {3, 4}, {2, 2}); },
             {rand_maker({4, 5}, 7)});
}

TEST(ShapeTransforms, DynamicSliceGradsAndVmap) {
  Array x = random_f64({5, 6}, 4);
  for (int start : {-2, 1, 4}) {  // clamped, inside, clamped at the end
    check_grads([start](const Array& a) { return nl(lax::dynamic_slice(nl(a), {Array(1), Array(start)}, {3, 3})); },
                x, 70 + static_cast<uint32_t>(start + 2));
  }
  auto f = [](std::span<const Array> a) { return lax::dynamic_slice(a[0], {a[1], a[2]}, {2, 3}); };
  check_vmap(f, {rand_maker({4, 5}, 8), int_maker({0, 2, 7}), int_maker({1, -1, 3})});
}

TEST(ShapeTransforms, DynamicUpdateSliceGradsAndVmap) {
  const std::vector<Shape> shapes{{4, 5}, {2, 3}};
  for (int start : {-1, 1, 3}) {
    Fn f = [&, start](const Array& p) {
      auto ops = split(nl(p), shapes);
      return nl(lax::dynamic_update_slice(ops[0], ops[1], {Array(start), Array(2)}));
    };
    check_grads(f, random_f64({26}, 5), 80 + static_cast<uint32_t>(start + 1));
  }
  auto g = [](std::span<const Array> a) { return lax::dynamic_update_slice(a[0], a[1], {a[2], a[3]}); };
  check_vmap(g, {rand_maker({4, 5}, 9), rand_maker({2, 3}, 10), int_maker({0, 3, -2}), int_maker({2, 0, 9})});
}

TEST(ShapeTransforms, PadGradsAndVmap) {
  const std::vector<Shape> shapes{{3, 4}, {}};
  const std::vector<std::vector<lax::PadDim>> configs{
      {{1, 2, 0}, {0, 1, 1}}, {{-1, 2, 1}, {2, -3, 2}}, {{-2, -1, 0}, {1, 0, 0}}};
  uint32_t seed = 90;
  for (const auto& config : configs) {
    Fn f = [&](const Array& p) {
      auto ops = split(nl(p), shapes);
      return nl(lax::pad(ops[0], ops[1], config));
    };
    check_grads(f, random_f64({13}, 6), seed++);
    check_vmap([&](std::span<const Array> a) { return lax::pad(a[0], a[1], config); },
               {rand_maker({3, 4}, 11), rand_maker({}, 12)});
  }
}

TEST(ShapeTransforms, ConcatenateGradsAndVmap) {
  const std::vector<Shape> shapes{{2, 3}, {2, 1}, {2, 4}};
  Fn f = [&](const Array& p) {
    auto ops = split(nl(p), shapes);
    return nl(lax::concatenate(ops, 1));
  };
  check_grads(f, random_f64({16}, 7), 100);
  check_vmap([](std::span<const Array> a) { return lax::concatenate({a[0], a[1], a[2]}, -1); },
             {rand_maker({2, 3}, 13), rand_maker({2, 1}, 14), rand_maker({2, 2}, 15)});
}

// ---- sort ----

TEST(ShapeTransforms, SortGradsAndVmap) {
  Array x = random_f64({3, 5}, 8);
  check_grads([](const Array& a) { return nl(lax::sort(nl(a), 1)); }, x, 110);
  check_grads([](const Array& a) { return nl(lax::sort(nl(a), 0)); }, x, 111);
  // Two operands: keys and values; the values' gradient follows the keys' permutation.
  const std::vector<Shape> shapes{{6}, {6}};
  Fn f = [&](const Array& p) {
    auto ops = split(nl(p), shapes);
    auto out = lax::sort({ops[0], ops[1]}, 0, true, 1);
    return lax::concatenate({nl(out[0]), nl(out[1])}, 0);
  };
  check_grads(f, random_f64({12}, 9), 112);
  // The gradient of sort is the inverse permutation of the cotangent: a hand-made case.
  Array v = f64({3.0, 1.0, 2.0});
  Array w = f64({10.0, 20.0, 30.0});
  auto [y, pullback] = vjp([](const Array& a) { return lax::sort(a, 0); }, v);
  auto [ct] = pullback(w);
  EXPECT_ALLCLOSE(ct, f64({30.0, 10.0, 20.0}));
  check_vmap([](std::span<const Array> a) { return lax::sort(a[0], 1); }, {rand_maker({2, 4}, 16)});
  check_vmap([](std::span<const Array> a) { return lax::sort({a[0], a[1]}, 0, true, 1)[1]; },
             {rand_maker({4, 2}, 17), rand_maker({4, 2}, 18)});
}

// ---- prng ----

TEST(ShapeTransforms, ThreefryVmapAndNoTangent) {
  const Primitive* p = find_primitive("threefry2x32");
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->has(kNotDifferentiable));
  auto u32 = [](uint32_t seed) {
    return [seed](int k) {
      std::vector<uint32_t> v{seed * 7919u + static_cast<uint32_t>(k), seed ^ 0xdeadbeefu, seed + 3u};
      return Array(v, Shape{3});
    };
  };
  check_vmap([](std::span<const Array> a) { return lax::threefry2x32(a[0], a[1], a[2], a[3]).first; },
             {u32(1), u32(2), u32(3), u32(4)});
  check_vmap([](std::span<const Array> a) { return lax::threefry2x32(a[0], a[1], a[2], a[3]).second; },
             {u32(5), u32(6), u32(7), u32(8)});
}

// ---- composition ----

TEST(ShapeTransforms, GradOfGradAndVmapOfGrad) {
  // f(x) = sum(slice(pad(x)) ** 3): d2/dx2 of the kept elements is 6x.
  auto f = [](const Array& a) {
    Array padded = lax::pad(a, Array(0.0), {{2, 1, 1}});
    Array window = lax::slice(padded, {2}, {7}, {2});  // exactly the operand again
    return lax::reduce_sum(lax::mul(window, lax::mul(window, window)), {0});
  };
  Array x = f64({0.5, -1.0, 2.0});
  auto hess_diag = [&](const Array& a) {
    return grad([&](const Array& b) { return lax::reduce_sum(grad(f)(b), {0}); })(a);
  };
  EXPECT_ALLCLOSE(hess_diag(x), f64({3.0, -6.0, 12.0}), 1e-12, 1e-12);
  Array xs = random_f64({4, 3}, 10);
  Array gs = vmap(grad(f))(xs);
  auto xv = xs.to_vector<double>();
  std::vector<double> want;
  for (double e : xv) want.push_back(3 * e * e);
  EXPECT_ALLCLOSE(gs, Array(want, Shape{4, 3}), 1e-12, 1e-12);
  // vmap of grad through a dynamic_slice whose start is batched.
  auto g = [](const Array& a, const Array& i) {
    return lax::reduce_sum(nl(lax::dynamic_slice(a, {i}, {2})), {0});
  };
  Array a = random_f64({5}, 11);
  Array starts(std::vector<int32_t>{0, 3, 9}, Shape{3});
  Array batched = vmap([&](const Array& i) { return grad(g)(a, i); })(starts);
  auto av = a.to_vector<double>();
  for (int k = 0; k < 3; ++k) {
    std::vector<double> row(5, 0.0);
    int s = std::clamp(std::vector<int>{0, 3, 9}[k], 0, 3);
    for (int j = s; j < s + 2; ++j) row[j] = std::cos(av[j]) * av[j] + std::sin(av[j]);
    EXPECT_ALLCLOSE(lax::slice(batched, {k, 0}, {k + 1, 5}), Array(row, Shape{1, 5}), 1e-12, 1e-12);
  }
}

TEST(ShapeTransforms, ErrorsNameThePrimitive) {
  // A batched shape error still reads as the primitive's own message.
  EXPECT_JX_ERROR(vmap([](const Array& a) { return lax::reshape(a, {5}); })(jnp::zeros({2, 3})), "[reshape]",
                  "cannot reshape", "(2, 5)");
  // Differentiating through the integer bits of threefry gives no tangent: grad of a
  // function that only uses them through a conversion is zero, not an error.
  auto f = [](const Array& x) {
    Array bits = lax::threefry2x32(Array(1u), Array(2u), Array(3u), Array(4u)).first;
    return lax::mul(x, lax::convert_element_type(bits, DType::Float64));
  };
  EXPECT_NO_THROW(grad(f)(Array(1.0)));
}

}  // namespace
}  // namespace jx
