// CPU kernels of the elementwise binary primitives, integer_pow and clamp (their rules:
// src/lax/elementwise_binary.cpp). Integer arithmetic wraps; integer division and shifts
// follow XLA's defined results for the cases C leaves undefined (see Div, Rem and the
// shifts below).
#include <cmath>
#include <complex>
#include <limits>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/vector_math.h"
#include "core/array_internal.h"
#include "lax/reduction_ops.h"
#include "math/scalar_functions.h"

namespace jx::cpu {
namespace {

using namespace kinds;

// ---- arithmetic ----

struct Add {
  template <Number C>
  C operator()(C a, C b) const { return wrap_add(a, b); }
};
struct Sub {
  template <Number C>
  C operator()(C a, C b) const { return wrap_sub(a, b); }
};
struct Mul {
  template <Number C>
  C operator()(C a, C b) const { return wrap_mul(a, b); }
};
struct Div {
  // Integers round toward zero. XLA defines the cases C leaves undefined:
  // x / 0 = -1 (all bits set: UINT_MAX for unsigned) and INT_MIN / -1 = INT_MIN.
  template <Int C>
  C operator()(C a, C b) const {
    if (b == 0) return static_cast<C>(-1);
    if constexpr (std::is_signed_v<C>)
      if (b == -1) return wrap_neg(a);
    return static_cast<C>(a / b);
  }
  template <Inexact C>
  C operator()(C a, C b) const { return a / b; }
};
struct Rem {
  // The sign of the dividend, as C's % and fmod. XLA: x % 0 = x, INT_MIN % -1 = 0.
  template <Int C>
  C operator()(C a, C b) const {
    if (b == 0) return a;
    if constexpr (std::is_signed_v<C>)
      if (b == -1) return C(0);
    return static_cast<C>(a % b);
  }
  template <Real C>
  C operator()(C a, C b) const { return std::fmod(a, b); }
};

// x^n by binary exponentiation, n of any sign (a negative n gives 1 / x^|n|).
template <class C>
C power_by_squaring(C x, int64_t n) {
  uint64_t e = n < 0 ? uint64_t{0} - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
  C acc(1);
  bool started = false;  // avoids multiplying by 1, which complex inf/NaN would spoil
  while (e) {
    if (e & 1) {
      acc = started ? wrap_mul(acc, x) : x;
      started = true;
    }
    e >>= 1;
    if (e) x = wrap_mul(x, x);
  }
  if constexpr (Inexact<C>)
    if (n < 0) return C(1) / acc;
  return acc;
}

struct Pow {
  static constexpr VecOp2 vec2 = VecOp2::Pow;
  // 0^y: 1 for y = 0, 0 for real y > 0, NaN otherwise (as XLA); else exp(y log x).
  template <Complex C>
  C operator()(C a, C b) const {
    using R = typename C::value_type;
    if (a == C(0)) {
      if (b == C(0)) return C(1);
      if (b.imag() == 0 && b.real() > 0) return C(0);
      return C(std::numeric_limits<R>::quiet_NaN(), std::numeric_limits<R>::quiet_NaN());
    }
    return std::pow(a, b);
  }
};
// pow with an integer exponent array: exact repeated squaring, as JAX lowers it.
struct PowIntExponent {
  template <Inexact C, Int E>
  C operator()(C a, E n) const { return power_by_squaring(a, static_cast<int64_t>(n)); }
};

struct IntegerPow {
  int64_t y;
  // Binary exponentiation across a whole block, so each step is a vectorizable loop.
  template <Number C>
  void block(const C* x, C* out, int64_t n) const {
    C base[kBlock];
    std::copy(x, x + n, base);  // x may be out
    uint64_t e = y < 0 ? uint64_t{0} - static_cast<uint64_t>(y) : static_cast<uint64_t>(y);
    if (e == 0) std::fill_n(out, n, C(1));
    bool started = false;
    while (e) {
      if (e & 1) {
        if (started) {
          for (int64_t i = 0; i < n; ++i) out[i] = wrap_mul(out[i], base[i]);
        } else {
          std::copy(base, base + n, out);
          started = true;
        }
      }
      e >>= 1;
      if (e)
        for (int64_t i = 0; i < n; ++i) base[i] = wrap_mul(base[i], base[i]);
    }
    if constexpr (Inexact<C>)
      if (y < 0)
        for (int64_t i = 0; i < n; ++i) out[i] = C(1) / out[i];
  }
};

// ---- ordering ----

template <Complex C>
bool has_nan(C z) {
  return std::isnan(z.real()) || std::isnan(z.imag());
}
// Complex numbers order lexicographically (real part, then imaginary), as XLA.
template <Complex C>
bool lex_greater(C a, C b) {
  return a.real() > b.real() || (a.real() == b.real() && a.imag() > b.imag());
}

struct Max {  // NaN-propagating; floats: IEEE maximum (lax/reduction_ops.h)
  bool operator()(bool a, bool b) const { return a || b; }
  template <Int C>
  C operator()(C a, C b) const { return a > b ? a : b; }
  template <Real C>
  C operator()(C a, C b) const { return lax::kernels::ieee_maximum(a, b); }
  template <Complex C>
  C operator()(C a, C b) const {
    if (has_nan(a)) return a;
    if (has_nan(b)) return b;
    return lex_greater(b, a) ? b : a;
  }
};
struct Min {
  bool operator()(bool a, bool b) const { return a && b; }
  template <Int C>
  C operator()(C a, C b) const { return a < b ? a : b; }
  template <Real C>
  C operator()(C a, C b) const { return lax::kernels::ieee_minimum(a, b); }
  template <Complex C>
  C operator()(C a, C b) const {
    if (has_nan(a)) return a;
    if (has_nan(b)) return b;
    return lex_greater(a, b) ? b : a;
  }
};
struct Clamp {  // min(max(x, lo), hi), as XLA
  template <class C>
  C operator()(C lo, C x, C hi) const { return Min{}(Max{}(x, lo), hi); }
};

// A binary function of the scalar math library (src/math/scalar_functions.h), the one
// native kernels call too: computed in float64, rounded once.
struct ScalarMathBinary {
  double (*fn)(double, double);
  template <Real C>
  C operator()(C a, C b) const { return static_cast<C>(fn(static_cast<double>(a), static_cast<double>(b))); }
};
ImplRule scalar_math_impl(const char* name) {
  const math::ScalarFunction* f = math::find_scalar_function(name);
  if (!f || f->arity != 2) detail::fail(name, "is not a binary function of the scalar math library");
  return binary_impl(name, ScalarMathBinary{f->binary});
}

struct Atan2 {
  static constexpr VecOp2 vec2 = VecOp2::Atan2;
  // atan2(x, y) = -i log((y + i x) / sqrt(x^2 + y^2)), the complex extension XLA uses.
  template <Complex C>
  C operator()(C x, C y) const {
    const C i(0, 1);
    return -i * std::log((y + i * x) / std::sqrt(x * x + y * y));
  }
};

// nextafter for a binary16 or bfloat16 storage type T, stepping its own bit pattern
// (computing in float would step float32's much finer grid).
template <class T>
struct NextAfterHalf {
  float operator()(float a, float b) const {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
    if (a == b) return b;
    uint16_t bits = T(a).bits;
    if (a == 0) bits = static_cast<uint16_t>((T(b).bits & 0x8000u) | 1u);  // smallest subnormal toward b
    else if ((a < b) == (a > 0)) ++bits;  // away from zero
    else --bits;
    return static_cast<float>(T::from_bits(bits));
  }
};
struct NextAfter {
  template <Real C>
  C operator()(C a, C b) const { return std::nextafter(a, b); }
};

// ---- bits ----

struct And {
  bool operator()(bool a, bool b) const { return a && b; }
  template <Int C>
  C operator()(C a, C b) const { return static_cast<C>(a & b); }
};
struct Or {
  bool operator()(bool a, bool b) const { return a || b; }
  template <Int C>
  C operator()(C a, C b) const { return static_cast<C>(a | b); }
};
struct Xor {
  bool operator()(bool a, bool b) const { return a != b; }
  template <Int C>
  C operator()(C a, C b) const { return static_cast<C>(a ^ b); }
};

// Shift amounts are read as unsigned (so negative ones are huge). XLA defines shifts by
// at least the bit width: 0 for left and logical right shifts, the sign for arithmetic.
template <class C>
inline constexpr unsigned kBits = sizeof(C) * 8;
struct ShiftLeft {
  template <Int C>
  C operator()(C a, C b) const {
    using U = std::make_unsigned_t<C>;
    if (static_cast<U>(b) >= kBits<C>) return C(0);
    return static_cast<C>(static_cast<wrap_unsigned_t<C>>(static_cast<U>(a)) << static_cast<U>(b));
  }
};
struct ShiftRightLogical {
  template <Int C>
  C operator()(C a, C b) const {
    using U = std::make_unsigned_t<C>;
    if (static_cast<U>(b) >= kBits<C>) return C(0);
    return static_cast<C>(static_cast<U>(a) >> static_cast<U>(b));
  }
};
struct ShiftRightArithmetic {  // unsigned operands shift as their signed reinterpretation
  template <Int C>
  C operator()(C a, C b) const {
    using U = std::make_unsigned_t<C>;
    using S = std::make_signed_t<C>;
    const S s = static_cast<S>(a);
    if (static_cast<U>(b) >= kBits<C>) return static_cast<C>(s < 0 ? S(-1) : S(0));
    return static_cast<C>(s >> static_cast<U>(b));
  }
};

// ---- comparisons ----

struct Eq {
  template <class C>
  bool operator()(C a, C b) const { return a == b; }
};
struct Ne {
  template <class C>
  bool operator()(C a, C b) const { return a != b; }
};
struct Lt {
  template <Ordered C>
  bool operator()(C a, C b) const { return a < b; }
};
struct Le {
  template <Ordered C>
  bool operator()(C a, C b) const { return a <= b; }
};
struct Gt {
  template <Ordered C>
  bool operator()(C a, C b) const { return a > b; }
};
struct Ge {
  template <Ordered C>
  bool operator()(C a, C b) const { return a >= b; }
};

std::vector<Array> pow_impl(std::span<const Array> in, const Params&, std::span<const Aval> out_avals) {
  Array out = detail::alloc_array(out_avals[0]);
  if (in[0].dtype() == in[1].dtype()) {
    apply_binary("pow", Pow{}, in[0], in[1], out);
  } else if (out.size() > 0) {
    dispatch_dtype(in[0].dtype(), [&]<class T>() {
      dispatch_dtype(in[1].dtype(), [&]<class E>() {
        if constexpr (Inexact<compute_t<T>> && Int<E>) map_binary<T, E, T>(in[0], in[1], out, PowIntExponent{});
        else fail_no_kernel("pow", in[1].dtype());
      });
    });
  }
  return {out};
}

std::vector<Array> integer_pow_impl(std::span<const Array> in, const Params& params, std::span<const Aval> out_avals) {
  Array out = detail::alloc_array(out_avals[0]);
  apply_unary("integer_pow", IntegerPow{params.get_int("y")}, in[0], out);
  return {out};
}

std::vector<Array> nextafter_impl(std::span<const Array> in, const Params&, std::span<const Aval> out_avals) {
  Array out = detail::alloc_array(out_avals[0]);
  if (out.size() == 0) return {out};
  switch (in[0].dtype()) {
    case DType::Float16: map_binary<float16_t, float16_t, float16_t>(in[0], in[1], out, NextAfterHalf<float16_t>{}); break;
    case DType::BFloat16: map_binary<bfloat16_t, bfloat16_t, bfloat16_t>(in[0], in[1], out, NextAfterHalf<bfloat16_t>{}); break;
    default: apply_binary("nextafter", NextAfter{}, in[0], in[1], out);
  }
  return {out};
}

// A 0-d bound seen with x's shape through stride-0 strides: no copy.
Array broadcast_scalar_view(const Array& s, const Shape& shape) {
  if (s.ndim() != 0) return s;
  return detail::make_view(s, Aval{shape, s.dtype(), s.weak_type()},
                           std::vector<int64_t>(shape.size(), 0), s.impl().offset);
}

std::vector<Array> clamp_impl(std::span<const Array> in, const Params&, std::span<const Aval> out_avals) {
  Array out = detail::alloc_array(out_avals[0]);
  if (out.size() == 0) return {out};
  Array lo = broadcast_scalar_view(in[0], out.shape());
  Array hi = broadcast_scalar_view(in[2], out.shape());
  dispatch_dtype(in[1].dtype(), [&]<class T>() { map_ternary<T, T, T, T>(lo, in[1], hi, out, Clamp{}); });
  return {out};
}

}  // namespace

void add_binary_kernels(detail::KernelTable& table) {
  table.add("add", binary_impl<Add>("add"));
  table.add("sub", binary_impl<Sub>("sub"));
  table.add("mul", binary_impl<Mul>("mul"));
  table.add("div", binary_impl<Div>("div"));
  table.add("rem", binary_impl<Rem>("rem"));
  table.add("pow", pow_impl);
  table.add("integer_pow", integer_pow_impl);
  table.add("max", binary_impl<Max>("max"));
  table.add("min", binary_impl<Min>("min"));
  table.add("atan2", binary_impl<Atan2>("atan2"));
  table.add("nextafter", nextafter_impl);
  table.add("polygamma", scalar_math_impl("polygamma"));
  table.add("zeta", scalar_math_impl("zeta"));
  table.add("and", binary_impl<And>("and"));
  table.add("or", binary_impl<Or>("or"));
  table.add("xor", binary_impl<Xor>("xor"));
  table.add("shift_left", binary_impl<ShiftLeft>("shift_left"));
  table.add("shift_right_arithmetic", binary_impl<ShiftRightArithmetic>("shift_right_arithmetic"));
  table.add("shift_right_logical", binary_impl<ShiftRightLogical>("shift_right_logical"));
  table.add("eq", binary_impl<Eq>("eq"));
  table.add("ne", binary_impl<Ne>("ne"));
  table.add("lt", binary_impl<Lt>("lt"));
  table.add("le", binary_impl<Le>("le"));
  table.add("gt", binary_impl<Gt>("gt"));
  table.add("ge", binary_impl<Ge>("ge"));
  table.add("clamp", clamp_impl);
}

}  // namespace jx::cpu
