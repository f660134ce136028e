// jx::random against jax.random (tests/fixtures/random/*.npz, from scripts/fixtures/random.py):
// keys, split, fold_in, bits and uniform bit-exact; normal and friends within a few ulp
// (they go through erf_inv/log, whose last bit may differ from XLA's). Plus the
// Random123 known-answer vectors, distribution checks and error messages.
#include <algorithm>
#include <cstring>
#include <limits>
#include <cmath>
#include <numeric>
#include <set>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "jx/random.h"
#include "test_util.h"

namespace jx {
namespace {

namespace rnd = jx::random;

const std::map<std::string, Array>& jax() {
  static const auto* m = new std::map<std::string, Array>(testing::fixture_npz("random/jax_random"));
  return *m;
}
const std::map<std::string, Array>& jax64() {
  static const auto* m = new std::map<std::string, Array>(testing::fixture_npz("random/jax_random_x64"));
  return *m;
}
const Array& want(const std::string& name) { return jax().at(name); }

Array key42() { return rnd::key(42); }

// Same dtype, shape and bits.
::testing::AssertionResult bit_exact(const Array& got, const Array& expected) {
  if (got.dtype() != expected.dtype() || got.shape() != expected.shape())
    return ::testing::AssertionFailure() << got.aval().str() << " vs expected " << expected.aval().str();
  std::vector<char> a(static_cast<size_t>(got.nbytes())), b(static_cast<size_t>(expected.nbytes()));
  got.copy_to(a.data(), got.dtype());
  expected.copy_to(b.data(), expected.dtype());
  if (a != b) {
    auto x = got.to_vector<double>(), y = expected.to_vector<double>();
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i] != y[i]) return ::testing::AssertionFailure() << "first difference at " << i << ": " << x[i] << " vs " << y[i];
    return ::testing::AssertionFailure() << "bits differ";
  }
  return ::testing::AssertionSuccess();
}

std::vector<uint32_t> u32(const Array& a) { return a.to_vector<uint32_t>(); }

// float32 values within max_ulp units in the last place (same sign, by bit distance).
::testing::AssertionResult within_ulp(const Array& got, const Array& expected, int64_t max_ulp) {
  if (got.dtype() != DType::Float32 || got.shape() != expected.shape())
    return ::testing::AssertionFailure() << got.aval().str() << " vs expected " << expected.aval().str();
  auto a = got.to_vector<float>(), b = expected.to_vector<float>();
  int64_t worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    int32_t x, y;
    std::memcpy(&x, &a[i], 4);
    std::memcpy(&y, &b[i], 4);
    int64_t d = std::abs(static_cast<int64_t>(x) - static_cast<int64_t>(y));
    if (d > max_ulp) return ::testing::AssertionFailure() << "at " << i << ": " << a[i] << " vs " << b[i] << " (" << d << " ulp)";
    worst = std::max(worst, d);
  }
  if (std::getenv("JX_PRINT_ULP")) std::printf("worst %lld ulp\n", static_cast<long long>(worst));
  return ::testing::AssertionSuccess();
}

// ---- the cipher ----

TEST(Threefry, Random123KnownAnswers) {
  struct Kat {
    uint32_t k0, k1, x0, x1, y0, y1;
  };
  const Kat kats[] = {
      {0, 0, 0, 0, 0x6b200159, 0x99ba4efe},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7},
      {0x13198a2e, 0x03707344, 0x243f6a88, 0x85a308d3, 0xc4923a9c, 0x483df7a0},
  };
  for (const Kat& k : kats) {
    auto s = [](uint32_t v) { return detail::scalar<uint32_t>(v); };
    auto [y0, y1] = lax::threefry2x32(s(k.k0), s(k.k1), s(k.x0), s(k.x1));
    EXPECT_EQ(y0.item<uint32_t>(), k.y0);
    EXPECT_EQ(y1.item<uint32_t>(), k.y1);
  }
}

TEST(Threefry, ElementwiseOnStridedOperandsAndErrors) {
  // Broadcast (stride-0) operands give the same words as the scalar cipher.
  Array k0 = lax::broadcast_in_dim(detail::scalar<uint32_t>(0x13198a2e), {3}, {});
  Array k1 = lax::broadcast_in_dim(detail::scalar<uint32_t>(0x03707344), {3}, {});
  Array x0 = lax::broadcast_in_dim(detail::scalar<uint32_t>(0x243f6a88), {3}, {});
  Array x1 = lax::broadcast_in_dim(detail::scalar<uint32_t>(0x85a308d3), {3}, {});
  auto [y0, y1] = lax::threefry2x32(k0, k1, x0, x1);
  EXPECT_EQ(u32(y0), (std::vector<uint32_t>(3, 0xc4923a9c)));
  EXPECT_EQ(u32(y1), (std::vector<uint32_t>(3, 0x483df7a0)));
  Array f = detail::scalar<float>(1.0f);
  Array u = detail::scalar<uint32_t>(1);
  EXPECT_JX_ERROR(lax::threefry2x32(u, u, u, f), "[threefry2x32]", "uint32", "f32[]");
  EXPECT_JX_ERROR(lax::threefry2x32(u, u, u, k0), "[threefry2x32]", "one shape", "u32[3]");
  const Primitive* p = find_primitive("threefry2x32");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->rules().num_outputs, 2);
  EXPECT_TRUE(p->has(kElementwise));
}

// ---- keys ----

TEST(RandomKeys, MatchJax) {
  EXPECT_TRUE(bit_exact(rnd::key(0), want("key0")));
  EXPECT_EQ(u32(rnd::key(0)), (std::vector<uint32_t>{0, 0}));
  EXPECT_TRUE(bit_exact(rnd::PRNGKey(42), want("key42")));
  // 64-bit seeds split into words as JAX with x64 does.
  EXPECT_TRUE(bit_exact(rnd::key(-1), jax64().at("key_neg1")));
  EXPECT_TRUE(bit_exact(rnd::key((int64_t{1} << 32) + 5), jax64().at("key_2p32_5")));
  EXPECT_TRUE(bit_exact(rnd::key(-(int64_t{1} << 40) - 3), jax64().at("key_neg_big")));
}

TEST(RandomKeys, SplitAndFoldIn) {
  Array k = key42();
  EXPECT_TRUE(bit_exact(rnd::split(k), want("split2")));
  EXPECT_TRUE(bit_exact(rnd::split(k, 5), want("split5")));
  EXPECT_TRUE(bit_exact(rnd::split(k, Shape{2, 3}), want("split2x3")));
  Array sub = rnd::split(k)(1);  // a view: row 1 of the (2, 2) keys
  EXPECT_TRUE(bit_exact(rnd::split(sub, 3), want("split_of_split")));
  EXPECT_TRUE(bit_exact(rnd::fold_in(k, 7), want("fold_in7")));
  EXPECT_TRUE(bit_exact(rnd::fold_in(k, (int64_t{1} << 31) + 3), want("fold_in_big")));
  EXPECT_EQ(rnd::split(k, 0).shape(), (Shape{0, 2}));
}

TEST(RandomKeys, BadKeysAreRejected) {
  EXPECT_JX_ERROR(rnd::split(Array({1.0, 2.0})), "[random.split]", "expected a PRNG key", "f32[2]");
  EXPECT_JX_ERROR(rnd::uniform(rnd::split(key42(), 3)), "[random.uniform]", "u32[3,2]", "batch of keys");
  EXPECT_JX_ERROR(rnd::normal(Array()), "[random.normal]", "null");
  EXPECT_JX_ERROR(rnd::fold_in(Array({1, 2, 3}), 1), "[random.fold_in]", "i32[3]");
  EXPECT_JX_ERROR(rnd::split(key42(), -1), "[random.split]", "non-negative");
}

// ---- bits and uniform: bit-exact ----

TEST(RandomBits, MatchJax) {
  Array k = key42();
  EXPECT_TRUE(bit_exact(rnd::bits(k, {3, 4}), want("bits_3x4")));
  EXPECT_TRUE(bit_exact(rnd::bits(k, {17}, DType::UInt8), want("bits_u8")));
  EXPECT_TRUE(bit_exact(rnd::bits(k), want("bits_0d")));
  EXPECT_EQ(rnd::bits(k, {0, 3}).shape(), (Shape{0, 3}));
  EXPECT_JX_ERROR(rnd::bits(k, {2}, DType::Int32), "[random.bits]", "unsigned", "int32");
  EXPECT_JX_ERROR(rnd::bits(k, {-1}), "[random.bits]", "negative dimension");
}

TEST(RandomUniform, BitExactWithJax) {
  Array k = key42();
  EXPECT_TRUE(bit_exact(rnd::uniform(k, {1000}), want("uniform_f32")));
  EXPECT_TRUE(bit_exact(rnd::uniform(k, {7, 3}, DType::Float32, -2.0, 3.0), want("uniform_f32_range")));
  EXPECT_TRUE(bit_exact(rnd::uniform(k, {2, 3}, DType::Float32, Array({0.0, 1.0, 2.0}), Array(std::vector<float>{1, 10}, Shape{2, 1})),
                        want("uniform_f32_bounds")));
  EXPECT_TRUE(bit_exact(rnd::uniform(rnd::key(3), {4000}, DType::Float32, -1000.0, 7.25), want("uniform_f32_wide")));
  EXPECT_TRUE(bit_exact(rnd::uniform(rnd::key(3), {4000}, DType::Float64, -1e3, 7.123456789),
                        jax64().at("uniform_f64_wide")));
  EXPECT_TRUE(bit_exact(rnd::uniform(k, {300}, DType::Float16).astype(DType::Float32), want("uniform_f16")));
  EXPECT_TRUE(bit_exact(rnd::uniform(k, {300}, DType::BFloat16).astype(DType::Float32), want("uniform_bf16")));
  EXPECT_TRUE(bit_exact(rnd::uniform(k, {500}, DType::Float64), jax64().at("uniform_f64")));
  EXPECT_TRUE(bit_exact(rnd::uniform(k, {10}, DType::Float64, -3.0, 0.5), jax64().at("uniform_f64_range")));
  EXPECT_EQ(rnd::uniform(k).shape(), Shape{});
  EXPECT_FALSE(rnd::uniform(k).weak_type());
}

TEST(RandomUniform, Errors) {
  Array k = key42();
  EXPECT_JX_ERROR(rnd::uniform(k, {3}, DType::Int32), "[random.uniform]", "float dtype", "int32");
  EXPECT_JX_ERROR(rnd::uniform(k, {3}, DType::Float32, Array({0.0, 1.0})), "[random.uniform]", "minval",
                  "(2,)", "(3,)");
}

// ---- normal and the samplers on transcendental functions: a few ulp ----

TEST(RandomNormal, MatchesJax) {
  Array k = key42();
  EXPECT_TRUE(within_ulp(rnd::normal(k, {1000}), want("normal_f32"), 2));
  EXPECT_TRUE(within_ulp(rnd::normal(rnd::key(7), {4, 5}), want("normal_f32_2d"), 2));
  EXPECT_ALLCLOSE(rnd::normal(k, {200}, DType::Float16).astype(DType::Float32), want("normal_f16"), 2e-3, 2e-3);
  EXPECT_ALLCLOSE(rnd::normal(k, {500}, DType::Float64), jax64().at("normal_f64"), 1e-13, 1e-14);
  EXPECT_ALLCLOSE(rnd::normal(k, {50}, DType::Complex64), want("normal_c64"), 4e-6, 1e-6);
  EXPECT_JX_ERROR(rnd::normal(k, {2}, DType::Int32), "[random.normal]", "float or complex", "int32");
}

TEST(RandomDistributions, MatchJax) {
  Array k = key42();
  // Near 0 the result cancels, so lax::erf vs XLA erf ulps show as an absolute error.
  EXPECT_ALLCLOSE(rnd::truncated_normal(k, -1.0, 2.0, Shape{200}), want("truncated_normal"), 4e-6, 1e-6);
  EXPECT_ALLCLOSE(rnd::gumbel(k, {100}), want("gumbel"), 4e-6, 1e-6);
  EXPECT_ALLCLOSE(rnd::exponential(k, {100}), want("exponential"), 4e-6, 1e-6);
  EXPECT_ALLCLOSE(rnd::exponential(k, {50}, DType::Float64), jax64().at("exponential_f64"), 1e-13, 1e-14);
  EXPECT_ALLCLOSE(rnd::laplace(k, {100}), want("laplace"), 4e-6, 1e-6);
  EXPECT_ALLCLOSE(rnd::logistic(k, {100}), want("logistic"), 4e-6, 1e-6);
  EXPECT_ALLCLOSE(rnd::cauchy(k, {100}), want("cauchy"), 1e-5, 1e-6);
  EXPECT_TRUE(bit_exact(rnd::rademacher(k, {20}), want("rademacher")));
}

// Eager and jit compute the same bits: eager's float32 erf is the polynomial jit kernels
// inline (the bounds' erf differed by an ulp, which erf_inv near +-1 grew to ~10 ulp).
TEST(RandomDistributions, TruncatedNormalEagerMatchesJitBitForBit) {
  auto f = [](const Array& key) { return rnd::truncated_normal(key, -1.0, 2.0, Shape{4000}); };
  auto g = [](const Array& key) { return rnd::truncated_normal(key, -3.5, 0.25, Shape{4000}); };
  for (Array k : {key42(), rnd::key(7)}) {
    EXPECT_TRUE(bit_exact(f(k), jit(f)(k)));
    EXPECT_TRUE(bit_exact(g(k), jit(g)(k)));
  }
}

// ---- discrete samplers: exact ----

TEST(RandomDiscrete, BernoulliAndRandint) {
  Array k = key42();
  EXPECT_TRUE(bit_exact(rnd::bernoulli(k, 0.3, Shape{50}), want("bernoulli_03")));
  EXPECT_TRUE(bit_exact(rnd::bernoulli(k, Array({0.1, 0.5, 0.9}), Shape{4, 3}), want("bernoulli_p")));
  EXPECT_TRUE(bit_exact(rnd::randint(k, {100}, -5, 17), want("randint_i32")));
  EXPECT_TRUE(bit_exact(rnd::randint(k, {2, 3}, Array({0, 10, 100}), Array(std::vector<int32_t>{5, 1000}, Shape{2, 1})), want("randint_bounds")));
  EXPECT_TRUE(bit_exact(rnd::randint(k, {5}, 3, 3), want("randint_empty_range")));
  EXPECT_TRUE(bit_exact(rnd::randint(k, {64}, 0, 256, DType::UInt8), want("randint_u8")));
  EXPECT_TRUE(bit_exact(rnd::randint(k, {64}, -128, 127, DType::Int8), want("randint_i8")));
  EXPECT_TRUE(bit_exact(rnd::randint(k, {64}, -1000, 1000, DType::Int16), want("randint_i16")));
  EXPECT_TRUE(bit_exact(rnd::randint(k, {64}, 5, 2147483647, DType::UInt32), want("randint_u32")));
  EXPECT_TRUE(bit_exact(rnd::randint(k, {64}, -2147483647 - 1, 2147483647), want("randint_i32_full")));
  // int64 draws 64-bit words; jx emulates JAX's uint64 remainder on int64.
  EXPECT_TRUE(bit_exact(rnd::randint(k, {64}, -10, int64_t{1000000000000}, DType::Int64), jax64().at("randint_i64")));
  EXPECT_TRUE(bit_exact(rnd::randint(k, {64}, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                                     DType::Int64),
                        jax64().at("randint_i64_full")));
  EXPECT_TRUE(bit_exact(rnd::randint(k, {64}, 3, 10, DType::Int64), jax64().at("randint_i64_small")));
  const int64_t big = (int64_t{1} << 62) / 2 * 3;
  EXPECT_TRUE(bit_exact(rnd::randint(k, {64}, -big, big, DType::Int64), jax64().at("randint_i64_huge_span")));
  EXPECT_JX_ERROR(rnd::randint(k, {3}, 0, 5, DType::Float32), "[random.randint]", "integer dtype", "float32");
  EXPECT_JX_ERROR(rnd::randint(k, {3}, Array({0, 1}), 5), "[random.randint]", "(2,)", "(3,)");
  EXPECT_JX_ERROR(rnd::bernoulli(k, Array({1, 2})), "[random.bernoulli]", "floating dtype", "int32");
  EXPECT_JX_ERROR(rnd::bernoulli(k, Array({0.5, 0.5}), Shape{3}), "[random.bernoulli]", "(2,)", "(3,)");
}

TEST(RandomDiscrete, PermutationAndChoice) {
  Array k = key42();
  EXPECT_TRUE(bit_exact(rnd::permutation(k, 10), want("permutation10")));
  EXPECT_TRUE(bit_exact(rnd::permutation(k, 2000), want("permutation2000")));  // two sort rounds
  Array x = Array(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, Shape{5, 3});
  EXPECT_TRUE(bit_exact(rnd::permutation(k, x), want("permutation_rows")));
  EXPECT_TRUE(bit_exact(rnd::permutation(k, x, 1), want("permutation_axis1")));
  EXPECT_TRUE(bit_exact(rnd::permutation(k, x, 1, true), want("permutation_indep")));
  EXPECT_TRUE(bit_exact(rnd::choice(k, 10, {6}), want("choice_replace")));
  EXPECT_TRUE(bit_exact(rnd::choice(k, 10, {6}, false), want("choice_noreplace")));
  Array p = Array({0.1, 0.2, 0.3, 0.4, 0.0});
  EXPECT_TRUE(bit_exact(rnd::choice(k, 5, {3, 4}, true, p), want("choice_p")));
  EXPECT_TRUE(bit_exact(rnd::choice(k, 5, {3}, false, p), want("choice_p_noreplace")));
  EXPECT_TRUE(bit_exact(rnd::choice(k, x, {2}, true, std::nullopt, 1), want("choice_array_axis1")));
  EXPECT_TRUE(bit_exact(rnd::choice(k, x, {4}, false), want("choice_array_noreplace")));
  EXPECT_EQ(rnd::choice(k, 5, {0}).shape(), (Shape{0}));
  EXPECT_JX_ERROR(rnd::choice(k, 3, {5}, false), "[random.choice]", "larger sample (size 5)", "population (size 3)");
  EXPECT_JX_ERROR(rnd::choice(k, 0, {2}), "[random.choice]", "greater than 0");
  EXPECT_JX_ERROR(rnd::choice(k, 5, {2}, true, Array({0.5, 0.5})), "[random.choice]", "p has shape (2,)", "is 5");
  EXPECT_JX_ERROR(rnd::permutation(k, x, 2), "[random.permutation]", "axis 2", "(5, 3)");
}

TEST(RandomDiscrete, Categorical) {
  Array k = key42();
  const Array& logits = want("cat_logits");
  EXPECT_TRUE(bit_exact(rnd::categorical(k, logits), want("categorical")));
  EXPECT_TRUE(bit_exact(rnd::categorical(k, logits, -1, Shape{4, 3}), want("categorical_shape")));
  EXPECT_TRUE(bit_exact(rnd::categorical(k, logits, 0), want("categorical_axis0")));
  EXPECT_TRUE(bit_exact(rnd::categorical(k, logits, -1, Shape{2, 3}, false), want("categorical_noreplace")));
  EXPECT_JX_ERROR(rnd::categorical(k, logits, -1, Shape{4}), "[random.categorical]", "(4,)");
  EXPECT_JX_ERROR(rnd::categorical(k, logits, -1, Shape{6, 3}, false), "[random.categorical]", "(6)", "(5)");
  EXPECT_JX_ERROR(rnd::categorical(k, Array({1, 2})), "[random.categorical]", "float dtype");
}

// ---- statistics: independent of JAX ----

TEST(RandomStatistics, MomentsWithinBounds) {
  const int64_t n = 200000;
  Array k = rnd::key(1234);
  auto moments = [](const Array& a) {
    auto v = a.to_vector<double>();
    double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    return std::pair<double, double>{mean, var / static_cast<double>(v.size())};
  };
  // Bounds: 6 standard errors of the mean / of the variance.
  auto [um, uv] = moments(rnd::uniform(k, {n}));
  EXPECT_NEAR(um, 0.5, 6 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(uv, 1.0 / 12, 6 * std::sqrt(1.0 / 180 / n));
  auto [nm, nv] = moments(rnd::normal(k, {n}));
  EXPECT_NEAR(nm, 0.0, 6 * std::sqrt(1.0 / n));
  EXPECT_NEAR(nv, 1.0, 6 * std::sqrt(2.0 / n));
  auto [em, ev] = moments(rnd::exponential(k, {n}));
  EXPECT_NEAR(em, 1.0, 6 * std::sqrt(1.0 / n));
  auto [bm, bv] = moments(rnd::bernoulli(k, 0.25, Shape{n}).astype(DType::Float32));
  EXPECT_NEAR(bm, 0.25, 6 * std::sqrt(0.25 * 0.75 / n));
  auto [rm, rv] = moments(rnd::randint(k, {n}, 0, 10).astype(DType::Float64));
  EXPECT_NEAR(rm, 4.5, 6 * std::sqrt(8.25 / n));
  auto r = rnd::randint(k, {n}, -3, 4).to_vector<int>();
  EXPECT_EQ(*std::min_element(r.begin(), r.end()), -3);
  EXPECT_EQ(*std::max_element(r.begin(), r.end()), 3);
  auto u = rnd::uniform(k, {n}, DType::Float32, -2.0, 5.0).to_vector<float>();
  EXPECT_GE(*std::min_element(u.begin(), u.end()), -2.0f);
  EXPECT_LT(*std::max_element(u.begin(), u.end()), 5.0f);
  auto t = rnd::truncated_normal(k, -0.5, 1.0, Shape{10000}).to_vector<float>();
  EXPECT_GT(*std::min_element(t.begin(), t.end()), -0.5f);
  EXPECT_LT(*std::max_element(t.begin(), t.end()), 1.0f);
  // Half precision keeps its range too.
  auto h = rnd::uniform(k, {5000}, DType::BFloat16).to_vector<float>();
  EXPECT_GE(*std::min_element(h.begin(), h.end()), 0.0f);
  EXPECT_LT(*std::max_element(h.begin(), h.end()), 1.0f);
}

TEST(RandomStatistics, PermutationsAndChoicesAreValid) {
  for (int64_t seed = 0; seed < 5; ++seed) {
    Array k = rnd::key(seed);
    auto perm = rnd::permutation(k, 3000).to_vector<int>();
    std::vector<int> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> iota(3000);
    std::iota(iota.begin(), iota.end(), 0);
    EXPECT_EQ(sorted, iota);
    EXPECT_NE(perm, iota);
    auto c = rnd::choice(k, 50, {50}, false).to_vector<int>();
    EXPECT_EQ(std::set<int>(c.begin(), c.end()).size(), 50u);
    auto cp = rnd::choice(k, 6, {6}, false, Array({1.0, 1.0, 1.0, 1.0, 1.0, 1.0})).to_vector<int>();
    EXPECT_EQ(std::set<int>(cp.begin(), cp.end()).size(), 6u);
    auto zero_p = rnd::choice(k, 3, {1000}, true, Array({0.5, 0.0, 0.5})).to_vector<int>();
    EXPECT_EQ(std::count(zero_p.begin(), zero_p.end(), 1), 0);
  }
  // Different keys give different streams; the same key gives the same stream.
  EXPECT_NE(u32(rnd::bits(rnd::key(1), {8})), u32(rnd::bits(rnd::key(2), {8})));
  EXPECT_EQ(u32(rnd::bits(rnd::key(1), {8})), u32(rnd::bits(rnd::key(1), {8})));
}

}  // namespace
}  // namespace jx
