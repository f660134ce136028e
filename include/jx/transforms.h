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

// Calls f on the full argument tuple `all` with the leaves `xs` substituted for the
// arguments at positions I... (whose joint structure is `def`); flattens the result
// into `out`, recording its structure in `out_def`.
template <size_t... I, class F, class All>
std::vector<Array> call_with_leaves(const F& f, const All& all, const tree::TreeDef& def, std::span<const Array> xs,
                                    tree::TreeDef* out_def) {
  using Sel = std::tuple<std::tuple_element_t<I, All>...>;
  Sel sel = tree::unflatten<Sel>(def, xs);
  All args = all;
  [&]<size_t... K>(std::index_sequence<K...>) {
    ((std::get<I>(args) = std::get<K>(sel)), ...);
  }(std::index_sequence_for<std::integral_constant<size_t, I>...>{});
  auto r = to_array_tree(std::apply(f, args));
  auto [leaves, rdef] = tree::flatten(r);
  if (out_def) *out_def = rdef;
  return leaves;
}

template <size_t... I>
struct IndexList {};

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
  using R = detail::result_t<F, Args>;
  Args args = std::apply([](const auto&... a) { return Args(detail::to_array_tree(a)...); }, primals);
  auto [xs, def] = tree::flatten(args);
  auto [ts, tdef] = tree::flatten(tangents);
  if (!(def == tdef))
    detail::fail("jvp", "tangents have structure ", tdef.str(), " but primals have ", def.str());
  tree::TreeDef out_def;
  detail::FlatFn flat = [&](std::span<const Array> leaves) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return detail::call_with_leaves<I...>(f, args, def, leaves, &out_def);
    }(std::index_sequence_for<P...>{});
  };
  auto [outs, touts] = detail::jvp_flat(flat, xs, ts, "jvp");
  return std::pair<R, R>(tree::unflatten<R>(out_def, outs), tree::unflatten<R>(out_def, touts));
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
  using R = detail::result_t<F, Args>;
  Args args(detail::to_array_tree(primals)...);
  auto [xs, def] = tree::flatten(args);
  tree::TreeDef out_def;
  detail::FlatFn flat = [&](std::span<const Array> leaves) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return detail::call_with_leaves<I...>(f, args, def, leaves, &out_def);
    }(std::index_sequence_for<A...>{});
  };
  detail::Linearized lin = detail::linearize_flat(flat, xs, "linearize");
  return std::pair<R, LinearizedFunction<Args, R>>(tree::unflatten<R>(out_def, lin.primals_out),
                                                   LinearizedFunction<Args, R>(lin.linear, def, out_def));
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
  using R = detail::result_t<F, Args>;
  Args args(detail::to_array_tree(primals)...);
  auto [xs, def] = tree::flatten(args);
  tree::TreeDef out_def;
  detail::FlatFn flat = [&](std::span<const Array> leaves) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return detail::call_with_leaves<I...>(f, args, def, leaves, &out_def);
    }(std::index_sequence_for<A...>{});
  };
  detail::Linearized lin = detail::linearize_flat(flat, xs, "vjp");
  return std::pair<R, VjpFunction<Args, R>>(tree::unflatten<R>(out_def, lin.primals_out),
                                           VjpFunction<Args, R>(lin.linear, def, out_def));
}

// ---- grad / value_and_grad ----
namespace detail {

// The engine of grad and value_and_grad: returns (value, aux or monostate, grads).
template <bool Aux, size_t... I, class F, class... A>
auto value_and_grad_engine(std::string_view name, const F& f, const A&... a) {
  static_assert(sizeof...(I) > 0, "jx::grad: argnums must name at least one argument");
  using Args = traced_args_t<A...>;
  using Sel = std::tuple<std::tuple_element_t<I, Args>...>;
  using Raw = std::decay_t<decltype(std::apply(f, std::declval<Args>()))>;
  Args args(to_array_tree(a)...);
  Sel sel(std::get<I>(args)...);
  auto [xs, def] = tree::flatten(sel);
  check_differentiable(name, xs);
  tree::TreeDef aux_def;
  FlatFn flat = [&](std::span<const Array> leaves) {
    Sel s = tree::unflatten<Sel>(def, leaves);
    Args all = args;
    [&]<size_t... K>(std::index_sequence<K...>) {
      ((std::get<I>(all) = std::get<K>(s)), ...);
    }(std::index_sequence_for<std::integral_constant<size_t, I>...>{});
    Raw r = std::apply(f, all);
    std::vector<Array> out;
    if constexpr (Aux) {
      out.push_back(Array(r.first));
      auto [aux_leaves, adef] = tree::flatten(to_array_tree(r.second));
      aux_def = adef;
      out.insert(out.end(), aux_leaves.begin(), aux_leaves.end());
    } else {
      out.push_back(Array(r));
    }
    return out;
  };
  Linearized lin = linearize_flat(flat, xs, name);
  check_scalar_output(name, lin.primals_out[0]);
  std::vector<Array> cts(lin.primals_out.size());
  cts[0] = jx::detail::ones_like_scalar(lin.primals_out[0]);
  Sel grads = tree::unflatten<Sel>(def, transpose_linear(*lin.linear, cts));
  auto g = [&] {
    if constexpr (sizeof...(I) == 1) return std::get<0>(std::move(grads));
    else return grads;
  }();
  if constexpr (Aux) {
    using AuxT = tree::array_tree_t<std::decay_t<decltype(std::declval<Raw>().second)>>;
    AuxT aux = tree::unflatten<AuxT>(aux_def, std::span<const Array>(lin.primals_out).subspan(1));
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
    using R = detail::result_t<F, Args>;
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
    auto [unused, def] = tree::flatten(args);
    tree::TreeDef out_def;
    detail::FlatFn flat = [&](std::span<const Array> leaves) {
      return [&]<size_t... I>(std::index_sequence<I...>) {
        return detail::call_with_leaves<I...>(f, args, def, leaves, &out_def);
      }(std::index_sequence_for<A...>{});
    };
    BatchAxis axis{options.axis_size.value_or(0), options.axis_name};
    std::vector<Array> outs = detail::vmap_flat(flat, xs, in_dims, options.out_axes, axis);
    return tree::unflatten<R>(out_def, outs);
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
    using R = detail::result_t<F, Args>;
    Args args(detail::to_array_tree(a)...);
    Array x = std::get<I>(args);
    detail::check_differentiable("jacfwd", std::span<const Array>(&x, 1));
    tree::TreeDef out_def;
    detail::FlatFn pushforward = [&](std::span<const Array> t) {
      detail::FlatFn g = [&](std::span<const Array> xs) {
        Args all = args;
        std::get<I>(all) = xs[0];
        auto [leaves, d] = tree::flatten(detail::to_array_tree(std::apply(f, all)));
        out_def = d;
        return leaves;
      };
      return detail::jvp_flat(g, std::span<const Array>(&x, 1), t, "jacfwd").second;
    };
    Array basis = detail::standard_basis(x.aval());
    std::vector<std::optional<int64_t>> zero{0};
    std::vector<Array> rows = detail::vmap_flat(pushforward, std::span<const Array>(&basis, 1), zero, zero, {});
    for (Array& r : rows) {
      Shape out_shape(r.shape().begin() + 1, r.shape().end());
      r = detail::jacobian_from_cols(r, out_shape, x.shape());
    }
    return tree::unflatten<R>(out_def, rows);
  };
}

// jacrev(f)(x): the Jacobian by reverse mode (one vjp per output element, batched).
template <class F, size_t I = 0>
auto jacrev(F f, ArgNums<I> = {}) {
  return [f = std::move(f)]<class... A>(const A&... a) {
    using Args = detail::traced_args_t<A...>;
    static_assert(std::is_same_v<std::tuple_element_t<I, Args>, Array>, "jx::jacrev differentiates an Array argument");
    using R = detail::result_t<F, Args>;
    Args args(detail::to_array_tree(a)...);
    Array x = std::get<I>(args);
    detail::check_differentiable("jacrev", std::span<const Array>(&x, 1));
    tree::TreeDef out_def;
    detail::FlatFn g = [&](std::span<const Array> xs) {
      Args all = args;
      std::get<I>(all) = xs[0];
      auto [leaves, d] = tree::flatten(detail::to_array_tree(std::apply(f, all)));
      out_def = d;
      return leaves;
    };
    detail::Linearized lin = detail::linearize_flat(g, std::span<const Array>(&x, 1), "jacrev");
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
    return tree::unflatten<R>(out_def, jac);
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
    using Args = detail::traced_args_t<A...>;
    using R = detail::result_t<F, Args>;
    Args args(detail::to_array_tree(a)...);
    auto [xs, def] = tree::flatten(args);
    tree::TreeDef out_def;
    detail::FlatFn flat = [&](std::span<const Array> leaves) {
      return [&]<size_t... I>(std::index_sequence<I...>) {
        return detail::call_with_leaves<I...>(f, args, def, leaves, &out_def);
      }(std::index_sequence_for<A...>{});
    };
    std::vector<Array> outs = detail::named_call_flat(flat, xs, name);
    return tree::unflatten<R>(out_def, outs);
  };
}

// make_jaxpr(f)(args...): the program f stages to for arguments of these types.
template <class F>
auto make_jaxpr(F f) {
  return [f = std::move(f)]<class... A>(const A&... a) {
    using Args = detail::traced_args_t<A...>;
    Args args(detail::to_array_tree(a)...);
    auto [xs, def] = tree::flatten(args);
    std::vector<Aval> avals;
    for (const Array& x : xs) avals.push_back(x.aval());
    detail::FlatFn flat = [&](std::span<const Array> leaves) {
      return [&]<size_t... I>(std::index_sequence<I...>) {
        return detail::call_with_leaves<I...>(f, args, def, leaves, nullptr);
      }(std::index_sequence_for<A...>{});
    };
    return detail::make_jaxpr_flat(flat, avals);
  };
}

}  // namespace jx
