// jx::checkpoint (rematerialization): values against the unchecked function (eager, grad,
// vmap, jit), derivatives against finite differences, the recomputation visible in the
// programs of grad (counted per policy) and kept by jit's optimizer, the IR text round
// trip, and the error messages.
#include "jx/checkpoint.h"

#include "jx/jx.h"
#include "jx/test_util.h"
#include "test_util.h"

namespace jx {
namespace {

namespace jnp = jx::numpy;
namespace cp = jx::checkpoint_policies;
using testing::randn;

size_t count_of(const std::string& s, std::string_view sub) {
  size_t n = 0;
  for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + 1)) ++n;
  return n;
}
// Equations of primitive `name` in a program's text (nested bodies included).
size_t eqns_of(const std::string& text, const std::string& name) { return count_of(text, " " + name + " ") +
                                                                          count_of(text, " " + name + "["); }

// sin(name(sin(x), "a")) * x: the backward pass needs cos(x), cos(a) and a, x.
Array named_fn(const Array& x) { return jnp::sin(checkpoint_name(jnp::sin(x), "a")) * x; }
// sin(W @ x): the backward pass needs cos(W @ x).
Array dot_fn(const Array& w, const Array& x) { return jnp::sum(jnp::sin(jnp::matmul(w, x))); }

std::string grad_text(const CheckpointPolicy& policy) {
  auto g = grad([&](const Array& x) { return jnp::sum(checkpoint(named_fn, {.policy = policy})(x)); });
  return make_jaxpr(g)(randn({3})).str();
}

TEST(Checkpoint, ValuesEqualTheUncheckedFunction) {
  Array x = randn({4}, DType::Float64, 1);
  for (const CheckpointPolicy& p : {cp::nothing_saveable, cp::everything_saveable, cp::dots_saveable,
                                    cp::save_only_these_names({"a"})}) {
    auto f = checkpoint(named_fn, {.policy = p});
    EXPECT_ALLCLOSE(f(x), named_fn(x));
    auto loss = [&](const Array& v) { return jnp::sum(f(v)); };
    auto plain = [](const Array& v) { return jnp::sum(named_fn(v)); };
    EXPECT_ALLCLOSE(grad(loss)(x), grad(plain)(x));
    EXPECT_ALLCLOSE(jit(grad(loss))(x), grad(plain)(x));
    EXPECT_ALLCLOSE(jit(f)(x), named_fn(x));
  }
}

TEST(Checkpoint, PytreesInAndOut) {
  Array x = randn({3}, DType::Float64, 2), y = randn({3}, DType::Float64, 3);
  auto f = checkpoint([](const std::pair<Array, Array>& p) {
    return std::tuple<Array, Array>(jnp::sin(p.first) * p.second, jnp::cos(p.second));
  });
  auto [a, b] = f(std::pair(x, y));
  EXPECT_ALLCLOSE(a, jnp::sin(x) * y);
  EXPECT_ALLCLOSE(b, jnp::cos(y));
}

TEST(Checkpoint, VmapAgainstALoop) {
  Array xs = randn({5, 3}, DType::Float64, 4);
  auto f = checkpoint(named_fn, {.policy = cp::save_only_these_names({"a"})});
  Array batched = vmap(f)(xs);
  Array per_row_grads = vmap(grad([&](const Array& v) { return jnp::sum(f(v)); }))(xs);
  for (int64_t i = 0; i < 5; ++i) {
    Array row = xs(i);
    EXPECT_ALLCLOSE(batched(i), named_fn(row));
    EXPECT_ALLCLOSE(per_row_grads(i), grad([](const Array& v) { return jnp::sum(named_fn(v)); })(row));
  }
}

TEST(Checkpoint, GradsAgainstFiniteDifferences) {
  Array x = randn({3}, DType::Float64, 5);
  Array w = randn({2, 3}, DType::Float64, 6), v = randn({3}, DType::Float64, 7);
  for (const CheckpointPolicy& p : {cp::nothing_saveable, cp::everything_saveable, cp::dots_saveable,
                                    cp::save_only_these_names({"a"})}) {
    test_util::check_grads([&](const Array& a) { return checkpoint(named_fn, {.policy = p})(a); }, std::tuple{x},
                           {.order = 2});
    test_util::check_grads([&](const Array& a, const Array& b) { return checkpoint(dot_fn, {.policy = p})(a, b); },
                           std::tuple{w, v}, {.order = 2});
  }
  // Nested checkpoints and a closed-over array.
  auto inner = checkpoint([&](const Array& a) { return jnp::sin(a * v); });
  test_util::check_grads([&](const Array& a) { return checkpoint([&](const Array& b) { return inner(inner(b)); })(a); },
                         std::tuple{x}, {.order = 2});
}

TEST(Checkpoint, OneEquationInMakeJaxpr) {
  std::string text = make_jaxpr(checkpoint(named_fn))(randn({3})).str();
  EXPECT_EQ(eqns_of(text, "checkpoint"), 1u) << text;
  EXPECT_NE(text.find("policy='nothing_saveable'"), std::string::npos) << text;
  EXPECT_EQ(eqns_of(text, "checkpoint_name"), 1u) << text;
}

TEST(Checkpoint, TheBackwardPassRecomputesWhatThePolicyDoesNotSave) {
  // Unchecked grad: sin(x) and b = sin(a) once each. The backward pass needs cos(x),
  // cos(a) and b: saving nothing recomputes a = sin(x) and b = sin(a); saving "a" only b;
  // saving everything neither.
  const std::string plain = make_jaxpr(grad([](const Array& x) { return jnp::sum(named_fn(x)); }))(randn({3})).str();
  EXPECT_EQ(eqns_of(plain, "sin"), 2u) << plain;
  std::string nothing = grad_text(cp::nothing_saveable);
  EXPECT_EQ(eqns_of(nothing, "sin"), 4u) << nothing;
  EXPECT_EQ(eqns_of(nothing, "optimization_barrier"), 1u) << nothing;  // x, the only residual
  std::string named = grad_text(cp::save_only_these_names({"a"}));
  EXPECT_EQ(eqns_of(named, "sin"), 3u) << named;
  EXPECT_EQ(eqns_of(named, "optimization_barrier"), 2u) << named;  // x and the saved a
  std::string other_name = grad_text(cp::save_only_these_names({"b"}));
  EXPECT_EQ(eqns_of(other_name, "sin"), 4u) << other_name;
  std::string everything = grad_text(cp::everything_saveable);
  EXPECT_EQ(eqns_of(everything, "sin"), 2u) << everything;
  EXPECT_EQ(eqns_of(everything, "optimization_barrier"), 0u) << everything;
  // Without prevent_cse no barrier is put on the recomputation.
  auto g = grad([](const Array& x) {
    return jnp::sum(checkpoint(named_fn, {.prevent_cse = false})(x));
  });
  std::string no_barrier = make_jaxpr(g)(randn({3})).str();
  EXPECT_EQ(eqns_of(no_barrier, "sin"), 4u) << no_barrier;
  EXPECT_EQ(eqns_of(no_barrier, "optimization_barrier"), 0u) << no_barrier;
}

TEST(Checkpoint, DotsSaveableSavesTheProduct) {
  auto text_for = [](const CheckpointPolicy& p) {
    auto g = grad([&](const Array& w, const Array& x) { return checkpoint(dot_fn, {.policy = p})(w, x); });
    return make_jaxpr(g)(randn({2, 3}), randn({3})).str();
  };
  std::string nothing = text_for(cp::nothing_saveable), dots = text_for(cp::dots_saveable);
  // The forward product, recomputed once more when not saved (the transpose adds its own).
  EXPECT_EQ(eqns_of(nothing, "dot_general"), eqns_of(dots, "dot_general") + 1) << nothing << "\n" << dots;
  EXPECT_EQ(eqns_of(nothing, "sin"), 1u);
  EXPECT_EQ(eqns_of(dots, "cos"), 1u);
}

TEST(Checkpoint, JitKeepsTheRecomputation) {
  auto loss = [](const Array& x) { return jnp::sum(checkpoint(named_fn)(x)); };
  auto plain = [](const Array& x) { return jnp::sum(named_fn(x)); };
  Array x = randn({8});
  // value_and_grad: the forward's values are used, so both it and the recomputation stay;
  // a = sin(x) and b = sin(a) are recomputed from the barriered x, as in make_jaxpr.
  std::string checked = jit(value_and_grad(loss)).lower(x).as_text();
  std::string unchecked = jit(value_and_grad(plain)).lower(x).as_text();
  EXPECT_EQ(eqns_of(unchecked, "sin"), 2u) << unchecked;
  EXPECT_EQ(eqns_of(checked, "sin"), 4u) << checked;
  EXPECT_EQ(eqns_of(checked, "optimization_barrier"), 1u) << checked;
  EXPECT_EQ(eqns_of(checked, "checkpoint_name"), 0u) << checked;  // simplify drops names
  auto [v, g] = jit(value_and_grad(loss))(x);
  auto [v0, g0] = value_and_grad(plain)(x);
  EXPECT_ALLCLOSE(v, v0);
  EXPECT_ALLCLOSE(g, g0);
  // Without the barrier, CSE merges the recomputation back into the forward pass.
  auto unbarriered = [](const Array& y) { return jnp::sum(checkpoint(named_fn, {.prevent_cse = false})(y)); };
  std::string merged = jit(value_and_grad(unbarriered)).lower(x).as_text();
  EXPECT_EQ(eqns_of(merged, "sin"), 2u) << merged;
}

TEST(Checkpoint, PrintsAndParses) {
  std::string text = make_jaxpr(grad([](const Array& x) {
                       return jnp::sum(checkpoint(named_fn, {.policy = cp::save_only_these_names({"a", "b"})})(x));
                     }))(randn({3})).str();
  EXPECT_NE(text.find("save_only_these_names(a,b)"), std::string::npos) << text;
  Jaxpr parsed = parse_jaxpr(text);
  EXPECT_EQ(parsed.str(), text);
  verify_jaxpr(parsed);
}

TEST(Checkpoint, Errors) {
  EXPECT_JX_ERROR(cp::save_only_these_names({"a", ""}), "[checkpoint]", "save_only_these_names", "non-empty");
  EXPECT_JX_ERROR(cp::save_only_these_names({"a,b"}), "[checkpoint]", "'a,b'", "none of , ( ) '");
  Array x = randn({3});
  EXPECT_JX_ERROR(checkpoint(named_fn, {.policy = CheckpointPolicy{"save_all"}})(x), "[checkpoint]",
                  "unknown policy 'save_all'");
  EXPECT_JX_ERROR(checkpoint_name(x, ""), "[checkpoint_name]", "the name '' must be non-empty");
  EXPECT_JX_ERROR(checkpoint_name(x, "it's"), "[checkpoint_name]", "'it's'");
  EXPECT_JX_ERROR(checkpoint_name(Array(), "a"), "[checkpoint_name]", "null");
}

}  // namespace
}  // namespace jx
