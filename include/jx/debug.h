// Debugging that survives transformations (JAX's jax.debug and a checkify-style check).
//
//   jx::debug::callback(fn, x, y)        calls fn(x, y) on concrete values
//   jx::debug::print("x = {} y = {}", x, y)
//   jx::check(x > 0, "x must be positive, got {}", x)
//
// Each is an ordered effect: a `debug_callback` equation (trait kSideEffects) that
// jit's passes keep and leave in order, and that runs every time the program does:
// eagerly, on each call of a jitted function, once per iteration of a loop body. Under
// vmap it runs once per lane, in lane order, on that lane's (unbatched) values (JAX's
// "sequential" rule); under grad, jvp and linearize it runs once, on the primal values.
//
// print formats each `{}` with the array's NumPy str (jx::str: "[1. 2.]"); `{{` and
// `}}` are literal braces. Its lines go to std::cout unless set_print_sink chose a stream.
//
// check: eagerly, a false predicate (any element) raises jx::Error("[check] <message>")
// at once. In a jitted call the failure is recorded while the program runs, and the call
// raises the first recorded message once it returns. Under vmap any failing lane fails.
//
// The host function travels in the equation's params as `callback=<id>`, an entry of a
// process-wide registry (it prints in the IR text; parsing text whose id is not
// registered in this process raises). Traced callbacks stay registered for the life of
// the process; eager calls run directly and register nothing.
#pragma once

#include <functional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jx/array.h"

namespace jx {
namespace detail {
using HostCallback = std::function<void(std::span<const Array>)>;
void debug_callback_flat(HostCallback fn, std::vector<Array> args);
void debug_print_flat(std::string fmt, std::vector<Array> args);
void check_flat(const Array& pred, std::string fmt, std::vector<Array> args);
}  // namespace detail

namespace debug {

// Calls fn(const Array&...) with the concrete values of args (Arrays or C++ scalars).
template <class F, class... Args>
void callback(F fn, const Args&... args) {
  detail::debug_callback_flat(
      [fn = std::move(fn)](std::span<const Array> xs) {
        [&]<size_t... I>(std::index_sequence<I...>) { fn(xs[I]...); }(std::index_sequence_for<Args...>{});
      },
      {Array(args)...});
}

// Prints fmt with each `{}` replaced by the next argument's str, and a newline.
template <class... Args>
void print(std::string_view fmt, const Args&... args) {
  detail::debug_print_flat(std::string(fmt), {Array(args)...});
}

// Where print writes (nullptr: std::cout, the default). The stream must outlive its use.
void set_print_sink(std::ostream* sink);

// The text print would write for fmt and concrete args (raises on a placeholder count
// that does not match the arguments).
std::string format(std::string_view fmt, std::span<const Array> args);

}  // namespace debug

// Checkify-style assertion: pred is a bool array (all elements must hold).
template <class... Args>
void check(const Array& pred, std::string_view fmt, const Args&... args) {
  detail::check_flat(pred, std::string(fmt), {Array(args)...});
}

}  // namespace jx
