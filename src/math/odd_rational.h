// float32 tanh and erf as odd rational functions, x P(x^2) / Q(x^2), the method of XLA's
// and Eigen's fast float32 tanh/erf: one division and two short polynomials, no exp and
// no second branch to blend. One definition of the coefficients and of the scalar
// evaluation, shared by the jit's inline emitters (src/jit/codegen/fast_math.cpp, whose
// IR performs the same operations in the same order) and by eager kernels
// (src/backend/cpu/vector_math.cpp), so eager and jit give the same bits.
//
// The evaluation, for clamp c, P(t) = p0 + t P'(t), Q(t) = 1 + t Q'(t):
//   xc = x clamped to [-c, c]    (ordered selects: NaN passes through as NaN)
//   t  = xc * xc
//   N  = fma(xc * t, P'(t), xc * p0)   (one rounding where x p0 and the tail meet)
//   y  = N / Q(t), then clamped to [-1, 1]
// Odd by construction: -0 gives -0 and a subnormal x gives x p0 rounded once. Beyond the
// clamp the function rounds to ±1 in float32 and the rational does too (checked at c).
//
// Coefficients: scripts/fit_fast_math.py (linearized minimax for rationals, Loeb's
// iteration with Lawson's reweighting on the relative error, rounded to float32 one
// coefficient at a time with the rest refitted, then the best of several clamps and
// rounding orders by the error of the float32 evaluation itself).
// Max error against float64 tanh/erf over 2^22 random inputs plus every float near the
// clamps: see fast_math.cpp's table. The error is the evaluation's own rounding where the
// result is just below 1 (N and Q each round once in [1, 2)-relative terms, which is a
// full ULP of a result in [0.5, 1)), not the fit, which is within 0.4-0.9 * 2^-24.
#pragma once

#include <cmath>
#include <span>

namespace jx::math {

struct OddRational {
  float clamp;                  // |x| above which the result is ±1
  std::span<const float> p;     // p0, p1, ... (P(t) = sum p_k t^k)
  std::span<const float> q;     // q1, q2, ... (Q(t) = 1 + sum q_k t^k)
};

inline constexpr float kTanhP[] = {1.0f, 0x1.1213c2p-3f, 0x1.ca6aaap-9f, 0x1.5a3504p-16f, 0x1.cbdd32p-27f};
inline constexpr float kTanhQ[] = {0x1.de5f2ep-2f, 0x1.a816a2p-6f, 0x1.58d2c0p-12f, 0x1.a23a10p-21f};
inline constexpr OddRational kTanhF32{9.02f, kTanhP, kTanhQ};

inline constexpr float kErfP[] = {0x1.20dd76p+0f, 0x1.7d7604p-3f, 0x1.a175eep-5f, 0x1.beb03ep-9f, 0x1.d2dda2p-13f};
inline constexpr float kErfQ[] = {0x1.fe5d52p-2f, 0x1.c7dd5cp-4f, 0x1.cd960ap-7f,
                                  0x1.0738d4p-10f, 0x1.7b0c84p-16f, -0x1.d96a38p-24f};
inline constexpr OddRational kErfF32{4.0f, kErfP, kErfQ};

// The scalar evaluation (std::fma; bit-identical to the emitted IR and the AVX2 kernel).
[[gnu::always_inline]] inline float odd_rational(const OddRational& r, float x) {
  float xc = x > r.clamp ? r.clamp : x;
  xc = xc < -r.clamp ? -r.clamp : xc;
  const float t = xc * xc;
  float p = r.p.back();
  for (size_t k = r.p.size() - 2; k >= 1; --k) p = std::fma(p, t, r.p[k]);
  float q = r.q.back();
  for (size_t k = r.q.size() - 1; k-- > 0;) q = std::fma(q, t, r.q[k]);
  q = std::fma(q, t, 1.0f);
  float y = std::fma(xc * t, p, xc * r.p[0]) / q;
  y = y > 1.0f ? 1.0f : y;
  return y < -1.0f ? -1.0f : y;
}

}  // namespace jx::math
