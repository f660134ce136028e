// Buffer donation (JitOptions::donate_argnums): a donated argument's buffer becomes the
// buffer of a result when the kernel that reads it last writes each element where it
// read it, so a parameter update allocates nothing; the donated array is deleted and
// every later use raises an error naming what happened.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "core/array_internal.h"
#include "jx/jx.h"
#include "test_util.h"

namespace {

using namespace jx;
namespace jnp = jx::numpy;
using jx::testing::randn;

const void* buffer(const Array& x) { return detail::raw_data(x); }

using jx::testing::error_of;

bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

TEST(JitDonation, ParameterUpdateWritesOverTheDonatedBuffer) {
  auto sgd = [](const Array& p, const Array& g) { return p - 0.1 * g; };
  auto step = jit(sgd, {.name = "sgd", .donate_argnums = {0}});
  Array p = randn({1000, 33}, DType::Float32, 1);
  Array g = randn({1000, 33}, DType::Float32, 2);
  for (int i = 0; i < 3; ++i) {
    Array want = sgd(detail::contiguous(p + 0), g);
    const void* before = buffer(p);
    Array next = step(p, g);
    EXPECT_EQ(buffer(next), before) << "the result did not reuse the donated buffer";
    EXPECT_TRUE(p.is_deleted());
    EXPECT_FALSE(g.is_deleted());
    EXPECT_FALSE(next.is_deleted());
    EXPECT_ALLCLOSE(next, want, 0, 0);
    p = next;
  }
}

TEST(JitDonation, PytreeArgumentsDonateEveryLeaf) {
  using Params = std::vector<Array>;
  auto update = [](const Params& params, const Params& grads) {
    Params out;
    for (size_t i = 0; i < params.size(); ++i) out.push_back(params[i] - 0.5 * grads[i]);
    return out;
  };
  auto step = jit(update, {.donate_argnums = {0}});
  Params params{randn({64}, DType::Float64, 3), randn({8, 8}, DType::Float64, 4)};
  Params grads{randn({64}, DType::Float64, 5), randn({8, 8}, DType::Float64, 6)};
  Params want = update({params[0] + 0, params[1] + 0}, grads);
  std::vector<const void*> before{buffer(params[0]), buffer(params[1])};
  Params got = step(params, grads);
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(params[i].is_deleted());
    EXPECT_EQ(buffer(got[i]), before[i]);
    EXPECT_ALLCLOSE(got[i], want[i], 0, 0);
  }
}

TEST(JitDonation, UsingADonatedArrayRaises) {
  auto step = jit([](const Array& x) { return jnp::sin(x) * 2; }, {.name = "step", .donate_argnums = {0}});
  Array x = randn({16}, DType::Float32, 7);
  Array copy_of_handle = x;  // the same array: deleted too
  Array y = step(x);
  EXPECT_TRUE(copy_of_handle.is_deleted());
  // Shape and dtype stay readable; values do not.
  EXPECT_EQ(x.shape(), Shape{16});
  EXPECT_EQ(x.dtype(), DType::Float32);
  const std::string donated = "was donated to a jitted function (JitOptions::donate_argnums) and deleted";
  std::string e = error_of([&] { (void)jnp::exp(x); });
  EXPECT_TRUE(contains(e, "[exp]") && contains(e, "f32[16]") && contains(e, donated)) << e;
  e = error_of([&] { (void)x.to_vector<float>(); });
  EXPECT_TRUE(contains(e, donated)) << e;
  e = error_of([&] { (void)x(0).item<float>(); });
  EXPECT_TRUE(contains(e, donated)) << e;
  e = error_of([&] { (void)step(x); });
  EXPECT_TRUE(contains(e, "[jit]") && contains(e, donated)) << e;
  // Captured by another traced function, as a constant.
  e = error_of([&] { (void)jit([&](const Array& z) { return z + x; })(y); });
  EXPECT_TRUE(contains(e, donated)) << e;
  e = error_of([&] { (void)grad([&](const Array& z) { return jnp::sum(z * x); })(y); });
  EXPECT_TRUE(contains(e, donated)) << e;
  EXPECT_EQ(repr(x), "Array(<deleted>, shape=(16,), dtype=float32)");
  EXPECT_ALLCLOSE(y, jnp::sin(randn({16}, DType::Float32, 7)) * 2, 0, 0);
}

using Arrays = std::vector<Array>;

// Calls a jitted f on copies of args without donation, and on args with the leaves
// `donate` donated (passed as the jitted function's first argument, a list, the rest as
// its second); checks the values agree and which results took a donated argument's
// buffer: reused[k] names the argument whose buffer result k must be in, or -1 for a
// fresh buffer.
template <class F>
void expect_donation(F f, Arrays args, std::vector<int> donate, std::vector<int> reused, double rtol = 0,
                     double atol = 0) {
  auto call = [f, donate, n = args.size()](const Arrays& given, const Arrays& kept) {
    Arrays all(n);
    size_t g = 0, k = 0;
    for (size_t i = 0; i < n; ++i)
      all[i] = std::find(donate.begin(), donate.end(), static_cast<int>(i)) != donate.end() ? given[g++] : kept[k++];
    return f(all);
  };
  auto split = [&](const Arrays& all) {
    std::pair<Arrays, Arrays> parts;
    for (size_t i = 0; i < all.size(); ++i)
      (std::find(donate.begin(), donate.end(), static_cast<int>(i)) != donate.end() ? parts.first : parts.second)
          .push_back(all[i]);
    return parts;
  };
  Arrays copies;
  for (const Array& a : args) copies.push_back(detail::contiguous(a + 0));
  auto [copies_given, copies_kept] = split(copies);
  Arrays want = jit(call)(copies_given, copies_kept);
  std::vector<const void*> before;
  for (const Array& a : args) before.push_back(buffer(a));
  auto [given, kept] = split(args);
  Arrays got = jit(call, {.name = "donating", .donate_argnums = {0}})(given, kept);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got.size(), reused.size());
  for (int d : donate) EXPECT_TRUE(args[static_cast<size_t>(d)].is_deleted()) << d;
  for (size_t k = 0; k < got.size(); ++k) {
    SCOPED_TRACE("result " + std::to_string(k));
    EXPECT_ALLCLOSE(got[k], want[k], rtol, atol);
    if (reused[k] >= 0)
      EXPECT_EQ(buffer(got[k]), before[static_cast<size_t>(reused[k])]) << "not in argument " << reused[k] << "'s buffer";
    else
      for (const void* b : before) EXPECT_NE(buffer(got[k]), b);
  }
}

const auto adam_update = [](const Arrays& s) {  // p, m, v, g -> p, m, v
  Array m = 0.9 * s[1] + 0.1 * s[3];
  Array v = 0.999 * s[2] + 0.001 * (s[3] * s[3]);
  return Arrays{s[0] - 1e-3 * m / (jnp::sqrt(v) + 1e-8), m, v};
};

TEST(JitDonation, MultiOutputKernelsWriteEveryStateOverItsBuffer) {
  // One kernel reads p, m, v and g and writes three results, each over a donated state.
  for (DType dtype : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Arrays state{randn({1000, 33}, dtype, 20), randn({1000, 33}, dtype, 21), jnp::abs(randn({1000, 33}, dtype, 22)),
                 randn({1000, 33}, dtype, 23)};
    expect_donation(adam_update, state, {0, 1, 2}, {0, 1, 2});
  }
  // Repeated steps feed each step's results back in.
  auto step = jit([](const Arrays& st, const Array& g) { return adam_update(Arrays{st[0], st[1], st[2], g}); },
                  {.donate_argnums = {0}});
  Arrays s{randn({4096}, DType::Float32, 24), randn({4096}, DType::Float32, 25), randn({4096}, DType::Float32, 26) * 0};
  const Array g = randn({4096}, DType::Float32, 27);
  for (int i = 0; i < 3; ++i) {
    Arrays want = adam_update(Arrays{s[0] + 0, s[1] + 0, s[2] + 0, g});
    std::vector<const void*> before{buffer(s[0]), buffer(s[1]), buffer(s[2])};
    Arrays next = step(s, g);
    for (size_t k = 0; k < 3; ++k) {
      EXPECT_EQ(buffer(next[k]), before[k]);
      EXPECT_ALLCLOSE(next[k], want[k], 1e-6, 1e-7);
    }
    EXPECT_FALSE(g.is_deleted());
    s = next;
  }
}

TEST(JitDonation, RowsKernelsWriteOverDonatedRows) {
  // A softmax's rows are read by its passes and then written in place, block by block,
  // including the pipelined schedule of large operands (each row's outputs stored while
  // the next row's last pass runs).
  auto softmax = [](const Arrays& a) {
    Array e = jnp::exp(a[0] - jnp::max(a[0], 1, true));
    return Arrays{e / jnp::sum(e, 1, true)};
  };
  for (Shape shape : {Shape{8, 16}, Shape{64, 1000}, Shape{512, 2048}}) {
    SCOPED_TRACE(detail::shape_str(shape));
    expect_donation(softmax, {randn(shape, DType::Float32, 30)}, {0}, {0}, 1e-6, 1e-7);
  }
  // Per-row results over per-row arguments (a bias's update by its row sums), beside
  // full-shape results over the rows.
  auto update = [](const Arrays& a) {
    Array centered = a[0] - jnp::mean(a[0], 1, true);
    return Arrays{centered * a[1].reshape({-1, 1}), a[1] - 0.5 * jnp::sum(centered * centered, 1)};
  };
  expect_donation(update, {randn({300, 100}, DType::Float64, 31), randn({300}, DType::Float64, 32)}, {0, 1}, {0, 1},
                  1e-12, 1e-12);
}

TEST(JitDonation, ColumnsKernelsWriteOverDonatedColumns) {
  // Reductions over leading axes: blocks of columns, passes over the reduced rows, then
  // the outputs; short columns (3 rows) run the whole program a column at a time.
  auto standardize = [](const Arrays& a) {
    Array centered = a[0] - jnp::mean(a[0], 0);
    return Arrays{centered, a[1] - jnp::sum(centered * centered, 0)};
  };
  for (Shape shape : {Shape{3, 4096}, Shape{64, 1000}}) {
    SCOPED_TRACE(detail::shape_str(shape));
    expect_donation(standardize, {randn(shape, DType::Float32, 33), randn({shape[1]}, DType::Float32, 34)}, {0, 1},
                    {0, 1}, 1e-6, 1e-6);
  }
}

TEST(JitDonation, ProductEpiloguesWriteOverDonatedArguments) {
  // C - 0.1 (A @ B): the epilogue writes over C, row block by row block as the product's
  // rows are final (float32 256) or after it (float64 600).
  auto update = [](const Arrays& a) { return Arrays{a[2] - 0.1 * jnp::matmul(a[0], a[1])}; };
  for (auto [n, dtype] : {std::pair{256, DType::Float32}, std::pair{600, DType::Float64}}) {
    SCOPED_TRACE(n);
    Arrays abc{randn({n, n}, dtype, 35), randn({n, n}, dtype, 36), randn({n, n}, dtype, 37)};
    expect_donation(update, abc, {2}, {2});
  }
  // Never over the product's operands, which other threads still read while the
  // epilogue writes: A - A @ B gets a fresh buffer.
  auto residual = [](const Arrays& a) { return Arrays{a[0] - jnp::matmul(a[0], a[1])}; };
  expect_donation(residual, {randn({256, 256}, DType::Float32, 38), randn({256, 256}, DType::Float32, 39)}, {0}, {-1});
}

TEST(JitDonation, ViewArgumentsBesideDonatedOnes) {
  // g is a broadcast view, read in place by kernels compiled for its layout, which write
  // over the donated states as the row-major ones do.
  Arrays state{randn({2000}, DType::Float32, 40), randn({2000}, DType::Float32, 41),
               jnp::abs(randn({2000}, DType::Float32, 42)), jnp::full({2000}, 0.25f)};
  expect_donation(adam_update, state, {0, 1, 2}, {0, 1, 2});
}

TEST(JitDonation, ATrainingStepWritesEveryParameterAndStateOverItsBuffer) {
  // value_and_grad of a two-layer network and an Adam update: the updates land in kernels
  // of every kind (elementwise, a rows kernel over a weight's gradient, bias sums).
  auto loss = [](const Arrays& p, const Array& x, const Array& y) {
    Array h = jnp::tanh(jnp::matmul(x, p[0]) + p[1]);
    return jnp::mean(jnp::square(jnp::matmul(h, p[2]) + p[3] - y));
  };
  auto train_step = [&](const Arrays& a) {  // W1 b1 W2 b2, their m, their v, x, y
    Arrays p(a.begin(), a.begin() + 4);
    auto [l, g] = value_and_grad(loss)(p, a[12], a[13]);
    Arrays out;
    for (size_t i = 0; i < 4; ++i) {
      Arrays next = adam_update(Arrays{a[i], a[4 + i], a[8 + i], g[i]});
      out.push_back(next[0]);
      out.push_back(next[1]);
      out.push_back(next[2]);
    }
    out.push_back(l);
    return out;
  };
  Arrays args;
  const std::vector<Shape> shapes{{32, 64}, {64}, {64, 1}, {1}};
  for (int group = 0; group < 3; ++group)
    for (size_t i = 0; i < 4; ++i)
      args.push_back(group == 2 ? jnp::abs(randn(shapes[i], DType::Float32, 50 + static_cast<uint32_t>(i)))
                                : randn(shapes[i], DType::Float32, 43 + static_cast<uint32_t>(4 * group + i), 0.1));
  args.push_back(randn({128, 32}, DType::Float32, 60));
  args.push_back(randn({128, 1}, DType::Float32, 61));
  std::vector<int> reused;
  for (int i = 0; i < 4; ++i)
    for (int group = 0; group < 3; ++group) reused.push_back(4 * group + i);
  reused.push_back(-1);
  std::vector<int> donate(12);
  for (int i = 0; i < 12; ++i) donate[static_cast<size_t>(i)] = i;
  expect_donation(train_step, args, donate, reused, 1e-6, 1e-7);
}

TEST(JitDonation, SharedBuffersAreNotReused) {
  auto f = [](const Array& x) { return x * 3 + 1; };
  auto step = jit(f, {.donate_argnums = {0}});
  // A view of x holds its buffer: x is deleted, the view keeps its values.
  Array x = randn({4, 8}, DType::Float32, 8);
  Array row = x(1);
  Array want = f(x);
  Array want_row = row + 0;
  Array y = step(x);
  EXPECT_TRUE(x.is_deleted());
  EXPECT_NE(buffer(y), buffer(row));
  EXPECT_ALLCLOSE(y, want, 0, 0);
  EXPECT_ALLCLOSE(row, want_row, 0, 0);
  // The same array passed twice, donated once.
  auto two = jit([](const Array& a, const Array& b) { return a * b; }, {.donate_argnums = {0}});
  Array z = randn({32}, DType::Float32, 9);
  Array zz = z * z;
  Array got = two(z, z);
  EXPECT_ALLCLOSE(got, zz, 0, 0);
  // A multi-output kernel gives up every donation when one of its buffers is held: it
  // runs the kernel that writes none over its inputs.
  Arrays state{randn({500}, DType::Float32, 62), randn({500}, DType::Float32, 63),
               jnp::abs(randn({500}, DType::Float32, 64)), randn({500}, DType::Float32, 65)};
  Arrays want_states = adam_update(Arrays{state[0] + 0, state[1] + 0, state[2] + 0, state[3]});
  Array held = state[1](Slice{0, 10});
  Array want_held = held + 0;
  std::vector<const void*> before{buffer(state[0]), buffer(state[1]), buffer(state[2])};
  Arrays next = jit(adam_update, {.donate_argnums = {0}})(state);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_TRUE(state[k].is_deleted());
    EXPECT_NE(buffer(next[k]), before[k]);
    EXPECT_ALLCLOSE(next[k], want_states[k], 0, 0);
  }
  EXPECT_ALLCLOSE(held, want_held, 0, 0);
}

TEST(JitDonation, NoOverwriteWhereElementsMove) {
  // A transpose or reversal reads other elements than it writes: the result gets a
  // fresh buffer (the donated one goes to the intermediates' pool).
  auto t = jit([](const Array& x) { return jnp::transpose(x) + 1; }, {.donate_argnums = {0}});
  Array x = randn({16, 16}, DType::Float32, 10);
  Array want = jnp::transpose(x) + 1;
  const void* before = buffer(x);
  Array y = t(x);
  EXPECT_NE(buffer(y), before);
  EXPECT_ALLCLOSE(y, want, 0, 0);
  auto r = jit([](const Array& v) { return jnp::flip(v) * 2; }, {.donate_argnums = {0}});
  Array v = randn({100}, DType::Float64, 11);
  Array want_r = jnp::flip(v) * 2;
  EXPECT_ALLCLOSE(r(v), want_r, 0, 0);
  // A reduction reads every element before writing one.
  auto s = jit([](const Array& m) { return jnp::sum(m, 0); }, {.donate_argnums = {0}});
  Array m = randn({8, 4}, DType::Float32, 12);
  Array want_s = jnp::sum(m, 0);
  EXPECT_ALLCLOSE(s(m), want_s, 1e-6, 1e-6);
  // A widening conversion: elements are wider than the donated ones.
  auto w = jit([](const Array& a) { return a.astype(DType::Float64) * 2; }, {.donate_argnums = {0}});
  Array a = randn({64}, DType::Float32, 13);
  Array want_w = a.astype(DType::Float64) * 2;
  EXPECT_ALLCLOSE(w(a), want_w, 0, 0);
}

TEST(JitDonation, ReturningTheDonatedArgumentItself) {
  auto id = jit([](const Array& x, const Array& y) { return std::make_tuple(x, x + y); }, {.donate_argnums = {0}});
  Array x = randn({10}, DType::Float32, 14), y = randn({10}, DType::Float32, 15);
  Array want = x + y, want_x = x + 0;
  auto [same, sum] = id(x, y);
  EXPECT_TRUE(x.is_deleted());
  EXPECT_FALSE(same.is_deleted());
  EXPECT_ALLCLOSE(same, want_x, 0, 0);
  EXPECT_ALLCLOSE(sum, want, 0, 0);
}

TEST(JitDonation, IgnoredUnderTransformations) {
  // Under grad the jitted function is traced: nothing is donated or deleted.
  auto f = jit([](const Array& x) { return jnp::sin(x); }, {.donate_argnums = {0}});
  Array x = randn({5}, DType::Float64, 16);
  Array g = grad([&](const Array& z) { return jnp::sum(f(z)); })(x);
  EXPECT_FALSE(x.is_deleted());
  EXPECT_ALLCLOSE(g, jnp::cos(x), 1e-15, 0);
  Array batched = vmap(f)(jnp::stack({x, x}));
  EXPECT_FALSE(x.is_deleted());
  EXPECT_ALLCLOSE(batched(0), jnp::sin(x), 1e-15, 0);
}

TEST(JitDonation, BadDonateArgnums) {
  Array x = jnp::ones({3});
  auto past = jit([](const Array& a) { return a + 1; }, {.name = "inc", .donate_argnums = {1}});
  std::string e = error_of([&] { (void)past(x); });
  EXPECT_EQ(e, "[jit] donate_argnums 1 of 'inc' is out of range: the function was called with 1 arguments");
  auto negative = jit([](const Array& a) { return a + 1; }, {.name = "inc", .donate_argnums = {-1}});
  e = error_of([&] { (void)negative(x); });
  EXPECT_TRUE(contains(e, "donate_argnums -1 of 'inc' is out of range")) << e;
  auto fixed = jit([](const Array& a, int k) { return a * k; }, static_argnums<1>, {.name = "scale", .donate_argnums = {1}});
  e = error_of([&] { (void)fixed(x, 2); });
  EXPECT_EQ(e, "[jit] donate_argnums 1 of 'scale' is a static argument; only arrays can be donated");
  EXPECT_FALSE(x.is_deleted());
}

}  // namespace
