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
