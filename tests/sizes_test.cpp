// Sizes near and past 2^63: every shape an operation forms goes through one checked size
// computation (shape_size / checked_nbytes, and the central check of each primitive's
// result in Primitive::abstract_eval), so overflowing extents, element counts and byte
// counts raise a jx::Error naming the operation and the shape instead of wrapping into
// tiny or negative shapes or crashing. None of these tests commits memory: a request
// larger than the machine's memory is refused before any allocator is called.
#include <cstdint>
#include <limits>

#include "core/array_internal.h"
#include "test_util.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;
namespace lax = jx::lax;
namespace rnd = jx::random;

constexpr int64_t k2_32 = int64_t{1} << 32;
constexpr int64_t k2_40 = int64_t{1} << 40;
constexpr int64_t k2_60 = int64_t{1} << 60;
constexpr int64_t k2_62 = int64_t{1} << 62;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

Array f32_4() { return Array({1.0, 2.0, 3.0, 4.0}); }
Array sq3() { return Array({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}, {7.0, 8.0, 9.0}}); }

// ---- the checked size computation itself ----

TEST(ShapeSize, CountsAndRejects) {
  EXPECT_EQ(shape_size({}), 1);
  EXPECT_EQ(shape_size({3, 4}), 12);
  EXPECT_EQ(shape_size({k2_32, k2_32 / 4, 0}), 0);
  EXPECT_EQ(shape_size({k2_62, 1}), k2_62);
  EXPECT_JX_ERROR(shape_size({k2_32, k2_32}), "[shape_size]", "(4294967296, 4294967296)", "2^63 - 1 elements");
  EXPECT_JX_ERROR(shape_size({3, -1}, "myop"), "[myop]", "negative dimension", "(3, -1)");
  // As NumPy: zero dims do not hide an overflowing product of the others, so every
  // partial product of a shape that passes is an int64 too.
  EXPECT_JX_ERROR(shape_size({k2_32, k2_32, 0}), "[shape_size]", "(4294967296, 4294967296, 0)");
}

TEST(ShapeSize, ByteCounts) {
  EXPECT_EQ(detail::checked_nbytes({3, 4}, DType::Complex128, "op"), 192);
  // The element count fits; the bytes of a wide dtype do not.
  EXPECT_JX_ERROR(detail::checked_nbytes({k2_60}, DType::Complex128, "op"), "[op]", "(1152921504606846976,)",
                  "complex128", "more than 2^63 - 1 bytes");
  EXPECT_JX_ERROR(detail::check_allocatable({k2_40}, DType::Float64, "op"), "[op]", "cannot allocate",
                  "8796093022208 bytes", "(1099511627776,)", "float64");
}

TEST(ShapeSize, CheckedArithmetic) {
  EXPECT_EQ(detail::checked_add(kMax - 1, 1, "op"), kMax);
  EXPECT_EQ(detail::checked_mul(k2_32, k2_32 / 4, "op"), k2_62);
  EXPECT_JX_ERROR(detail::checked_add(kMax, 1, "op", " in the answer"), "[op]", "size overflow", "in the answer");
  EXPECT_JX_ERROR(detail::checked_mul(k2_32, k2_32, "op"), "[op]", "4294967296 * 4294967296");
  EXPECT_JX_ERROR(detail::checked_sub(0, kMin, "op"), "[op]", "size overflow");
}

// ---- the central check: no shape rule can make an unrepresentable aval ----

std::vector<Aval> bad_rule(std::span<const Aval>, const Params& p) {
  return {Aval{p.get_ints("shape"), p.get_dtype("dtype"), false}};
}
std::vector<Array> bad_impl(std::span<const Array>, const Params&, std::span<const Aval> out) {
  return {detail::alloc_array(out[0])};
}
const Primitive bad_shape_p("sizes_test_bad_shape", {.traits = kNotDifferentiable,
                                                     .abstract_eval = bad_rule,
                                                     .impl = bad_impl,
                                                     .jvp = {},
                                                     .transpose = {},
                                                     .batch = {}});

Array bad(const Shape& shape, DType dtype) { return bind1(bad_shape_p, {}, {{"shape", shape}, {"dtype", dtype}}); }

TEST(CentralCheck, EveryResultAvalIsValidated) {
  EXPECT_EQ(bad({2, 3}, DType::Float32).shape(), (Shape{2, 3}));
  EXPECT_JX_ERROR(bad({2, -3}, DType::Float32), "[sizes_test_bad_shape]", "negative dimension", "(2, -3)");
  EXPECT_JX_ERROR(bad({k2_32, k2_32, 4}, DType::Int8), "[sizes_test_bad_shape]", "(4294967296, 4294967296, 4)",
                  "elements");
  EXPECT_JX_ERROR(bad({k2_62}, DType::Float32), "[sizes_test_bad_shape]", "(4611686018427387904,)", "float32",
                  "bytes");
  // Representable, but more than the machine has: the impl's allocation names the primitive.
  EXPECT_JX_ERROR(bad({k2_40}, DType::Float64), "[sizes_test_bad_shape]", "cannot allocate 8796093022208 bytes",
                  "(1099511627776,)");
}

TEST(CentralCheck, TracingChecksToo) {
  auto f = [](const Array& x) { return lax::reshape(x, {(k2_62) + 1, 4}); };
  EXPECT_JX_ERROR(jx::make_jaxpr(f)(f32_4()), "[reshape]", "(4611686018427387905, 4)");
  auto g = [](const Array& x) { return lax::broadcast_in_dim(x, {k2_32, k2_32, 4}, {2}); };
  EXPECT_JX_ERROR(jx::vmap(g)(Array({{1.0, 2.0, 3.0, 4.0}})), "[broadcast_in_dim]", "2^63 - 1 elements");
}

// ---- creation ----

TEST(Creation, ZerosOnesFull) {
  EXPECT_JX_ERROR(jnp::zeros({k2_62}) + 1, "[zeros]", "(4611686018427387904,)", "float32", "bytes");
  EXPECT_JX_ERROR(jnp::zeros({k2_32, k2_32, 4}), "[zeros]", "(4294967296, 4294967296, 4)", "elements");
  EXPECT_JX_ERROR(jnp::ones({k2_60}, DType::Complex128), "[ones]", "complex128", "more than 2^63 - 1 bytes");
  EXPECT_JX_ERROR(jnp::full({k2_32, k2_32}, 1.5), "[full]", "(4294967296, 4294967296)");
  EXPECT_JX_ERROR(jnp::zeros_like(f32_4(), std::nullopt, Shape{k2_62, 4}), "[full_like]", "(4611686018427387904, 4)");
  EXPECT_JX_ERROR(jnp::empty({k2_32, -1}), "[empty]", "negative dimensions");
  // A huge constant is a broadcast view, so it may exist; materializing it may not.
  Array big = jnp::zeros({k2_40}, DType::Float64);
  EXPECT_EQ(big.shape(), (Shape{k2_40}));
  EXPECT_JX_ERROR(big + 1.0, "[add]", "cannot allocate 8796093022208 bytes", "(1099511627776,)", "float64");
  EXPECT_JX_ERROR(jnp::cumsum(big), "cannot allocate", "(1099511627776,)");
}

TEST(Creation, Arange) {
  EXPECT_JX_ERROR(jnp::arange(0.0, 1e30), "[arange]", "more than 2^63 - 1");
  EXPECT_JX_ERROR(jnp::arange(-1e308, 1e308, 1.0), "[arange]", "more than 2^63 - 1");
  EXPECT_JX_ERROR(jnp::arange(0.0, 9.3e18), "[arange]", "more than 2^63 - 1");
  EXPECT_JX_ERROR(jnp::arange(0.0, 1e18), "[arange]", "cannot allocate", "(1000000000000000000,)");
  EXPECT_JX_ERROR(jnp::arange(int64_t{0}, k2_60, int64_t{1}), "[arange]", "cannot allocate");
  EXPECT_EQ(jnp::arange(0.0, 5.0).shape(), (Shape{5}));
  EXPECT_EQ(jnp::arange(5.0, 0.0).shape(), (Shape{0}));
}

TEST(Creation, IotaLinspace) {
  EXPECT_JX_ERROR(lax::iota(DType::Float32, k2_62), "[iota]", "(4611686018427387904,)", "bytes");
  EXPECT_JX_ERROR(lax::iota(DType::Int8, k2_62), "[iota]", "cannot allocate 4611686018427387904 bytes");
  EXPECT_JX_ERROR(lax::broadcasted_iota(DType::Int32, {k2_32, k2_32}, 0), "[iota]", "(4294967296, 4294967296)");
  EXPECT_JX_ERROR(jnp::linspace(0.0, 1.0, k2_62), "[linspace]", "(4611686018427387904,)");
  EXPECT_JX_ERROR(jnp::linspace(0.0, 1.0, k2_40), "[linspace]", "cannot allocate", "(1099511627776,)");
  EXPECT_JX_ERROR(jnp::linspace(Array({0.0, 1.0}), 2.0, k2_62, true, std::nullopt, 1), "[linspace]",
                  "(2, 4611686018427387904)");
}

TEST(Creation, EyeTri) {
  EXPECT_JX_ERROR(jnp::eye(k2_32), "[eye]", "(4294967296, 4294967296)");
  EXPECT_JX_ERROR(jnp::eye(k2_40, 1 << 20), "[eye]", "cannot allocate", "(1099511627776, 1048576)");
  EXPECT_JX_ERROR(jnp::tri(k2_32, k2_32), "[tri]", "(4294967296, 4294967296)");
  // Extreme diagonal offsets select nothing or everything, without overflow.
  EXPECT_ALLCLOSE(jnp::eye(3, 4, kMax), jnp::zeros({3, 4}));
  EXPECT_ALLCLOSE(jnp::eye(3, 4, kMin), jnp::zeros({3, 4}));
  EXPECT_ALLCLOSE(jnp::eye(3, 4, 4), jnp::zeros({3, 4}));
  EXPECT_ALLCLOSE(jnp::eye(3, 4, -2), Array({{0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0}, {1.0, 0.0, 0.0, 0.0}}));
  EXPECT_ALLCLOSE(jnp::tri(2, 3, kMax), jnp::ones({2, 3}));
  EXPECT_ALLCLOSE(jnp::tri(2, 3, kMin), jnp::zeros({2, 3}));
}

TEST(Creation, TriuTrilExtremeK) {
  Array x = sq3();
  EXPECT_ALLCLOSE(jnp::tril(x, kMax), x);
  EXPECT_ALLCLOSE(jnp::tril(x, kMin), jnp::zeros_like(x));
  EXPECT_ALLCLOSE(jnp::triu(x, kMin), x);
  EXPECT_ALLCLOSE(jnp::triu(x, kMax), jnp::zeros_like(x));
  // np.triu(x, -1), np.tril(x, -1): the clamping keeps ordinary offsets exact.
  EXPECT_ALLCLOSE(jnp::triu(x, -1), Array({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}, {0.0, 8.0, 9.0}}));
  EXPECT_ALLCLOSE(jnp::tril(x, -1), Array({{0.0, 0.0, 0.0}, {4.0, 0.0, 0.0}, {7.0, 8.0, 0.0}}));
  EXPECT_ALLCLOSE(jnp::triu(x, 3), jnp::zeros_like(x));
  EXPECT_ALLCLOSE(jnp::tril(x, -3), jnp::zeros_like(x));
}

// ---- the raw-buffer and vector constructors ----

TEST(Construct, RawBufferAndVector) {
  const float four[4] = {1, 2, 3, 4};
  EXPECT_JX_ERROR(Array(four, Shape{k2_62}), "[array]", "(4611686018427387904,)", "bytes");
  EXPECT_JX_ERROR(Array(static_cast<const void*>(four), Shape{k2_62}, DType::Int8), "[array]",
                  "cannot allocate 4611686018427387904 bytes");
  EXPECT_JX_ERROR(Array(four, Shape{k2_32, k2_32}), "[array]", "(4294967296, 4294967296)", "elements");
  EXPECT_JX_ERROR(Array(four, Shape{4, -1}), "[array]", "negative dimension");
  EXPECT_JX_ERROR(Array(std::vector<float>{1, 2, 3, 4}, Shape{100, 100}), "[array]",
                  "a vector of 4 elements cannot fill shape (100, 100) (10000 elements)");
  EXPECT_JX_ERROR(Array(std::vector<float>{1, 2, 3, 4}, Shape{2, 3}), "[array]", "cannot fill shape (2, 3)");
  EXPECT_JX_ERROR(Array(std::vector<double>{1, 2}, Shape{k2_62, 4}), "[array]", "(4611686018427387904, 4)");
  EXPECT_EQ(Array(std::vector<float>{1, 2, 3, 4}, Shape{2, 2}).shape(), (Shape{2, 2}));
  EXPECT_EQ(Array(std::vector<float>{}, Shape{0, 5}).shape(), (Shape{0, 5}));
}

// ---- manipulation ----

TEST(Manipulation, Reshape) {
  Array x = jnp::arange(4);
  EXPECT_JX_ERROR(jnp::reshape(x, {k2_62 + 1, 4}), "[reshape]", "(4611686018427387905, 4)");
  EXPECT_JX_ERROR(jnp::reshape(x, {k2_62, 4, -1}), "[reshape]", "(4611686018427387904, 4, -1)");
  EXPECT_JX_ERROR(lax::reshape(x, {k2_62 + 1, 4}), "[reshape]", "(4611686018427387905, 4)");
  EXPECT_JX_ERROR(lax::reshape(x, {k2_32, k2_32, 0}), "[reshape]", "(4294967296, 4294967296, 0)");
}

TEST(Manipulation, BroadcastTileRepeat) {
  Array x = f32_4();
  EXPECT_JX_ERROR(jnp::broadcast_to(x, {k2_32, k2_32, 4}), "[broadcast_in_dim]", "(4294967296, 4294967296, 4)");
  EXPECT_JX_ERROR(lax::broadcast(x, {k2_62}), "[broadcast_in_dim]", "(4611686018427387904, 4)");
  EXPECT_JX_ERROR(jnp::tile(x, {k2_62}), "[tile]", "size overflow", "(4,)");
  EXPECT_JX_ERROR(jnp::tile(x, {k2_32, k2_32}), "[tile]", "(4294967296, 17179869184)");
  EXPECT_JX_ERROR(jnp::tile(x, {k2_40}), "[tile]", "cannot allocate", "(4398046511104,)");
  EXPECT_JX_ERROR(jnp::repeat(x, k2_62), "[repeat]", "size overflow", "(4,)");
  EXPECT_JX_ERROR(jnp::repeat(x, k2_40), "[repeat]", "cannot allocate", "(4398046511104,)");
  EXPECT_JX_ERROR(jnp::repeat(x, std::vector<int64_t>{k2_62, k2_62, 1, 1}), "[repeat]", "size overflow");
  EXPECT_JX_ERROR(jnp::repeat(x, std::vector<int64_t>{k2_40, 1, 1, 1}), "[repeat]", "cannot allocate");
  EXPECT_JX_ERROR(jnp::repeat(x, Array({1, 2, 3, 4}), 0, k2_40), "[repeat]", "cannot allocate");
  EXPECT_ALLCLOSE(jnp::repeat(x, 2), Array({1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0}));
  EXPECT_ALLCLOSE(jnp::tile(Array({1.0, 2.0}), {2}), Array({1.0, 2.0, 1.0, 2.0}));
}

TEST(Manipulation, Concatenate) {
  Array big = jnp::zeros({k2_62}, DType::Int8);  // a view: representable
  EXPECT_JX_ERROR(lax::concatenate({big, big}, 0), "[concatenate]", "size overflow", "i8[4611686018427387904]");
  EXPECT_JX_ERROR(jnp::concatenate({big, big, big}), "[concatenate]", "size overflow");
  EXPECT_JX_ERROR(jnp::stack({big, big}), "[concatenate]", "2^63 - 1");
  Array mid = jnp::zeros({k2_40}, DType::Int8);
  EXPECT_JX_ERROR(jnp::concatenate({mid, mid}), "[concatenate]", "cannot allocate", "(2199023255552,)");
}

TEST(Manipulation, Pad) {
  Array x = f32_4();
  EXPECT_JX_ERROR(jnp::pad(x, {k2_62, k2_62}), "[pad]", "size overflow", "(4,)");
  EXPECT_JX_ERROR(jnp::pad(x, {k2_62, k2_62}, "wrap"), "[pad]", "size overflow");
  EXPECT_JX_ERROR(jnp::pad(x, {k2_40, 0}, "reflect"), "[pad]", "cannot allocate", "(1099511627780,)");
  EXPECT_JX_ERROR(jnp::pad(x, {k2_40, 0}, "edge"), "[pad]", "cannot allocate");
  Array zero = detail::scalar<float>(0);
  EXPECT_JX_ERROR(lax::pad(x, zero, {{0, 0, k2_62}}), "[pad]", "size overflow", "interior");
  EXPECT_JX_ERROR(lax::pad(x, zero, {{k2_62, k2_62, 0}}), "[pad]", "size overflow");
  // Cropping more than exists and padding it back reaches past int64 in the impl's
  // index arithmetic: refused though the sum alone would be 0.
  EXPECT_JX_ERROR(lax::pad(x, zero, {{kMin, kMax - 3, 0}}), "[pad]", "size overflow");
  EXPECT_JX_ERROR(lax::pad(x, zero, {{kMin + 10, 0, 0}}), "[pad]", "negative");
  EXPECT_JX_ERROR(lax::pad(x, zero, {{0, 0, kMax}}), "[pad]", "size overflow");
  EXPECT_JX_ERROR(lax::pad(x, zero, {{k2_40, 0, 0}}), "[pad]", "cannot allocate");
  EXPECT_EQ(lax::pad(Array({1.0}), zero, {{0, 0, kMax - 2}}).shape(), (Shape{1}));
  EXPECT_ALLCLOSE(lax::pad(x, zero, {{-1, 2, 1}}), Array({0.0, 2.0, 0.0, 3.0, 0.0, 4.0, 0.0, 0.0}));
}

TEST(Manipulation, Diag) {
  Array x = f32_4();
  EXPECT_JX_ERROR(jnp::diag(x, k2_62), "[diag]", "(4611686018427387908, 4611686018427387908)");
  EXPECT_JX_ERROR(jnp::diag(x, kMin), "[diag]", "size overflow");
  EXPECT_JX_ERROR(jnp::diag(x, kMax), "[diag]", "size overflow");
  EXPECT_JX_ERROR(jnp::diag(x, int64_t{1} << 24), "[diag]", "cannot allocate");
  EXPECT_EQ(jnp::diagonal(sq3(), kMax).shape(), (Shape{0}));
  EXPECT_EQ(jnp::diagonal(sq3(), kMin).shape(), (Shape{0}));
  EXPECT_ALLCLOSE(jnp::diag(Array({1.0, 2.0}), -1), Array({{0.0, 0.0, 0.0}, {1.0, 0.0, 0.0}, {0.0, 2.0, 0.0}}));
}

TEST(Manipulation, ExpandDimsNamesTheInputShape) {
  Array x = jnp::zeros({2, 3});
  EXPECT_JX_ERROR(jnp::expand_dims(x, {5}), "[expand_dims]", "(2, 3)");
  EXPECT_JX_ERROR(jnp::expand_dims(x, {0, 0}), "[expand_dims]", "(2, 3)");
}

// ---- conv ----

TEST(Conv, NegativePaddingPastTheInputRaises) {
  Array x = jnp::ones({1, 1, 4}), w = jnp::ones({1, 1, 2});
  // Values from jax.lax.conv_general_dilated: cropping to nothing is an empty result...
  EXPECT_EQ(lax::conv_general_dilated(x, w, {1}, {{-2, -1}}).shape(), (Shape{1, 1, 0}));
  EXPECT_EQ(lax::conv_general_dilated(x, w, {1}, {{-4, 0}}).shape(), (Shape{1, 1, 0}));
  EXPECT_EQ(lax::conv_general_dilated(x, w, {1}, {{-1, -1}}).shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(lax::conv_general_dilated(x, w, {1}, {{-6, -1}}, {2}).shape(), (Shape{1, 1, 0}));
  // ... cropping past it raises, as JAX and lax::pad do.
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w, {1}, {{-5, -5}}), "[conv_general_dilated]",
                  "negative padding (-5, -5) is larger than spatial dimension 0", "f32[1,1,4]");
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w, {1}, {{-5, -3}}, {2}), "[conv_general_dilated]",
                  "size 7 after dilation");
}

TEST(Conv, ExtentsAreChecked) {
  Array x = jnp::ones({1, 1, 4}), w = jnp::ones({1, 1, 2});
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w, {1}, {{0, 0}}, {k2_62}), "[conv_general_dilated]",
                  "size overflow", "dilating spatial dimension 0");
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w, {1}, {{0, 0}}, {}, {kMax}), "[conv_general_dilated]",
                  "size overflow");
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w, {1}, {{kMax, kMax}}), "[conv_general_dilated]", "size overflow");
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w, {1}, {{kMin, kMax}}), "[conv_general_dilated]", "size overflow");
  EXPECT_JX_ERROR(lax::conv_general_dilated(x, w, {1}, {{0, k2_40}}), "[conv_general_dilated]", "cannot allocate");
}

// ---- random ----

TEST(Random, ShapesAreChecked) {
  Array k = rnd::key(0);
  const Shape huge{k2_32, k2_32, 4};
  EXPECT_JX_ERROR(rnd::normal(k, huge), "[random.normal]", "(4294967296, 4294967296, 4)", "elements");
  EXPECT_JX_ERROR(rnd::uniform(k, huge), "[random.uniform]", "(4294967296, 4294967296, 4)");
  EXPECT_JX_ERROR(rnd::bits(k, huge), "[random.bits]", "(4294967296, 4294967296, 4)");
  EXPECT_JX_ERROR(rnd::randint(k, huge, 0, 10), "[random.randint]", "(4294967296, 4294967296, 4)");
  EXPECT_JX_ERROR(rnd::split(k, huge), "[random.split]", "(4294967296, 4294967296, 4)");
  EXPECT_JX_ERROR(rnd::normal(k, {k2_32, 2}), "[random.normal]", "more than 2^32 - 1 values");
  EXPECT_EQ(rnd::normal(k, {2, 0, 3}).shape(), (Shape{2, 0, 3}));
}

}  // namespace
}  // namespace jx
