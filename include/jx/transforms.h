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
#pragma once

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
#include <vector>

#include "jx/array.h"
#include "jx/jaxpr.h"
#include "jx/primitive.h"
#include "jx/tree.h"

namespace jx {

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

// f applied to a tuple of pytree arguments, seen as a flat function of the leaves of
// the arguments at positions I... (the others stay fixed): what every transformation
// hands to its flat core. Records the structure of f's result for rebuilding it.
template <class F, class Args, size_t... I>
class FlatCall {
 public:
  using Selected = std::tuple<std::tuple_element_t<I, Args>...>;
  using Result = result_t<F, Args>;

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
      auto [out, def] = tree::flatten(to_array_tree(std::apply(f_, all)));
      out_def_ = std::move(def);
      return out;
    };
  }
  // f's result rebuilt from flat outputs (after fn() has run).
  template <class T = Result>
  T result(std::span<const Array> outs) const {
    return tree::unflatten<T>(out_def_, outs);
  }
  const tree::TreeDef& out_def() const { return out_def_; }
  // Selected-argument values rebuilt from leaves (gradients, cotangents).
  Selected selected(std::span<const Array> xs) const { return tree::unflatten<Selected>(in_def_, xs); }

 private:
  const F& f_;
  Args args_;
  std::vector<Array> leaves_;
  tree::TreeDef in_def_, out_def_;
};

template <class F, class Args, class Seq>
struct FlatCallOverAll;
template <class F, class Args, size_t... I>
struct FlatCallOverAll<F, Args, std::index_sequence<I...>> {
  using type = FlatCall<F, Args, I...>;
};
// A FlatCall over every argument.
template <class F, class... A>
using FlatCallAll =
    typename FlatCallOverAll<F, traced_args_t<A...>, std::index_sequence_for<A...>>::type;

}  // namespace detail

// ---- options ----

// Which positional arguments to differentiate: jx::grad(f, jx::argnums<0, 2>).
template <size_t... I>
struct ArgNums {};
template <size_t... I>
inline constexpr ArgNums<I...> argnums{};
// The function returns std::pair<Array, Aux>; aux is returned alongside, undifferentiated.
struct HasAux {};
inline constexpr HasAux has_aux{};

// ---- jvp / linearize / vjp ----

// Forward mode: (f(primals...), J·tangents). primals and tangents are tuples of f's
// arguments; tangents match the primals' structure, shapes and dtypes.
template <class F, class... P, class... T>
auto jvp(const F& f, const std::tuple<P...>& primals, const std::tuple<T...>& tangents) {
  static_assert(sizeof...(P) == sizeof...(T), "jx::jvp: primals and tangents need the same number of arguments");
  using Args = detail::traced_args_t<P...>;
  detail::FlatCallAll<F, P...> call(f, std::apply([](const auto&... a) { return Args(detail::to_array_tree(a)...); },
                                                   primals));
  auto [ts, tdef] = tree::flatten(tangents);
  if (!(call.in_def() == tdef))
    detail::fail("jvp", "tangents have structure ", tdef.str(), " but primals have ", call.in_def().str());
  auto [outs, touts] = detail::jvp_flat(call.fn(), call.leaves(), ts, "jvp");
  using R = typename decltype(call)::Result;
  return std::pair<R, R>(call.result(outs), call.result(touts));
}
// Single-argument convenience: jvp(f, x, t).
template <class F>
auto jvp(const F& f, const Array& primal, const Array& tangent) {
  return jvp(f, std::tuple<Array>(primal), std::tuple<Array>(tangent));
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
    return tree::unflatten<R>(out_def_, detail::apply_linear(*lin_, ts));
  }

 private:
  std::shared_ptr<const detail::LinearFunction> lin_;
  tree::TreeDef in_def_, out_def_;
};

template <class F, class... A>
auto linearize(const F& f, const A&... primals) {
  using Args = detail::traced_args_t<A...>;
  detail::FlatCallAll<F, A...> call(f, Args(detail::to_array_tree(primals)...));
  detail::Linearized lin = detail::linearize_flat(call.fn(), call.leaves(), "linearize");
  using R = typename decltype(call)::Result;
  return std::pair<R, LinearizedFunction<Args, R>>(call.result(lin.primals_out),
                                                   LinearizedFunction<Args, R>(lin.linear, call.in_def(), call.out_def()));
}

// The pullback returned by vjp: cotangent shaped like f's output -> a tuple with one
// cotangent per argument of f (JAX's vjp_fun).
template <class Args, class R>
class VjpFunction {
 public:
  VjpFunction(std::shared_ptr<const detail::LinearFunction> lin, tree::TreeDef in_def, tree::TreeDef out_def)
      : lin_(std::move(lin)), in_def_(std::move(in_def)), out_def_(std::move(out_def)) {}
  template <class C>
  Args operator()(const C& cotangent) const {
    auto [cts, cdef] = tree::flatten(detail::to_array_tree(cotangent));
    if (!(cdef == out_def_))
      detail::fail("vjp", "the cotangent has structure ", cdef.str(), " but the output had ", out_def_.str());
    return tree::unflatten<Args>(in_def_, detail::transpose_linear(*lin_, cts));
  }

 private:
  std::shared_ptr<const detail::LinearFunction> lin_;
  tree::TreeDef in_def_, out_def_;
};

template <class F, class... A>
auto vjp(const F& f, const A&... primals) {
  using Args = detail::traced_args_t<A...>;
  detail::FlatCallAll<F, A...> call(f, Args(detail::to_array_tree(primals)...));
  detail::Linearized lin = detail::linearize_flat(call.fn(), call.leaves(), "vjp");
  using R = typename decltype(call)::Result;
  return std::pair<R, VjpFunction<Args, R>>(call.result(lin.primals_out),
                                           VjpFunction<Args, R>(lin.linear, call.in_def(), call.out_def()));
}

// ---- grad / value_and_grad ----
namespace detail {

// The engine of grad and value_and_grad: returns (value, aux or monostate, grads).
template <bool Aux, size_t... I, class F, class... A>
auto value_and_grad_engine(std::string_view name, const F& f, const A&... a) {
  static_assert(sizeof...(I) > 0, "jx::grad: argnums must name at least one argument");
  using Args = traced_args_t<A...>;
  FlatCall<F, Args, I...> call(f, Args(to_array_tree(a)...));
  check_differentiable(name, call.leaves());
  // With aux, f returns (value, aux): its flat outputs are the value, then aux's leaves.
  Linearized lin = linearize_flat(call.fn(), call.leaves(), name);
  if (!Aux && lin.primals_out.size() != 1)
    fail(name, "requires a function returning one scalar array, but it returned ", lin.primals_out.size(),
         " arrays (with jx::has_aux, return std::pair(value, aux))");
  check_scalar_output(name, lin.primals_out[0]);
  std::vector<Array> cts(lin.primals_out.size());
  cts[0] = ones_like_scalar(lin.primals_out[0]);
  auto grads = call.selected(transpose_linear(*lin.linear, cts));
  auto g = [&] {
    if constexpr (sizeof...(I) == 1) return std::get<0>(std::move(grads));
    else return grads;
  }();
  if constexpr (Aux) {
    auto aux = call.result(lin.primals_out).second;
    return std::make_tuple(lin.primals_out[0], std::move(aux), std::move(g));
  } else {
    return std::make_tuple(lin.primals_out[0], std::monostate{}, std::move(g));
  }
}

template <bool Aux, size_t... I>
struct GradSpec {};
inline GradSpec<false, 0> grad_spec() { return {}; }
template <size_t... I>
GradSpec<false, I...> grad_spec(ArgNums<I...>) { return {}; }
inline GradSpec<true, 0> grad_spec(HasAux) { return {}; }
template <size_t... I>
GradSpec<true, I...> grad_spec(ArgNums<I...>, HasAux) { return {}; }
template <size_t... I>
GradSpec<true, I...> grad_spec(HasAux, ArgNums<I...>) { return {}; }

}  // namespace detail

// grad(f)(args...): the gradient of a real scalar function with respect to its first
// argument (or those named by jx::argnums<...>: a std::tuple of gradients when several),
// shaped like that argument. With jx::has_aux, f returns std::pair<Array, Aux> and the
// result is std::pair<Grad, Aux>.
template <class F, class... Opts>
auto grad(F f, Opts... opts) {
  return [f = std::move(f)]<class... A>(const A&... args) {
    return [&]<bool Aux, size_t... I>(detail::GradSpec<Aux, I...>) {
      auto [value, aux, g] = detail::value_and_grad_engine<Aux, I...>("grad", f, args...);
      if constexpr (Aux) return std::make_pair(std::move(g), std::move(aux));
      else return g;
    }(detail::grad_spec(Opts{}...));
  };
}

// value_and_grad(f)(args...) -> std::pair(value, grad); with jx::has_aux,
// std::pair(std::pair(value, aux), grad) as in JAX.
template <class F, class... Opts>
auto value_and_grad(F f, Opts... opts) {
  return [f = std::move(f)]<class... A>(const A&... args) {
    return [&]<bool Aux, size_t... I>(detail::GradSpec<Aux, I...>) {
      auto [value, aux, g] = detail::value_and_grad_engine<Aux, I...>("value_and_grad", f, args...);
      if constexpr (Aux) return std::make_pair(std::make_pair(std::move(value), std::move(aux)), std::move(g));
      else return std::make_pair(std::move(value), std::move(g));
    }(detail::grad_spec(Opts{}...));
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
  return [f = std::move(f), options = std::move(options)]<class... A>(const A&... a) {
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
  };
}

// ---- jacobians ----

// jacfwd(f)(x): the Jacobian by forward mode (one jvp per input element, batched with
// vmap). The argument differentiated (the first, or jx::argnums<I>) must be an Array;
// each output leaf of shape O becomes a leaf of shape O + x.shape.
template <class F, size_t I = 0>
auto jacfwd(F f, ArgNums<I> = {}) {
  return [f = std::move(f)]<class... A>(const A&... a) {
    using Args = detail::traced_args_t<A...>;
    static_assert(std::is_same_v<std::tuple_element_t<I, Args>, Array>, "jx::jacfwd differentiates an Array argument");
    detail::FlatCall<F, Args, I> call(f, Args(detail::to_array_tree(a)...));
    const Array& x = call.leaves()[0];
    detail::check_differentiable("jacfwd", call.leaves());
    detail::FlatFn pushforward = [&](std::span<const Array> t) {
      return detail::jvp_flat(call.fn(), call.leaves(), t, "jacfwd").second;
    };
    Array basis = detail::standard_basis(x.aval());
    std::vector<std::optional<int64_t>> zero{0};
    std::vector<Array> rows = detail::vmap_flat(pushforward, std::span<const Array>(&basis, 1), zero, zero, {});
    for (Array& r : rows) {
      Shape out_shape(r.shape().begin() + 1, r.shape().end());
      r = detail::jacobian_from_cols(r, out_shape, x.shape());
    }
    return call.result(rows);
  };
}

// jacrev(f)(x): the Jacobian by reverse mode (one vjp per output element, batched).
template <class F, size_t I = 0>
auto jacrev(F f, ArgNums<I> = {}) {
  return [f = std::move(f)]<class... A>(const A&... a) {
    using Args = detail::traced_args_t<A...>;
    static_assert(std::is_same_v<std::tuple_element_t<I, Args>, Array>, "jx::jacrev differentiates an Array argument");
    detail::FlatCall<F, Args, I> call(f, Args(detail::to_array_tree(a)...));
    const Array& x = call.leaves()[0];
    detail::check_differentiable("jacrev", call.leaves());
    detail::Linearized lin = detail::linearize_flat(call.fn(), call.leaves(), "jacrev");
    std::vector<Array> jac;
    for (size_t o = 0; o < lin.primals_out.size(); ++o) {
      const Aval& out_aval = lin.primals_out[o].aval();
      Array basis = detail::standard_basis(out_aval);
      detail::FlatFn pullback = [&](std::span<const Array> ct) {
        std::vector<Array> cts(lin.primals_out.size());
        cts[o] = ct[0];
        return detail::transpose_linear(*lin.linear, cts);
      };
      std::vector<std::optional<int64_t>> zero{0};
      Array rows = detail::vmap_flat(pullback, std::span<const Array>(&basis, 1), zero, zero, {})[0];
      jac.push_back(detail::jacobian_from_rows(rows, out_aval.shape, x.shape()));
    }
    return call.result(jac);
  };
}

// hessian(f)(x) = jacfwd(jacrev(f))(x): shape x.shape + x.shape for a scalar f.
template <class F, size_t I = 0>
auto hessian(F f, ArgNums<I> n = {}) {
  return jacfwd(jacrev(std::move(f), n), n);
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
