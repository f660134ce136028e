#!/usr/bin/env python3
"""Coefficients and constants of src/math/fast_functions.h (inline sin, cos, tan, log,
log1p and expm1 for native kernels).

Each polynomial is a Chebyshev fit (mpmath.chebyfit, near-minimax) in 50-digit arithmetic
of the function's remainder after its leading terms, rounded to float32 or float64;
prints the coefficients as C hex floats (lowest degree first) and the max relative error
of the rounded polynomial in exact arithmetic, in units of 2^-24 (f32) or 2^-53 (f64),
over 3001 points of the interval. Then pi and ln2 split into parts for the reductions.

Usage: python3 scripts/fit_fast_functions.py     (needs mpmath and numpy; ~10 s)
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 50


def fit(g, a, b, degree, f32):
    poly, _ = mp.chebyfit(g, [a, b], degree + 1, error=True)
    return [float(np.float32(float(c))) if f32 else float(c) for c in reversed(poly)]


def horner(cs, t):
    p = mp.mpf(0)
    for c in reversed(cs):
        p = p * t + mp.mpf(c)
    return p


def report(name, cs, exact, approx, a, b, f32, n=3001):
    worst = 0
    for i in range(n):
        x = mp.mpf(a) + (mp.mpf(b) - mp.mpf(a)) * i / (n - 1)
        if x == 0:
            continue
        y = exact(x)
        worst = max(worst, abs((approx(x) - y) / y))
    unit = 2.0 ** (-24 if f32 else -53)
    print(f"{name} ({'f32' if f32 else 'f64'}): max relative error {float(worst / unit):.4f} of 2^{-24 if f32 else -53}")
    print("  {" + ", ".join(c.hex() for c in cs) + "}")


def S(t):  # sin(r) = r + r^3 S(r^2)
    if t < mp.mpf(10) ** -40:
        return -mp.mpf(1) / 6 + t / 120
    s = mp.sqrt(t)
    return (mp.sin(s) / s - 1) / t


def C(t):  # cos(r) = 1 - r^2/2 + r^4 C(r^2)
    if t < mp.mpf(10) ** -40:
        return mp.mpf(1) / 24 - t / 720
    s = mp.sqrt(t)
    return (mp.cos(s) - 1 + t / 2) / (t * t)


def L(f):  # log1p(f) = f - f^2/2 + f^3 L(f)
    if abs(f) < mp.mpf(10) ** -30:
        return mp.mpf(1) / 3 - f / 4
    return (mp.log1p(f) - f + f * f / 2) / f**3


def R(z):  # 2 atanh(s) = 2s + s z R(z), z = s^2
    if z < mp.mpf(10) ** -40:
        return mp.mpf(2) / 3 + 2 * z / 5
    s = mp.sqrt(z)
    return 2 * (mp.atanh(s) / s - 1) / z


widen = mp.mpf("1.0001")  # the rounded reductions land a little past the nominal interval
half_pi, quarter_pi = mp.pi / 2 * widen, mp.pi / 4 * widen
for f32, degree in ((True, 4), (False, 8)):
    cs = fit(S, 0, half_pi**2, degree, f32)
    report("sin_half_pi", cs, mp.sin, lambda r: r + r**3 * horner(cs, r * r), 1e-30, half_pi, f32)
for f32, ds, dc in ((True, 3, 2), (False, 5, 5)):
    cs = fit(S, 0, quarter_pi**2, ds, f32)
    report("sin_quarter_pi", cs, mp.sin, lambda r: r + r**3 * horner(cs, r * r), 1e-30, quarter_pi, f32)
    cc = fit(C, 0, quarter_pi**2, dc, f32)
    report("cos_quarter_pi", cc, mp.cos, lambda r: 1 - r * r / 2 + r**4 * horner(cc, r * r), 1e-30, quarter_pi, f32)
lo, hi = mp.sqrt(0.5) - 1, mp.sqrt(2) - 1
cs = fit(L, lo * widen, hi * widen, 7, True)
report("log1p", cs, mp.log1p, lambda f: f - f * f / 2 + f**3 * horner(cs, f), lo, hi, True)
smax = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1) * widen
cs = fit(R, 0, smax**2, 6, False)


def log1p_via_s(f):
    s = f / (2 + f)
    h = f * f / 2
    return f - (h - s * (h + s * s * horner(cs, s * s)))


report("log_r", cs, mp.log1p, log1p_via_s, lo, hi, False)


def parts(v, f32, n):
    out, rest = [], mp.mpf(v)
    for _ in range(n):
        p = float(np.float32(float(rest))) if f32 else float(rest)
        out.append(p)
        rest -= mp.mpf(p)
    return out


for f32 in (True, False):
    print(f"pi parts ({'f32' if f32 else 'f64'}):", ", ".join(p.hex() for p in parts(mp.pi, f32, 3)))
# ln2 = hi + lo with hi of 16 (f32) / 32 (f64) bits, so n * hi is exact for every exponent n.
for bits, f32 in ((16, True), (32, False)):
    ln2 = mp.log(2)
    hi = mp.floor(ln2 * 2**bits) / 2**bits
    lo = float(np.float32(float(ln2 - hi))) if f32 else float(ln2 - hi)
    print(f"ln2 parts ({'f32' if f32 else 'f64'}): {float(hi).hex()}, {lo.hex()}")
