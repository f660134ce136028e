// jx::numpy indexing: x(...), x[i], x.at(...).set/add/..., take, nonzero and friends,
// searchsorted, index grids. Expected values come from NumPy
// (scripts/fixtures/numpy_index.py -> tests/fixtures/numpy_index/indexing.npz); JAX-only
// behaviours (clamped gathers, dropped updates, static sizes) are cross-checked there
// against jax.numpy.
#include <functional>
#include <numeric>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "test_util.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;

Array F(const std::string& key) { return jx::testing::fixture_member("numpy_index/indexing", key); }

Array cast(const Array& x, DType d) { return x.dtype() == d ? x : lax::convert_element_type(x, d); }

bool shares_storage(const Array& a, const Array& b) { return a.impl().storage == b.impl().storage; }

// The same values as x, as a non-contiguous view (transposed storage, one reversed axis).
Array strided_copy(const Array& x) {
  Array t = detail::contiguous(lax::transpose(x, {3, 2, 1, 0}));
  Array r = detail::contiguous(lax::rev(t, {1}));
  return lax::transpose(lax::rev(r, {1}), {3, 2, 1, 0});
}

// A traced stand-in: enough for the checks that must fire before any primitive runs.
class FakeTracer : public detail::Tracer {
 public:
  detail::Trace* trace() const override { return nullptr; }
};
Array traced(const Aval& aval) {
  auto impl = std::make_shared<detail::ArrayImpl>();
  impl->aval = aval;
  impl->tracer = std::make_shared<FakeTracer>();
  return Array(std::move(impl));
}

Slice S(std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step = std::nullopt) {
  return Slice{start, stop, step};
}

// ---- x(...) against NumPy's x[...] ----

struct GetCase {
  const char* name;  // fixture key get_<name>
  std::function<Array(const Array&)> op;
  bool view;  // basic indexing: the result shares x's storage
};

const std::vector<GetCase>& get_cases() {
  static const std::vector<GetCase> cases = {
      {"int", [](const Array& x) { return x[1]; }, true},
      {"int_neg", [](const Array& x) { return x(-1, -2); }, true},
      {"slices", [](const Array& x) { return x(all, S(1, 3), S({}, {}, 2), S({}, {}, -1)); }, true},
      {"slices_neg_step", [](const Array& x) { return x(1, S({}, {}, -2), S(3, 0, -1), S(-1, -4, -2)); }, true},
      {"slices_clamped", [](const Array& x) { return x(all, S(-10, 10), S(2, {}), S(7, 1, -2)); }, true},
      {"slice_empty", [](const Array& x) { return x(all, S(2, 1), all, S(1, 1)); }, true},
      {"ellipsis_newaxis", [](const Array& x) { return x(ellipsis, newaxis, 1); }, true},
      {"newaxis_front_back", [](const Array& x) { return x(newaxis, 0, ellipsis, newaxis); }, true},
      {"adv_single", [](const Array& x) { return x(F("ia")); }, false},
      {"adv_adjacent", [](const Array& x) { return x(all, F("ib"), F("ic")); }, false},
      {"adv_separated", [](const Array& x) { return x(F("ia3"), all, F("ic")); }, false},
      {"adv_int_separated", [](const Array& x) { return x(all, 1, all, F("ic")); }, false},
      {"adv_int_adjacent", [](const Array& x) { return x(1, F("ib")); }, false},
      {"adv_strided", [](const Array& x) { return x(F("ia"), S({}, {}, -1), S(1, 3), S({}, {}, 2)); }, false},
      {"adv_newaxis_between", [](const Array& x) { return x(F("ia3"), newaxis, all, F("ic")); }, false},
      {"adv_ellipsis", [](const Array& x) { return x(ellipsis, F("ic"), all); }, false},
      {"bool_2d", [](const Array& x) { return x(F("m23")); }, false},
      {"bool_1d_mid", [](const Array& x) { return x(all, F("m3")); }, false},
      {"bool_full", [](const Array& x) { return x(lax::gt(F("x"), lax::broadcast_in_dim(Array(100.0f), x.shape(), {}))); }, false},
      {"bool_with_adv", [](const Array& x) { return x(all, F("m3"), F("ic")(S(0, 2))); }, false},
      {"oob_clamped", [](const Array& x) { return x(all, all, F("oob")); }, false},
  };
  return cases;
}

TEST(NumpyIndexing, GetMatchesNumPyAcrossDTypesAndLayouts) {
  const Array x = F("x");
  for (DType d : {DType::Float32, DType::Int32, DType::Float64, DType::Float16, DType::Complex64, DType::UInt8}) {
    const Array xd = cast(x, d);
    for (const Array& input : {xd, strided_copy(xd)}) {
      for (const GetCase& c : get_cases()) {
        SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(d)) +
                     (detail::is_contiguous(input) ? "" : " strided"));
        Array got = c.op(input);
        EXPECT_ALLCLOSE(got, cast(F(std::string("get_") + c.name), d));
        if (c.view && got.size() > 0) {
          EXPECT_TRUE(shares_storage(got, input));
        }
      }
    }
  }
}

TEST(NumpyIndexing, BoolArrayAndAtGet) {
  Array x = lax::ne(cast(F("x"), DType::Int32), lax::broadcast_in_dim(Array(3), {2, 3, 4, 5}, {}));
  for (const GetCase& c : get_cases()) {
    SCOPED_TRACE(c.name);
    Array expected = lax::ne(cast(F(std::string("get_") + c.name), DType::Int32),
                             lax::broadcast_in_dim(Array(3), F(std::string("get_") + c.name).shape(), {}));
    EXPECT_ALLCLOSE(c.op(x), expected);
  }
  Array xf = F("x");
  EXPECT_ALLCLOSE(xf.at(all, F("ib"), F("ic")).get(), F("get_adv_adjacent"));
}

TEST(NumpyIndexing, ZeroDAndEmpty) {
  Array s(3.5f);
  EXPECT_ALLCLOSE(s(), s);
  EXPECT_EQ(s(ellipsis).shape(), Shape{});
  EXPECT_EQ(s(newaxis).shape(), Shape{1});
  EXPECT_EQ(s(newaxis, ellipsis, newaxis).shape(), (Shape{1, 1}));
  EXPECT_EQ(s.at().set(Array(1.0f)).item<float>(), 1.0f);
  EXPECT_EQ(s.at(ellipsis).add(Array(1.0f)).item<float>(), 4.5f);
  EXPECT_EQ(s.at().max(Array(9.0f)).item<float>(), 9.0f);

  Array e = lax::broadcast_in_dim(Array(1.0f), {0, 3}, {});
  EXPECT_EQ(e(all).shape(), (Shape{0, 3}));
  EXPECT_EQ(e(all, 1).shape(), (Shape{0}));
  Array none_idx(std::vector<int32_t>{});
  EXPECT_EQ(e(none_idx).shape(), (Shape{0, 3}));
  EXPECT_EQ(e.at(none_idx).set(Array(2.0f)).shape(), (Shape{0, 3}));
  Array v = Array({1.0, 2.0, 3.0});
  EXPECT_EQ(v(none_idx).shape(), (Shape{0}));
  EXPECT_ALLCLOSE(v.at(none_idx).add(Array(5.0f)), v);
  EXPECT_EQ(v(S(5, {})).shape(), (Shape{0}));
  // An index array of shape (2, 0) broadcasts to an empty block.
  Array empty2(std::vector<int32_t>{}, Shape{2, 0});
  EXPECT_EQ(v(empty2).shape(), (Shape{2, 0}));
}

TEST(NumpyIndexing, IntegerIndexTypesAndClamping) {
  Array v = Array({10.0, 11.0, 12.0});
  EXPECT_EQ(v[-1].item<float>(), 12.0f);
  EXPECT_EQ(v(static_cast<long long>(-3)).item<float>(), 10.0f);
  for (DType d : {DType::Int8, DType::Int16, DType::Int64, DType::UInt8, DType::UInt32}) {
    SCOPED_TRACE(dtype_name(d));
    Array idx = cast(Array({2, 0, 7}), d);  // 7 clamps to 2
    EXPECT_ALLCLOSE(v(idx), Array({12.0, 10.0, 12.0}));
  }
  EXPECT_ALLCLOSE(v(Array({-1, -5})), Array({12.0, 10.0}));  // -5 -> -2 -> clamped to 0
  // Updates out of bounds are dropped; negative ones count from the end.
  EXPECT_ALLCLOSE(v.at(Array({-1, 3, -4})).set(Array(0.0f)), Array({10.0, 11.0, 0.0}));
}

// ---- x.at(...) updates against NumPy's in-place assignment and ufunc.at ----

struct AtCase {
  const char* name;
  std::function<Array(const Array&)> op;
};

const std::vector<AtCase>& at_cases() {
  static const std::vector<AtCase> cases = {
      {"at_add_dup", [](const Array& x) { return x.at(1, F("dup")).add(F("v6")); }},
      {"at_mul_dup", [](const Array& x) { return x.at(1, F("dup")).mul(F("v6")); }},
      {"at_min_dup", [](const Array& x) { return x.at(1, F("dup")).min(F("v6")); }},
      {"at_max_dup", [](const Array& x) { return x.at(1, F("dup")).max(F("v6")); }},
      {"at_set_slices", [](const Array& x) { return x.at(all, S(1, 3), S({}, {}, 2)).set(Array(-1.0f)); }},
      {"at_set_neg_step",
       [](const Array& x) {
         std::vector<float> v(20);
         std::iota(v.begin(), v.end(), 0.0f);
         return x.at(0, S({}, {}, -1)).set(Array(v, Shape{4, 5}));
       }},
      {"at_set_adv_broadcast",
       [](const Array& x) { return x.at(F("ia3")(S(0, 2)), all, F("ic")(S(0, 2))).set(Array(7.0f)); }},
      {"at_add_ellipsis", [](const Array& x) { return x.at(ellipsis, 2).add(Array(std::vector<float>{0, 1, 2, 3})); }},
      {"at_set_mask", [](const Array& x) { return x.at(F("m23")).set(Array(0.0f)); }},
      {"at_set_newaxis",
       [](const Array& x) { return x.at(newaxis, 1, 2).set(lax::broadcast_in_dim(Array(1.0f), {1, 4, 5}, {})); }},
      {"at_add_oob_dropped", [](const Array& x) { return x.at(all, F("oob_rows")).add(Array(1.0f)); }},
  };
  return cases;
}

TEST(NumpyIndexing, AtUpdatesMatchNumPy) {
  for (DType d : {DType::Float32, DType::Float64, DType::Int32}) {
    const Array x = cast(F("x"), d);
    for (const Array& input : {x, strided_copy(x)}) {
      for (const AtCase& c : at_cases()) {
        SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(d)));
        // Updates are converted to x's dtype; the fixture values are small integers.
        EXPECT_ALLCLOSE(c.op(input), cast(F(c.name), d));
      }
    }
  }
}

TEST(NumpyIndexing, AtLeavesInputUnchanged) {
  Array x = Array({1.0, 2.0, 3.0});
  Array y = x.at(0).set(Array(9.0f));
  EXPECT_ALLCLOSE(x, Array({1.0, 2.0, 3.0}));
  EXPECT_ALLCLOSE(y, Array({9.0, 2.0, 3.0}));
  EXPECT_EQ(y.dtype(), DType::Float32);
  // A float update into an int array is converted (JAX casts).
  Array xi = Array({1, 2, 3});
  EXPECT_ALLCLOSE(xi.at(Array({0, 0})).add(Array(1.0)), Array({3, 2, 3}));
}

// ---- take, take_along_axis ----

TEST(NumpyIndexing, Take) {
  Array x = F("x");
  EXPECT_ALLCLOSE(jnp::take(x, F("t"), 2, "clip"), F("take_axis2_clip"));
  EXPECT_ALLCLOSE(jnp::take(x, F("t"), 2, "wrap"), F("take_axis2_wrap"));
  EXPECT_ALLCLOSE(jnp::take(F("n3"), F("ti")), F("take_flat_fill"));
  EXPECT_ALLCLOSE(jnp::take(strided_copy(x), F("t"), -2, "clip"), F("take_axis2_clip"));
  // fill defaults: int minimum, uint maximum, true; or the given fill_value.
  Array big = Array({9});
  EXPECT_EQ(jnp::take(Array({1, 2}), big).item<int32_t>(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(jnp::take(cast(Array({1, 2}), DType::UInt8), big).item<int32_t>(), 255);
  EXPECT_EQ(jnp::take(Array({false}), big).item<bool>(), true);
  EXPECT_EQ(jnp::take(Array({1.0, 2.0}), big, std::nullopt, "fill", Array(-1.0f)).item<float>(), -1.0f);
  // 0-d index, size-0 results.
  EXPECT_EQ(jnp::take(x, Array(1), 1).shape(), (Shape{2, 4, 5}));
  EXPECT_EQ(jnp::take(x, Array(std::vector<int32_t>{}), 0).shape(), (Shape{0, 3, 4, 5}));
  Array empty = lax::broadcast_in_dim(Array(1.0f), {0}, {});
  EXPECT_TRUE(std::isnan(jnp::take(empty, Array({0})).to_vector<float>()[0]));
}

TEST(NumpyIndexing, TakeAlongAxis) {
  EXPECT_ALLCLOSE(jnp::take_along_axis(F("r"), F("r_argsort1"), 1), F("tal_axis1"));
  EXPECT_ALLCLOSE(jnp::take_along_axis(F("r"), F("r_argsort1"), -1, "clip"), F("tal_axis1"));
  EXPECT_ALLCLOSE(jnp::take_along_axis(F("r"), F("tal_bcast_idx"), 0), F("tal_axis0_bcast"));
  // axis None flattens both; out of bounds fills NaN, negatives count from the end.
  Array flat = jnp::take_along_axis(Array({{1.0, 2.0}, {3.0, 4.0}}), Array({-1, 9}), std::nullopt);
  auto v = flat.to_vector<float>();
  EXPECT_EQ(v[0], 4.0f);
  EXPECT_TRUE(std::isnan(v[1]));
}

// ---- nonzero family ----

TEST(NumpyIndexing, NonzeroFamily) {
  Array nz = F("nz");
  auto rc = jnp::nonzero(nz);
  ASSERT_EQ(rc.size(), 2u);
  EXPECT_ALLCLOSE(rc[0], F("nonzero_rows"));
  EXPECT_ALLCLOSE(rc[1], F("nonzero_cols"));
  auto padded = jnp::nonzero(nz, 6, Array(-1));
  EXPECT_ALLCLOSE(padded[0], F("nonzero_size6_rows"));
  EXPECT_ALLCLOSE(padded[1], F("nonzero_size6_cols"));
  EXPECT_ALLCLOSE(jnp::nonzero(nz, 2)[1], F("nonzero_size2_cols"));
  auto per_dim = jnp::nonzero(nz, 6, Array({-1, -2}));
  EXPECT_EQ(per_dim[1].to_vector<int32_t>()[5], -2);
  EXPECT_ALLCLOSE(jnp::argwhere(nz), F("argwhere"));
  EXPECT_ALLCLOSE(jnp::flatnonzero(nz), F("flatnonzero"));
  EXPECT_ALLCLOSE(jnp::where(nz)[0], F("nonzero_rows"));
  EXPECT_ALLCLOSE(jnp::compress(Array({true, false, true, true}), nz, 1), F("compress_axis1"));
  EXPECT_ALLCLOSE(jnp::compress(Array({false, true, true}), nz), F("compress_flat"));
  // floats, bools, strided input, empty and 0-d (argwhere only)
  EXPECT_ALLCLOSE(jnp::nonzero(Array({0.0, -0.5, 0.0, 2.0}))[0], Array({1, 3}));
  EXPECT_ALLCLOSE(jnp::nonzero(Array({false, true}))[0], Array({1}));
  EXPECT_ALLCLOSE(jnp::nonzero(lax::transpose(nz, {1, 0}))[0], Array({0, 1, 3, 3}));
  EXPECT_EQ(jnp::nonzero(Array(std::vector<float>{}))[0].shape(), (Shape{0}));
  EXPECT_EQ(jnp::nonzero(Array(std::vector<float>{}), 2)[0].to_vector<int32_t>(), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(jnp::argwhere(Array(1.0f)).shape(), (Shape{1, 0}));
  EXPECT_EQ(jnp::argwhere(Array(0.0f)).shape(), (Shape{0, 0}));
  EXPECT_EQ(jnp::nonzero(nz)[0].dtype(), DType::Int32);
}

// ---- searchsorted, digitize ----

TEST(NumpyIndexing, SearchsortedAndDigitize) {
  EXPECT_ALLCLOSE(jnp::searchsorted(F("s"), F("q")), F("ss_left"));
  EXPECT_ALLCLOSE(jnp::searchsorted(F("s"), F("q"), "right"), F("ss_right"));
  EXPECT_ALLCLOSE(jnp::searchsorted(F("unsorted"), Array({2.5, 0.0, 9.0}), "left", F("unsorted_sorter")),
                  F("ss_sorter"));
  EXPECT_ALLCLOSE(jnp::searchsorted(F("si"), Array({0, 3, 4, 7, 8}), "right"), F("ss_int_right"));
  EXPECT_EQ(jnp::searchsorted(F("si"), Array(4)).item<int32_t>(), 2);  // 0-d query
  EXPECT_EQ(jnp::searchsorted(Array(std::vector<float>{}), Array({1.0})).to_vector<int32_t>(),
            std::vector<int32_t>{0});
  for (int n = 1; n <= 9; ++n) {  // every length, both sides, all insertion points
    std::vector<float> a(static_cast<size_t>(n));
    std::iota(a.begin(), a.end(), 0.0f);
    std::vector<float> q;
    for (int i = -1; i <= n; ++i) q.push_back(static_cast<float>(i) - 0.5f), q.push_back(static_cast<float>(i));
    auto left = jnp::searchsorted(Array(a), Array(q)).to_vector<int32_t>();
    auto right = jnp::searchsorted(Array(a), Array(q), "right").to_vector<int32_t>();
    for (size_t i = 0; i < q.size(); ++i) {
      EXPECT_EQ(left[i], std::lower_bound(a.begin(), a.end(), q[i]) - a.begin()) << n << " " << q[i];
      EXPECT_EQ(right[i], std::upper_bound(a.begin(), a.end(), q[i]) - a.begin()) << n << " " << q[i];
    }
  }
  EXPECT_ALLCLOSE(jnp::digitize(F("dx"), F("bins_inc")), F("digitize_inc"));
  EXPECT_ALLCLOSE(jnp::digitize(F("dx"), F("bins_inc"), true), F("digitize_inc_right"));
  EXPECT_ALLCLOSE(jnp::digitize(F("dx"), F("bins_dec")), F("digitize_dec"));
  EXPECT_ALLCLOSE(jnp::digitize(F("dx"), F("bins_dec"), true), F("digitize_dec_right"));
}

// ---- index grids ----

TEST(NumpyIndexing, IndexGrids) {
  for (int k : {-1, 0, 2}) {
    const char* kk = k == -1 ? "m1" : k == 0 ? "0" : "2";
    SCOPED_TRACE(k);
    auto lo = jnp::tril_indices(4, k, 5);
    Array lo_ref = F(std::string("tril_4_") + kk + "_5");
    EXPECT_ALLCLOSE(lo[0], lo_ref[0]);
    EXPECT_ALLCLOSE(lo[1], lo_ref[1]);
    auto up = jnp::triu_indices(4, k, 3);
    Array up_ref = F(std::string("triu_4_") + kk + "_3");
    EXPECT_ALLCLOSE(up[0], up_ref[0]);
    EXPECT_ALLCLOSE(up[1], up_ref[1]);
  }
  Array m = lax::broadcast_in_dim(Array(0.0f), {4, 5}, {});
  EXPECT_ALLCLOSE(jnp::tril_indices_from(m, -1)[1], F("tril_4_m1_5")[1]);
  EXPECT_ALLCLOSE(jnp::triu_indices_from(lax::broadcast_in_dim(Array(0.0f), {4, 3}, {}), 2)[0], F("triu_4_2_3")[0]);
  auto d = jnp::diag_indices(3, 3);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_ALLCLOSE(d[2], Array({0, 1, 2}));
  EXPECT_EQ(jnp::diag_indices_from(lax::broadcast_in_dim(Array(0.0f), {2, 2}, {})).size(), 2u);
  EXPECT_ALLCLOSE(jnp::indices({2, 3}), F("indices_23"));
  EXPECT_EQ(jnp::indices({}).shape(), (Shape{0}));
  EXPECT_EQ(jnp::indices({2, 0}).shape(), (Shape{2, 2, 0}));
}

// ---- every error path ----

TEST(NumpyIndexing, Errors) {
  Array x = F("x");
  Array v = Array({1.0, 2.0, 3.0});
  EXPECT_JX_ERROR(v[5], "[index] index 5 is out of bounds for axis 0 with size 3");
  EXPECT_JX_ERROR(x(0, -4), "[index] index -4 is out of bounds for axis 1 with size 3");
  EXPECT_JX_ERROR(x(0, 0, 0, 0, 0), "[index] too many indices for array: array is 4-dimensional, but 5 were indexed");
  EXPECT_JX_ERROR(Array(1.0f)[0], "too many indices", "0-dimensional");
  EXPECT_JX_ERROR(x(ellipsis, 0, ellipsis), "[index] an index can only have a single ellipsis");
  EXPECT_JX_ERROR(v(S({}, {}, 0)), "[index] slice step cannot be zero");
  EXPECT_JX_ERROR(v(Array({0.0, 1.0})), "[index] array indices must be integers or booleans, got f32[2]");
  EXPECT_JX_ERROR(x(Array({true, false, true})),
                  "[index] boolean index did not match indexed array along axis 0; size of axis is 2 but size of "
                  "corresponding boolean axis is 3");
  EXPECT_JX_ERROR(v(Array(true)), "[index] a 0-d boolean index is not supported");
  EXPECT_JX_ERROR(v(traced(Aval{{3}, DType::Bool})), "[index] a boolean mask index of shape (3,) needs a concrete mask",
                  "jnp::where", "nonzero(mask, size=...)");
  EXPECT_JX_ERROR(x(F("ia"), all, F("ic")),
                  "[index] shape mismatch: indexing arrays could not be broadcast together with shapes (4,) (3,)");
  Array e = lax::broadcast_in_dim(Array(1.0f), {0, 3}, {});
  EXPECT_JX_ERROR(e(Array({0})), "[index] index is out of bounds for an axis of size 0");
  EXPECT_JX_ERROR(x.at(0, F("ia3")).set(Array({1.0, 2.0})),
                  "[at] shape mismatch: value array of shape (2,) could not be broadcast to indexing result of shape "
                  "(3, 4, 5)");
  EXPECT_JX_ERROR(x.at(F("ia"), all, F("ic")).add(Array(1.0f)), "[at] shape mismatch: indexing arrays");
  EXPECT_JX_ERROR(v.at(0).set(Array()), "[at] update value is a null jx::Array");
  EXPECT_JX_ERROR(v.at(7).set(Array(1.0f)), "[index] index 7 is out of bounds for axis 0 with size 3");

  EXPECT_JX_ERROR(jnp::take(v, Array({0.5})), "[take] indices must be integers, got f32[1]");
  EXPECT_JX_ERROR(jnp::take(v, Array({0}), std::nullopt, "bogus"), "[take] invalid mode 'bogus'");
  EXPECT_JX_ERROR(jnp::take(v, Array({0}), std::nullopt, "raise"), "[take] mode 'raise' is not supported");
  EXPECT_JX_ERROR(jnp::take(x, Array({0}), 4), "[take] axis 4 is out of bounds for array of shape (2, 3, 4, 5)");
  EXPECT_JX_ERROR(jnp::take(e, Array({0}), 0, "clip"), "[take] cannot do a non-empty take from an empty axis");
  EXPECT_JX_ERROR(jnp::take(v, Array({0}), 0, "fill", Array({1.0, 2.0})), "[take] fill_value must be a scalar");
  EXPECT_JX_ERROR(jnp::take_along_axis(x, Array({0}), 0), "[take_along_axis] indices and arr must have the same number of dimensions");
  EXPECT_JX_ERROR(jnp::take_along_axis(Array({{1.0, 2.0}}), Array({{0, 0, 0}}), 0),
                  "[take_along_axis] indices of shape (1, 3) do not broadcast against arr of shape (1, 2)");
  EXPECT_JX_ERROR(jnp::take_along_axis(v, Array({0}), 0, "wrap"), "[take_along_axis] invalid mode 'wrap'");
  EXPECT_JX_ERROR(jnp::take_along_axis(e, Array(std::vector<int32_t>{0}, Shape{1, 1}), 0, "clip"), "[take_along_axis] cannot do a non-empty take");
  EXPECT_JX_ERROR(jnp::take_along_axis(v, Array({0.0}), 0), "[take_along_axis] indices must be integers");

  EXPECT_JX_ERROR(jnp::nonzero(Array(1.0f)), "[nonzero] calling nonzero on 0-d arrays is not allowed");
  EXPECT_JX_ERROR(jnp::nonzero(v, -1), "[nonzero] size must be non-negative, got -1");
  EXPECT_JX_ERROR(jnp::nonzero(traced(Aval{{3}, DType::Float32})),
                  "[nonzero] the number of nonzero elements of a traced array is not static");
  EXPECT_JX_ERROR(jnp::nonzero(v, 2, Array({1, 2})), "[nonzero] fill_value must be a scalar or have one value per dimension (1)");
  EXPECT_JX_ERROR(jnp::compress(lax::reshape(Array({true}), {1, 1}), v), "[compress] condition must be 1-dimensional, got shape (1, 1)");
  EXPECT_JX_ERROR(jnp::compress(Array({true, false, false, true}), v),
                  "[compress] condition has a true value at index 3, beyond axis 0 of size 3");

  EXPECT_JX_ERROR(jnp::diag_indices(-1), "[diag_indices] n must be non-negative, got -1");
  EXPECT_JX_ERROR(jnp::diag_indices_from(v), "[diag_indices_from] input array must be at least 2-d, got shape (3,)");
  EXPECT_JX_ERROR(jnp::diag_indices_from(e), "[diag_indices_from] all dimensions of input must be of equal length");
  EXPECT_JX_ERROR(jnp::tril_indices(-2), "[tril_indices] n must be non-negative, got -2");
  EXPECT_JX_ERROR(jnp::triu_indices(2, 0, -1), "[triu_indices] m must be non-negative, got -1");
  EXPECT_JX_ERROR(jnp::tril_indices_from(v), "[tril_indices_from] input array must be 2-d, got shape (3,)");
  EXPECT_JX_ERROR(jnp::triu_indices_from(x), "[triu_indices_from] input array must be 2-d");
  EXPECT_JX_ERROR(jnp::indices({2}, DType::Float32), "[indices] dtype must be an integer type, got float32");
  EXPECT_JX_ERROR(jnp::indices({-1}), "[indices] dimension must be non-negative, got -1");

  EXPECT_JX_ERROR(jnp::searchsorted(x, v), "[searchsorted] a must be 1-dimensional, got shape (2, 3, 4, 5)");
  EXPECT_JX_ERROR(jnp::searchsorted(v, v, "middle"), "[searchsorted] side must be 'left' or 'right', got 'middle'");
  EXPECT_JX_ERROR(jnp::searchsorted(v, v, "left", Array({0, 1})), "[searchsorted] sorter must have the shape of a (3,), got (2,)");
  EXPECT_JX_ERROR(jnp::digitize(v, e), "[digitize] bins must be 1-dimensional, got shape (0, 3)");
}

}  // namespace
}  // namespace jx
