// The monoids behind reductions and cumulative ops (sum, prod, max, min, and, or): the
// CPU kernels (src/backend/cpu/kernels/{reductions,cumulative}.cpp) combine with them, and
// the reductions' native-kernel reducers (src/lax/reductions.cpp) start from their identities.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/convert.h"

namespace jx::lax::kernels {

template <class A>
inline bool is_nan(const A& v) {
  if constexpr (is_complex_v<A>) return std::isnan(v.real()) || std::isnan(v.imag());
  else if constexpr (std::is_floating_point_v<A>) return std::isnan(v);
  else return false;
}

// Lexicographic (real, then imaginary) order on complex values, as JAX's max/min and
// sort; callers handle NaN first.
template <class C>
inline bool complex_greater(const C& a, const C& b) {
  return a.real() > b.real() || (a.real() == b.real() && a.imag() > b.imag());
}

template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Integer sums and products accumulate in unsigned arithmetic: it wraps the way NumPy
// and XLA do, where signed overflow would be undefined behaviour. Narrowing the
// result back keeps the low bits, which is the same answer.
template <class T>
using arith_acc_t = std::conditional_t<is_int_v<T>, std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>,
                                       detail::compute_t<T>>;

template <class T>
struct SumOp {
  using Acc = arith_acc_t<T>;
  static constexpr bool kSupported = !std::is_same_v<T, bool>;
  static constexpr bool kVectorSelect = std::is_floating_point_v<T>;
  static constexpr bool kPairwise = true;  // rounding error grows with the depth of the sum tree
  template <class V>
  static V combine_vector(V a, V v) {
    return a + v;
  }
  static Acc identity() { return Acc(0); }
  static Acc load(T v) { return static_cast<Acc>(v); }
  static Acc combine(Acc a, Acc b) { return static_cast<Acc>(a + b); }
  static T store(Acc a) { return static_cast<T>(a); }
};

template <class T>
struct ProdOp {
  using Acc = arith_acc_t<T>;
  static constexpr bool kSupported = !std::is_same_v<T, bool>;
  static constexpr bool kVectorSelect = std::is_floating_point_v<T>;
  static constexpr bool kPairwise = true;
  template <class V>
  static V combine_vector(V a, V v) {
    return a * v;
  }
  static Acc identity() { return Acc(1); }
  static Acc load(T v) { return static_cast<Acc>(v); }
  static Acc combine(Acc a, Acc b) {
    // The textbook formula (as NumPy), not std::complex's C99 Annex G special cases.
    if constexpr (is_complex_v<Acc>)
      return Acc(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
    else return static_cast<Acc>(a * b);
  }
  static T store(Acc a) { return static_cast<T>(a); }
};

// IEEE 754-2019 maximum and minimum of real floats, as XLA's max and min (so jnp.maximum,
// jnp.max and lax.max): NaN if either is NaN, and +0 above -0 whatever the order (NumPy
// returns the second of two equal values: np.maximum(0.0, -0.0) is -0.0, jnp's +0.0).
// Equal values differ only when they are zeros of opposite signs.
// Written as selects and bit operations, which GCC's vectorizer takes (a conditional
// a + b, or || between NaN tests, left the loop scalar: an eager maximum of 65536 floats
// ran 34 us, 7 vectorized): x86's max (min) both ways round, which differ only for
// zeros of opposite signs (x86 returns the second of equal values) or NaN, combined by
// their bits' AND (OR); where either operand is NaN, the quiet-NaN bits ORed in make the
// result a NaN (its payload unspecified, as XLA's).
template <class F>
inline F ieee_extremum(F a, F b, bool maximum) {
  using U = std::conditional_t<sizeof(F) == 8, uint64_t, uint32_t>;
  constexpr U kQuietNaN = sizeof(F) == 8 ? U(0x7ff8000000000000ull) : U(0x7fc00000u);
  const F one = maximum ? (a > b ? a : b) : (a < b ? a : b);
  const F other = maximum ? (b > a ? b : a) : (b < a ? b : a);
  const U bits = maximum ? U(std::bit_cast<U>(one) & std::bit_cast<U>(other))
                         : U(std::bit_cast<U>(one) | std::bit_cast<U>(other));
  return std::bit_cast<F>(U(bits | (std::isunordered(a, b) ? kQuietNaN : U(0))));
}
template <class F>
inline F ieee_maximum(F a, F b) {
  return ieee_extremum(a, b, true);
}
template <class F>
inline F ieee_minimum(F a, F b) {
  return ieee_extremum(a, b, false);
}

// The same on whole vectors (GCC/Clang vector extensions), in few instructions, since
// eager reductions' row loops (combine_row) are made of them, on baseline x86-64's SSE2
// where a select is three instructions: x86's max (min) taken both ways round, which
// differ only where the lanes are zeros of opposite signs (x86 returns the second of
// equal values), combined by their bits' AND for a maximum (+0 if either is +0; the value
// itself where they agree), OR for a minimum; NaN lanes take a + v. (A contiguous run's
// extreme is block_extreme.inc's, in the CPU's widest vectors.)
template <class V>
inline V vector_ieee_extremum(V a, V v, bool maximum) {
  using Lane = std::remove_cvref_t<decltype(a[0])>;
  using Bits [[gnu::vector_size(sizeof(V))]] = std::conditional_t<sizeof(Lane) == 8, int64_t, int32_t>;
  const V one = maximum ? ((a > v) ? a : v) : ((a < v) ? a : v);
  const V other = maximum ? ((v > a) ? v : a) : ((v < a) ? v : a);
  const V r = maximum ? V(Bits(one) & Bits(other)) : V(Bits(one) | Bits(other));
  return (a != a || v != v) ? a + v : r;
}

template <class T>
struct MaxOp {
  using Acc = detail::compute_t<T>;
  static constexpr bool kSupported = true;
  static constexpr bool kVectorSelect = std::is_floating_point_v<T>;
  template <class V>
  static V combine_vector(V a, V v) {
    return vector_ieee_extremum(a, v, true);
  }
  static Acc identity() {
    if constexpr (is_complex_v<Acc>) return Acc(-std::numeric_limits<typename Acc::value_type>::infinity(), 0);
    else if constexpr (std::is_floating_point_v<Acc>) return -std::numeric_limits<Acc>::infinity();
    else return std::numeric_limits<Acc>::lowest();
  }
  static Acc load(T v) { return static_cast<Acc>(v); }
  static Acc combine(Acc a, Acc b) {
    if constexpr (is_complex_v<Acc>) {
      if (is_nan(a)) return a;
      if (is_nan(b)) return b;
      return complex_greater(b, a) ? b : a;
    } else if constexpr (std::is_floating_point_v<Acc>) {
      return ieee_maximum(a, b);
    } else {
      return a > b ? a : b;
    }
  }
  static T store(Acc a) { return static_cast<T>(a); }
};

template <class T>
struct MinOp {
  using Acc = detail::compute_t<T>;
  static constexpr bool kSupported = true;
  static constexpr bool kVectorSelect = std::is_floating_point_v<T>;
  template <class V>
  static V combine_vector(V a, V v) {
    return vector_ieee_extremum(a, v, false);
  }
  static Acc identity() {
    if constexpr (is_complex_v<Acc>) return Acc(std::numeric_limits<typename Acc::value_type>::infinity(), 0);
    else if constexpr (std::is_floating_point_v<Acc>) return std::numeric_limits<Acc>::infinity();
    else return std::numeric_limits<Acc>::max();
  }
  static Acc load(T v) { return static_cast<Acc>(v); }
  static Acc combine(Acc a, Acc b) {
    if constexpr (is_complex_v<Acc>) {
      if (is_nan(a)) return a;
      if (is_nan(b)) return b;
      return complex_greater(a, b) ? b : a;
    } else if constexpr (std::is_floating_point_v<Acc>) {
      return ieee_minimum(a, b);
    } else {
      return a < b ? a : b;
    }
  }
  static T store(Acc a) { return static_cast<T>(a); }
};

// Logical on bool, bitwise on integers (lax.reduce_and / reduce_or).
template <class T>
struct AndOp {
  using Acc = T;
  static constexpr bool kSupported = std::is_integral_v<T>;
  static Acc identity() {
    if constexpr (std::is_same_v<T, bool>) return true;
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(~T(0));
    else return T();
  }
  static Acc load(T v) { return v; }
  static Acc combine(Acc a, Acc b) {
    if constexpr (std::is_same_v<T, bool>) return a && b;
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(a & b);
    else return a;
  }
  static T store(Acc a) { return a; }
};

template <class T>
struct OrOp {
  using Acc = T;
  static constexpr bool kSupported = std::is_integral_v<T>;
  static Acc identity() { return T(); }
  static Acc load(T v) { return v; }
  static Acc combine(Acc a, Acc b) {
    if constexpr (std::is_same_v<T, bool>) return a || b;
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(a | b);
    else return a;
  }
  static T store(Acc a) { return a; }
};

}  // namespace jx::lax::kernels
