// jx::checkpoint (JAX's jax.checkpoint / jax.remat): rematerialization.
//
//   auto g = jx::checkpoint(f);                                       // save nothing
//   auto h = jx::checkpoint(f, {.policy = jx::checkpoint_policies::dots_saveable});
//   auto k = jx::checkpoint(f, {.policy = jx::checkpoint_policies::save_only_these_names({"a"})});
//   ... inside f:  Array a = jx::checkpoint_name(jnp::sin(x), "a");
//
// f is staged into one `checkpoint` equation (src/transforms/checkpoint.cpp). Its values
// are f's; under reverse mode (grad, vjp, linearize) the forward pass keeps as residuals
// only the checkpoint's inputs and the values the policy allows, and the backward pass
// recomputes the rest from them, trading compute for memory. The recomputation reads its
// inputs through `optimization_barrier`, so jit's CSE cannot merge it with the forward.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "jx/transforms.h"

namespace jx {

// Which intermediate values of a checkpointed function the forward pass may save for the
// backward pass (JAX's jax.checkpoint_policies). Held in the equation's `policy` param as
// its text: "nothing_saveable", "everything_saveable", "dots_saveable" or
// "save_only_these_names(a,b)".
struct CheckpointPolicy {
  std::string text = "nothing_saveable";
};

namespace checkpoint_policies {
// Save nothing: every intermediate is recomputed (the default).
inline const CheckpointPolicy nothing_saveable{"nothing_saveable"};
// Save everything: no recomputation (as if not checkpointed).
inline const CheckpointPolicy everything_saveable{"everything_saveable"};
// Save the results of dot_general (matrix products); recompute the rest.
inline const CheckpointPolicy dots_saveable{"dots_saveable"};
// Save the values named by checkpoint_name with one of these names. Names are non-empty
// and hold none of , ( ) ' (raises otherwise).
CheckpointPolicy save_only_these_names(const std::vector<std::string>& names);
}  // namespace checkpoint_policies

struct CheckpointOptions {
  CheckpointPolicy policy = checkpoint_policies::nothing_saveable;
  // Put an optimization barrier on the recomputation's inputs (JAX's prevent_cse).
  bool prevent_cse = true;
};

namespace detail {
// Stages f on the arguments' types and binds one `checkpoint` equation.
std::vector<Array> checkpoint_flat(const FlatFn& f, std::span<const Array> args, const CheckpointOptions& options);
Array checkpoint_name_array(const Array& x, const std::string& name);
}  // namespace detail

// checkpoint(f[, options])(args...): f's values, its intermediates recomputed in reverse
// mode as options.policy says. Arguments and results are pytrees.
template <class F>
auto checkpoint(F f, CheckpointOptions options = {}) {
  return [f = std::move(f), options = std::move(options)]<class... A>(const A&... a) {
    detail::FlatCallAll<F, A...> call(f, detail::traced_args_t<A...>(detail::to_array_tree(a)...));
    return call.result(detail::checkpoint_flat(call.fn(), call.leaves(), options));
  };
}
// JAX's alias.
template <class F>
auto remat(F f, CheckpointOptions options = {}) {
  return checkpoint(std::move(f), std::move(options));
}

// Names x (every leaf of a pytree) for save_only_these_names: an identity
// (`checkpoint_name` equation with the name in its params). The name is non-empty and
// holds no '.
template <class T>
auto checkpoint_name(const T& x, const std::string& name) {
  return tree::map([&](const Array& l) { return detail::checkpoint_name_array(l, name); }, detail::to_array_tree(x));
}

}  // namespace jx
