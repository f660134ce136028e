// The take_along_selects pass (src/jit/passes/take_along_selects.h): take_along_axis's
// gather and its gradient's scatter_add become selects. Checked on programs jnp traces:
// it fires where it should, the rewritten program computes bit for bit what the original
// did (eval_jaxpr of both, on values chosen to catch an inexact form: NaN, -0.0, infinities,
// negative and out-of-bounds indices), it refuses a gather whose rows it would have to
// read whole, and under jit a softmax cross-entropy and its gradient become one rows
// kernel each and match eager.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "jit/passes/take_along_selects.h"
#include "jit/pipeline.h"
#include "jx/jx.h"
#include "pass_test_util.h"
#include "test_util.h"

namespace jx::compiler {
namespace {

namespace jnp = jx::numpy;
using testing::randn;

template <class F, class... Args>
Rewritten rewrite(F f, const Args&... args) {
  return rewrite_with(&take_along_selects, f, args...);
}

// Rows holding every value an inexact pick would change, the labels reaching past both ends.
Array awkward_rows(DType dtype) {
  const float inf = INFINITY, nan = NAN;
  std::vector<float> v{1.5f, -0.0f, 0.0f, -2.0f, inf, -inf, nan, 3.0f,  //
                       -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f, -0.0f,  //
                       nan, -inf, 7.0f, 0.0f, -1e-30f, 1e30f, -5.0f, 2.0f};
  return Array(v, {3, 8}).astype(dtype);
}

// Labels of 3 rows of 8, from -9 to 8 (both ends out of bounds): over shifts 0..17 every
// row meets every label.
Array labels_shifted(int shift) {
  std::vector<int32_t> v;
  for (int r = 0; r < 3; ++r) v.push_back((r * 7 + shift) % 18 - 9);
  return Array(v, {3});
}

Array int_labels(std::vector<int32_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Array(v, {n});
}

// An elementwise producer (as log_softmax's last subtraction is), so the pass applies.
Array take_of_sum(const Array& x, const Array& labels, std::string_view mode = "fill", const Array& fill = Array()) {
  return jnp::take_along_axis(x + x, jnp::expand_dims(labels, 1), 1, mode, fill);
}

TEST(TakeAlongSelects, PicksExactlyWhatTheGatherPicks) {
  for (DType d : {DType::Float32, DType::Float64, DType::Float16}) {
    Array x = awkward_rows(d);
    for (int shift = 0; shift < 18; ++shift) {
      Array labels = labels_shifted(shift);
      Rewritten r = rewrite([](const Array& a, const Array& l) { return take_of_sum(a, l); }, x, labels);
      ASSERT_TRUE(r.changed);
      EXPECT_EQ(count(r.after, "gather"), 0);
      EXPECT_EQ(count(r.after, "reduce_sum"), 1);
      expect_same_values(r, {x, labels});
    }
  }
}

TEST(TakeAlongSelects, KeepsEachModesOutOfBoundsMeaning) {
  Array x = awkward_rows(DType::Float32);
  Array labels = int_labels({-20, 8, 100});
  for (std::string_view mode : {"fill", "clip"}) {
    Rewritten r = rewrite([&](const Array& a, const Array& l) { return take_of_sum(a, l, mode); }, x, labels);
    ASSERT_TRUE(r.changed) << mode;
    expect_same_values(r, {x, labels});
  }
  // An explicit fill value, and integer and bool operands (their own exact picks).
  Rewritten filled = rewrite([](const Array& a, const Array& l) { return take_of_sum(a, l, "fill", Array(-7.0f)); },
                             x, labels);
  ASSERT_TRUE(filled.changed);
  expect_same_values(filled, {x, labels});
  Array ints = testing::arange({3, 8}) - 11;
  Rewritten r = rewrite([](const Array& a, const Array& l) { return take_of_sum(a, l, "fill", Array(-1)); }, ints,
                        labels);
  ASSERT_TRUE(r.changed);
  expect_same_values(r, {ints, labels});
  Array flags = (testing::arange({3, 8}) % 3) == 0;
  Rewritten b = rewrite(
      [](const Array& a, const Array& l) {
        return jnp::take_along_axis(jnp::logical_not(a), jnp::expand_dims(l, 1), 1, "fill", Array(false));
      },
      flags, labels);
  ASSERT_TRUE(b.changed);
  expect_same_values(b, {flags, labels});
}

TEST(TakeAlongSelects, TakesAlongAnyAxisOfAnyRank) {
  Array x = randn({4, 5, 6}, DType::Float32, 1);
  for (int64_t axis = 0; axis < 3; ++axis) {
    Shape is = x.shape();
    is[static_cast<size_t>(axis)] = 1;
    Array idx = jx::random::randint(jx::random::key(static_cast<int64_t>(axis)), is, -7, 7, DType::Int32);
    Rewritten r = rewrite([&](const Array& a, const Array& i) { return jnp::take_along_axis(a * a, i, axis); }, x, idx);
    ASSERT_TRUE(r.changed) << "axis " << axis;
    expect_same_values(r, {x, idx});
  }
  Array v = randn({5}, DType::Float64, 2);
  Rewritten r = rewrite([](const Array& a, const Array& i) { return jnp::take_along_axis(-a, i, 0); }, v, Array({3}));
  ASSERT_TRUE(r.changed);
  expect_same_values(r, {v, Array({3})});
}

TEST(TakeAlongSelects, TheGradientsScatterAddBecomesASelect) {
  Array x = awkward_rows(DType::Float32);
  Array labels = int_labels({-3, 7, 12});  // the last one out of bounds: its update is dropped
  auto loss = [](const Array& a, const Array& l) { return jnp::sum(take_of_sum(a, l) * 3.0f); };
  Rewritten r = rewrite(jx::grad(loss), x, labels);
  ASSERT_TRUE(r.changed);
  EXPECT_EQ(count(r.before, "scatter_add"), 1);
  EXPECT_EQ(count(r.after, "scatter_add"), 0);
  expect_same_values(r, {x, labels});
  // A scatter_add onto a nonzero base keeps the base's -0.0 where nothing is added.
  Array base = jnp::full({3, 8}, -0.0f);
  Rewritten onto = rewrite(
      [](const Array& b, const Array& l, const Array& u) {
        Array rows = lax::broadcasted_iota(DType::Int32, {3, 1, 1}, 0);
        Array columns = jnp::reshape(jnp::where(l < 0, l + 8, l), {3, 1, 1});
        lax::ScatterDimensionNumbers dn{{}, {0, 1}, {0, 1}};
        return lax::scatter_add(b * 1.0f, jnp::concatenate({rows, columns}, 2), jnp::reshape(u, {3, 1}), dn);
      },
      base, labels, Array({1.0f, -0.0f, 2.0f}));
  ASSERT_TRUE(onto.changed);
  expect_same_values(onto, {base, labels, Array({1.0f, -0.0f, 2.0f})});
}

// The pick moves inside ops with values constant along the row (log_softmax's shift and
// log of the sum), so the kernel picks from the logits in its first pass: the rewritten
// program selects from its argument itself, and computes the very same bits.
TEST(TakeAlongSelects, PicksInsideOpsWithRowValues) {
  Array x = awkward_rows(DType::Float32);
  auto log_probs_pick = [](const Array& a, const Array& l) {
    Array shifted = a - jx::stop_gradient(jnp::max(a, 1, true));
    Array lp = shifted - jnp::log(jnp::sum(jnp::exp(shifted), 1, true));
    return jnp::take_along_axis(lp * 2.0f, jnp::expand_dims(l, 1), 1);
  };
  for (int shift = 0; shift < 18; ++shift) {
    Array labels = labels_shifted(shift);
    Rewritten r = rewrite(log_probs_pick, x, labels);
    ASSERT_TRUE(r.changed);
    expect_same_values(r, {x, labels});
    bool reads_argument = false;
    for (const Equation& e : r.after.jaxpr.eqns)
      reads_argument = reads_argument || (e.primitive->name() == "bitcast_convert_type" && e.inputs[0].is_var() &&
                                          e.inputs[0].var().id == r.after.jaxpr.invars[0].id);
    EXPECT_TRUE(reads_argument) << r.after.str();
  }
  ASSERT_EQ(rewrite(log_probs_pick, x, labels_shifted(0)).notes.size(), 1u);
  EXPECT_NE(rewrite(log_probs_pick, x, labels_shifted(0)).notes[0].find("inside 3 ops with row values"),
            std::string::npos);
}

// A row's max and its label's pick in one loop (the pick's integer sum beside the max's
// fast maxps loop): rows whose max is zero or NaN rerun the max exactly, and the sum
// must not be counted twice.
TEST(TakeAlongSelects, APickBesideARowMaxSurvivesItsExactRerun) {
  for (int64_t cols : {20, 100}) {
    std::vector<float> v(static_cast<size_t>(5 * cols));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>(i * 7919 % 23) - 30);
    for (int64_t j = 0; j < cols; ++j) {
      v[static_cast<size_t>(1 * cols + j)] = 0.0f;   // a max of zero
      v[static_cast<size_t>(2 * cols + j)] = -0.0f;  // of -0.0
    }
    v[static_cast<size_t>(3 * cols + cols / 2)] = NAN;  // a NaN row
    v[static_cast<size_t>(4 * cols + 3)] = INFINITY;    // an infinite max
    Array x(v, {5, cols});
    Array labels = int_labels({0, 5, static_cast<int32_t>(cols) - 1, 7, 3});
    auto f = [](const Array& a, const Array& l) {
      Array m = jnp::max(a, 1, true);
      return std::make_tuple(m, jnp::take_along_axis(a - m, jnp::expand_dims(l, 1), 1));
    };
    auto [jm, jp] = jx::jit(f)(x, labels);
    auto [em, ep] = f(x, labels);
    EXPECT_TRUE(same_bits(jm, em)) << cols;
    EXPECT_TRUE(same_bits(jp, ep)) << cols;
  }
}

// NumPy's spelling of the same pick, x[arange(n), labels]: the row index reaches the
// gather through conversions, the normalization of negative indices and a broadcast.
TEST(TakeAlongSelects, FancyIndexingOfOneElementPerRowIsATake) {
  Array x = awkward_rows(DType::Float32);
  for (int shift = 0; shift < 18; ++shift) {
    Array labels = labels_shifted(shift) % 8;  // clip mode: out-of-bounds labels clamp
    auto pick = [](const Array& a, const Array& l) { return (a + a).index({jnp::arange(3), l}); };
    Rewritten r = rewrite(pick, x, labels);
    ASSERT_TRUE(r.changed);
    EXPECT_EQ(count(r.after, "gather"), 0);
    expect_same_values(r, {x, labels});
    Rewritten g = rewrite(jx::grad([&](const Array& a, const Array& l) { return jnp::sum(pick(a, l) * 2.0f); }), x,
                          labels);
    ASSERT_TRUE(g.changed);
    EXPECT_EQ(count(g.after, "scatter_add"), 0);
    expect_same_values(g, {x, labels});
  }
  // A row index that is not each row's own position is another gather.
  Array labels = labels_shifted(3) % 8;
  EXPECT_FALSE(
      rewrite([](const Array& a, const Array& l) { return (a + a).index({(jnp::arange(3) + 1) % 3, l}); }, x, labels)
          .changed);
  EXPECT_FALSE(
      rewrite([](const Array& a, const Array& l) { return (a + a).index({jnp::arange(3) * 0, l}); }, x, labels).changed);
}

TEST(TakeAlongSelects, LeavesGathersItWouldReadWholeRowsFor) {
  // An argument's long rows: the gather reads one element of each, the select all 100.
  Array x = randn({4, 100}, DType::Float32, 3), labels = int_labels({1, 2, 3, 99});
  Rewritten r = rewrite([](const Array& a, const Array& l) { return jnp::take_along_axis(a, jnp::expand_dims(l, 1), 1); },
                        x, labels);
  EXPECT_FALSE(r.changed);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("kept a take along axis 1 of f32[4,100]: its operand is not computed elementwise and its "
                            "rows are longer than 64 bytes"),
            std::string::npos)
      << r.notes[0];
  // An argument's short rows (one cache line) are read whole at no cost.
  Array narrow = randn({4, 16}, DType::Float32, 4);
  EXPECT_TRUE(rewrite([](const Array& a, const Array& l) { return jnp::take_along_axis(a, jnp::expand_dims(l, 1), 1); },
                      narrow, labels % 16)
                  .changed);
  // Several elements a row, and a take of whole rows, are other gathers.
  Array two = jnp::stack({labels % 16, labels % 7}, 1);
  EXPECT_FALSE(rewrite([](const Array& a, const Array& i) { return jnp::take_along_axis(a + a, i, 1); }, narrow, two)
                   .changed);
  EXPECT_FALSE(rewrite([](const Array& a, const Array& l) { return jnp::take(a + a, l % 4, 0); }, narrow, labels).changed);
  // Complex operands have no exact pick by reduction here.
  Array z = narrow.astype(DType::Complex64);
  EXPECT_FALSE(rewrite([](const Array& a, const Array& l) { return take_of_sum(a, l); }, z, labels % 16).changed);
}

// The loss a new user writes: log_softmax by hand, the labels' log-probabilities, their mean.
Array cross_entropy(const Array& logits, const Array& labels) {
  Array shifted = logits - jnp::max(logits, 1, true);
  Array log_probs = shifted - jnp::log(jnp::sum(jnp::exp(shifted), 1, true));
  return -jnp::mean(jnp::take_along_axis(log_probs, jnp::expand_dims(labels, 1), 1));
}

TEST(TakeAlongSelects, ACrossEntropyAndItsGradientAreOneRowsKernelEach) {
  Array logits = randn({300, 10}, DType::Float32, 5) * 3.0f;
  Array labels = jx::random::randint(jx::random::key(6), {300}, 0, 10, DType::Int32);
  for (bool gradient : {false, true}) {
    ClosedJaxpr traced = gradient ? make_jaxpr(jx::grad(cross_entropy))(logits, labels)
                                  : make_jaxpr(cross_entropy)(logits, labels);
    ClosedJaxpr optimized = optimize_program(traced, PipelineOptions{.verify = true}, Dump("cross_entropy", ""));
    int rows_kernels = 0;
    for (const Equation& e : optimized.jaxpr.eqns) {
      EXPECT_NE(e.primitive->name(), "gather");
      EXPECT_NE(e.primitive->name(), "scatter_add");
      rows_kernels += e.params.has("kind") && e.params.get_string("kind") == "rows";
    }
    EXPECT_EQ(rows_kernels, 1) << optimized.str();
  }
  EXPECT_ALLCLOSE(jx::jit(cross_entropy)(logits, labels), cross_entropy(logits, labels), 1e-6, 1e-6);
  EXPECT_ALLCLOSE(jx::jit(jx::grad(cross_entropy))(logits, labels), jx::grad(cross_entropy)(logits, labels), 1e-5,
                  1e-7);
  // Float64 rows of 100, and labels out of bounds (NaN loss, as eager's fill).
  Array wide = randn({50, 100}, DType::Float64, 7);
  Array wide_labels = jx::random::randint(jx::random::key(8), {50}, -100, 100, DType::Int32);
  EXPECT_ALLCLOSE(jx::jit(cross_entropy)(wide, wide_labels), cross_entropy(wide, wide_labels), 1e-12, 1e-12);
  EXPECT_ALLCLOSE(jx::jit(jx::grad(cross_entropy))(wide, wide_labels), jx::grad(cross_entropy)(wide, wide_labels),
                  1e-12, 1e-14);
  Array outside = jnp::where(jnp::arange(50) == 0, Array(100), wide_labels);
  EXPECT_TRUE(std::isnan(jx::jit(cross_entropy)(wide, outside).item<double>()));
}

TEST(TakeAlongSelects, NativeKernelsBitcastWithinAWidthAndCallOutAcrossWidths) {
  Array x = awkward_rows(DType::Float32);
  auto same_width = [](const Array& a) {
    return lax::bitcast_convert_type(lax::bitcast_convert_type(a * 2.0f, DType::Int32) + 1, DType::Float32);
  };
  EXPECT_TRUE(same_bits(jx::jit(same_width)(x), same_width(x)));
  auto narrower = [](const Array& a) { return lax::bitcast_convert_type(a + 1.0, DType::Int32) * 3; };
  Array y = randn({4, 3}, DType::Float64, 9);
  EXPECT_TRUE(same_bits(jx::jit(narrower)(y), narrower(y)));
}

}  // namespace
}  // namespace jx::compiler
