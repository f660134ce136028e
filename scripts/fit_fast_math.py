#!/usr/bin/env python3
"""Minimax polynomial fits for src/jit/codegen/fast_math.cpp (float32 exp, tanh, erf;
float64 exp at the end, by mpmath, when it is installed).

Each fit is a weighted least-squares problem on a dense grid, re-weighted by Lawson's
algorithm (w <- w * |error|) until the error equioscillates, i.e. a minimax fit in the
weighted (relative or absolute) norm. Coefficients are then rounded to float32 one at a
time from the lowest degree, refitting the remaining higher ones after each rounding so
they absorb the rounding error. Prints the float32 coefficients as C hex floats plus the
max weighted error of the rounded polynomial (in float64 arithmetic).

Usage: python3 scripts/fit_fast_math.py     (numpy, optionally mpmath; deterministic;
about a minute on a busy 2-core machine)
"""
import math
import numpy as np

ERF = np.vectorize(math.erf)


def lawson(basis, target, weight, x, fixed=(), iters=120):
    """Minimise max |weight * (sum c_k basis_k(x) - target)| over the grid x.
    `fixed` holds already-rounded leading coefficients (subtracted from the target)."""
    B = np.stack([b(x) for b in basis], axis=1)
    t = target.copy()
    for k, c in enumerate(fixed):
        t = t - c * B[:, k]
    B = B[:, len(fixed):]
    lw = np.ones_like(x) / len(x)
    c = None
    for _ in range(iters):
        sw = np.sqrt(lw) * weight
        c, *_ = np.linalg.lstsq(B * sw[:, None], t * sw, rcond=None)
        err = np.abs((B @ c - t) * weight)
        lw = lw * err
        s = lw.sum()
        if s == 0:
            break
        lw = lw / s
    return np.concatenate([np.array(fixed, dtype=float), c])


def fit_rounded(basis, target, weight, x, exact=()):
    """`exact`: leading coefficients kept in float64 (the emitter splits them hi + lo)."""
    coeffs = list(exact)
    for k in range(len(exact), len(basis)):
        c = lawson(basis, target, weight, x, fixed=coeffs)
        coeffs.append(float(np.float32(c[k])))
    B = np.stack([b(x) for b in basis], axis=1)
    err = np.max(np.abs((B @ np.array(coeffs) - target) * weight))
    return coeffs, err


def show(name, coeffs, err, unit):
    print(f"{name}: max weighted error {err:.3e} ({err / unit:.3f} of 2^-24)")
    for k, c in enumerate(coeffs):
        print(f"  c{k} = {float(np.float32(c)).hex()}  // {np.float32(c)!r}")


def powers(n, var=lambda x: x, start=0):
    return [lambda x, k=k: var(x) ** k for k in range(start, start + n)]


U = 2.0 ** -24
N = 4001

# exp(r) = 1 + r + r^2 * P(r) on |r| <= ln2/2 (a bit wider for the rounded reduction).
r = np.linspace(-0.3470, 0.3470, N)
r = r[r != 0]
target = (np.expm1(r) - r) / r**2
weight = r**2 / np.exp(r)  # relative error of exp(r)
show("exp P(r), degree 4", *fit_rounded(powers(5), target, weight, r), U)

# tanh(x) = x + x^3 * P(x^2) on |x| <= 0.625.
TANH_SMALL = 0.625
x = np.linspace(1e-4, TANH_SMALL, N)
target = (np.tanh(x) - x) / x**3
weight = x**3 / np.tanh(x)
show("tanh P(x^2), degree 4", *fit_rounded(powers(5, lambda v: v * v), target, weight, x), U)

# erf(x) = x * P(x^2) on |x| <= 1, P(0) = 2/sqrt(pi) exactly: float32 rounding of that
# one coefficient alone would cost 0.87 ULP near 0, so the emitter adds it as hi + lo.
ERF_SMALL = 1.0
x = np.linspace(1e-4, ERF_SMALL, N)
target = ERF(x) / x
weight = x / ERF(x)
TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
hi = float(np.float32(TWO_OVER_SQRT_PI))
print(f"erf c0 = 2/sqrt(pi) = {hi.hex()} + {float(np.float32(TWO_OVER_SQRT_PI - hi)).hex()}")
for deg in (6, 7):
    show(f"erf small P(x^2), degree {deg}",
         *fit_rounded(powers(deg + 1, lambda v: v * v), target, weight, x, exact=(TWO_OVER_SQRT_PI,)), U)

# erf(x) = Q(x - 2.46) on 1 <= x <= 3.92 (erf(x) rounds to 1 above 3.9192), absolute error
# (erf(x) >= 0.84 there, so an absolute 2^-26 is a quarter ULP).
ERF_MID = 2.46
x = np.linspace(ERF_SMALL, 3.92, N)
for deg in (14,):
    show(f"erf large Q(x - {ERF_MID}), degree {deg}",
         *fit_rounded(powers(deg + 1, lambda v: v - ERF_MID), ERF(x), np.ones_like(x), x), U)

# float64 exp: exp(r) = 1 + r + r^2 P(r) on |r| <= 0.3467, P degree 9 from a Chebyshev
# fit in 40-digit arithmetic (mpmath; float64 least squares cannot resolve 2^-60), the
# coefficients rounded to double. Error measured at 2001 points in mpmath.
try:
    import mpmath as mp
except ImportError:
    mp = None
if mp is not None:
    mp.mp.dps = 40

    def g64(r):
        r = mp.mpf(r)
        return (mp.expm1(r) - r) / r**2 if abs(r) > mp.mpf(10) ** -30 else mp.mpf(0.5) + r / 6

    poly, _ = mp.chebyfit(g64, [-0.3467, 0.3467], 10, error=True)
    coeffs = [float(c) for c in poly]  # highest degree first
    worst = 0
    for i in range(2001):
        r = mp.mpf(-0.3467 + 0.6934 * i / 2000)
        p = mp.mpf(0)
        for c in coeffs:
            p = p * r + mp.mpf(c)
        worst = max(worst, abs((1 + r + r * r * p) - mp.exp(r)) / mp.exp(r))
    print(f"exp f64 P(r), degree 9: max relative error {float(worst / 2**-53):.3f} of 2^-53")
    for k, c in enumerate(reversed(coeffs)):
        print(f"  c{k} = {c.hex()}")
