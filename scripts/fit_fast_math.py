#!/usr/bin/env python3
"""Minimax fits for src/jit/codegen/fast_math.cpp and src/math/odd_rational.h: float32 exp
(a polynomial), float32 tanh and erf (odd rationals), float64 exp at the end (by mpmath,
when it is installed).

Each fit is a weighted least-squares problem on a dense grid, re-weighted by Lawson's
algorithm (w <- w * |error|) until the error equioscillates, i.e. a minimax fit in the
weighted (relative or absolute) norm. Coefficients are then rounded to float32 one at a
time from the lowest degree, refitting the remaining higher ones after each rounding so
they absorb the rounding error. Prints the float32 coefficients as C hex floats plus the
max weighted error of the rounded polynomial (in float64 arithmetic).

Usage: python3 scripts/fit_fast_math.py     (numpy, optionally mpmath; deterministic;
about three minutes on a busy 2-core machine)
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

# ---- tanh and erf: odd rationals x P(x^2) / Q(x^2), src/math/odd_rational.h ----


def rational_fit(t, f, w, m, n, fixed, scale, iters=80):
    """min max w |P(t)/Q(t) - f| over the grid t, deg P = m, deg Q = n, Q(0) = 1.
    Parameters c = p0..pm, q1..qn; `fixed` maps indices to values held constant. Loeb's
    linearization (divide the residual P - f Q by the previous iterate's Q) with Lawson's
    reweighting, in the scaled variable s = t / scale for conditioning."""
    s = t / scale
    npar = m + 1 + n
    power = lambda i: i if i <= m else i - m  # the power of s that parameter i multiplies
    A = np.stack([s**k for k in range(m + 1)] + [-f * s**k for k in range(1, n + 1)], axis=1)
    held = {i: v * scale ** power(i) for i, v in fixed.items()}
    free = [i for i in range(npar) if i not in held]
    rhs = f.copy()
    for i, v in held.items():
        rhs = rhs - v * A[:, i]
    q_prev = np.ones_like(t)
    lw = np.ones_like(t) / len(t)
    best = None
    for _ in range(iters):
        sw = np.sqrt(lw) * w / np.abs(q_prev)
        c, *_ = np.linalg.lstsq(A[:, free] * sw[:, None], rhs * sw, rcond=None)
        full = np.zeros(npar)
        for i, v in held.items():
            full[i] = v
        full[free] = c
        P = np.polyval(full[: m + 1][::-1], s)
        Q = np.polyval(np.concatenate([[1.0], full[m + 1:]])[::-1], s)
        err = np.abs((P / Q - f) * w)
        if best is None or err.max() < best[1]:
            best = (full.copy(), err.max())
        q_prev = Q
        lw = lw * err
        lw = lw / lw.sum()
    return np.array([best[0][i] / scale ** power(i) for i in range(npar)]), best[1]


def fma32(a, b, c):
    """float32 fma: the product of two floats is exact in float64, so one rounding of the
    float64 sum, then to float32 (a double rounding only at exact float64 ties)."""
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(np.float32)


def odd_rational_f32(x, clamp, p, q):
    """math::odd_rational, operation for operation, in float32."""
    f = np.float32
    xc = np.clip(x, -f(clamp), f(clamp)).astype(np.float32)
    t = (xc * xc).astype(np.float32)
    pp = np.full_like(t, f(p[-1]))
    for c in p[-2:0:-1]:
        pp = fma32(pp, t, np.full_like(t, f(c)))
    qq = np.full_like(t, f(q[-1]))
    for c in q[-2::-1]:
        qq = fma32(qq, t, np.full_like(t, f(c)))
    qq = fma32(qq, t, np.ones_like(t))
    num = fma32((xc * t).astype(np.float32), pp, (xc * f(p[0])).astype(np.float32))
    return np.clip((num / qq).astype(np.float32), f(-1), f(1))


def ulp_error(y, ref):
    e = np.floor(np.log2(np.abs(ref)))
    return np.abs(y.astype(np.float64) - ref) / 2.0 ** np.maximum(e - 23, -149)


def fit_odd_rational(name, fn, m, n, clamps, p0):
    """Fits for each clamp and two rounding orders (P's coefficients first, or Q's);
    keeps the one whose float32 evaluation has the least max error over a dense grid
    and a log-uniform sweep, among those that give exactly 1 at the clamp."""
    best = None
    for clamp in clamps:
        x = np.linspace(1e-3, clamp, 20001)
        t, f = x * x, fn(x) / x
        for order in ("P first", "Q first"):
            fixed = {0: p0}
            c, _ = rational_fit(t, f, 1 / f, m, n, fixed, clamp * clamp)
            indices = list(range(1, m + 1)) + list(range(m + 1, m + 1 + n))
            if order == "Q first":
                indices = indices[m:] + indices[:m]
            for i in indices:
                fixed[i] = float(np.float32(c[i]))
                if len(fixed) < m + 1 + n:
                    c, _ = rational_fit(t, f, 1 / f, m, n, fixed, clamp * clamp)
            c = [fixed[i] for i in range(m + 1 + n)]
            xs = np.concatenate([np.linspace(0, clamp, 1 << 20)[1:], np.exp(np.linspace(-40, 0, 1 << 16)),
                                 [clamp]]).astype(np.float32)
            y = odd_rational_f32(xs, clamp, c[: m + 1], c[m + 1:])
            worst = ulp_error(y[:-1], fn(xs[:-1].astype(np.float64))).max()
            ok = y[-1] == 1
            print(f"  {name} clamp {clamp} ({order}): max {worst:.3f} ULP in float32"
                  f"{'' if ok else ', not 1 at the clamp'}")
            if ok and (best is None or worst < best[0]):
                best = (worst, clamp, c)
    worst, clamp, c = best
    print(f"{name}: clamp {clamp}, max {worst:.3f} ULP")
    print("  P: " + ", ".join(float(np.float32(v)).hex() for v in c[: m + 1]))
    print("  Q: " + ", ".join(float(np.float32(v)).hex() for v in c[m + 1:]))


# tanh: deg P 4, deg Q 4 in x^2 (XLA's is 6 and 3); tanh rounds to 1 above 9.0109.
fit_odd_rational("tanh", np.tanh, 4, 4, (8.9, 9.02, 9.1, 9.3), 1.0)
# erf: deg P 4, deg Q 6 (XLA's: the same); erf rounds to 1 above 3.9192. P(0) is
# 2/sqrt(pi) rounded to float32 (its rounding error is well under the error near 1).
fit_odd_rational("erf", ERF, 4, 6, (3.9192, 3.92, 3.95, 4.0), float(np.float32(2 / math.sqrt(math.pi))))

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
