// Error in units in the last place, for the accuracy tests of transcendentals
// (jit_vector_math_test, jit_fast_functions_test): float32 results against a double
// reference, float64 against long double.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace jx::testing {

template <class T>
using UlpReference = std::conditional_t<std::is_same_v<T, float>, double, long double>;

// |value - ref| in units in the last place of T at ref (T's subnormal spacing below its
// smallest normal). Matching infinities and NaNs count 0; a mismatch counts as huge.
template <class T>
double ulp_error(T value, UlpReference<T> ref) {
  using R = UlpReference<T>;
  const T rounded = static_cast<T>(ref);
  if (std::isnan(ref) || std::isnan(value)) return std::isnan(ref) && std::isnan(value) ? 0 : 1e30;
  if (std::isinf(rounded) || std::isinf(value)) return value == rounded ? 0 : 1e30;
  const int e = std::max(std::ilogb(rounded == 0 ? std::numeric_limits<T>::min() : rounded),
                         std::numeric_limits<T>::min_exponent - 1);
  const R ulp = std::ldexp(R(1), e - (std::numeric_limits<T>::digits - 1));
  return static_cast<double>(std::fabs(static_cast<R>(value) - ref) / ulp);
}

}  // namespace jx::testing
