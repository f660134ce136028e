// Misuses of the transformations, each of which must fail to compile with exactly one
// static_assert naming the transformation (tests/compile_fail/check.cmake compiles this
// file once with -fsyntax-only and expects every `expect:` message, and no other error).
#include <string>
#include <tuple>

#include "jx/random.h"
#include "jx/transforms.h"

using jx::Array;

struct NotATree {};
struct Pair {
  Array a, b;
};
JX_TREE_NODE(Pair, a, b)

Array id(const Array& x) { return x; }

// expect: jx::vjp: with jx::has_aux, f must return a std::pair or a two-element std::tuple (output, aux)
void vjp_aux_without_pair(const Array& x) { jx::vjp(id, x, jx::has_aux); }

// expect: jx::grad: unknown option
void grad_unknown_option() { jx::grad(id, 3); }

// expect: jx::jacrev: an option is given more than once
void jacrev_twice() { jx::jacrev(id, jx::has_aux, jx::has_aux); }

// expect: jx::jacfwd: jx::argnums<> must name at least one argument
void jacfwd_empty_argnums() { jx::jacfwd(id, jx::argnums<>); }

// expect: jx::hessian: jx::argnums names a position past the last argument
void hessian_out_of_range(const Array& x) { jx::hessian(id, jx::argnums<1>)(x); }

// expect: jx::value_and_grad: f must be callable (a lambda, function or function object)
void not_callable() { jx::value_and_grad(42); }

// expect: jx::jacfwd: f cannot be called with these arguments
void wrong_parameter(const Array& x) { jx::jacfwd([](const std::string&) { return Array(); })(x); }

// expect: jx::vmap: f must return a pytree
void result_not_tree(const Array& x) { jx::vmap([](const Array&) { return NotATree{}; })(x); }

// expect: jx::linearize: with jx::has_aux, f must return a std::pair or a two-element std::tuple
void linearize_aux_triple(const Array& x) {
  jx::linearize([](const Array& a) { return std::make_tuple(a, a, a); }, x, jx::has_aux);
}

// expect: jx::jvp: takes no jx::argnums (it differentiates every argument)
void jvp_argnums(const Array& x) { jx::jvp(id, x, x, jx::argnums<0>); }

// expect: jx::vjp: options (jx::has_aux) go after the primals
void vjp_option_first(const Array& x) { jx::vjp(id, jx::has_aux, x); }

// expect: jx::grad: every argument must be a pytree
void argument_not_tree() { jx::grad(id)(NotATree{}); }

// expect: jx::jacrev: f returns a JX_TREE_NODE struct, whose Array fields cannot hold the jacobian
void struct_of_pytree_jacobian(const Array& x) {
  jx::jacrev([](const std::tuple<Array, Array>& t) { return Pair{std::get<0>(t), std::get<1>(t)}; })(
      std::make_tuple(x, x));
}

// expect: jx::block_until_ready: not a pytree type
void block_not_tree() { jx::block_until_ready(NotATree{}); }
