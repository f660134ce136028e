// sin, cos, tan, log, log1p, expm1 and tanh for float32 and float64 as straight-line IEEE
// arithmetic that vectorizes: range reduction, a polynomial, bit manipulation for the
// exponent, selects for the special cases. Each is written once, as a template over an
// arithmetic `A`, and instantiated twice: on LLVM values in native kernels
// (jit/codegen/fast_math.cpp, where the loop vectorizer widens the emitted instructions)
// and on C++ scalars (ScalarArithmetic below, the twin tests compare kernels with bit for
// bit). Both perform the same operations in the same order with fma where written, so
// they round identically.
//
// Methods (coefficients and constant splits from scripts/fit_fast_functions.py: Chebyshev
// fits in 50-digit arithmetic rounded to the target precision):
//   sin   q = round(x / pi) (the shifter trick), r = x - q pi in three fma steps (pi =
//         P1 + P2 + P3, the first step exact), sin(x) = (-1)^q (r + r^3 S(r^2)) on
//         |r| <= pi/2, S of degree 4 (f32) / 8 (f64); x itself for tiny |x| (zeros keep
//         their sign).
//   cos   n = round(x / pi - 1/2), q = 2n + 1, r = x - q pi/2 (three fma steps), cos(x) =
//         (-1)^(n+1) sin(r) with the same polynomial; 1 for tiny |x|.
//   tan   q = round(2x / pi), r = x - q pi/2, s and c the sine and cosine polynomials on
//         |r| <= pi/4, tan = s / c for even q, -c / s for odd q.
//   log   x = 2^e m with m in [sqrt(1/2), sqrt(2)) by integer arithmetic on the bits
//         (subnormals scaled by 2^mantissa first), f = m - 1 exact; f32: log1p(f) = f +
//         f^2 (f L(f) - 1/2), L of degree 7; f64: s = f / (2 + f), log1p(f) = f - (h - s
//         (h + s^2 R(s^2))) with h = f^2 / 2, R of degree 6; then + e ln2 (ln2 in two
//         parts). log(0) = -inf, log(x < 0) = NaN, log(inf) = inf.
//   log1p u = 1 + x, log(u) plus the rounding error of the sum, (x - (u - 1)) / u; x
//         itself for tiny |x|.
//   expm1 n = round(x / ln2), r = x - n ln2, expm1(r) = r + r^2 P(r) (exp's polynomial,
//         fast_math.cpp), expm1(x) = 2^n expm1(r) + (2^n - 1) in one fma; x below -30
//         (f32) / -40 (f64) gives -1, x above 88.37 / 709.43 (where 2^n leaves the
//         exponent range, up to the overflow threshold) and NaN take the rare path.
//   tanh  u = expm1(2|x|) as above, tanh |x| = u / (u + 2), x's sign put back; |x| is
//         clamped at 10 (f32) / 22 (f64), past which tanh rounds to 1 and u + 2 = u. Every
//         input is computed inline (no rare path). The form keeps the error near 2 ULP at
//         both ends: for small |x| the quotient is u / 2 to first order, for large |x|
//         an error in u moves the quotient by 2 / u of it.
//
// sin, cos and tan reduce exactly enough only for |x| <= kTrigFastLimit (f32 2^18, f64
// 2^28; NaN included): larger arguments, and infinities, take the arithmetic's rare path
// (A::rare) to the libmvec variant eager runs (Payne-Hanek reduction), so every result
// is accurate; log, log1p and expm1 send the inputs outside their ordinary domain there
// too (rare_condition). In kernels that path is a call made only for the vectors that
// hold such an input (scalar_ops.h, emit_rare_math_call).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstddef>
#include <type_traits>

namespace jx::math {

enum class FastFunction { Sin, Cos, Tan, Log, Log1p, Expm1, Tanh };
inline constexpr FastFunction kFastFunctions[] = {FastFunction::Sin,   FastFunction::Cos,   FastFunction::Tan,
                                                  FastFunction::Log,   FastFunction::Log1p, FastFunction::Expm1,
                                                  FastFunction::Tanh};
constexpr const char* fast_function_name(FastFunction f) {
  switch (f) {
    case FastFunction::Sin: return "sin";
    case FastFunction::Cos: return "cos";
    case FastFunction::Tan: return "tan";
    case FastFunction::Log: return "log";
    case FastFunction::Log1p: return "log1p";
    case FastFunction::Expm1: return "expm1";
    case FastFunction::Tanh: return "tanh";
  }
  return "?";
}
// Every function but tanh has a rare path: eager's libmvec variant of the same name, for
// the inputs its fast path leaves out (see below).

template <class T>
struct FloatTraits;
template <>
struct FloatTraits<float> {
  using Bits = uint32_t;
  static constexpr int kMantissa = 23;
  static constexpr int kBias = 127;
  static constexpr double kShifter = 0x1.8p23;  // 1.5 * 2^23: x + it rounds x to an integer
  static constexpr double kTrigFastLimit = 0x1p18;
  static constexpr double kCosOne = 0x1p-13;  // below, cos rounds to 1
  // expm1: -1 below Low; High is where 2^round(x / ln2) stops being a float.
  static constexpr double kExpm1Low = -30, kExpm1High = 88.37;
  // tanh rounds to 1 from 9.01 on; expm1(2 * 10) + 2 rounds to expm1(2 * 10).
  static constexpr double kTanhOne = 10;
};
template <>
struct FloatTraits<double> {
  using Bits = uint64_t;
  static constexpr int kMantissa = 52;
  static constexpr int kBias = 1023;
  static constexpr double kShifter = 0x1.8p52;
  static constexpr double kTrigFastLimit = 0x1p28;
  static constexpr double kCosOne = 0x1p-27;
  static constexpr double kExpm1Low = -40, kExpm1High = 709.43;
  static constexpr double kTanhOne = 22;  // tanh rounds to 1 from 19.06 on
};

namespace fast_detail {

// pi and pi/2 in three parts each exactly representable in T (hi + mid + lo = pi to
// about 3x T's precision).
template <class T>
struct PiParts;
template <>
struct PiParts<float> {
  static constexpr double hi = 0x1.921fb6p+1, mid = -0x1.777a5cp-24, lo = -0x1.ee59dap-49;
};
template <>
struct PiParts<double> {
  static constexpr double hi = 0x1.921fb54442d18p+1, mid = 0x1.1a62633145c07p-53, lo = -0x1.f1976b7ed8fbcp-109;
};
constexpr double kInvPi = 0.318309886183790671537767526745028724;
constexpr double kTwoOverPi = 0.636619772367581343075535053490057448;
constexpr double kLn2 = 0.693147180559945309417232121458176568;
constexpr double kLog2e = 1.44269504088896340735992468100189214;

// ln2 in two parts: hi times any exponent is exact.
template <class T>
struct Ln2Parts;
template <>
struct Ln2Parts<float> {
  static constexpr double hi = 0x1.62e4p-1, lo = 0x1.7f7d1cp-20;
};
template <>
struct Ln2Parts<double> {
  static constexpr double hi = 0x1.62e42feep-1, lo = 0x1.a39ef35793c76p-33;
};

// Polynomial coefficients, lowest degree first, per precision.
template <class T>
struct Coefficients;
template <>
struct Coefficients<float> {
  // sin(r) = r + r^3 S(r^2) on |r| <= pi/2 (+ 0.01%).
  static constexpr double sin_half_pi[] = {-0x1.555554p-3, 0x1.11104ep-7, -0x1.9fb67cp-13, 0x1.61a0bap-19};
  // sin(r) = r + r^3 S(r^2) and cos(r) = 1 - r^2/2 + r^4 C(r^2) on |r| <= pi/4 (+ 0.01%).
  static constexpr double sin_quarter_pi[] = {-0x1.555556p-3, 0x1.11110ep-7, -0x1.a013a6p-13, 0x1.6dbdd2p-19};
  static constexpr double cos_quarter_pi[] = {0x1.555554p-5, -0x1.6c12d2p-10, 0x1.9bd864p-16};
  // log1p(f) = f - f^2/2 + f^3 L(f) on f in [sqrt(1/2) - 1, sqrt(2) - 1].
  static constexpr double log1p[] = {0x1.555554p-2, -0x1.0000cep-2, 0x1.999f16p-3, -0x1.54d02ep-3,
                                     0x1.231cbcp-3, -0x1.0a34a6p-3, 0x1.02831p-3,  -0x1.43b1f8p-4};
  // expm1(r) = r + r^2 P(r) on |r| <= ln2/2: exp's polynomial (fast_math.cpp, where
  // exp(r) = 1 + r (1 + r P(r))).
  static constexpr double expm1[] = {0x1.fffffcp-2, 0x1.555492p-3, 0x1.5558b8p-5, 0x1.1239acp-7, 0x1.6a4572p-10};
};
template <>
struct Coefficients<double> {
  static constexpr double sin_half_pi[] = {-0x1.5555555555555p-3, 0x1.1111111111107p-7, -0x1.a01a01a018aa6p-13,
                                           0x1.71de3a54562a8p-19, -0x1.ae6455a1a9e7ep-26, 0x1.6124014cbe2fcp-33,
                                           -0x1.ae513415aadccp-41, 0x1.89a3f16388edcp-49};
  static constexpr double sin_quarter_pi[] = {-0x1.5555555555555p-3, 0x1.1111111110bb1p-7, -0x1.a01a019e8357dp-13,
                                              0x1.71de37961e4c6p-19, -0x1.ae600a926c89ap-26, 0x1.5e0af186af739p-33};
  static constexpr double cos_quarter_pi[] = {0x1.5555555555555p-5,  -0x1.6c16c16c16966p-10, 0x1.a01a019f4e867p-16,
                                              -0x1.27e4fa17a41b4p-22, 0x1.1eeb68b109173p-29, -0x1.907d7aebd5e3dp-37};
  // 2 atanh(s) = 2s + s z R(z), z = s^2 <= (3 - 2 sqrt 2)^2.
  static constexpr double log_r[] = {0x1.5555555555558p-1, 0x1.99999999952ccp-2, 0x1.2492492df3ba9p-2,
                                     0x1.c71c62e26208bp-3, 0x1.7462b58e46ebep-3, 0x1.39fe42e9740a7p-3,
                                     0x1.2b59b713616c9p-3};
  static constexpr double expm1[] = {0x1.0000000000001p-1, 0x1.5555555555556p-3, 0x1.5555555553d56p-5,
                                     0x1.11111111109afp-7, 0x1.6c16c17890eb4p-10, 0x1.a01a01a7c73c0p-13,
                                     0x1.a019b8f9792eep-16, 0x1.71de0da24602dp-19, 0x1.28919ccaf9211p-22,
                                     0x1.af38c67fbb53ep-26};
};

// c[0] + c[1] t + ... + c[N-1] t^(N-1), Horner's rule with fma. (Estrin's scheme, with
// its shorter dependency chain, measured slower here: float32 log 1.14 -> 1.51 ns per
// element on Zen 1 with AVX2, whose two FMA pipes, not latency, bound these loops.)
template <class A, size_t N>
typename A::F polynomial(A& a, typename A::F t, const double (&c)[N]) {
  typename A::F p = a.c(c[N - 1]);
  for (size_t k = N - 1; k-- > 0;) p = a.fma(p, t, a.c(c[k]));
  return p;
}

// n = round(x * factor) by the shifter: z = x * factor + 1.5 * 2^mantissa holds n in its
// low mantissa bits (no float-to-int conversion, which NaN would make poison), and n as
// a T. Valid while |x * factor| < 2^(mantissa - 1).
template <class T, class A>
struct Rounded {
  typename A::F z, n;
};
template <class T, class A>
Rounded<T, A> round_product(A& a, typename A::F x, double factor) {
  const auto z = a.fma(x, a.c(factor), a.c(FloatTraits<T>::kShifter));
  return {z, a.sub(z, a.c(FloatTraits<T>::kShifter))};
}

// sin(r) = r + r^3 S(r^2) on |r| <= pi/2.
template <class T, class A>
typename A::F sin_half_pi(A& a, typename A::F r) {
  const auto t = a.mul(r, r);
  return a.fma(a.mul(r, t), polynomial(a, t, Coefficients<T>::sin_half_pi), r);
}

// x - q (hi + mid + lo) * scale, scale 1 or 1/2 (exact halving of each part).
template <class T, class A>
typename A::F reduce(A& a, typename A::F x, typename A::F q, double scale) {
  using P = PiParts<T>;
  typename A::F r = a.fma(q, a.c(-P::hi * scale), x);
  r = a.fma(q, a.c(-P::mid * scale), r);
  return a.fma(q, a.c(-P::lo * scale), r);
}

// The integer in the low bits of z = v + shifter, moved to the sign bit: a mask that
// flips the sign of a T when that integer is odd.
template <class T, class A>
typename A::I odd_to_sign(A& a, typename A::F z) {
  return a.shl(a.bits(z), 8 * static_cast<int>(sizeof(T)) - 1);
}

template <class T, class A>
typename A::F flip_sign(A& a, typename A::F y, typename A::I sign) {
  return a.from_bits(a.ixor(a.bits(y), sign));
}

// 2^e for an integer e (as A::I) in T's normal range.
template <class T, class A>
typename A::F power_of_two(A& a, typename A::I e) {
  return a.from_bits(a.shl(a.iadd(e, a.ci(FloatTraits<T>::kBias)), FloatTraits<T>::kMantissa));
}

// log(x) for a positive normal finite x; anything else gives garbage the callers route
// to their rare path.
template <class T, class A>
typename A::F log_normal(A& a, typename A::F x) {
  using Tr = FloatTraits<T>;
  using F = typename A::F;
  using I = typename A::I;
  const bool f32 = std::is_same_v<T, float>;
  const I sqrt_half = a.bits(a.c(f32 ? 0x1.6a09e6p-1 : 0x1.6a09e667f3bcdp-1));
  const I ix = a.isub(a.bits(x), sqrt_half);
  const I e = a.ashr(ix, Tr::kMantissa);
  const I mantissa_mask = a.ci(static_cast<int64_t>((typename Tr::Bits{1} << Tr::kMantissa) - 1));
  const F m = a.from_bits(a.iadd(a.iand(ix, mantissa_mask), sqrt_half));
  const F f = a.sub(m, a.c(1.0));
  F p;
  if constexpr (f32) {
    const F t = a.mul(f, f);
    p = a.fma(t, a.fma(f, polynomial(a, f, Coefficients<float>::log1p), a.c(-0.5)), f);
  } else {
    const F s = a.div(f, a.add(f, a.c(2.0)));
    const F z = a.mul(s, s);
    const F h = a.mul(a.mul(f, f), a.c(0.5));
    const F r = a.mul(z, polynomial(a, z, Coefficients<double>::log_r));
    p = a.sub(f, a.sub(h, a.mul(s, a.add(h, r))));
  }
  const F ef = a.to_float(e);
  return a.fma(ef, a.c(Ln2Parts<T>::hi), a.fma(ef, a.c(Ln2Parts<T>::lo), p));
}

// expm1(x) for x in [kExpm1Low, kExpm1High], without the special cases: n = round(x /
// ln2), r = x - n ln2, 2^n expm1(r) + (2^n - 1) in one fma.
template <class T, class A>
typename A::F expm1_in_range(A& a, typename A::F x) {
  const auto [z, n] = round_product<T>(a, x, kLog2e);
  auto r = a.fma(n, a.c(-Ln2Parts<T>::hi), x);
  r = a.fma(n, a.c(-Ln2Parts<T>::lo), r);
  const auto em = a.fma(a.mul(r, r), polynomial(a, r, Coefficients<T>::expm1), r);
  const auto scale = power_of_two<T>(a, a.isub(a.bits(z), a.bits(a.c(FloatTraits<T>::kShifter))));
  return a.fma(scale, em, a.sub(scale, a.c(1.0)));
}

}  // namespace fast_detail

// ---- the functions; `a` is the arithmetic, `rare` eager's libmvec function of the same
// name, which a.rare calls only where the fast path would be inaccurate or its special
// cases would cost every element a select: arguments beyond the trigonometric
// reduction's range, and for log, log1p and expm1 the inputs outside their ordinary
// domain (zero, negatives, subnormals, infinities, NaN, overflow) ----

// Where each function leaves the input to its rare path: one definition, used by the
// functions below and by the kernels' rare-path variants (scalar_ops.cpp), which test it
// again to skip the call when no lane needs it.
template <class T, class A>
typename A::B rare_condition(FastFunction f, A& a, typename A::F x) {
  using Tr = FloatTraits<T>;
  switch (f) {
    case FastFunction::Sin:
    case FastFunction::Cos:
    case FastFunction::Tan: return a.gt(a.abs(x), a.c(Tr::kTrigFastLimit));  // and ±inf
    case FastFunction::Log:  // all but positive normal finite x (NaN fails both compares)
      return a.b_or(a.nge(x, a.c(std::is_same_v<T, float> ? 0x1p-126 : 0x1p-1022)), a.nlt(x, a.c(INFINITY)));
    case FastFunction::Log1p: return a.b_or(a.ngt(x, a.c(-1.0)), a.nlt(x, a.c(INFINITY)));
    case FastFunction::Expm1: return a.nle(x, a.c(Tr::kExpm1High));  // and NaN
    case FastFunction::Tanh: return a.gt(x, x);                       // none
  }
  return a.gt(x, x);
}

template <class T, class A, class Rare>
typename A::F fast_sin(A& a, typename A::F x, Rare rare) {
  using namespace fast_detail;
  // On |x|, with x's sign put back at the end: zeros and subnormals come out exactly.
  const auto ax = a.abs(x);
  const auto [z, q] = round_product<T>(a, ax, kInvPi);
  const auto y = sin_half_pi<T>(a, reduce<T>(a, ax, q, 1.0));
  const auto sign = a.ixor(odd_to_sign<T>(a, z), a.ixor(a.bits(x), a.bits(ax)));
  return a.rare(rare_condition<T>(FastFunction::Sin, a, x), flip_sign<T>(a, y, sign), x, rare);
}

template <class T, class A, class Rare>
typename A::F fast_cos(A& a, typename A::F x, Rare rare) {
  using namespace fast_detail;
  using Tr = FloatTraits<T>;
  // cos |x| = (-1)^n sin(r), n = round(|x| / pi + 1/2), r = |x| - (n - 1/2) pi.
  const auto ax = a.abs(x);
  const auto z = a.add(a.fma(ax, a.c(kInvPi), a.c(0.5)), a.c(Tr::kShifter));
  const auto q = a.sub(a.sub(z, a.c(Tr::kShifter)), a.c(0.5));
  auto y = flip_sign<T>(a, sin_half_pi<T>(a, reduce<T>(a, ax, q, 1.0)), odd_to_sign<T>(a, z));
  y = a.select(a.lt(ax, a.c(Tr::kCosOne)), a.c(1.0), y);
  return a.rare(rare_condition<T>(FastFunction::Cos, a, x), y, x, rare);
}

template <class T, class A, class Rare>
typename A::F fast_tan(A& a, typename A::F x, Rare rare) {
  using namespace fast_detail;
  const auto ax = a.abs(x);
  const auto [z, q] = round_product<T>(a, ax, kTwoOverPi);
  const auto r = reduce<T>(a, ax, q, 0.5);
  const auto t = a.mul(r, r);
  const auto s = a.fma(a.mul(r, t), polynomial(a, t, Coefficients<T>::sin_quarter_pi), r);
  const auto c = a.fma(a.mul(t, t), polynomial(a, t, Coefficients<T>::cos_quarter_pi), a.fma(t, a.c(-0.5), a.c(1.0)));
  // q odd: tan = -c / s.
  const auto odd = a.ine(a.iand(a.bits(z), a.ci(1)), a.ci(0));
  const auto y = a.div(a.select(odd, a.neg(c), s), a.select(odd, s, c));
  return a.rare(rare_condition<T>(FastFunction::Tan, a, x), flip_sign<T>(a, y, a.ixor(a.bits(x), a.bits(ax))), x, rare);
}

template <class T, class A, class Rare>
typename A::F fast_log(A& a, typename A::F x, Rare rare) {
  return a.rare(rare_condition<T>(FastFunction::Log, a, x), fast_detail::log_normal<T>(a, x), x, rare);
}

template <class T, class A, class Rare>
typename A::F fast_log1p(A& a, typename A::F x, Rare rare) {
  const auto u = a.add(x, a.c(1.0));
  // log(u) plus the rounding error of the sum: x = u + c exactly, log1p(x) ~ log(u) + c/u.
  const auto correction = a.div(a.sub(x, a.sub(u, a.c(1.0))), u);
  auto y = a.add(fast_detail::log_normal<T>(a, u), correction);
  y = a.select(a.eq(x, a.c(0.0)), x, y);  // -0 stays -0
  return a.rare(rare_condition<T>(FastFunction::Log1p, a, x), y, x, rare);
}

template <class T, class A, class Rare>
typename A::F fast_expm1(A& a, typename A::F x, Rare rare) {
  using namespace fast_detail;
  using Tr = FloatTraits<T>;
  // Below kExpm1Low the result is -1 (the clamp); above kExpm1High (where 2^n is past
  // T's exponents) and for NaN, the rare path.
  const auto xc = a.select(a.lt(x, a.c(Tr::kExpm1Low)), a.c(Tr::kExpm1Low), x);
  auto y = expm1_in_range<T>(a, xc);
  y = a.select(a.eq(x, a.c(0.0)), x, y);  // -0 stays -0
  return a.rare(rare_condition<T>(FastFunction::Expm1, a, x), y, x, rare);
}

template <class T, class A, class Rare>
typename A::F fast_tanh(A& a, typename A::F x, Rare /*none: every input is computed here*/) {
  using Tr = FloatTraits<T>;
  // NaN fails the compare and propagates; ±inf clamp to ±kTanhOne, giving ±1.
  const auto ax = a.abs(x);
  const auto clamped = a.select(a.gt(ax, a.c(Tr::kTanhOne)), a.c(Tr::kTanhOne), ax);
  const auto u = fast_detail::expm1_in_range<T>(a, a.add(clamped, clamped));
  const auto y = a.div(u, a.add(u, a.c(2.0)));  // +0 at ±0, |x| itself for tiny |x|
  return fast_detail::flip_sign<T>(a, y, a.ixor(a.bits(x), a.bits(ax)));
}

// One of the functions by name.
template <class T, class A, class Rare>
typename A::F fast_function(FastFunction f, A& a, typename A::F x, Rare rare) {
  switch (f) {
    case FastFunction::Sin: return fast_sin<T>(a, x, rare);
    case FastFunction::Cos: return fast_cos<T>(a, x, rare);
    case FastFunction::Tan: return fast_tan<T>(a, x, rare);
    case FastFunction::Log: return fast_log<T>(a, x, rare);
    case FastFunction::Log1p: return fast_log1p<T>(a, x, rare);
    case FastFunction::Expm1: return fast_expm1<T>(a, x, rare);
    case FastFunction::Tanh: return fast_tanh<T>(a, x, rare);
  }
  return x;
}

// The arithmetic on C++ scalars: IEEE operations, std::fma, wrapping integers.
template <class T>
struct ScalarArithmetic {
  using F = T;
  using I = typename FloatTraits<T>::Bits;
  using B = bool;
  F c(double v) const { return static_cast<T>(v); }
  I ci(int64_t v) const { return static_cast<I>(v); }
  F add(F x, F y) const { return x + y; }
  F sub(F x, F y) const { return x - y; }
  F mul(F x, F y) const { return x * y; }
  F div(F x, F y) const { return x / y; }
  F neg(F x) const { return -x; }
  F fma(F x, F y, F z) const { return std::fma(x, y, z); }
  F abs(F x) const { return std::fabs(x); }
  B gt(F x, F y) const { return x > y; }
  B lt(F x, F y) const { return x < y; }
  B eq(F x, F y) const { return x == y; }
  B ine(I x, I y) const { return x != y; }
  B nge(F x, F y) const { return !(x >= y); }  // unordered or less
  B nlt(F x, F y) const { return !(x < y); }   // unordered or greater or equal
  B nle(F x, F y) const { return !(x <= y); }  // unordered or greater
  B ngt(F x, F y) const { return !(x > y); }   // unordered or less or equal
  B b_or(B x, B y) const { return x || y; }
  F select(B m, F x, F y) const { return m ? x : y; }
  I iselect(B m, I x, I y) const { return m ? x : y; }
  I bits(F x) const { return std::bit_cast<I>(x); }
  F from_bits(I i) const { return std::bit_cast<F>(i); }
  I iadd(I x, I y) const { return x + y; }
  I isub(I x, I y) const { return x - y; }
  I iand(I x, I y) const { return x & y; }
  I ixor(I x, I y) const { return x ^ y; }
  I shl(I x, int s) const { return x << s; }
  I ashr(I x, int s) const { return static_cast<I>(static_cast<std::make_signed_t<I>>(x) >> s); }
  F to_float(I x) const { return static_cast<F>(static_cast<std::make_signed_t<I>>(x)); }
  template <class Rare>
  F rare(B cond, F usual, F x, Rare fallback) const {
    return cond ? fallback(x) : usual;
  }
};

// The C++ twin of a kernel's inline function: `rare` is the libmvec fallback on one
// element (codegen's jx_vm_* runtime functions; any accurate function in tests).
template <class T, class Rare>
T fast_function_scalar(FastFunction f, T x, Rare rare) {
  ScalarArithmetic<T> a;
  return fast_function<T>(f, a, x, rare);
}

}  // namespace jx::math
