// jx::test_util: JAX's jax.test_util for users checking their own derivatives.
//
//   jx::test_util::check_grads([](const Array& x, const Array& y) { return jnp::sin(x) * y; },
//                              std::tuple{x, y}, {.order = 2});
//
// check_grads compares forward mode against central finite differences computed in
// float64, and reverse mode against forward mode through the identity
// <J v, u> == <v, J^T u>; it raises jx::Error("[check_grads] ...") on a mismatch.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "jx/array.h"

namespace jx::test_util {

enum class Modes { Fwd = 1, Rev = 2, Both = 3 };

struct CheckGradsOptions {
  // 1: first derivatives; 2: also the derivatives of the jvp and vjp functions; and so on.
  int order = 1;
  Modes modes = Modes::Both;
  // Defaults depend on the dtypes involved (float64 1e-5, float32 2e-3, 16-bit 5e-2).
  std::optional<double> atol, rtol;
  // Step of the central differences (taken in float64).
  double eps = 1e-4;
  // Seeds the random directions, so a check is deterministic.
  uint64_t seed = 0;
};

using FlatFunction = std::function<std::vector<Array>(std::span<const Array>)>;

// f maps arrays to arrays and must be dtype-generic (it is also evaluated on float64 /
// complex128 copies of the arguments for the finite differences), as lax and jnp code
// is. Integer and bool arguments are passed through unperturbed. Raises jx::Error naming
// the mode, order, argument, output, the largest errors and the tolerances.
void check_grads(const FlatFunction& f, std::span<const Array> args, const CheckGradsOptions& opts = {});

// The default tolerance check_grads uses for values of this dtype.
double default_gradient_tolerance(DType dtype);

// Convenience for f(const Array&...) -> Array: check_grads(f, std::tuple{x, y}, opts).
template <class F, class... A>
void check_grads(const F& f, std::tuple<A...> args, CheckGradsOptions opts = {}) {
  std::vector<Array> flat = std::apply([](const auto&... a) { return std::vector<Array>{Array(a)...}; }, args);
  FlatFunction g = [&f](std::span<const Array> xs) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return std::vector<Array>{Array(f(xs[I]...))};
    }(std::index_sequence_for<A...>{});
  };
  check_grads(g, flat, opts);
}

}  // namespace jx::test_util
