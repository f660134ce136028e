// Composable transformations of numeric functions, JAX's core: jvp, linearize, vjp, grad,
// value_and_grad, jacfwd, jacrev, hessian, vmap, make_jaxpr. Each takes a C++ callable
// (lambda, function, functor) and returns a callable, so they nest to any depth:
//
//   auto f = [](const Array& x) { return jnp::sum(jnp::sin(x) / x); };
//   auto df = jx::grad(f);                         // Array -> Array
//   auto d2f = jx::grad(jx::grad(scalar_f));       // any order
//   auto per_example = jx::vmap(jx::grad(loss), {.in_axes = {jx::not_mapped, 0}});
//
// Arguments and results are pytrees (jx/tree.h): Arrays, C++ scalars, std containers and
// registered structs. Transformations see the array leaves; C++ scalar arguments become
// weakly typed 0-d arrays, so the function must accept jx::Array where it receives a
// traced value. Everything is built on four interpreters (src/transforms/): jvp,
// staging/partial evaluation, batching, and the transpose pass of reverse mode.
//
// Options trail: jx::argnums<i, ...> (grad, value_and_grad, jacfwd, jacrev, hessian) picks
// the differentiated arguments; jx::has_aux (those, and jvp, vjp, linearize) says f returns
// (output, aux), aux handed back undifferentiated as in JAX.
//
// Misuse fails to compile with one static_assert naming the transformation, "jx::NAME: ...":
//   "f must be callable (a lambda, function or function object)"
//   "unknown option; the options are jx::argnums<i, ...> and jx::has_aux"
//   "takes no jx::argnums (...); only jx::has_aux"              (jvp, vjp, linearize)
//   "an option is given more than once", "jx::argnums<> must name at least one argument"
//   "options (jx::has_aux) go after the primals"                (vjp, linearize)
//   "every argument must be a pytree (...)"
//   "jx::argnums names a position past the last argument"
//   "f cannot be called with these arguments; it receives each argument as a pytree of jx::Array (...)"
//   "f must return a pytree (...)"
//   "with jx::has_aux, f must return a std::pair or a two-element std::tuple (output, aux) of pytrees"
//   "f returns a JX_TREE_NODE struct, whose Array fields cannot hold the jacobian with respect
//    to a non-Array argument; ..."                              (jacfwd, jacrev)
// tests/compile_fail/transforms_misuse.cpp holds one case of each.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "jx/array.h"
#include "jx/jaxpr.h"
#include "jx/primitive.h"
#include "jx/tree.h"

namespace jx {

// ---- options ----

// Which positional arguments to differentiate: jx::grad(f, jx::argnums<0, 2>).
template <size_t... I>
struct ArgNums {};
template <size_t... I>
inline constexpr ArgNums<I...> argnums{};
// The function returns a pair (output, aux); aux is returned alongside, undifferentiated.
struct HasAux {};
inline constexpr HasAux has_aux{};

// ---- the flat core every transformation is built on (functions of Array lists) ----
namespace detail {

using FlatFn = std::function<std::vector<Array>(std::span<const Array>)>;

struct LinearFunction;  // src/transforms/linearize.h
struct Linearized {
  std::vector<Array> primals_out;
  std::shared_ptr<const LinearFunction> linear;
};
// f's outputs at `primals`, and the linear map of its derivative there.
Linearized linearize_flat(const FlatFn& f, std::span<const Array> primals, std::string_view name);
// Pushes tangents (one per input) through the linear map; zeros are materialized.
std::vector<Array> apply_linear(const LinearFunction& lin, std::span<const Array> tangents);
// Pulls cotangents (one per output; invalid = zero) back; one per input, materialized.
std::vector<Array> transpose_linear(const LinearFunction& lin, std::span<const Array> cts);
// Forward mode: outputs and output tangents (materialized). Tangents may be invalid
// (symbolic zeros).
std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const FlatFn& f, std::span<const Array> primals,
                                                           std::span<const Array> tangents, std::string_view name);
// in_dims: the batch axis of each argument (nullopt: not mapped; negative counts from
// the end). out_dims: one entry for all outputs or one per output.
std::vector<Array> vmap_flat(const FlatFn& f, std::span<const Array> args,
                             std::span<const std::optional<int64_t>> in_dims,
                             std::span<const std::optional<int64_t>> out_dims, BatchAxis axis);
// The jacobian of f's first num_main() outputs (num_main is asked after f has run: has_aux
// outputs follow them) with respect to every input: blocks[o * inputs + j] has shape
// out_o.shape + in_j.shape. `rest` holds the values of the outputs after the first num_main.
struct FlatJacobian {
  std::vector<Array> blocks;
  std::vector<Array> rest;
};
// Forward mode: one jvp per input element, over the joint standard basis, batched by vmap.
FlatJacobian jacfwd_flat(const FlatFn& f, std::span<const Array> primals, const std::function<size_t()>& num_main,
                         std::string_view name);
// Reverse mode: one linearization, one batched pullback per differentiated output.
FlatJacobian jacrev_flat(const FlatFn& f, std::span<const Array> primals, const std::function<size_t()>& num_main,
                         std::string_view name);
// Stages f applied to arguments of these types into a program.
ClosedJaxpr make_jaxpr_flat(const FlatFn& f, std::span<const Aval> in_avals);
// Stages f into a sub-program and applies it as one closed_call equation.
std::vector<Array> named_call_flat(const FlatFn& f, std::span<const Array> args, const std::string& name);
// Raises "[op] ... argument N has dtype int32; differentiation needs floating or complex inputs".
void check_differentiable(std::string_view op, std::span<const Array> leaves);
// Raises unless out is a real 0-d array (grad's requirement); names the function's output type.
void check_scalar_output(std::string_view op, const Array& out);
// The standard basis of a leaf's space: an identity of shape (n, *shape), n = size.
Array standard_basis(const Aval& aval);
// Reshapes the (n, *out_shape) stack of a jacobian's rows/columns to out_shape + in_shape.
Array jacobian_from_rows(const Array& rows, const Shape& out_shape, const Shape& in_shape);
Array jacobian_from_cols(const Array& cols, const Shape& out_shape, const Shape& in_shape);
// A 1 of x's dtype (0-d): the seed cotangent of grad.
Array ones_like_scalar(const Array& x);

// Converts a pytree to its Array-leaved form (C++ scalars become weak 0-d arrays).
template <class T>
tree::array_tree_t<T> to_array_tree(const T& x) {
  if constexpr (std::is_same_v<tree::array_tree_t<T>, T>) {
    return x;
  } else {
    auto [leaves, def] = tree::flatten(x);
    return tree::unflatten<tree::array_tree_t<T>>(def, leaves);
  }
}

template <class... A>
using traced_args_t = std::tuple<tree::array_tree_t<std::decay_t<A>>...>;

template <class F, class ArgsTuple>
using result_t = tree::array_tree_t<std::decay_t<decltype(std::apply(std::declval<const F&>(), std::declval<ArgsTuple>()))>>;

// ---- compile-time checks of a transformation's use ----
// Misuse fails with one static_assert naming the transformation (messages listed at the
// JX_DETAIL_CHECK_* macros below) instead of an error deep inside tree.h; the body of a
// transformation is compiled only when its checks pass, so no cascade follows.

template <class T>
inline constexpr bool is_argnums_v = false;
template <size_t... I>
inline constexpr bool is_argnums_v<ArgNums<I...>> = true;
template <class T>
inline constexpr bool is_option_v = is_argnums_v<T> || std::is_same_v<T, HasAux>;

template <class... Opts>
struct FirstArgNums {
  using type = ArgNums<0>;  // the default: the first argument
};
template <size_t... I, class... Rest>
struct FirstArgNums<ArgNums<I...>, Rest...> {
  using type = ArgNums<I...>;
};
template <class O, class... Rest>
struct FirstArgNums<O, Rest...> : FirstArgNums<Rest...> {};

template <class T>
inline constexpr bool empty_argnums_v = false;
template <>
inline constexpr bool empty_argnums_v<ArgNums<>> = true;

// The options of a transformation (trailing arguments of vjp and linearize count too).
template <class... Opts>
struct Options {
  static constexpr size_t argnums_count = (size_t{is_argnums_v<Opts>} + ... + 0);
  static constexpr size_t aux_count = (size_t{std::is_same_v<Opts, HasAux>} + ... + 0);
  static constexpr bool known = (is_option_v<Opts> && ...);
  static constexpr bool once = argnums_count <= 1 && aux_count <= 1;
  static constexpr bool aux = aux_count > 0;
  using argnums = typename FirstArgNums<Opts...>::type;
};

// A callable (lambdas and functors are classes; generic ones cannot be probed further
// before their arguments are known).
template <class F>
inline constexpr bool maybe_callable_v =
    std::is_class_v<F> || std::is_function_v<std::remove_pointer_t<F>> || std::is_member_pointer_v<F>;

struct NotCallable {};
template <class F, class Args>
struct CallResult {
  using type = NotCallable;
};
template <class F, class... Ts>
  requires std::is_invocable_v<const F&, Ts&...>
struct CallResult<F, std::tuple<Ts...>> {
  using type = std::decay_t<std::invoke_result_t<const F&, Ts&...>>;
};

template <class R>
inline constexpr bool is_pair_v = false;
template <class A, class B>
inline constexpr bool is_pair_v<std::pair<A, B>> = tree::detail::Tree<A> && tree::detail::Tree<B>;
template <class A, class B>
inline constexpr bool is_pair_v<std::tuple<A, B>> = tree::detail::Tree<A> && tree::detail::Tree<B>;

template <bool Ok, class... A>
struct LazyArgs {
  using type = std::tuple<>;
};
template <class... A>
struct LazyArgs<true, A...> {
  using type = traced_args_t<A...>;
};

// What a call f(args...) under a transformation needs, each fact assuming the ones before.
template <bool Aux, class F, class ArgNumsT, class... A>
struct CallInfo;
template <bool Aux, class F, size_t... I, class... A>
struct CallInfo<Aux, F, ArgNums<I...>, A...> {
  static constexpr bool args_trees = (tree::detail::Tree<std::decay_t<A>> && ...);
  static constexpr bool in_range = ((I < sizeof...(A)) && ...);
  using Args = typename LazyArgs<args_trees, A...>::type;
  using R = typename CallResult<F, Args>::type;
  static constexpr bool callable = args_trees && !std::is_same_v<R, NotCallable>;
  static constexpr bool returns_tree = callable && tree::detail::Tree<R>;
  static constexpr bool pair = !Aux || (returns_tree && is_pair_v<R>);
  static constexpr bool ok = in_range && returns_tree && pair;
};

// f's result as a transformation returns it: the output, and with has_aux the aux apart.
template <bool Aux, class R>
struct SplitResult {
  using Out = tree::array_tree_t<R>;
  using AuxType = std::monostate;
};
template <class R>
struct SplitResult<true, R> {
  using Out = tree::array_tree_t<std::tuple_element_t<0, R>>;
  using AuxType = tree::array_tree_t<std::tuple_element_t<1, R>>;
};

}  // namespace detail

// Checks made where a transformation is built: f and the options.
#define JX_DETAIL_CHECK_FN(NAME, F)                           \
  static_assert(::jx::detail::maybe_callable_v<std::decay_t<F>>, \
                "jx::" NAME ": f must be callable (a lambda, function or function object)")
#define JX_DETAIL_CHECK_OPTIONS(NAME, ARGNUMS_OK, ...)                                                        \
  static_assert(::jx::detail::Options<__VA_ARGS__>::known,                                                   \
                "jx::" NAME ": unknown option; the options are jx::argnums<i, ...> and jx::has_aux");       \
  static_assert((ARGNUMS_OK) || ::jx::detail::Options<__VA_ARGS__>::argnums_count == 0,                      \
                "jx::" NAME ": takes no jx::argnums (it differentiates every argument); only jx::has_aux"); \
  static_assert(::jx::detail::Options<__VA_ARGS__>::once, "jx::" NAME ": an option is given more than once"); \
  static_assert(!::jx::detail::empty_argnums_v<typename ::jx::detail::Options<__VA_ARGS__>::argnums>,        \
                "jx::" NAME ": jx::argnums<> must name at least one argument")
// Checks made where the transformed function is called (INFO is a detail::CallInfo).
#define JX_DETAIL_CHECK_CALL(NAME, INFO)                                                                        \
  static_assert(INFO::args_trees,                                                                              \
                "jx::" NAME ": every argument must be a pytree (jx::Array, a C++ scalar, a std container of " \
                "them or a JX_TREE_NODE struct)");                                                            \
  static_assert(!INFO::args_trees || INFO::in_range,                                                          \
                "jx::" NAME ": jx::argnums names a position past the last argument");                          \
  static_assert(!INFO::args_trees || INFO::callable,                                                          \
                "jx::" NAME ": f cannot be called with these arguments; it receives each argument as a "      \
                "pytree of jx::Array (take jx::Array or const jx::Array&, not double)");                      \
  static_assert(!INFO::callable || INFO::returns_tree,                                                        \
                "jx::" NAME ": f must return a pytree (jx::Array, a C++ scalar, a std container of them "     \
                "or a JX_TREE_NODE struct)");                                                                 \
  static_assert(!INFO::returns_tree || INFO::pair,                                                            \
                "jx::" NAME ": with jx::has_aux, f must return a std::pair or a two-element std::tuple "       \
                "(output, aux) of pytrees")

namespace detail {

// f applied to a tuple of pytree arguments, seen as a flat function of the leaves of
// the arguments at positions I... (the others stay fixed): what every transformation
// hands to its flat core. Records the structure of f's result for rebuilding it. With
// Aux, f returns (output, aux): the flat outputs are the output's leaves, then aux's.
template <class F, class Args, bool Aux, size_t... I>
class FlatCall {
 public:
  using Selected = std::tuple<std::tuple_element_t<I, Args>...>;
  using Raw = std::decay_t<decltype(std::apply(std::declval<const F&>(), std::declval<Args&>()))>;
  using Result = typename SplitResult<Aux, Raw>::Out;
  using AuxType = typename SplitResult<Aux, Raw>::AuxType;

  FlatCall(const F& f, Args args) : f_(f), args_(std::move(args)) {
    auto [leaves, def] = tree::flatten(Selected(std::get<I>(args_)...));
    leaves_ = std::move(leaves);
    in_def_ = std::move(def);
  }
  // The leaves of the selected arguments, and their joint structure.
  const std::vector<Array>& leaves() const { return leaves_; }
  const tree::TreeDef& in_def() const { return in_def_; }
  const Args& args() const { return args_; }

  // The flat function; valid while this object lives.
  FlatFn fn() {
    return [this](std::span<const Array> xs) {
      Selected sel = tree::unflatten<Selected>(in_def_, xs);
      Args all = args_;
      [&]<size_t... K>(std::index_sequence<K...>) {
        ((std::get<I>(all) = std::get<K>(sel)), ...);
      }(std::index_sequence_for<std::integral_constant<size_t, I>...>{});
      decltype(auto) r = std::apply(f_, all);
      if constexpr (Aux) {
        auto [out, def] = tree::flatten(to_array_tree(std::get<0>(r)));
        auto [aux, aux_def] = tree::flatten(to_array_tree(std::get<1>(r)));
        out_def_ = std::move(def);
        aux_def_ = std::move(aux_def);
        out.insert(out.end(), aux.begin(), aux.end());
        return out;
      } else {
        auto [out, def] = tree::flatten(to_array_tree(r));
        out_def_ = std::move(def);
        return out;
      }
    };
  }
  // How many flat outputs are the output's (the rest are aux's), after fn() has run.
  size_t num_outputs() const { return out_def_.num_leaves(); }
  // f's output rebuilt from the first num_outputs() flat outputs (after fn() has run).
  template <class T = Result>
  T result(std::span<const Array> outs) const {
    return tree::unflatten<T>(out_def_, outs.first(std::min(outs.size(), num_outputs())));
  }
  // aux rebuilt from its leaves.
  AuxType aux_from(std::span<const Array> aux_leaves) const { return tree::unflatten<AuxType>(aux_def_, aux_leaves); }
  // aux rebuilt from all flat outputs.
  AuxType aux(std::span<const Array> outs) const { return aux_from(outs.subspan(num_outputs())); }
  const tree::TreeDef& out_def() const { return out_def_; }
  // Selected-argument values rebuilt from leaves (gradients, cotangents).
  Selected selected(std::span<const Array> xs) const { return tree::unflatten<Selected>(in_def_, xs); }

 private:
  const F& f_;
  Args args_;
  std::vector<Array> leaves_;
  tree::TreeDef in_def_, out_def_, aux_def_;
};

template <class F, class Args, bool Aux, class Seq>
struct FlatCallOverAll;
template <class F, class Args, bool Aux, size_t... I>
struct FlatCallOverAll<F, Args, Aux, std::index_sequence<I...>> {
  using type = FlatCall<F, Args, Aux, I...>;
};
// A FlatCall over every argument.
template <class F, class... A>
using FlatCallAll = typename FlatCallOverAll<F, traced_args_t<A...>, false, std::index_sequence_for<A...>>::type;
template <bool Aux, class F, class... A>
using FlatCallAllAux = typename FlatCallOverAll<F, traced_args_t<A...>, Aux, std::index_sequence_for<A...>>::type;

// vjp(f, x, y, jx::has_aux): the options trail the primals. Calls body(Options, primals...).
template <class... A>
constexpr bool options_trail() {
  constexpr bool is_opt[] = {is_option_v<A>..., false};
  bool seen = false;
  for (size_t k = 0; k < sizeof...(A); ++k) {
    if (is_opt[k]) seen = true;
    else if (seen) return false;
  }
  return true;
}
template <class... A>
inline constexpr size_t num_options_v = (size_t{is_option_v<A>} + ... + 0);

template <class Body, class... A>
decltype(auto) with_trailing_options(const Body& body, const A&... a) {
  constexpr size_t n = sizeof...(A) - num_options_v<A...>;
  auto all = std::forward_as_tuple(a...);
  return [&]<size_t... K>(std::index_sequence<K...>) -> decltype(auto) {
    return body(std::get<K>(all)...);
  }(std::make_index_sequence<n>{});
}

}  // namespace detail

// ---- jvp / linearize / vjp ----

// Forward mode: (f(primals...), J·tangents). primals and tangents are tuples of f's
// arguments; tangents match the primals' structure, shapes and dtypes. With jx::has_aux
// (f returns (out, aux)): std::tuple(out, J·tangents, aux).
template <class F, class... P, class... T, class... Opts>
auto jvp(const F& f, const std::tuple<P...>& primals, const std::tuple<T...>& tangents, Opts...) {
  JX_DETAIL_CHECK_FN("jvp", F);
  JX_DETAIL_CHECK_OPTIONS("jvp", false, Opts...);
  static_assert(sizeof...(P) == sizeof...(T), "jx::jvp: primals and tangents need the same number of arguments");
  constexpr bool Aux = detail::Options<Opts...>::aux;
  using Info = detail::CallInfo<Aux, F, ArgNums<>, P...>;
  JX_DETAIL_CHECK_CALL("jvp", Info);
  if constexpr (Info::ok) {
    using Args = detail::traced_args_t<P...>;
    detail::FlatCallAllAux<Aux, F, P...> call(
        f, std::apply([](const auto&... a) { return Args(detail::to_array_tree(a)...); }, primals));
    auto [ts, tdef] = tree::flatten(tangents);
    if (!(call.in_def() == tdef))
      detail::fail("jvp", "tangents have structure ", tdef.str(), " but primals have ", call.in_def().str());
    auto [outs, touts] = detail::jvp_flat(call.fn(), call.leaves(), ts, "jvp");
    using R = typename decltype(call)::Result;
    using AuxT = typename decltype(call)::AuxType;
    if constexpr (Aux) return std::tuple<R, R, AuxT>(call.result(outs), call.result(touts), call.aux(outs));
    else return std::pair<R, R>(call.result(outs), call.result(touts));
  }
}
// Single-argument convenience: jvp(f, x, t) (and jvp(f, x, t, jx::has_aux)).
template <class F, class... Opts>
auto jvp(const F& f, const Array& primal, const Array& tangent, Opts... opts) {
  return jvp(f, std::tuple<Array>(primal), std::tuple<Array>(tangent), opts...);
}

// f's value at args and its linear approximation there: a callable taking tangents
// shaped like args and returning J·tangents, reusable without re-running f.
template <class Args, class R>
class LinearizedFunction {
 public:
  LinearizedFunction(std::shared_ptr<const detail::LinearFunction> lin, tree::TreeDef in_def, tree::TreeDef out_def)
      : lin_(std::move(lin)), in_def_(std::move(in_def)), out_def_(std::move(out_def)) {}
  template <class... T>
  R operator()(const T&... tangents) const {
    auto [ts, tdef] = tree::flatten(std::tuple<tree::array_tree_t<T>...>(detail::to_array_tree(tangents)...));
    if (!(tdef == in_def_))
      detail::fail("linearize", "tangents have structure ", tdef.str(), " but the primals had ", in_def_.str());
    std::vector<Array> outs = detail::apply_linear(*lin_, ts);
    outs.resize(out_def_.num_leaves());  // with has_aux, aux's tangents follow: dropped
    return tree::unflatten<R>(out_def_, outs);
  }

 private:
  std::shared_ptr<const detail::LinearFunction> lin_;
  tree::TreeDef in_def_, out_def_;
};

// linearize(f, primals...) -> std::pair(f(primals...), f_jvp); with a trailing jx::has_aux
// (f returns (out, aux)): std::tuple(out, f_jvp, aux).
template <class F, class... A>
auto linearize(const F& f, const A&... a) {
  JX_DETAIL_CHECK_FN("linearize", F);
  static_assert(detail::options_trail<A...>(), "jx::linearize: options (jx::has_aux) go after the primals");
  static_assert(detail::Options<A...>::argnums_count == 0,
                "jx::linearize: takes no jx::argnums (it linearizes in every argument); only jx::has_aux");
  static_assert(detail::Options<A...>::aux_count <= 1, "jx::linearize: an option is given more than once");
  constexpr bool Aux = detail::Options<A...>::aux;
  constexpr bool options_ok = detail::options_trail<A...>() && detail::Options<A...>::argnums_count == 0 &&
                              detail::Options<A...>::aux_count <= 1;
  return detail::with_trailing_options([&]<class... P>(const P&... primals) {
    using Info = detail::CallInfo<Aux, F, ArgNums<>, P...>;
    if constexpr (options_ok) {
      JX_DETAIL_CHECK_CALL("linearize", Info);
    }
    if constexpr (options_ok && Info::ok) {
      using Args = detail::traced_args_t<P...>;
      detail::FlatCallAllAux<Aux, F, P...> call(f, Args(detail::to_array_tree(primals)...));
      detail::Linearized lin = detail::linearize_flat(call.fn(), call.leaves(), "linearize");
      using R = typename decltype(call)::Result;
      LinearizedFunction<Args, R> f_jvp(lin.linear, call.in_def(), call.out_def());
      if constexpr (Aux)
        return std::tuple<R, LinearizedFunction<Args, R>, typename decltype(call)::AuxType>(
            call.result(lin.primals_out), std::move(f_jvp), call.aux(lin.primals_out));
      else return std::pair<R, LinearizedFunction<Args, R>>(call.result(lin.primals_out), std::move(f_jvp));
    }
  }, a...);
}

// The pullback returned by vjp: cotangent shaped like f's output -> a tuple with one
// cotangent per argument of f (JAX's vjp_fun).
template <class Args, class R>
class VjpFunction {
 public:
  VjpFunction(std::shared_ptr<const detail::LinearFunction> lin, tree::TreeDef in_def, tree::TreeDef out_def,
              size_t num_outputs)
      : lin_(std::move(lin)), in_def_(std::move(in_def)), out_def_(std::move(out_def)), num_outputs_(num_outputs) {}
  template <class C>
  Args operator()(const C& cotangent) const {
    auto [cts, cdef] = tree::flatten(detail::to_array_tree(cotangent));
    if (!(cdef == out_def_))
      detail::fail("vjp", "the cotangent has structure ", cdef.str(), " but the output had ", out_def_.str());
    cts.resize(num_outputs_);  // with has_aux, aux's outputs get zero (invalid) cotangents
    return tree::unflatten<Args>(in_def_, detail::transpose_linear(*lin_, cts));
  }

 private:
  std::shared_ptr<const detail::LinearFunction> lin_;
  tree::TreeDef in_def_, out_def_;
  size_t num_outputs_;
};

// vjp(f, primals...) -> std::pair(f(primals...), vjp_fn); with a trailing jx::has_aux
// (f returns (out, aux)): std::tuple(out, vjp_fn, aux).
template <class F, class... A>
auto vjp(const F& f, const A&... a) {
  JX_DETAIL_CHECK_FN("vjp", F);
  static_assert(detail::options_trail<A...>(), "jx::vjp: options (jx::has_aux) go after the primals");
  static_assert(detail::Options<A...>::argnums_count == 0,
                "jx::vjp: takes no jx::argnums (it pulls back to every argument); only jx::has_aux");
  static_assert(detail::Options<A...>::aux_count <= 1, "jx::vjp: an option is given more than once");
  constexpr bool Aux = detail::Options<A...>::aux;
  constexpr bool options_ok = detail::options_trail<A...>() && detail::Options<A...>::argnums_count == 0 &&
                              detail::Options<A...>::aux_count <= 1;
  return detail::with_trailing_options([&]<class... P>(const P&... primals) {
    using Info = detail::CallInfo<Aux, F, ArgNums<>, P...>;
    if constexpr (options_ok) {
      JX_DETAIL_CHECK_CALL("vjp", Info);
    }
    if constexpr (options_ok && Info::ok) {
      using Args = detail::traced_args_t<P...>;
      detail::FlatCallAllAux<Aux, F, P...> call(f, Args(detail::to_array_tree(primals)...));
      detail::Linearized lin = detail::linearize_flat(call.fn(), call.leaves(), "vjp");
      using R = typename decltype(call)::Result;
      VjpFunction<Args, R> vjp_fn(lin.linear, call.in_def(), call.out_def(), lin.primals_out.size());
      if constexpr (Aux)
        return std::tuple<R, VjpFunction<Args, R>, typename decltype(call)::AuxType>(
            call.result(lin.primals_out), std::move(vjp_fn), call.aux(lin.primals_out));
      else return std::pair<R, VjpFunction<Args, R>>(call.result(lin.primals_out), std::move(vjp_fn));
    }
  }, a...);
}

// ---- grad / value_and_grad ----
namespace detail {

// The engine of grad and value_and_grad: returns (value, aux or monostate, grads).
template <bool Aux, size_t... I, class F, class... A>
auto value_and_grad_engine(std::string_view name, const F& f, const A&... a) {
  using Args = traced_args_t<A...>;
  FlatCall<F, Args, Aux, I...> call(f, Args(to_array_tree(a)...));
  check_differentiable(name, call.leaves());
  // With aux, f returns (value, aux): its flat outputs are the value, then aux's leaves.
  Linearized lin = linearize_flat(call.fn(), call.leaves(), name);
  if (call.num_outputs() != 1)
    fail(name, "requires a function returning one scalar array, but it returned ", call.num_outputs(),
         " arrays", Aux ? " as its output" : " (with jx::has_aux, return std::pair(value, aux))");
  check_scalar_output(name, lin.primals_out[0]);
  std::vector<Array> cts(lin.primals_out.size());
  cts[0] = ones_like_scalar(lin.primals_out[0]);
  auto grads = call.selected(transpose_linear(*lin.linear, cts));
  auto g = [&] {
    if constexpr (sizeof...(I) == 1) return std::get<0>(std::move(grads));
    else return grads;
  }();
  if constexpr (Aux) return std::make_tuple(lin.primals_out[0], call.aux(lin.primals_out), std::move(g));
  else return std::make_tuple(lin.primals_out[0], std::monostate{}, std::move(g));
}

}  // namespace detail

// grad(f)(args...): the gradient of a real scalar function with respect to its first
// argument (or those named by jx::argnums<...>: a std::tuple of gradients when several),
// shaped like that argument. With jx::has_aux, f returns std::pair<Array, Aux> and the
// result is std::pair<Grad, Aux>.
template <class F, class... Opts>
auto grad(F f, Opts...) {
  JX_DETAIL_CHECK_FN("grad", F);
  JX_DETAIL_CHECK_OPTIONS("grad", true, Opts...);
  return [f = std::move(f)]<class... A>(const A&... args) {
    using O = detail::Options<Opts...>;
    using Info = detail::CallInfo<O::aux, F, typename O::argnums, A...>;
    JX_DETAIL_CHECK_CALL("grad", Info);
    if constexpr (Info::ok) {
      return [&]<size_t... I>(ArgNums<I...>) {
        auto [value, aux, g] = detail::value_and_grad_engine<O::aux, I...>("grad", f, args...);
        if constexpr (O::aux) return std::make_pair(std::move(g), std::move(aux));
        else return g;
      }(typename O::argnums{});
    }
  };
}

// value_and_grad(f)(args...) -> std::pair(value, grad); with jx::has_aux,
// std::pair(std::pair(value, aux), grad) as in JAX.
template <class F, class... Opts>
auto value_and_grad(F f, Opts...) {
  JX_DETAIL_CHECK_FN("value_and_grad", F);
  JX_DETAIL_CHECK_OPTIONS("value_and_grad", true, Opts...);
  return [f = std::move(f)]<class... A>(const A&... args) {
    using O = detail::Options<Opts...>;
    using Info = detail::CallInfo<O::aux, F, typename O::argnums, A...>;
    JX_DETAIL_CHECK_CALL("value_and_grad", Info);
    if constexpr (Info::ok) {
      return [&]<size_t... I>(ArgNums<I...>) {
        auto [value, aux, g] = detail::value_and_grad_engine<O::aux, I...>("value_and_grad", f, args...);
        if constexpr (O::aux) return std::make_pair(std::make_pair(std::move(value), std::move(aux)), std::move(g));
        else return std::make_pair(std::move(value), std::move(g));
      }(typename O::argnums{});
    }
  };
}

// ---- vmap ----

inline constexpr std::nullopt_t not_mapped = std::nullopt;

struct VmapOptions {
  // The batch axis of each positional argument (all its leaves), or jx::not_mapped.
  // Empty: axis 0 for every argument; a single entry applies to every argument.
  std::vector<std::optional<int64_t>> in_axes;
  // Where each output leaf gets the batch axis (one entry for all, or one per output
  // leaf in flattening order); jx::not_mapped only for outputs that do not depend on it.
  std::vector<std::optional<int64_t>> out_axes = {0};
  std::optional<int64_t> axis_size;  // needed when no argument is mapped
  std::string axis_name;             // names the axis for collectives (psum...)
};

template <class F>
auto vmap(F f, VmapOptions options = {}) {
  JX_DETAIL_CHECK_FN("vmap", F);
  return [f = std::move(f), options = std::move(options)]<class... A>(const A&... a) {
    using Info = detail::CallInfo<false, F, ArgNums<>, A...>;
    JX_DETAIL_CHECK_CALL("vmap", Info);
    if constexpr (Info::ok) {
      using Args = detail::traced_args_t<A...>;
      Args args(detail::to_array_tree(a)...);
      // One in_axis per leaf, from the per-argument spec.
      std::vector<std::optional<int64_t>> in_dims;
      std::vector<Array> xs;
      size_t k = 0;
      std::apply([&](const auto&... arg) {
        ((
             [&] {
               if (!options.in_axes.empty() && options.in_axes.size() != 1 && options.in_axes.size() != sizeof...(A))
                 detail::fail("vmap", "in_axes has ", options.in_axes.size(), " entries but the function got ",
                              sizeof...(A), " arguments");
               std::optional<int64_t> ax = options.in_axes.empty() ? std::optional<int64_t>(0)
                                           : options.in_axes.size() == 1 ? options.in_axes[0]
                                                                         : options.in_axes[k];
               for (Array& leaf : tree::leaves(arg)) {
                 xs.push_back(std::move(leaf));
                 in_dims.push_back(ax);
               }
               ++k;
             }()),
         ...);
      }, args);
      detail::FlatCallAll<F, A...> call(f, std::move(args));
      BatchAxis axis{options.axis_size.value_or(0), options.axis_name};
      std::vector<Array> outs = detail::vmap_flat(call.fn(), xs, in_dims, options.out_axes, axis);
      return call.result(outs);
    }
  };
}

// ---- jacobians ----
namespace detail {

// The engine of jacfwd and jacrev: the jacobian as a pytree of the output's structure
// whose leaves have the selected arguments' structure (a single argnum: that argument's;
// several: a tuple), each leaf of shape out_leaf.shape + in_leaf.shape; with Aux,
// std::pair(jacobian, aux).
template <bool Fwd, bool Aux, size_t... I, class F, class... A>
auto jacobian_engine(const F& f, const A&... a) {
  constexpr std::string_view name = Fwd ? "jacfwd" : "jacrev";
  using Args = traced_args_t<A...>;
  using Call = FlatCall<F, Args, Aux, I...>;
  using Sel = std::conditional_t<sizeof...(I) == 1, std::tuple_element_t<0, typename Call::Selected>,
                                 typename Call::Selected>;
  using Jac = tree::detail::with_leaves_t<typename Call::Result, Sel>;
  constexpr bool representable = !tree::detail::mentions_unrepresentable<Jac>::value;
  static_assert(!Fwd || representable,
                "jx::jacfwd: f returns a JX_TREE_NODE struct, whose Array fields cannot hold the jacobian with "
                "respect to a non-Array argument; differentiate one Array argument or return a std container");
  static_assert(Fwd || representable,
                "jx::jacrev: f returns a JX_TREE_NODE struct, whose Array fields cannot hold the jacobian with "
                "respect to a non-Array argument; differentiate one Array argument or return a std container");
  if constexpr (representable) {
    Call call(f, Args(to_array_tree(a)...));
    check_differentiable(name, call.leaves());
    auto num_main = [&] { return call.num_outputs(); };
    FlatJacobian jac = Fwd ? jacfwd_flat(call.fn(), call.leaves(), num_main, name)
                           : jacrev_flat(call.fn(), call.leaves(), num_main, name);
    tree::TreeDef in_def = sizeof...(I) == 1 ? tree::TreeDef(call.in_def().root().children[0]) : call.in_def();
    Jac j = tree::unflatten<Jac>(tree::compose(call.out_def(), in_def), jac.blocks);
    if constexpr (Aux) return std::make_pair(std::move(j), call.aux_from(jac.rest));
    else return j;
  }
}

}  // namespace detail

// jacfwd(f)(args...): the Jacobian by forward mode (one jvp per input element, batched
// with vmap) with respect to the first argument, or those named by jx::argnums<...>.
// Arguments and results are pytrees: the result has f's output structure with, at each
// output leaf O, the structure of the argument (a std::tuple of them for several
// argnums) whose leaves X are arrays of shape O.shape + X.shape (JAX's layout). With
// jx::has_aux (f returns (out, aux)): std::pair(jacobian, aux).
template <class F, class... Opts>
auto jacfwd(F f, Opts...) {
  JX_DETAIL_CHECK_FN("jacfwd", F);
  JX_DETAIL_CHECK_OPTIONS("jacfwd", true, Opts...);
  return [f = std::move(f)]<class... A>(const A&... a) {
    using O = detail::Options<Opts...>;
    using Info = detail::CallInfo<O::aux, F, typename O::argnums, A...>;
    JX_DETAIL_CHECK_CALL("jacfwd", Info);
    if constexpr (Info::ok) {
      return [&]<size_t... I>(ArgNums<I...>) {
        return detail::jacobian_engine<true, O::aux, I...>(f, a...);
      }(typename O::argnums{});
    }
  };
}

// jacrev(f)(args...): the Jacobian by reverse mode (one vjp per output element, batched);
// the same options and result layout as jacfwd.
template <class F, class... Opts>
auto jacrev(F f, Opts...) {
  JX_DETAIL_CHECK_FN("jacrev", F);
  JX_DETAIL_CHECK_OPTIONS("jacrev", true, Opts...);
  return [f = std::move(f)]<class... A>(const A&... a) {
    using O = detail::Options<Opts...>;
    using Info = detail::CallInfo<O::aux, F, typename O::argnums, A...>;
    JX_DETAIL_CHECK_CALL("jacrev", Info);
    if constexpr (Info::ok) {
      return [&]<size_t... I>(ArgNums<I...>) {
        return detail::jacobian_engine<false, O::aux, I...>(f, a...);
      }(typename O::argnums{});
    }
  };
}

// hessian(f)(args...) = jacfwd(jacrev(f, opts...), opts...)(args...), as in JAX: for a
// scalar f of one Array, shape x.shape + x.shape; with several argnums, a tuple of tuples
// (H[i][j] the block of arguments i and j); with jx::has_aux, std::pair(hessian, aux).
template <class F, class... Opts>
auto hessian(F f, Opts... opts) {
  JX_DETAIL_CHECK_FN("hessian", F);
  JX_DETAIL_CHECK_OPTIONS("hessian", true, Opts...);
  return [h = jacfwd(jacrev(std::move(f), opts...), opts...)]<class... A>(const A&... a) {
    using O = detail::Options<Opts...>;
    using Info = detail::CallInfo<O::aux, F, typename O::argnums, A...>;
    JX_DETAIL_CHECK_CALL("hessian", Info);
    if constexpr (Info::ok) return h(a...);
  };
}

// ---- stop_gradient and staging ----

// The identity whose derivative is zero: gradients do not flow through it.
Array stop_gradient(const Array& x);
template <class T>
auto stop_gradient_tree(const T& x) {
  return tree::map([](const Array& l) { return stop_gradient(l); }, x);
}

// named_call(f, "name")(args...): f, applied as a single `closed_call` equation holding
// f's program as a sub-program (visible as such in make_jaxpr; transformations see
// through it). The building block of jit and control flow.
template <class F>
auto named_call(F f, std::string name) {
  return [f = std::move(f), name = std::move(name)]<class... A>(const A&... a) {
    detail::FlatCallAll<F, A...> call(f, detail::traced_args_t<A...>(detail::to_array_tree(a)...));
    return call.result(detail::named_call_flat(call.fn(), call.leaves(), name));
  };
}

// make_jaxpr(f)(args...): the program f stages to for arguments of these types.
template <class F>
auto make_jaxpr(F f) {
  return [f = std::move(f)]<class... A>(const A&... a) {
    detail::FlatCallAll<F, A...> call(f, detail::traced_args_t<A...>(detail::to_array_tree(a)...));
    std::vector<Aval> avals;
    for (const Array& x : call.leaves()) avals.push_back(x.aval());
    return detail::make_jaxpr_flat(call.fn(), avals);
  };
}

}  // namespace jx
