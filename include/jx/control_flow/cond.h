// jx::lax::cond and jx::lax::switch_: JAX's structured conditionals.
//
//   Array y = lax::cond(x.sum() > 0, [](const Array& v) { return v * 2; },
//                                    [](const Array& v) { return -v; }, x);
//   Array z = lax::switch_(i, std::vector<std::function<Array(const Array&)>>{f0, f1, f2}, x);
//
// Every branch is staged into one `cond` equation (src/lax/control_flow/cond.cpp), even
// when the predicate is a concrete value, so the conditional composes with every
// transformation: grad, vjp, linearize, jacfwd/jacrev, vmap (a batched predicate runs
// every branch and selects per lane, as JAX does) and jit. Eagerly only the chosen branch
// runs. Operands are pytrees; every branch takes them all and returns pytrees of one
// structure and of the same shapes and dtypes. Arrays a branch captures are constants of
// its program, passed to the equation as operands.
#pragma once

#include <cstddef>
#include <functional>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "jx/transforms.h"

namespace jx {
namespace detail {

// cond's predicate as a branch index: a scalar bool, integer or float (nonzero is true,
// as JAX converts it) -> int32 0 (false_fn) or 1 (true_fn).
Array cond_index(const Array& pred);
// switch's index: an integer scalar, converted to int32 and clamped into [0, n - 1].
Array switch_index(const Array& index, size_t num_branches);
// Stages each branch in order on the operands' types and binds one `cond` equation;
// branch_name(i) names branch i in errors.
std::vector<Array> cond_flat(const Array& index, std::span<const FlatFn> branches, std::span<const Array> operands,
                             const std::function<std::string(size_t)>& branch_name);
std::string cond_branch_name(size_t i);    // "false_fn", "true_fn"
std::string switch_branch_name(size_t i);  // "branch i"

// A predicate or index given as a jx::Array or a C++ bool / number.
template <class T>
Array scalar_operand(const T& x) {
  if constexpr (std::is_same_v<T, Array>) return x;
  else return tree::detail::scalar_leaf(x);
}
template <class T>
inline constexpr bool is_scalar_operand_v = std::is_same_v<T, Array> || std::is_arithmetic_v<T>;

template <class Fn, class Args>
inline constexpr bool branch_callable_v = false;
template <class Fn, class... T>
inline constexpr bool branch_callable_v<Fn, std::tuple<T...>> = std::is_invocable_v<const Fn&, T&...>;

// The pytree a branch returns (its Array-leaved form).
template <class Fn, class Args>
using branch_result_t =
    tree::array_tree_t<std::decay_t<decltype(std::apply(std::declval<const Fn&>(), std::declval<Args&>()))>>;

// The branches of one conditional as flat functions of the operands' leaves. Each records
// the structure it returns; a later branch's must equal the first's (branches are staged
// in order). Holds references to the branch callables: lives within one call.
template <class Args>
class BranchCalls {
 public:
  BranchCalls(const Args& args, std::function<std::string(size_t)> name) : name_(std::move(name)) {
    auto [leaves, def] = tree::flatten(args);
    leaves_ = std::move(leaves);
    in_def_ = std::move(def);
  }
  BranchCalls(const BranchCalls&) = delete;
  BranchCalls& operator=(const BranchCalls&) = delete;

  template <class Fn>
  void add(const Fn& fn) {
    const size_t i = fns_.size();
    fns_.push_back([this, &fn, i](std::span<const Array> xs) {
      Args args = tree::unflatten<Args>(in_def_, xs);
      auto [out, def] = tree::flatten(to_array_tree(std::apply(fn, args)));
      if (i == 0) out_def_ = def;
      else if (!(def == out_def_))
        fail("cond", name_(i), " and ", name_(0), " must return the same structure: ", name_(i), " returns ",
             def.str(), " but ", name_(0), " returns ", out_def_.str());
      return out;
    });
  }
  // Binds the conditional and rebuilds the result.
  template <class R>
  R run(const Array& index) {
    std::vector<Array> outs = cond_flat(index, fns_, leaves_, name_);
    return tree::unflatten<R>(out_def_, outs);
  }

 private:
  std::function<std::string(size_t)> name_;
  std::vector<Array> leaves_;
  tree::TreeDef in_def_, out_def_;
  std::vector<FlatFn> fns_;
};

}  // namespace detail

namespace lax {

// true_fn(operands...) if pred else false_fn(operands...). pred: a scalar jx::Array
// (bool, or an integer / float compared with 0) or a C++ bool or number.
template <class Pred, class TrueFn, class FalseFn, class... Ops>
auto cond(const Pred& pred, const TrueFn& true_fn, const FalseFn& false_fn, const Ops&... operands) {
  static_assert(detail::is_scalar_operand_v<Pred>, "jx::lax::cond: pred must be a jx::Array or a C++ bool or number");
  static_assert((tree::detail::Tree<Ops> && ...),
                "jx::lax::cond: every operand must be a pytree (jx::Array, a C++ scalar, a std container of them "
                "or a JX_TREE_NODE struct)");
  using Args = detail::traced_args_t<Ops...>;
  constexpr bool callable = detail::branch_callable_v<TrueFn, Args> && detail::branch_callable_v<FalseFn, Args>;
  static_assert(callable,
                "jx::lax::cond: true_fn and false_fn must be callable with the operands; each receives every "
                "operand as a pytree of jx::Array");
  if constexpr (callable) {
    using R = detail::branch_result_t<TrueFn, Args>;
    Array index = detail::cond_index(detail::scalar_operand(pred));
    detail::BranchCalls<Args> calls(Args(detail::to_array_tree(operands)...), detail::cond_branch_name);
    calls.add(false_fn);
    calls.add(true_fn);
    return calls.template run<R>(index);
  }
}

// branches[index](operands...), index (an integer scalar jx::Array or C++ integer)
// clamped into [0, size - 1] as JAX does. branches: any container of callables of one
// type (std::vector of std::function, or of one lambda type). With a single branch it is
// called directly, as in JAX.
template <class Index, class Branches, class... Ops>
auto switch_(const Index& index, const Branches& branches, const Ops&... operands) {
  static_assert(detail::is_scalar_operand_v<Index>, "jx::lax::switch_: index must be a jx::Array or a C++ integer");
  static_assert((tree::detail::Tree<Ops> && ...),
                "jx::lax::switch_: every operand must be a pytree (jx::Array, a C++ scalar, a std container of "
                "them or a JX_TREE_NODE struct)");
  using Fn = std::decay_t<decltype(*std::begin(branches))>;
  using Args = detail::traced_args_t<Ops...>;
  constexpr bool callable = detail::branch_callable_v<Fn, Args>;
  static_assert(callable,
                "jx::lax::switch_: every branch must be callable with the operands; each receives every operand as "
                "a pytree of jx::Array");
  if constexpr (callable) {
    using R = detail::branch_result_t<Fn, Args>;
    const auto n = static_cast<size_t>(std::distance(std::begin(branches), std::end(branches)));
    Array i = detail::switch_index(detail::scalar_operand(index), n);
    Args args(detail::to_array_tree(operands)...);
    if (n == 1) return R(detail::to_array_tree(std::apply(*std::begin(branches), args)));
    detail::BranchCalls<Args> calls(args, detail::switch_branch_name);
    for (const auto& b : branches) calls.add(b);
    return calls.template run<R>(i);
  }
}

}  // namespace lax
}  // namespace jx
