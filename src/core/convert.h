// Element conversion with defined results for every pair of dtypes: floats saturate
// into integer ranges and NaN becomes 0 (XLA's semantics, never C++ UB), complex to
// real keeps the real part, anything to bool tests for nonzero.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "jx/dtype.h"

namespace jx::detail {

template <class T>
struct widen { using type = T; };
template <>
struct widen<float16_t> { using type = float; };
template <>
struct widen<bfloat16_t> { using type = float; };
// The arithmetic type a stored element computes in.
template <class T>
using compute_t = typename widen<T>::type;

template <class To, class From>
inline To convert_value(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_half_v<From>) {
    return convert_value<To>(static_cast<float>(v));
  } else if constexpr (is_complex_v<From>) {
    if constexpr (std::is_same_v<To, bool>) return v.real() != 0 || v.imag() != 0;
    else if constexpr (is_complex_v<To>) return To(static_cast<typename To::value_type>(v.real()),
                                                   static_cast<typename To::value_type>(v.imag()));
    else return convert_value<To>(v.real());
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (is_complex_v<To>) {
    return To(static_cast<typename To::value_type>(v), 0);
  } else if constexpr (is_half_v<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (std::isnan(v)) return To(0);
    constexpr auto lo = static_cast<From>(std::numeric_limits<To>::min());
    // The largest integer of To that From represents below 2^bits.
    constexpr From hi_bound = static_cast<From>(std::numeric_limits<To>::max());
    if (v <= lo) return std::numeric_limits<To>::min();
    if (v >= hi_bound) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);  // int <-> int wraps as C++ does (two's complement)
  }
}

// Converts n contiguous elements.
void convert_buffer(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n);

}  // namespace jx::detail
