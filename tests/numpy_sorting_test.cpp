// jx::numpy sorting: sort, argsort, lexsort, partition, unique. Expected values come
// from NumPy (scripts/fixtures/numpy_index.py -> tests/fixtures/numpy_index/sorting.npz);
// JAX-only behaviours (descending, static size padding) are cross-checked there.
#include <algorithm>

#include "core/array_internal.h"
#include "jx/lax.h"
#include "test_util.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;

Array F(const std::string& key) { return jx::testing::fixture_member("numpy_index/sorting", key); }

Array cast(const Array& x, DType d) { return x.dtype() == d ? x : lax::convert_element_type(x, d); }

// Same values, non-contiguous storage.
Array strided(const Array& x) { return lax::transpose(detail::contiguous(lax::transpose(x, {1, 0})), {1, 0}); }

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

TEST(NumpySorting, SortAndArgsortWithNaNs) {
  for (DType d : {DType::Float32, DType::Float64, DType::Float16}) {
    for (bool use_strided : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(d)) + (use_strided ? " strided" : ""));
      Array a = cast(F("a"), d);
      if (use_strided) a = strided(a);
      for (int axis : {0, 1}) {
        EXPECT_ALLCLOSE(jnp::sort(a, axis), cast(F("sort_axis" + std::to_string(axis)), d));
        EXPECT_ALLCLOSE(jnp::argsort(a, axis), F("argsort_axis" + std::to_string(axis)));
      }
      EXPECT_ALLCLOSE(jnp::sort(a), cast(F("sort_axis1"), d));
      EXPECT_ALLCLOSE(jnp::sort(a, -2), cast(F("sort_axis0"), d));
      EXPECT_ALLCLOSE(jnp::sort(a, std::nullopt), cast(F("sort_flat"), d));
      EXPECT_ALLCLOSE(jnp::argsort(a, std::nullopt), F("argsort_flat"));
      EXPECT_ALLCLOSE(jnp::sort(a, 1, true, true), cast(F("sort_desc"), d));
      EXPECT_ALLCLOSE(jnp::argsort(a, 1, true, true), F("argsort_desc"));
    }
  }
}

TEST(NumpySorting, IntegerDTypes) {
  for (DType d : {DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::Float32}) {
    SCOPED_TRACE(dtype_name(d));
    Array ai = cast(F("ai"), d);
    EXPECT_ALLCLOSE(jnp::sort(ai), cast(F("sort_int"), d));
    EXPECT_ALLCLOSE(jnp::argsort(ai), F("argsort_int"));
    EXPECT_EQ(jnp::argsort(ai).dtype(), DType::Int32);
  }
  // bool sorts false first
  EXPECT_ALLCLOSE(jnp::sort(Array({true, false, true})), Array({false, true, true}));
}

TEST(NumpySorting, ZeroDAndEmpty) {
  EXPECT_ALLCLOSE(jnp::sort(Array(2.0f), std::nullopt), Array({2.0}));
  Array e = lax::broadcast_in_dim(Array(1.0f), {0, 3}, {});
  EXPECT_EQ(jnp::sort(e, 0).shape(), (Shape{0, 3}));
  EXPECT_EQ(jnp::argsort(e, 1).shape(), (Shape{0, 3}));
  EXPECT_EQ(jnp::sort(e, std::nullopt).shape(), (Shape{0}));
  EXPECT_EQ(jnp::lexsort({e, e}, 0).shape(), (Shape{0, 3}));
}

TEST(NumpySorting, Lexsort) {
  EXPECT_ALLCLOSE(jnp::lexsort({F("k1"), F("k2")}), F("lexsort"));
  EXPECT_ALLCLOSE(jnp::lexsort(lax::concatenate({lax::reshape(F("k1"), {1, 7}), lax::reshape(F("k2"), {1, 7})}, 0)),
                  F("lexsort_rows"));
  EXPECT_ALLCLOSE(jnp::lexsort({F("k3a"), F("k3b")}, 0), F("lexsort_axis0"));
  EXPECT_ALLCLOSE(jnp::lexsort(F("k1")), jnp::argsort(F("k1")));
}

TEST(NumpySorting, PartitionContract) {
  Array a = F("ai");
  for (int kth : {0, 5, 19, -1}) {
    SCOPED_TRACE(kth);
    auto p = jnp::partition(a, kth).to_vector<int32_t>();
    auto s = jnp::sort(a).to_vector<int32_t>();
    size_t k = static_cast<size_t>(kth < 0 ? kth + 20 : kth);
    EXPECT_EQ(p[k], s[k]);
    for (size_t i = 0; i < p.size(); ++i) EXPECT_TRUE(i < k ? p[i] <= p[k] : p[i] >= p[k]);
    auto idx = jnp::argpartition(a, kth).to_vector<int32_t>();
    auto av = a.to_vector<int32_t>();
    EXPECT_EQ(av[static_cast<size_t>(idx[k])], s[k]);
  }
}

TEST(NumpySorting, Unique) {
  for (bool use_strided : {false, true}) {
    SCOPED_TRACE(use_strided);
    Array u = use_strided ? strided(F("u")) : F("u");
    auto r = jnp::unique_all(u);
    EXPECT_ALLCLOSE(r.values, F("unique_values"));
    EXPECT_ALLCLOSE(r.indices, F("unique_index"));
    EXPECT_ALLCLOSE(r.inverse, F("unique_inverse"));
    EXPECT_ALLCLOSE(r.counts, F("unique_counts"));
    EXPECT_ALLCLOSE(jnp::unique(u), F("unique_values"));
  }
  EXPECT_ALLCLOSE(jnp::unique(F("uf")), F("unique_nan"));
  EXPECT_ALLCLOSE(jnp::unique(F("uf"), std::nullopt, std::nullopt, Array(), false), F("unique_nan_noneq"));
  auto rows = jnp::unique_all(F("rows"), 0);
  EXPECT_ALLCLOSE(rows.values, F("unique_rows"));
  EXPECT_ALLCLOSE(rows.indices, F("unique_rows_index"));
  EXPECT_ALLCLOSE(rows.inverse, F("unique_rows_inverse"));
  EXPECT_ALLCLOSE(rows.counts, F("unique_rows_counts"));
  EXPECT_ALLCLOSE(jnp::unique(lax::transpose(F("rows"), {1, 0}), -1), F("unique_cols"));
}

TEST(NumpySorting, UniqueStaticSize) {
  Array u = F("u");
  auto r = jnp::unique_all(u, std::nullopt, 8, Array(-1));
  EXPECT_ALLCLOSE(r.values, F("unique_size8_values"));
  EXPECT_ALLCLOSE(r.indices, F("unique_size8_index"));
  EXPECT_ALLCLOSE(r.counts, F("unique_size8_counts"));
  EXPECT_ALLCLOSE(r.inverse, F("unique_inverse"));
  EXPECT_ALLCLOSE(jnp::unique(u, std::nullopt, 2), F("unique_size2_values"));
  EXPECT_ALLCLOSE(jnp::unique(u, std::nullopt, 8), F("unique_size8_default_fill"));
  // empty input: values need a fill_value; 0-d input flattens.
  Array e = Array(std::vector<float>{});
  EXPECT_EQ(jnp::unique(e).shape(), (Shape{0}));
  EXPECT_ALLCLOSE(jnp::unique(e, std::nullopt, 2, Array(7.0f)), Array({7.0, 7.0}));
  auto er = jnp::unique_all(e);
  EXPECT_EQ(er.inverse.shape(), (Shape{0}));
  EXPECT_EQ(er.counts.shape(), (Shape{0}));
  EXPECT_ALLCLOSE(jnp::unique(Array(3.0f)), Array({3.0}));
  EXPECT_EQ(jnp::unique_all(Array(3.0f)).inverse.shape(), Shape{});
}

TEST(NumpySorting, Errors) {
  Array v = Array({3.0, 1.0, 2.0});
  EXPECT_JX_ERROR(jnp::sort(v, 1), "[sort] axis 1 is out of bounds for array of shape (3,)");
  EXPECT_JX_ERROR(jnp::sort(Array(1.0f)), "[sort] axis -1 is out of bounds for array of shape ()");
  EXPECT_JX_ERROR(jnp::argsort(v, -2), "[argsort] axis -2 is out of bounds");
  EXPECT_JX_ERROR(jnp::lexsort(std::vector<Array>{}), "[lexsort] need at least one key");
  EXPECT_JX_ERROR(jnp::lexsort({v, Array({1.0})}), "[lexsort] all keys need to be the same shape, got (3,) and (1,)");
  EXPECT_JX_ERROR(jnp::lexsort(Array(1.0f)), "[lexsort] keys must be at least 1-dimensional");
  EXPECT_JX_ERROR(jnp::lexsort({v}, 1), "[lexsort] axis 1 is out of bounds");
  EXPECT_JX_ERROR(jnp::partition(v, 3), "[partition] kth(=3) out of bounds (3)");
  EXPECT_JX_ERROR(jnp::argpartition(v, -4), "[argpartition] kth(=-4) out of bounds (3)");
  EXPECT_JX_ERROR(jnp::unique(traced(Aval{{3}, DType::Float32})),
                  "[unique] the number of unique elements of a traced array is not static");
  EXPECT_JX_ERROR(jnp::unique(v, std::nullopt, -1), "[unique] size must be non-negative, got -1");
  EXPECT_JX_ERROR(jnp::unique(v, std::nullopt, 2, v), "[unique] fill_value must be a scalar, got shape (3,)");
  EXPECT_JX_ERROR(jnp::unique(Array(std::vector<float>{}), std::nullopt, 2),
                  "[unique] for zero-sized input with nonzero size argument, fill_value must be specified");
  EXPECT_JX_ERROR(jnp::unique(v, 1), "[unique] axis 1 is out of bounds for array of shape (3,)");
  EXPECT_JX_ERROR(jnp::unique(Array(1.0f), 0), "[unique] axis 0 is out of bounds for array of dimension 0");
}

}  // namespace
}  // namespace jx
