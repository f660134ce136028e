// jx::lax::while_loop: JAX's structured loop.
//
//   auto [i, x] = lax::while_loop([](const auto& c) { return std::get<0>(c) < 10; },
//                                 [](const auto& c) { auto [i, x] = c; return std::tuple{i + 1, x * 2.0}; },
//                                 std::tuple{Array(0), x});
//   lax::while_loop(cond_fn, body_fn, init, {.max_steps = 100});   // at most 100 iterations
//
// cond_fn and body_fn are staged into one `while` equation (src/lax/control_flow/
// while_loop.cpp): while cond_fn(carry): carry = body_fn(carry). The carry is a pytree;
// body_fn returns one of the same structure, shapes and dtypes (a weakly typed initial
// leaf takes the dtype body_fn returns for it, as in JAX). The loop composes with jvp,
// vmap (a batched predicate runs until every lane is done, finished lanes keeping their
// carry) and jit. Reverse mode (grad, vjp, jacrev) is checkpointed with max_steps, and
// without it works eagerly only: see the note on its costs at the end of this header.
// After max_steps iterations the loop stops (no error). fori_loop with jx::Array bounds
// (possibly traced) is here too; with C++ integer bounds it is in scan.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "jx/control_flow/scan.h"
#include "jx/transforms.h"

namespace jx {
namespace lax {

struct WhileOptions {
  // Stop after at most this many iterations even if cond_fn is still true (none: unbounded).
  std::optional<int64_t> max_steps;
  // Reverse mode with max_steps = N: how many carries the forward pass saves; the backward
  // pass recomputes the steps between two of them (Equinox's checkpointed_while_loop).
  // None: ceil(N^(1 / (checkpoint_levels + 1))), i.e. ceil(sqrt(N)); a value >= N saves
  // every step's residuals instead (no recomputation). At least 1.
  std::optional<int64_t> checkpoints;
  // How deeply the steps between two saved carries are themselves checkpointed: L levels
  // hold O(L N^(1/(L+1))) carries and cost about L + 1 forward passes; L = log2(N) gives
  // O(log N) memory. At least 1.
  int64_t checkpoint_levels = 1;
};

}  // namespace lax

namespace detail {

// fori_loop's jx::Array bounds: integer scalars (raises "[fori_loop] ..." naming the bound
// otherwise) converted to their common dtype, and their values when known now (neither
// is traced: eager, or under jvp/grad).
struct ForiBounds {
  Array lower, upper;
  std::optional<int64_t> lower_value, upper_value;
};
ForiBounds fori_bounds(const Array& lower, const Array& upper);

// Stages cond_fn and body_fn on the carry's types and binds one `while` equation.
std::vector<Array> while_flat(const FlatFn& cond_fn, const FlatFn& body_fn, std::span<const Array> init,
                              const lax::WhileOptions& options);

}  // namespace detail

namespace lax {

// Runs body_fn on the carry while cond_fn(carry) (a bool scalar) is true; returns the
// final carry. See the top of this header.
template <class CondFn, class BodyFn, class T>
tree::array_tree_t<T> while_loop(const CondFn& cond_fn, const BodyFn& body_fn, const T& init,
                                 const WhileOptions& options = {}) {
  static_assert(tree::detail::Tree<T>,
                "jx::lax::while_loop: init must be a pytree (jx::Array, a C++ scalar, a std container of them or a "
                "JX_TREE_NODE struct)");
  using Carry = tree::array_tree_t<T>;
  constexpr bool callable = std::is_invocable_v<const CondFn&, Carry&> && std::is_invocable_v<const BodyFn&, Carry&>;
  static_assert(callable,
                "jx::lax::while_loop: cond_fn and body_fn must be callable with the carry, a pytree of jx::Array "
                "shaped like init");
  if constexpr (callable) {
    auto [leaves, def] = tree::flatten(detail::to_array_tree(init));
    detail::FlatFn cond = [&, &def = def](std::span<const Array> xs) {
      Carry carry = tree::unflatten<Carry>(def, xs);
      auto [out, out_def] = tree::flatten(detail::to_array_tree(cond_fn(carry)));
      if (out.size() != 1)
        detail::fail("while", "cond_fn must return a bool scalar, got a pytree ", out_def.str(), " of ", out.size(),
                     " leaves");
      return out;
    };
    detail::FlatFn body = [&, &def = def](std::span<const Array> xs) {
      Carry carry = tree::unflatten<Carry>(def, xs);
      auto [out, out_def] = tree::flatten(detail::to_array_tree(body_fn(carry)));
      if (!(out_def == def))
        detail::fail("while", "body_fn must return the carry's structure ", def.str(), ", got ", out_def.str());
      return out;
    };
    return tree::unflatten<Carry>(def, detail::while_flat(cond, body, leaves, options));
  }
}

// JAX's lax.fori_loop with jx::Array bounds (integer scalars, possibly traced): for i in
// [lower, upper): carry = body_fn(i, carry), i a scalar of the bounds' common dtype. When
// both values are known now (eagerly, or under grad) it is the scan of the static
// version; otherwise (jit, vmap) a while_loop carrying (i, upper, carry), as in JAX: it
// differentiates forward, and in reverse mode as an unbounded while_loop does (below).
template <class F, class T>
tree::array_tree_t<T> fori_loop(const Array& lower, const Array& upper, const F& body_fn, const T& init) {
  static_assert(tree::detail::Tree<T>, "jx::lax::fori_loop: init must be a pytree");
  using C = tree::array_tree_t<T>;
  static_assert(std::is_invocable_v<const F&, const Array&, const C&>,
                "jx::lax::fori_loop: body_fn must be callable as body_fn(i, carry), i a jx::Array scalar");
  using R = std::decay_t<std::invoke_result_t<const F&, const Array&, const C&>>;
  static_assert(tree::detail::Tree<R>, "jx::lax::fori_loop: body_fn must return a pytree shaped like init");
  detail::ForiBounds b = detail::fori_bounds(lower, upper);
  if (b.lower_value && b.upper_value)
    return detail::fori_scan(b.lower, std::max<int64_t>(*b.upper_value - *b.lower_value, 0), body_fn, init);
  using State = std::tuple<Array, Array, C>;  // (i, upper, carry)
  constexpr detail::ScanNames names{.op = "fori_loop", .fn = "body_fn", .hidden_carry = 2};
  const tree::TreeDef init_def = tree::structure(init);
  auto cond = [](const State& s) { return std::get<0>(s) < std::get<1>(s); };
  auto body = [&](const State& s) {
    auto [out, out_def] = tree::flatten(detail::to_array_tree(body_fn(std::get<0>(s), std::get<2>(s))));
    detail::check_carry_structure(out_def, init_def, names);
    return State{std::get<0>(s) + 1, std::get<1>(s), tree::unflatten<C>(out_def, out)};
  };
  return std::get<2>(while_loop(cond, body, State{b.lower, b.upper, detail::to_array_tree(init)}));
}

}  // namespace lax
}  // namespace jx

// Reverse mode and its costs. Linearizing (grad, vjp, jacrev, linearize) a while_loop with
// max_steps = N turns it into the equivalent scan of N guarded steps,
// `carry = cond(step < N && cond_fn(carry), body_fn, identity)(carry)`, which the scan's
// rules differentiate. It runs N steps even if cond_fn turns false sooner (the steps after
// are skipped by the cond, cheaply when eager or jitted; under vmap a batched cond
// evaluates the body in every step). By default the steps are checkpointed: the scan runs
// K = ceil(sqrt N) segments of ceil(N / K) steps, each a jx::checkpoint saving nothing, so
// the forward pass keeps only the K carries at the segment starts and the backward pass
// of a segment recomputes its steps (holding one segment's residuals at a time): memory
// O(sqrt N) carries + O(sqrt N) step residuals, time about 2 forward passes + 1 backward.
// WhileOptions::checkpoints = K sets the saved carries (K >= N: every step's residuals,
// O(N) memory, 1 forward + 1 backward); checkpoint_levels = L nests the segments L deep:
// O(L N^(1/(L+1))) memory, L + 1 forward passes (L = log2 N: O(log N) memory, O(log N)
// forward passes; a binomial Revolve schedule would need fewer recomputations).
// jvp, jacfwd and plain evaluation keep the while loop and run only the actual trip count.
// Without max_steps, reverse mode works when the backward pass runs eagerly (grad, vjp,
// jacrev and their derivatives, outside jit and vmap): it counts the trip count T by
// running the loop's known part again, then proceeds as with max_steps = T (checkpointed):
// about one more forward pass than with max_steps, the same memory for N = T. Under jit
// or vmap T is traced when the backward pass is built, so that raises: give max_steps.
