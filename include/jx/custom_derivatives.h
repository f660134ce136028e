// jx::custom_jvp: a function with a user-written derivative rule, JAX's jax.custom_jvp.
//
//   auto log1pexp = jx::custom_jvp(
//       [](const Array& x) { return jnp::log1p(jnp::exp(x)); },
//       [](std::tuple<Array> primals, std::tuple<Array> tangents) {
//         auto [x] = primals;
//         auto [t] = tangents;
//         return std::pair{jnp::log1p(jnp::exp(x)), t * jx::lax::logistic(x)};
//       });
//   Array y = log1pexp(x);                // runs f
//   Array g = jx::grad(log1pexp)(x);      // uses the rule: finite at x = 100
//
// f takes pytrees (jx::Array, C++ scalars, std containers, JX_TREE_NODE structs) and returns
// one. The rule takes the primal arguments and one tangent per argument, each as a std::tuple
// of the arguments' Array-leaved pytrees (a tangent has its primal's structure, shape and
// dtype; a symbolic zero arrives as zeros), and returns (f's output, its tangent) with the
// output's structure. As in JAX, the tangent output must be linear in the tangents and the
// primal output must not depend on them: reverse mode (grad, vjp, jacrev) linearizes and
// transposes the rule.
//
// With jx::nondiff_argnums<i, ...> after the rule, those arguments reach f and the rule as
// they are (any C++ type), the rule taking them first: rule(nondiff..., primals, tangents),
// primals and tangents of the other arguments only; they cannot be differentiated.
//
// Eagerly (no transformation active) f simply runs. Under any transformation the call is one
// `custom_jvp_call` equation holding f's program and the rule's: jvp and grad use the rule,
// vmap batches both programs (so grad(vmap(f)) still uses the rule), jit compiles f. Higher
// derivatives differentiate the rule's program. f and the rule must not close over values
// being differentiated (pass them as arguments): such a value's tangent would bypass the
// rule, so it raises a jx::Error.
//
// jx::custom_vmap: a function with a user-written batching rule, JAX's
// jax.custom_batching.custom_vmap.
//
//   auto f = jx::custom_vmap([](const Array& x) { return jnp::sum(x); },
//       [](int64_t axis_size, const std::vector<bool>& in_batched, const Array& xs) {
//         return std::pair{jnp::sum(xs, 1), true};   // (outputs, out_batched)
//       });
//
// The rule gets the batch size, whether each argument leaf (in flattening order) carries the
// batch axis, and the arguments (a batched leaf with its batch axis at 0, an unbatched one
// as it is); it returns (the batched outputs, out_batched): out_batched is a bool for every
// output leaf, or a std::vector<bool> with one per output leaf; a batched output carries the
// batch axis at 0. Eagerly and under jit f runs; vmap calls the rule (nested vmaps call it once
// per level). Derivatives follow JAX: unbatched, jvp and grad differentiate f; batched, they
// differentiate the rule (jvp(vmap(f)), grad(vmap(f)) and vmap(jvp(f)), whose batching rule
// is the jvp of the rule). vmap(grad(f)) raises a jx::Error, as in JAX: reverse mode splits
// the call into its primal and tangent parts, which the rule cannot be.
// The rule is kept, with the structures it needs, for as long as the process runs: each
// traced call registers one, referred to by the equation's `rule` param.
//
// jx::custom_vjp: a function with a user-written reverse-mode rule, JAX's jax.custom_vjp.
//
//   auto clip_grad = jx::custom_vjp(
//       [](const Array& x) { return x; },                                   // f
//       [](const Array& x) { return std::pair{x, Array(0.0)}; },            // fwd: (out, residuals)
//       [](const Array& res, const Array& g) {                              // bwd: one cotangent
//         return std::tuple{jnp::clip(g, -1.0, 1.0)};                       //   per argument
//       });
//
// fwd(args...) returns (f's output, residuals), the residuals any pytree; bwd(residuals, g)
// gets the output's cotangent g (the output's structure) and returns a std::tuple with one
// cotangent per argument (the argument's structure, shape and dtype; for an integer or bool
// leaf anything is accepted and ignored). With jx::nondiff_argnums<i, ...> after bwd, those
// arguments are passed to bwd first, bwd(nondiff_args..., residuals, g), and bwd returns
// cotangents of the others only; a nondiff argument must not be differentiated.
//
// Eagerly f simply runs. Under any transformation f, fwd and bwd are staged into one
// `custom_vjp_call` equation holding the three programs (so a bwd returning the wrong
// structure, shape or dtype raises as soon as the call is traced): jit compiles f; grad,
// vjp, jacrev and linearize run fwd and save the residuals, and the backward pass runs
// bwd; vmap batches the three programs (an unbatched argument's cotangent is summed over
// the batch). Higher derivatives differentiate fwd and bwd as ordinary code, as in JAX.
// Forward mode (jvp, jacfwd, hessian, applying linearize's linear map) raises a jx::Error,
// as JAX's "can't apply forward-mode autodiff (jvp) to a custom_vjp function". f, fwd and
// bwd must not close over values being differentiated (pass them as arguments).
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "jx/error.h"

#include "jx/transforms.h"
#include "jx/tree.h"

namespace jx {
namespace detail {

// The rule over flat leaves: (primal outputs, tangent outputs) from the primals and their
// tangents.
using FlatJvpRule = std::function<std::pair<std::vector<Array>, std::vector<Array>>(
    std::span<const Array> primals, std::span<const Array> tangents)>;

// Binds (or, eagerly, runs) f differentiated by `rule`, checking that the rule's tangents
// match its outputs in number, shape and dtype (errors name custom_jvp and `name`).
std::vector<Array> custom_jvp_flat(const std::string& name, const FlatFn& f, const FlatJvpRule& rule,
                                   std::span<const Array> args);

// Raises the error for a rule output whose structure is not f's.
// A custom_jvp with nondiff_argnums closed over a differentiated value (`cause`: the error).
[[noreturn]] void custom_jvp_nondiff_error(const std::string& name, const std::string& cause);
[[noreturn]] void custom_jvp_structure_error(const std::string& name, const std::string& what,
                                             const std::string& got, const std::string& expected);
[[noreturn]] void custom_vmap_structure_error(const std::string& name, const std::string& got,
                                              const std::string& expected);

// The batching rule over flat leaves: (outputs, out_batched per output leaf).
using FlatVmapRule = std::function<std::pair<std::vector<Array>, std::vector<bool>>(
    int64_t axis_size, const std::vector<bool>& in_batched, std::span<const Array> args)>;

// Binds (or, eagerly, runs) f batched by `rule` (errors name custom_vmap and `name`).
std::vector<Array> custom_vmap_flat(const std::string& name, const FlatFn& f, FlatVmapRule rule,
                                    std::span<const Array> args);

// Binds (or, eagerly, runs) f whose reverse-mode derivative is bwd over the saved residuals
// of fwd. args are the nondiff leaves (the first num_nondiff), then the differentiated
// ones; f: args -> outs; fwd: args -> [outs..., residuals...]; bwd: [nondiff leaves...,
// residuals..., output cotangents...] -> a cotangent per differentiated leaf, which is
// checked against that leaf (`diff_labels` name them in errors).
std::vector<Array> custom_vjp_flat(const std::string& name, const FlatFn& f, const FlatFn& fwd, const FlatFn& bwd,
                                   std::span<const Array> args, size_t num_nondiff,
                                   std::span<const std::string> diff_labels);
[[noreturn]] void custom_vjp_structure_error(const std::string& name, const std::string& what,
                                             const std::string& got, const std::string& expected);

}  // namespace detail

// The callable custom_jvp returns; holds copies of f and the rule.
template <class F, class Rule>
class CustomJvp {
 public:
  CustomJvp(F f, Rule rule, std::string name) : f_(std::move(f)), rule_(std::move(rule)), name_(std::move(name)) {}

  template <class... A>
  auto operator()(const A&... args) const {
    static_assert((tree::detail::Tree<A> && ...),
                  "jx::custom_jvp: every argument must be a pytree (jx::Array, a C++ scalar, a std container of "
                  "them or a JX_TREE_NODE struct)");
    using Args = detail::traced_args_t<A...>;
    using R = tree::array_tree_t<std::decay_t<decltype(std::apply(std::declval<const F&>(), std::declval<Args&>()))>>;
    auto [leaves, in_def] = tree::flatten(Args(detail::to_array_tree(args)...));
    tree::TreeDef out_def;
    bool have_out_def = false;
    detail::FlatFn f = [&](std::span<const Array> xs) {
      Args a = tree::unflatten<Args>(in_def, xs);
      auto [out, def] = tree::flatten(detail::to_array_tree(std::apply(f_, a)));
      out_def = def;
      have_out_def = true;
      return out;
    };
    detail::FlatJvpRule rule = [&](std::span<const Array> p, std::span<const Array> t) {
      auto [out, tan] = rule_(tree::unflatten<Args>(in_def, p), tree::unflatten<Args>(in_def, t));
      auto [out_leaves, def] = tree::flatten(detail::to_array_tree(out));
      auto [tan_leaves, tan_def] = tree::flatten(detail::to_array_tree(tan));
      // f is staged before the rule, so its structure is known here.
      if (have_out_def && !(def == out_def))
        detail::custom_jvp_structure_error(name_, "primal output", def.str(), out_def.str());
      if (!(tan_def == def)) detail::custom_jvp_structure_error(name_, "tangent output", tan_def.str(), def.str());
      return std::pair{std::move(out_leaves), std::move(tan_leaves)};
    };
    std::vector<Array> outs = detail::custom_jvp_flat(name_, f, rule, leaves);
    return tree::unflatten<R>(out_def, outs);
  }

 private:
  F f_;
  Rule rule_;
  std::string name_;
};

// f(args...) whose derivatives come from jvp_rule(std::tuple{primals...}, std::tuple{tangents...})
// -> std::pair{out, out_tangent}. `name` names the function in programs and errors.
template <class F, class Rule>
CustomJvp<std::decay_t<F>, std::decay_t<Rule>> custom_jvp(F&& f, Rule&& jvp_rule, std::string name = "custom_jvp") {
  return {std::forward<F>(f), std::forward<Rule>(jvp_rule), std::move(name)};
}

// The callable custom_vmap returns; holds copies of f and the rule (shared with every
// program that records a call, so the rule outlives the callable).
template <class F, class Rule>
class CustomVmap {
 public:
  CustomVmap(F f, Rule rule, std::string name)
      : f_(std::move(f)), rule_(std::make_shared<const Rule>(std::move(rule))), name_(std::move(name)) {}

  template <class... A>
  auto operator()(const A&... args) const {
    static_assert((tree::detail::Tree<A> && ...),
                  "jx::custom_vmap: every argument must be a pytree (jx::Array, a C++ scalar, a std container of "
                  "them or a JX_TREE_NODE struct)");
    using Args = detail::traced_args_t<A...>;
    using R = tree::array_tree_t<std::decay_t<decltype(std::apply(std::declval<const F&>(), std::declval<Args&>()))>>;
    auto [leaves, in_def] = tree::flatten(Args(detail::to_array_tree(args)...));
    auto out_def = std::make_shared<tree::TreeDef>();
    detail::FlatFn f = [&](std::span<const Array> xs) {
      Args a = tree::unflatten<Args>(in_def, xs);
      auto [out, def] = tree::flatten(detail::to_array_tree(std::apply(f_, a)));
      *out_def = def;
      return out;
    };
    // Runs later (when a program holding the call is batched): owns what it uses.
    detail::FlatVmapRule rule = [rule = rule_, in_def = in_def, out_def, name = name_](
                                    int64_t size, const std::vector<bool>& in_batched, std::span<const Array> xs) {
      Args a = tree::unflatten<Args>(in_def, xs);
      auto [out, out_batched] = std::apply(
          [&](const auto&... as) { return (*rule)(size, in_batched, as...); }, a);
      auto [out_leaves, def] = tree::flatten(detail::to_array_tree(out));
      if (!(def == *out_def)) detail::custom_vmap_structure_error(name, def.str(), out_def->str());
      std::vector<bool> flags;
      if constexpr (std::is_same_v<std::decay_t<decltype(out_batched)>, bool>)
        flags.assign(out_leaves.size(), out_batched);
      else
        flags.assign(out_batched.begin(), out_batched.end());
      return std::pair{std::move(out_leaves), std::move(flags)};
    };
    std::vector<Array> outs = detail::custom_vmap_flat(name_, f, std::move(rule), leaves);
    return tree::unflatten<R>(*out_def, outs);
  }

 private:
  F f_;
  std::shared_ptr<const Rule> rule_;
  std::string name_;
};

// f(args...) batched by rule(axis_size, in_batched, args...) -> std::pair{out, out_batched}.
template <class F, class Rule>
CustomVmap<std::decay_t<F>, std::decay_t<Rule>> custom_vmap(F&& f, Rule&& rule, std::string name = "custom_vmap") {
  return {std::forward<F>(f), std::forward<Rule>(rule), std::move(name)};
}

// Positions of a custom_vjp function's arguments that are not differentiated (JAX's
// nondiff_argnums): jx::custom_vjp(f, fwd, bwd, jx::nondiff_argnums<0>).
template <size_t... I>
struct NondiffArgNums {};
template <size_t... I>
inline constexpr NondiffArgNums<I...> nondiff_argnums{};

namespace detail {
// The positions below N that are not among ND, ascending.
template <size_t N, size_t... ND>
constexpr std::array<size_t, N - sizeof...(ND)> diff_positions() {
  std::array<size_t, N - sizeof...(ND)> out{};
  size_t k = 0;
  for (size_t i = 0; i < N; ++i)
    if (((i != ND) && ...)) out[k++] = i;
  return out;
}
template <size_t... ND>
constexpr bool distinct_positions() {
  constexpr std::array<size_t, sizeof...(ND)> p{ND...};
  for (size_t i = 0; i < p.size(); ++i)
    for (size_t j = i + 1; j < p.size(); ++j)
      if (p[i] == p[j]) return false;
  return true;
}
}  // namespace detail

// The callable custom_vjp returns; holds copies of f, fwd and bwd. ND: nondiff_argnums.
template <class F, class Fwd, class Bwd, size_t... ND>
class CustomVjp {
 public:
  CustomVjp(F f, Fwd fwd, Bwd bwd, std::string name)
      : f_(std::move(f)), fwd_(std::move(fwd)), bwd_(std::move(bwd)), name_(std::move(name)) {}

  template <class... A>
  auto operator()(const A&... args) const {
    static_assert((tree::detail::Tree<A> && ...),
                  "jx::custom_vjp: every argument must be a pytree (jx::Array, a C++ scalar, a std container of "
                  "them or a JX_TREE_NODE struct)");
    constexpr size_t N = sizeof...(A);
    static_assert(((ND < N) && ...), "jx::custom_vjp: nondiff_argnums names a position past the last argument");
    static_assert(detail::distinct_positions<ND...>(), "jx::custom_vjp: nondiff_argnums names a position twice");
    using Args = detail::traced_args_t<A...>;
    using R = detail::result_t<F, Args&>;
    using FwdResult = std::decay_t<decltype(std::apply(std::declval<const Fwd&>(), std::declval<Args&>()))>;
    static_assert(std::tuple_size_v<FwdResult> == 2,
                  "jx::custom_vjp: fwd must return a std::pair (f's output, residuals)");
    using Res = tree::array_tree_t<std::decay_t<std::tuple_element_t<1, FwdResult>>>;
    static constexpr auto D = detail::diff_positions<N, ND...>();
    constexpr std::array<size_t, sizeof...(ND)> nd{ND...};

    Args a(detail::to_array_tree(args)...);
    // Each argument flattened alone; the flat layout is the nondiff arguments' leaves (in
    // nondiff_argnums order), then the others' (in argument order).
    std::array<tree::TreeDef, N> defs;
    std::array<std::vector<Array>, N> arg_leaves;
    [&]<size_t... I>(std::index_sequence<I...>) {
      ((std::tie(arg_leaves[I], defs[I]) = tree::flatten(std::get<I>(a))), ...);
    }(std::make_index_sequence<N>{});
    std::array<size_t, N> offset{};
    std::vector<Array> leaves;
    std::vector<std::string> diff_labels;
    for (size_t i : nd) {
      offset[i] = leaves.size();
      leaves.insert(leaves.end(), arg_leaves[i].begin(), arg_leaves[i].end());
    }
    const size_t num_nondiff = leaves.size();
    for (size_t i : D) {
      offset[i] = leaves.size();
      leaves.insert(leaves.end(), arg_leaves[i].begin(), arg_leaves[i].end());
      for (size_t j = 0; j < arg_leaves[i].size(); ++j)
        diff_labels.push_back("argument " + std::to_string(i) +
                              (arg_leaves[i].size() == 1 ? std::string() : " (leaf " + std::to_string(j) + ")"));
    }
    auto rebuild = [&](std::span<const Array> xs) {
      return [&]<size_t... I>(std::index_sequence<I...>) {
        return Args(tree::unflatten<std::tuple_element_t<I, Args>>(defs[I], xs.subspan(offset[I], defs[I].num_leaves()))...);
      }(std::make_index_sequence<N>{});
    };
    // The cotangents bwd must return: a tuple of the differentiated arguments' structures.
    const tree::TreeDef ct_def = [&]<size_t... J>(std::index_sequence<J...>) {
      return tree::flatten(std::tuple<std::tuple_element_t<D[J], Args>...>(std::get<D[J]>(a)...)).second;
    }(std::make_index_sequence<D.size()>{});

    tree::TreeDef out_def, res_def;
    bool have_out_def = false;
    detail::FlatFn f = [&](std::span<const Array> xs) {
      Args b = rebuild(xs);
      auto [out, def] = tree::flatten(detail::to_array_tree(std::apply(f_, b)));
      out_def = def;
      have_out_def = true;
      return out;
    };
    detail::FlatFn fwd = [&](std::span<const Array> xs) {
      Args b = rebuild(xs);
      auto [out, res] = std::apply(fwd_, b);
      auto [out_leaves, def] = tree::flatten(detail::to_array_tree(out));
      // f is staged before fwd, so its structure is known here.
      if (have_out_def && !(def == out_def))
        detail::custom_vjp_structure_error(name_, "fwd's output", def.str(), "f's output has " + out_def.str());
      auto [res_leaves, rdef] = tree::flatten(detail::to_array_tree(res));
      res_def = rdef;
      out_leaves.insert(out_leaves.end(), res_leaves.begin(), res_leaves.end());
      return out_leaves;
    };
    detail::FlatFn bwd = [&](std::span<const Array> xs) {
      // xs: [nondiff leaves..., residuals..., output cotangents...]
      std::tuple<std::tuple_element_t<ND, Args>...> nondiff(tree::unflatten<std::tuple_element_t<ND, Args>>(
          defs[ND], xs.subspan(offset[ND], defs[ND].num_leaves()))...);
      const size_t num_res = res_def.num_leaves();
      Res res = tree::unflatten<Res>(res_def, xs.subspan(num_nondiff, num_res));
      R g = tree::unflatten<R>(out_def, xs.subspan(num_nondiff + num_res));
      auto cts = std::apply([&](const auto&... n) { return bwd_(n..., res, g); }, nondiff);
      auto [ct_leaves, def] = tree::flatten(detail::to_array_tree(cts));
      if (!(def == ct_def))
        detail::custom_vjp_structure_error(name_, "bwd's output", def.str(),
                                           "it must be a tuple of one cotangent per differentiated argument, " +
                                               ct_def.str());
      return ct_leaves;
    };
    std::vector<Array> outs = detail::custom_vjp_flat(name_, f, fwd, bwd, leaves, num_nondiff, diff_labels);
    return tree::unflatten<R>(out_def, outs);
  }

 private:
  F f_;
  Fwd fwd_;
  Bwd bwd_;
  std::string name_;
};

// f(args...) whose reverse-mode derivative is bwd(residuals, g) -> std::tuple{arg cotangents...},
// residuals from fwd(args...) -> std::pair{out, residuals}. `name` names it in programs and errors.
template <class F, class Fwd, class Bwd>
CustomVjp<std::decay_t<F>, std::decay_t<Fwd>, std::decay_t<Bwd>> custom_vjp(F&& f, Fwd&& fwd, Bwd&& bwd,
                                                                              std::string name = "custom_vjp") {
  return {std::forward<F>(f), std::forward<Fwd>(fwd), std::forward<Bwd>(bwd), std::move(name)};
}
// With nondiff_argnums<I...>: bwd(nondiff_args..., residuals, g) -> cotangents of the other arguments.
template <class F, class Fwd, class Bwd, size_t... I>
CustomVjp<std::decay_t<F>, std::decay_t<Fwd>, std::decay_t<Bwd>, I...> custom_vjp(F&& f, Fwd&& fwd, Bwd&& bwd,
                                                                                    NondiffArgNums<I...>,
                                                                                    std::string name = "custom_vjp") {
  return {std::forward<F>(f), std::forward<Fwd>(fwd), std::forward<Bwd>(bwd), std::move(name)};
}

namespace detail {
// Where argument I of the call is among the differentiated ones (D: their positions).
template <size_t I, size_t M>
constexpr size_t index_among(const std::array<size_t, M>& d) {
  for (size_t k = 0; k < M; ++k)
    if (d[k] == I) return k;
  return M;
}
}  // namespace detail

// custom_jvp with nondiff_argnums: those arguments reach f and the rule as they are (any
// C++ type: a mode, a count, a function), the rule taking them first,
// rule(nondiff_args..., std::tuple{primals...}, std::tuple{tangents...}), with primals and
// tangents of the other arguments only. The call is the custom_jvp of the other
// arguments, f and the rule closing over the nondiff ones, so differentiating a nondiff
// argument raises (as in JAX).
template <class F, class Rule, size_t... ND>
class CustomJvpNondiff {
 public:
  CustomJvpNondiff(F f, Rule rule, std::string name) : f_(std::move(f)), rule_(std::move(rule)), name_(std::move(name)) {}

  template <class... A>
  auto operator()(const A&... args) const {
    constexpr size_t N = sizeof...(A);
    static_assert(((ND < N) && ...), "jx::custom_jvp: nondiff_argnums names a position past the last argument");
    static_assert(detail::distinct_positions<ND...>(), "jx::custom_jvp: nondiff_argnums names a position twice");
    static constexpr auto D = detail::diff_positions<N, ND...>();
    const std::tuple<const A&...> all(args...);
    // f of the differentiated arguments, the others put back in their places.
    auto f_of_diff = [&](const auto&... diff) {
      const auto d = std::forward_as_tuple(diff...);
      return [&]<size_t... I>(std::index_sequence<I...>) {
        auto pick = [&]<size_t J>(std::integral_constant<size_t, J>) -> decltype(auto) {
          if constexpr (constexpr size_t k = detail::index_among<J>(D); k < D.size())
            return std::get<k>(d);
          else
            return std::get<J>(all);
        };
        return f_(pick(std::integral_constant<size_t, I>{})...);
      }(std::make_index_sequence<N>{});
    };
    auto rule_of_diff = [&](const auto& primals, const auto& tangents) {
      return rule_(std::get<ND>(all)..., primals, tangents);
    };
    try {
      return [&]<size_t... J>(std::index_sequence<J...>) {
        return CustomJvp<decltype(f_of_diff), decltype(rule_of_diff)>(f_of_diff, rule_of_diff, name_)(
            std::get<D[J]>(all)...);
      }(std::make_index_sequence<D.size()>{});
    } catch (const Error& e) {
      if (std::string_view(e.what()).find("closes over a value being differentiated") == std::string_view::npos) throw;
      detail::custom_jvp_nondiff_error(name_, e.what());
    }
  }

 private:
  F f_;
  Rule rule_;
  std::string name_;
};

template <class F, class Rule, size_t... I>
CustomJvpNondiff<std::decay_t<F>, std::decay_t<Rule>, I...> custom_jvp(F&& f, Rule&& jvp_rule, NondiffArgNums<I...>,
                                                                       std::string name = "custom_jvp") {
  return {std::forward<F>(f), std::forward<Rule>(jvp_rule), std::move(name)};
}

}  // namespace jx
