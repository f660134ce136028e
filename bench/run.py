#!/usr/bin/env python3
"""Runs jx's benchmarks and its peers side by side in one run and prints ratios.

    python3 bench/run.py [--build build] [--quick] [--json out.jsonl]

jx's timings come from two binaries printing JSON lines: jit_bench (jx::jit and eager jx
timed in alternation on the same functions and inputs, the references -- the BLAS and the
tutorial hand-fused, called directly -- compile latency, accuracy, and each workload's
limit measured in the same run: STREAM triad and read bandwidth, libmvec's widest vector math called
directly) and jx_bench (eager jx alone with the same limits; with jit_bench built only its
dispatch and grad sections run). NumPy, JAX (jax.jit, block_until_ready) and
PyTorch (CPU) run the same workloads here when importable; a peer that is missing is
reported absent, never guessed. See ../shared/BENCHMARKS.md for the workloads and the limit

    T_min = max(bytes / stream_bandwidth, elements * cost_per_element / threads)

Ratios: jit/limit (1.0 is perfect), numpy/jit and jax/jit (> 1 means jx's jit is faster).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

SECTIONS = [
    ("dispatch", "1. dispatch: per-call overhead"),
    ("compile", "2. compile latency"),
    ("tutorial", "3. tutorial sin(x) + cos(y)"),
    ("selu", "4. SELU"),
    ("reduction", "5. fused reduction sum(x + 2y + z**2)"),
    ("softmax", "6. row softmax / logsumexp"),
    ("matmul", "7. matmul and gelu(A @ B + b) (limit: 2 n^3 operations at the FMA peak measured in the run)"),
    ("small_kernels", "8. many small kernels"),
    ("vecmath", "9. vector math, 4M float32 inputs"),
    ("sort", "10. sort and argsort, float32 (no hardware limit: compared with peers)"),
]
SOFTMAX_SHAPES = ((4096, 4096), (65536, 128), (128, 65536))
XENT_SHAPES = ((160000, 10), (16000, 100))  # softmax cross-entropy: (rows, classes)
SWEEP = [1000 * 4 ** k for k in range(8)]  # 1e3 .. 1.6e7 elements
SELU_L, SELU_A = 1.0507009873554805, 1.6732632423543772
VECMATH = [("exp", -87.0, 88.0, False), ("log", 1e-30, 1e30, True), ("sin", -100.0, 100.0, False),
           ("cos", -100.0, 100.0, False), ("tan", -1.5, 1.5, False), ("log1p", -0.9, 10.0, False),
           ("expm1", -5.0, 5.0, False), ("tanh", -10.0, 10.0, False), ("erf", -5.0, 5.0, False)]


def best(f, reps):
    f()
    t = 1e30
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        t = min(t, time.perf_counter() - t0)
    return t


def per_call(f, inner=20000, reps=7):
    return best(lambda: [f() for _ in range(inner)], reps) / inner


def inner_calls(elements):
    return max(1, int(4e6 / max(elements, 1)))


def matmul_sizes(quick):
    return (256, 1024) if quick else (256, 1024, 4096)


def log(msg):
    print(f"# {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- NumPy

def numpy_workloads(reps, quick):
    import numpy as np
    rng = np.random.default_rng(0)
    out = {}
    a = np.ones(1, np.float32)
    out["dispatch_add_1"] = per_call(lambda: a + a)
    c = np.ones(1024, np.float32)
    out["dispatch_add_1024"] = per_call(lambda: c + c, 5000)
    args = [np.full(1, i, np.float32) for i in range(20)]

    def sum20():
        s = args[0]
        for v in args[1:]:
            s = s + v
        return s
    out["dispatch_20_args_1"] = per_call(sum20, 2000)
    for dt in ("float32", "float64"):
        x = rng.random((5000, 5000)).astype(dt)
        y = rng.random((5000, 5000)).astype(dt)
        yb = np.arange(5000, dtype=dt)
        out[f"sin_cos_5000x5000_{dt}"] = best(lambda: np.sin(x) + np.cos(y), reps)
        out[f"sin_cos_bcast_5000x5000_{dt}"] = best(lambda: np.sin(x) + np.cos(yb), reps)
        out[f"sin_5000x5000_{dt}"] = best(lambda: np.sin(x), reps)
        del x, y
    for n in SWEEP:
        x, y = rng.random(n).astype(np.float32), rng.random(n).astype(np.float32)
        out[f"sin_cos_sweep_{n}_float32"] = per_call(lambda: np.sin(x) + np.cos(y), inner_calls(n), reps)
    l, al = np.float32(SELU_L), np.float32(SELU_A)
    for n, name in ((1000000, "1e6"), (16000000, "1.6e7")):
        x = rng.standard_normal(n).astype(np.float32)
        out[f"selu_{name}_float32"] = best(lambda: l * np.where(x > 0, x, al * np.exp(x) - al), reps)
    for dt in ("float32", "float64"):
        x, y, z = (rng.random(16000000).astype(dt) for _ in range(3))
        out[f"sum_x_2y_z2_1.6e7_{dt}"] = best(lambda: float(np.sum(x + 2 * y + z * z)), reps)
    for rows, cols in SOFTMAX_SHAPES:
        x = rng.standard_normal((rows, cols)).astype(np.float32)

        def softmax():
            e = np.exp(x - x.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)

        def lse():
            m = x.max(axis=1, keepdims=True)
            return np.log(np.exp(x - m).sum(axis=1)) + m[:, 0]
        out[f"softmax_rows_{rows}x{cols}_float32"] = best(softmax, reps)
        out[f"logsumexp_rows_{rows}x{cols}_float32"] = best(lse, reps)
    for rows, cols in XENT_SHAPES:
        x = rng.standard_normal((rows, cols)).astype(np.float32)
        labels = rng.integers(0, cols, rows).astype(np.int32)

        def log_probs():
            s = x - x.max(axis=1, keepdims=True)
            return s - np.log(np.exp(s).sum(axis=1, keepdims=True))

        def xent_grad():  # (softmax - one_hot) / rows, as its gradient is written by hand
            g = np.exp(log_probs())
            g[np.arange(rows), labels] -= 1
            return g / np.float32(rows)
        out[f"cross_entropy_{rows}x{cols}_float32"] = best(
            lambda: -np.take_along_axis(log_probs(), labels[:, None], 1).mean(), reps)
        out[f"cross_entropy_grad_{rows}x{cols}_float32"] = best(xent_grad, reps)
    for dt in ("float32", "float64"):
        for n in matmul_sizes(quick):
            a = rng.standard_normal((n, n)).astype(dt)
            b = rng.standard_normal((n, n)).astype(dt)
            bias = rng.standard_normal(n).astype(dt)

            def gelu():
                z = a @ b + bias
                return 0.5 * z * (1.0 + np.tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)))
            r = 2 if n >= 4096 else reps
            out[f"matmul_{n}_{dt}"] = best(lambda: a @ b, r)
            out[f"gelu_matmul_{n}_{dt}"] = best(gelu, r)
    q0 = rng.standard_normal((3, 1024)).astype(np.float32)
    p0 = rng.standard_normal((3, 1024)).astype(np.float32)

    def leapfrog():
        q, p = q0, p0
        for _ in range(1000):
            p = p + np.float32(0.005) * (-q * (1 + (q * q).sum(axis=0, keepdims=True)))
            q = q + np.float32(0.01) * p
            p = p + np.float32(0.005) * (-q * (1 + (q * q).sum(axis=0, keepdims=True)))
        return q, p
    out["leapfrog_1000_steps"] = best(leapfrog, reps)
    try:
        from scipy.special import erf
    except ImportError:
        erf = None
    fns = {"exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "tan": np.tan, "log1p": np.log1p,
           "expm1": np.expm1, "tanh": np.tanh, "erf": erf}
    for name, lo, hi, logu in VECMATH:
        x = vecmath_inputs(np, lo, hi, logu)
        if fns[name] is not None:
            out[f"vecmath_{name}_4M_float32"] = best(lambda: fns[name](x), reps)
    x = rng.standard_normal(1000000).astype(np.float32)
    out["sort_1e6_float32"] = best(lambda: np.sort(x), reps)
    out["argsort_1e6_float32"] = best(lambda: np.argsort(x), reps)
    out["sort_rows_1000x1000_float32"] = best(lambda: np.sort(x.reshape(1000, 1000), axis=-1), reps)
    return out


def vecmath_inputs(np, lo, hi, log_uniform, n=1 << 22):
    u = np.random.default_rng(1).random(n)
    if log_uniform:
        return np.exp(math.log(lo) + u * (math.log(hi) - math.log(lo))).astype(np.float32)
    return (lo + u * (hi - lo)).astype(np.float32)


# ---------------------------------------------------------------- JAX

def jax_setup():
    import jax
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)  # compile times are real compiles
    return jax


def jax_workloads(reps, quick):
    jax = jax_setup()
    import jax.numpy as jnp
    import numpy as np
    out = {}
    k = jax.random.PRNGKey(0)
    add = jax.jit(lambda p, q: p + q)
    for n in (1, 1024):
        a = jnp.ones(n, jnp.float32)
        out[f"dispatch_add_{n}"] = per_call(lambda: add(a, a).block_until_ready(), 2000)
    args = [jnp.full(1, i, jnp.float32) for i in range(20)]
    sum20 = jax.jit(lambda *a: sum(a[1:], a[0]))
    out["dispatch_20_args_1"] = per_call(lambda: sum20(*args).block_until_ready(), 2000)
    f = jax.jit(lambda x, y: jnp.sin(x) + jnp.cos(y))
    for dt in (jnp.float32, jnp.float64):
        x = jax.random.uniform(k, (5000, 5000), dt)
        y = jax.random.uniform(jax.random.PRNGKey(1), (5000, 5000), dt)
        yb = jnp.arange(5000, dtype=dt)
        name = jnp.dtype(dt).name
        out[f"sin_cos_5000x5000_{name}"] = best(lambda: f(x, y).block_until_ready(), reps)
        out[f"sin_cos_bcast_5000x5000_{name}"] = best(lambda: f(x, yb).block_until_ready(), reps)
        del x, y
    for n in SWEEP:
        x = jax.random.uniform(k, (n,), jnp.float32)
        y = jax.random.uniform(jax.random.PRNGKey(1), (n,), jnp.float32)
        out[f"sin_cos_sweep_{n}_float32"] = per_call(lambda: f(x, y).block_until_ready(), inner_calls(n), reps)
    selu = jax.jit(lambda x: SELU_L * jnp.where(x > 0, x, SELU_A * jnp.exp(x) - SELU_A))
    for n, name in ((1000000, "1e6"), (16000000, "1.6e7")):
        x = jax.random.normal(k, (n,), jnp.float32)
        out[f"selu_{name}_float32"] = best(lambda: selu(x).block_until_ready(), reps)
    red = jax.jit(lambda x, y, z: jnp.sum(x + 2 * y + z * z))
    for dt in (jnp.float32, jnp.float64):
        x, y, z = (jax.random.uniform(jax.random.PRNGKey(i), (16000000,), dt) for i in range(3))
        out[f"sum_x_2y_z2_1.6e7_{jnp.dtype(dt).name}"] = best(lambda: red(x, y, z).block_until_ready(), reps)
    sm = jax.jit(lambda x: jax.nn.softmax(x, axis=1))
    lse = jax.jit(lambda x: jax.nn.logsumexp(x, axis=1))
    for rows, cols in SOFTMAX_SHAPES:
        x = jax.random.normal(k, (rows, cols), jnp.float32)
        out[f"softmax_rows_{rows}x{cols}_float32"] = best(lambda: sm(x).block_until_ready(), reps)
        out[f"logsumexp_rows_{rows}x{cols}_float32"] = best(lambda: lse(x).block_until_ready(), reps)

    def xent(x, labels):
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(x, axis=1), labels[:, None], 1))
    xent_j, xent_g = jax.jit(xent), jax.jit(jax.grad(xent))
    for rows, cols in XENT_SHAPES:
        x = jax.random.normal(k, (rows, cols), jnp.float32)
        labels = jax.random.randint(jax.random.PRNGKey(1), (rows,), 0, cols, jnp.int32)
        out[f"cross_entropy_{rows}x{cols}_float32"] = best(lambda: xent_j(x, labels).block_until_ready(), reps)
        out[f"cross_entropy_grad_{rows}x{cols}_float32"] = best(lambda: xent_g(x, labels).block_until_ready(), reps)
    mm = jax.jit(lambda a, b: a @ b)

    def gelu_layer(a, b, bias):
        z = a @ b + bias
        return 0.5 * z * (1.0 + jnp.tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)))
    gelu = jax.jit(gelu_layer)
    for dt in (jnp.float32, jnp.float64):
        for n in matmul_sizes(quick):
            a = jax.random.normal(k, (n, n), dt)
            b = jax.random.normal(jax.random.PRNGKey(1), (n, n), dt)
            bias = jax.random.normal(jax.random.PRNGKey(2), (n,), dt)
            r = 2 if n >= 4096 else reps
            name = jnp.dtype(dt).name
            out[f"matmul_{n}_{name}"] = best(lambda: mm(a, b).block_until_ready(), r)
            out[f"gelu_matmul_{n}_{name}"] = best(lambda: gelu(a, b, bias).block_until_ready(), r)

    def force(q):
        return -q * (1.0 + jnp.sum(q * q, axis=0, keepdims=True))

    def step(q, p):
        p = p + 0.005 * force(q)
        q = q + 0.01 * p
        return q, p + 0.005 * force(q)

    def step10(q, p):
        for _ in range(10):
            q, p = step(q, p)
        return q, p
    q0 = jax.random.normal(k, (3, 1024), jnp.float32)
    p0 = jax.random.normal(jax.random.PRNGKey(1), (3, 1024), jnp.float32)
    jstep, jstep10 = jax.jit(step), jax.jit(step10)

    def run(fn, calls):
        q, p = q0, p0
        for _ in range(calls):
            q, p = fn(q, p)
        return jax.block_until_ready((q, p))
    out["leapfrog_1000_steps"] = best(lambda: run(jstep, 1000), reps)
    out["leapfrog_1000_unroll10"] = best(lambda: run(jstep10, 100), reps)
    fori = jax.jit(lambda q, p: jax.lax.fori_loop(0, 1000, lambda i, s: step(*s), (q, p)))
    out["leapfrog_1000_fori_loop"] = best(lambda: jax.block_until_ready(fori(q0, p0)), reps)
    count = jax.jit(lambda n: jax.lax.while_loop(lambda i: i < n, lambda i: i + 1, jnp.int32(0)))
    out["while_trivial_100k"] = best(lambda: jax.block_until_ready(count(100000)), reps)
    kr = jax.random.split(jax.random.PRNGKey(2), 5)
    w, u = 0.1 * jax.random.normal(kr[0], (64, 64)), 0.1 * jax.random.normal(kr[1], (16, 64))
    b, h0, xs = 0.1 * jax.random.normal(kr[2], (64,)), jnp.zeros(64), jax.random.normal(kr[3], (10000, 16))

    def rnn(w, u, b, h0, xs):
        def cell(h, x):
            return jnp.tanh(h @ w + x @ u + b), None
        return jnp.sum(jax.lax.scan(cell, h0, xs)[0] ** 2)
    fwd, grad = jax.jit(rnn), jax.jit(jax.grad(rnn, argnums=(0, 1, 2)))
    out["rnn_scan_10k"] = best(lambda: jax.block_until_ready(fwd(w, u, b, h0, xs)), reps)
    out["rnn_scan_10k_grad"] = best(lambda: jax.block_until_ready(grad(w, u, b, h0, xs)), reps)
    params, x, y = mlp_params(jax, jnp)
    vg = jax.jit(jax.value_and_grad(mlp_loss(jnp)))
    out["mlp_value_and_grad_b64"] = per_call(lambda: jax.block_until_ready(vg(params, x, y)), 20, reps)
    fns = {"exp": jnp.exp, "log": jnp.log, "sin": jnp.sin, "cos": jnp.cos, "tan": jnp.tan, "log1p": jnp.log1p,
           "expm1": jnp.expm1, "tanh": jnp.tanh, "erf": jax.scipy.special.erf}
    for name, lo, hi, logu in VECMATH:
        x = jnp.asarray(vecmath_inputs(np, lo, hi, logu))
        g = jax.jit(fns[name])
        out[f"vecmath_{name}_4M_float32"] = best(lambda: g(x).block_until_ready(), reps)
    x = jnp.asarray(np.random.default_rng(0).standard_normal(1000000).astype(np.float32))
    xr = x.reshape(1000, 1000)
    sort, argsort = jax.jit(lambda a: jnp.sort(a, axis=-1)), jax.jit(jnp.argsort)
    out["sort_1e6_float32"] = best(lambda: sort(x).block_until_ready(), reps)
    out["argsort_1e6_float32"] = best(lambda: argsort(x).block_until_ready(), reps)
    out["sort_rows_1000x1000_float32"] = best(lambda: sort(xr).block_until_ready(), reps)
    return out


def mlp_params(jax, jnp, batch=64):
    ks = jax.random.split(jax.random.PRNGKey(7), 6)
    params = [0.1 * jax.random.normal(ks[0], (128, 256), jnp.float32), jnp.zeros(256, jnp.float32),
              0.1 * jax.random.normal(ks[1], (256, 10), jnp.float32), jnp.zeros(10, jnp.float32)]
    return params, jax.random.normal(ks[2], (batch, 128), jnp.float32), jax.random.normal(ks[3], (batch, 10), jnp.float32)


def mlp_loss(jnp):
    def loss(params, x, y):
        h = jnp.tanh(x @ params[0] + params[1])
        return jnp.mean(jnp.square(h @ params[2] + params[3] - y))
    return loss


def jax_compile(quick):
    """jax.jit(f).lower(args).compile() of the compile workloads, fresh functions each time
    (no tracing cache) and the persistent compilation cache off: (total, XLA compile only)."""
    jax = jax_setup()
    import jax.numpy as jnp
    k = jax.random.PRNGKey(0)
    x = jax.random.uniform(k, (256, 256), jnp.float32)
    y = jax.random.uniform(jax.random.PRNGKey(1), (256, 256), jnp.float32)
    v = jax.random.normal(k, (65536,), jnp.float32)

    def chain(x, y, rounds):
        t = x
        for _ in range(rounds):
            t = jnp.tanh(jnp.sin(t * y + 0.5) - x)
        return t
    def fan_in(x, y, rounds):
        t = jnp.zeros_like(x)
        for i in range(rounds):
            t = t + jnp.tanh(x * (1.0 + 0.001 * i) - y)
        return t
    params, mx, my = mlp_params(jax, jnp)
    cases = {
        "compile_sin_cos": (lambda: (lambda x, y: jnp.sin(x) + jnp.cos(y)), (x, y)),
        "compile_selu": (lambda: (lambda x: SELU_L * jnp.where(x > 0, x, SELU_A * jnp.exp(x) - SELU_A)), (v,)),
        "compile_chain20": (lambda: (lambda x, y: chain(x, y, 4)), (x, y)),
        "compile_chain200": (lambda: (lambda x, y: chain(x, y, 40)), (x, y)),
        "compile_chain2000": (lambda: (lambda x, y: chain(x, y, 400)), (x, y)),
        "compile_fan_in200": (lambda: (lambda x, y: fan_in(x, y, 50)), (x, y)),
        "compile_fan_in2000": (lambda: (lambda x, y: fan_in(x, y, 500)), (x, y)),
        "compile_chain200_on_ones": (lambda: (lambda x, y: chain(x, y, 40)), (jnp.ones((256, 256), jnp.float32), y)),
        "compile_mlp_value_and_grad": (lambda: jax.value_and_grad(mlp_loss(jnp)), (params, mx, my)),
    }
    out = {}
    for name, (make, args) in cases.items():
        total, compile_only = 1e30, 1e30
        for _ in range(1 if quick or name.endswith("2000") else 4):
            g = jax.jit(make())
            t0 = time.perf_counter()
            lowered = g.lower(*args)
            t1 = time.perf_counter()
            lowered.compile()
            t2 = time.perf_counter()
            total, compile_only = min(total, t2 - t0), min(compile_only, t2 - t1)
        out[name] = (total, compile_only)
    return out


# ---------------------------------------------------------------- PyTorch

def torch_xent_grad(torch, x, labels):
    """The cross-entropy's gradient in the logits, by torch.func (traceable by torch.compile)."""
    return torch.func.grad(lambda z: torch.nn.functional.cross_entropy(z, labels))(x)


def torch_workloads(reps, quick):
    import torch
    torch.set_num_threads(os.cpu_count())
    out = {}
    for n in (1, 1024):
        a = torch.ones(n)
        out[f"dispatch_add_{n}"] = per_call(lambda: a + a, 5000)
    for dt in (torch.float32, torch.float64):
        x = torch.rand(5000, 5000, dtype=dt)
        y = torch.rand(5000, 5000, dtype=dt)
        yb = torch.arange(5000, dtype=dt)
        name = str(dt).split(".")[1]
        out[f"sin_cos_5000x5000_{name}"] = best(lambda: torch.sin(x) + torch.cos(y), reps)
        out[f"sin_cos_bcast_5000x5000_{name}"] = best(lambda: torch.sin(x) + torch.cos(yb), reps)
    for n, name in ((1000000, "1e6"), (16000000, "1.6e7")):
        x = torch.randn(n)
        out[f"selu_{name}_float32"] = best(lambda: torch.nn.functional.selu(x), reps)
    for dt in (torch.float32, torch.float64):
        x, y, z = (torch.rand(16000000, dtype=dt) for _ in range(3))
        out[f"sum_x_2y_z2_1.6e7_{str(dt).split('.')[1]}"] = best(lambda: float((x + 2 * y + z * z).sum()), reps)
    for rows, cols in SOFTMAX_SHAPES:
        x = torch.randn(rows, cols)
        out[f"softmax_rows_{rows}x{cols}_float32"] = best(lambda: torch.softmax(x, 1), reps)
        out[f"logsumexp_rows_{rows}x{cols}_float32"] = best(lambda: torch.logsumexp(x, 1), reps)
    for rows, cols in XENT_SHAPES:
        x, labels = torch.randn(rows, cols), torch.randint(0, cols, (rows,))
        out[f"cross_entropy_{rows}x{cols}_float32"] = best(lambda: torch.nn.functional.cross_entropy(x, labels), reps)
        out[f"cross_entropy_grad_{rows}x{cols}_float32"] = best(lambda: torch_xent_grad(torch, x, labels), reps)
    for dt in (torch.float32, torch.float64):
        for n in matmul_sizes(quick):
            a = torch.randn(n, n, dtype=dt)
            out[f"matmul_{n}_{str(dt).split('.')[1]}"] = best(lambda: a @ a, 2 if n >= 4096 else reps)
    x = torch.randn(1000000)
    out["sort_1e6_float32"] = best(lambda: torch.sort(x), reps)
    out["argsort_1e6_float32"] = best(lambda: torch.argsort(x), reps)
    out["sort_rows_1000x1000_float32"] = best(lambda: torch.sort(x.reshape(1000, 1000), -1), reps)
    return out


def torch_compile_workloads(reps, quick):
    """torch.compile (Inductor, CPU) of the main workloads: compiled once per shape before
    timing (dynamic=False), so the times are the generated kernels'."""
    import torch
    torch.set_num_threads(os.cpu_count())
    out = {}

    def compiled(fn):
        return torch.compile(fn, dynamic=False)
    sc = compiled(lambda x, y: torch.sin(x) + torch.cos(y))
    for dt in (torch.float32, torch.float64):
        x = torch.rand(5000, 5000, dtype=dt)
        y = torch.rand(5000, 5000, dtype=dt)
        yb = torch.arange(5000, dtype=dt)
        name = str(dt).split(".")[1]
        out[f"sin_cos_5000x5000_{name}"] = best(lambda: sc(x, y), reps)
        out[f"sin_cos_bcast_5000x5000_{name}"] = best(lambda: sc(x, yb), reps)
        del x, y
    selu = compiled(lambda x: SELU_L * torch.where(x > 0, x, SELU_A * torch.exp(x) - SELU_A))
    for n, name in ((1000000, "1e6"), (16000000, "1.6e7")):
        x = torch.randn(n)
        out[f"selu_{name}_float32"] = best(lambda: selu(x), reps)
    red = compiled(lambda x, y, z: (x + 2 * y + z * z).sum())
    for dt in (torch.float32, torch.float64):
        x, y, z = (torch.rand(16000000, dtype=dt) for _ in range(3))
        out[f"sum_x_2y_z2_1.6e7_{str(dt).split('.')[1]}"] = best(lambda: float(red(x, y, z)), reps)
    sm, lse = compiled(lambda x: torch.softmax(x, 1)), compiled(lambda x: torch.logsumexp(x, 1))
    for rows, cols in SOFTMAX_SHAPES:
        x = torch.randn(rows, cols)
        out[f"softmax_rows_{rows}x{cols}_float32"] = best(lambda: sm(x), reps)
        out[f"logsumexp_rows_{rows}x{cols}_float32"] = best(lambda: lse(x), reps)
    xent = compiled(lambda x, labels: torch.nn.functional.cross_entropy(x, labels))
    xent_g = compiled(lambda x, labels: torch_xent_grad(torch, x, labels))
    for rows, cols in XENT_SHAPES:
        x, labels = torch.randn(rows, cols), torch.randint(0, cols, (rows,))
        out[f"cross_entropy_{rows}x{cols}_float32"] = best(lambda: xent(x, labels), reps)
        out[f"cross_entropy_grad_{rows}x{cols}_float32"] = best(lambda: xent_g(x, labels), reps)

    def gelu_layer(a, b, bias):
        z = a @ b + bias
        return 0.5 * z * (1.0 + torch.tanh(0.7978845608028654 * (z + 0.044715 * z * z * z)))
    mm, gelu = compiled(lambda a, b: a @ b), compiled(gelu_layer)
    for dt in (torch.float32, torch.float64):
        for n in matmul_sizes(quick):
            a, b, bias = torch.randn(n, n, dtype=dt), torch.randn(n, n, dtype=dt), torch.randn(n, dtype=dt)
            r = 2 if n >= 4096 else reps
            name = str(dt).split(".")[1]
            out[f"matmul_{n}_{name}"] = best(lambda: mm(a, b), r)
            out[f"gelu_matmul_{n}_{name}"] = best(lambda: gelu(a, b, bias), r)
    return out


def grad_peers(reps):
    """grad / eval ratios of the peers on the workloads of jx_bench's grad section."""
    out = {}
    try:
        import jax
        import jax.numpy as jnp
        k = jax.random.PRNGKey(0)
        loss = lambda x: jnp.sum(jnp.sin(x) * x)
        for n in (3, 1000000):
            x = jax.random.uniform(k, (n,), jnp.float32)
            inner = 200 if n < 100 else 1
            g = jax.grad(loss)
            out[("jax", f"grad_sum_sin_x_x_{n}")] = (
                per_call(lambda: loss(x).block_until_ready(), inner, reps),
                per_call(lambda: g(x).block_until_ready(), inner, reps))
        x = jax.random.normal(k, (256, 256), jnp.float32)
        mlp = lambda w: jnp.sum(jnp.tanh(x @ w))
        g = jax.grad(mlp)
        out[("jax", "grad_mlp_256")] = (per_call(lambda: mlp(x).block_until_ready(), 20, reps),
                                        per_call(lambda: g(x).block_until_ready(), 20, reps))
    except ImportError:
        pass
    try:
        import torch
        for n in (3, 1000000):
            x = torch.rand(n)
            inner = 2000 if n < 100 else 1

            def tg():
                xx = x.clone().requires_grad_(True)
                (torch.sin(xx) * xx).sum().backward()
                return xx.grad
            out[("torch", f"grad_sum_sin_x_x_{n}")] = (per_call(lambda: (torch.sin(x) * x).sum(), inner, reps),
                                                       per_call(tg, inner, reps))
        x = torch.randn(256, 256)

        def mg():
            w = x.clone().requires_grad_(True)
            torch.tanh(x @ w).sum().backward()
            return w.grad
        out[("torch", "grad_mlp_256")] = (per_call(lambda: torch.tanh(x @ x).sum(), 20, reps), per_call(mg, 20, reps))
    except ImportError:
        pass
    return out


# ---------------------------------------------------------------- jx's binaries

def run_binary(path, args, rows, meta):
    if not os.path.exists(path):
        log(f"{path} not built: its columns are absent")
        return False
    log(f"running {os.path.basename(path)} {' '.join(args)}")
    p = subprocess.run([path] + args, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "workload" not in r:
            meta.update(r)
            continue
        impls = rows.setdefault(r.get("section", "other"), {}).setdefault(r["workload"], {})
        impls.setdefault(r["impl"], r)  # the first binary to report a (workload, impl) wins
    if p.returncode != 0:
        log(f"{os.path.basename(path)} exited with {p.returncode}: {p.stderr.strip()[-2000:]}")
    return True


def fmt(t):
    if t is None or (isinstance(t, float) and math.isnan(t)):
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.2f}us"
    if t < 1:
        return f"{t * 1e3:.2f}ms"
    return f"{t:.2f}s"


def ratio(a, b, suffix=""):
    return f"{a / b:.2f}{suffix}" if (a and b and not math.isnan(a) and not math.isnan(b)) else "-"


def secs(impls, impl):
    r = impls.get(impl)
    return r["seconds"] if r else None


def limit_bound(w):
    """How close to its limit a workload's jit must come (the performance issue's targets)."""
    if w.startswith(("softmax_", "logsumexp_", "cross_entropy_")):
        return 1.5
    if w.startswith("sin_cos_sweep_"):
        return 1.3
    return 1.25


PEERS = ("numpy", "jax", "torch", "torch_compile")


def small_sweep(w):
    """A size-sweep row below 10^4 elements: the issue holds those to eager and the peers,
    not to the limit (a call's fixed cost, about 0.4 us, is most of their time)."""
    return w.startswith("sin_cos_sweep_") and int(w.split("_")[3]) < 10_000


def target(w, jt, lim, peer_times, eager=None):
    """'met' when jit is within limit_bound of the limit (where one is measured) and no
    slower than every peer measured (nor, below 10^4 elements in the size sweep, than
    eager, the limit not applying there); '-' when there is nothing to compare with."""
    if not jt or math.isnan(jt):
        return "-"
    if small_sweep(w):
        lim, peer_times = None, (*peer_times, eager)
    known = [t for t in peer_times if t]
    if lim is None and not known:
        return "-"
    ok = (lim is None or jt <= limit_bound(w) * lim) and all(jt <= t for t in known)
    return "met" if ok else "MISS"


def print_section(title, table, peers):
    print()
    print(title)
    hdr = (f"{'workload':34} {'jx eager':>10} {'jx jit':>10} {'numpy':>10} {'jax.jit':>10} {'torch':>10} "
           f"{'t.compile':>10} {'limit':>10} {'jit/limit':>9} {'numpy/jit':>9} {'jax/jit':>8} {'torch/jit':>9} "
           f"{'target':>6}")
    print(hdr)
    print("-" * len(hdr))
    notes = []
    for w, impls in table.items():
        ea, jt, lim = secs(impls, "jx_eager"), secs(impls, "jx_jit"), secs(impls, "limit")
        np_t, jax_t, th_t, tc_t = (peers.get(p, {}).get(w) for p in PEERS)
        best_torch = min((t for t in (th_t, tc_t) if t), default=None)
        lr = impls.get("limit", {})
        mark = "c" if lr.get("compute_s", 0) > lr.get("memory_s", 0) else " "  # compute-bound limit
        print(f"{w:34} {fmt(ea):>10} {fmt(jt):>10} {fmt(np_t):>10} {fmt(jax_t):>10} {fmt(th_t):>10} "
              f"{fmt(tc_t):>10} {fmt(lim):>9}{mark} {ratio(jt, lim):>9} {ratio(np_t, jt, 'x'):>9} "
              f"{ratio(jax_t, jt, 'x'):>8} {ratio(best_torch, jt, 'x'):>9} {target(w, jt, lim, (np_t, jax_t, th_t, tc_t), ea):>6}")
        j = impls.get("jx_jit", {})
        if "error" in j:
            notes.append(f"{w}: jit failed: {j['error']}")
        extras = []
        rd = j.get("rel_diff")
        if rd is not None and (math.isnan(rd) or rd > 1e-4):
            extras.append(f"jit differs from eager: rel_diff={rd:.3g}")
        if "rel_err_jit" in j:
            extras.append(f"relative error vs long-double sum: jit {j['rel_err_jit']:.2e}, eager {j['rel_err_eager']:.2e}")
        if "max_ulp_jit" in j:
            lim_r = impls.get("limit", {})
            extras.append(f"max ULP vs float64: jit {j['max_ulp_jit']:.2f}, eager {j['max_ulp_eager']:.2f}; "
                          f"ns/element: jit {j['seconds'] * 1e9 / (1 << 22):.3f}"
                          + (f", eager {impls['jx_eager']['seconds'] * 1e9 / (1 << 22):.3f}" if 'jx_eager' in impls else "")
                          + (f", limit {lim_r['seconds'] * 1e9 / (1 << 22):.3f}" if lim_r else ""))
        if "fresh_processes" in j:
            extras.append(f"best of {j['fresh_processes']:.0f} fresh processes; the bench process's own first call "
                          f"{fmt(j['in_bench_process'])}")
        if "jx_jit_no_donation" in impls:
            nd = secs(impls, "jx_jit_no_donation")
            extras.append(f"jit with donate_argnums={j.get('donated', '?')} {fmt(jt)}, without {fmt(nd)} "
                          f"({ratio(nd, jt, 'x')})")
        if "hand_fused" in impls:
            hf, hp = secs(impls, "hand_fused"), secs(impls, "hand_fused_prealloc")
            extras.append(f"hand-fused C++ loop (libmvec, all threads): {fmt(hf)} into a fresh output, "
                          f"{fmt(hp)} into a preallocated one; jit/hand-fused {ratio(jt, hf)}")
        if extras:
            notes.append(f"{w}: " + "; ".join(extras))
    for n in notes:
        print(f"  * {n}")
    if any(i.get("limit", {}).get("compute_s", 0) > i.get("limit", {}).get("memory_s", 0) for i in table.values()):
        print("  (limit marked c: compute-bound: libmvec's per-element cost, for matmul the FMA peak; otherwise memory-bound)")
    print("  (torch/jit: the faster of torch eager and torch.compile; target: jit within "
          "1.25x of the limit (softmax 1.5x, size sweep 1.3x from 10^4 elements, below that no slower than eager) and no slower than any peer)")


def print_compile(table, jax_c):
    print()
    print(dict(SECTIONS)["compile"] + " (first call of a fresh jx::jit; see jit_bench.cpp for the modes)")
    hdr = (f"{'workload':28} {'cold':>9} {'retrace':>9} {'disk st.':>9} {'disk in':>9} {'disk new':>9} "
           f"{'call':>9} {'jax total':>10} {'jax xla':>9} {'jax/cold':>8}")
    print(hdr)
    print("-" * len(hdr))
    for w, impls in table.items():
        if not w.startswith("compile_"):
            continue
        cold = secs(impls, "jx_jit_cold")
        jt = jax_c.get(w, (None, None))
        print(f"{w:28} {fmt(cold):>9} {fmt(secs(impls, 'jx_jit_retrace')):>9} {fmt(secs(impls, 'jx_jit_disk_store')):>9} "
              f"{fmt(secs(impls, 'jx_jit_disk_in_process')):>9} {fmt(secs(impls, 'jx_jit_disk_fresh_process')):>9} "
              f"{fmt(secs(impls, 'jx_jit_call')):>9} {fmt(jt[0]):>10} {fmt(jt[1]):>9} {ratio(jt[0], cold, 'x'):>8}")
    print("  cold: fresh name, disk cache off (best of a few); retrace: a second jx::jit while the first is alive "
          "(traces, kernels shared in memory; best of a few);\n  disk st.: first call writing the disk cache; disk in: a second "
          "jx::jit reading it; disk new: a new process reading it\n  (after one unrelated compile); call: a cached "
          "call; jax total: jax.jit(f).lower(x).compile(), jax xla: its compile() part")
    first = table.get("compile_sin_cos", {}).get("jx_jit_disk_fresh_process_first")
    start = table.get("first_jit_compile_in_fresh_process", {}).get("jx_jit_cold")
    if first or start:
        print(f"  * new process: compile_sin_cos from disk as its first jit call {fmt(first and first['seconds'])}; "
              f"its first (unrelated, cold) compile {fmt(start and start['seconds'])}")
    if "error_compile" in table:
        print(f"  * compile section failed: {table['error_compile']['jx_jit'].get('error')}")


def print_targets(rows, peers):
    """The issue's targets, each met or missed with its figure."""
    def get(section, w, impl):
        return secs(rows.get(section, {}).get(w, {}), impl)
    print()
    print("targets")
    lines = []

    def check(name, value, ok, shown):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            lines.append(f"  [ n/a ] {name}: not measured")
        else:
            lines.append(f"  [{' met ' if ok else 'MISSED'}] {name}: {shown}")
    for s, w in [("tutorial", f"sin_cos_5000x5000_{d}") for d in ("float32", "float64")] + \
            [("tutorial", f"sin_cos_bcast_5000x5000_{d}") for d in ("float32", "float64")] + \
            [("reduction", f"sum_x_2y_z2_1.6e7_{d}") for d in ("float32", "float64")]:
        jt, lim = get(s, w, "jx_jit"), get(s, w, "limit")
        r = jt / lim if jt and lim else None
        check(f"{w} within 1.25x of the limit", r, r is not None and r <= 1.25, f"jit/limit {r:.2f}" if r else "")
    for w in [f"sin_cos_5000x5000_{d}" for d in ("float32", "float64")] + \
            [f"sin_cos_bcast_5000x5000_{d}" for d in ("float32", "float64")]:
        jt, np_t = get("tutorial", w, "jx_jit"), peers.get("numpy", {}).get(w)
        r = np_t / jt if jt and np_t else None
        check(f"{w} >= 4x faster than NumPy", r, r is not None and r >= 4, f"numpy/jit {r:.2f}x" if r else "")
    for peer, label in (("jax", "jax.jit"), ("torch", "torch"), ("torch_compile", "torch.compile")):
        if peer not in peers:
            check(f"no slower than {label} on any workload", None, False, "")
            continue
        slower = []
        compared = 0
        for section, table in rows.items():
            for w, impls in table.items():
                jt, peer_t = secs(impls, "jx_jit"), peers[peer].get(w)
                if jt and peer_t and not math.isnan(jt):
                    compared += 1
                    if jt > peer_t:
                        slower.append(f"{w} {peer_t / jt:.2f}x")
        check(f"no slower than {label} on any workload", compared or None, not slower,
              f"{compared} compared; slower on: {', '.join(slower) if slower else 'none'}")
    chain = {n: get("compile", f"compile_chain{n}", "jx_jit_cold") for n in (20, 200, 2000)}
    per10 = chain[2000] / 200 if chain[2000] else None
    check("cold compile of a 2000-op chain < 1 ms per 10 ops", per10, per10 is not None and per10 < 1e-3,
          f"{fmt(chain[2000])} ({fmt(per10)} per 10 ops)" if per10 else "")
    growth = chain[2000] / chain[200] if chain[2000] and chain[200] else None
    check("compile time linear in the chain's length (2000 ops / 200 ops <= 12)", growth,
          growth is not None and growth <= 12, f"{growth:.2f}x for 10x the ops" if growth else "")
    for mode, label in (("jx_jit_cold", "compile"), ("jx_jit_retrace", "trace and passes (retrace)")):
        fan = {n: get("compile", f"compile_fan_in{n}", mode) for n in (200, 2000)}
        growth = fan[2000] / fan[200] if fan[2000] and fan[200] else None
        check(f"{label} time linear in a fan-in's width (2000 ops / 200 ops <= 12)", growth,
              growth is not None and growth <= 12, f"{growth:.2f}x for 10x the ops" if growth else "")
    on_ones = get("compile", "compile_chain200_on_ones", "jx_jit_cold")
    # The row-major compile timed beside it, in alternation, where the bench has it.
    beside = rows.get("compile", {}).get("compile_chain200_on_ones", {}).get("jx_jit_cold", {}).get("beside_cold")
    row_major = beside or chain[200]
    r = on_ones / row_major if on_ones and row_major else None
    check("a first call on views compiles as fast as on row-major arrays (chain of 200, within 1.15x)", r,
          r is not None and r <= 1.15,
          f"jnp::ones {fmt(on_ones)}, row-major {fmt(row_major)}{' (timed beside it)' if beside else ''}" if r else "")
    first = get("dispatch", "first_jit_call_in_process", "jx_jit")
    check("first jit call in a process < 10 ms", first, first is not None and first < 0.010, fmt(first))
    ea, np_t = get("dispatch", "dispatch_add_1", "jx_eager"), peers.get("numpy", {}).get("dispatch_add_1")
    r = np_t / ea if ea and np_t else None
    check("eager 1-element add at NumPy's per-op cost", r, r is not None and r >= 1.0,
          f"jx {fmt(ea)}, numpy {fmt(np_t)}" if r else "")
    for w in ("dispatch_add_16384_ones_views", "dispatch_add_128x128_transposed"):
        ea, jt = get("dispatch", w, "jx_eager"), get("dispatch", w, "jx_jit")
        check(f"jit on views no slower than eager ({w})", jt, jt is not None and ea is not None and jt <= ea,
              f"jit {fmt(jt)}, eager {fmt(ea)}")
    cold = get("compile", "compile_sin_cos", "jx_jit_cold")
    check("cold compile of the tutorial < 30 ms", cold, cold is not None and cold < 0.030, fmt(cold))
    for impl, what in (("jx_jit_disk_fresh_process", "new process"), ("jx_jit_disk_in_process", "same process")):
        t = get("compile", "compile_sin_cos", impl)
        check(f"disk-cache hit of the tutorial < 2 ms ({what})", t, t is not None and t < 0.002, fmt(t))
    for w in ("dispatch_add_1", "dispatch_add_1024"):
        t = get("dispatch", w, "jx_jit")
        check(f"cached jitted call {w} < 5 us", t, t is not None and t < 5e-6, fmt(t))
    for w, impls in rows.get("matmul", {}).items():
        if w.startswith("matmul_"):
            direct = [t for t in (secs(impls, "blas_direct"), secs(impls, "onednn_direct")) if t]
            jt, blas = secs(impls, "jx_jit"), min(direct) if direct else None
            r = jt / blas if jt and blas else None
            check(f"{w} within 1.1x of the faster library called directly (OpenBLAS, oneDNN)", r,
                  r is not None and r <= 1.1, f"jit/library {r:.2f}" if r else "")
    for line in lines:
        print(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    ap.add_argument("--quick", action="store_true", help="fewer repetitions, no n=4096 matmul")
    ap.add_argument("--no-peers", action="store_true", help="jx only")
    ap.add_argument("--json", help="also write every jx result (JSON lines) to this file")
    ap.add_argument("--readme", help="also write the report into this file (README.md) between its "
                    "'<!-- bench-report:begin -->' and '<!-- bench-report:end -->' lines")
    ap.add_argument("--only", help="comma-separated sections of the C++ binaries (dispatch,compile,grad,tutorial,"
                    "selu,reduction,softmax,matmul,small_kernels,vecmath,sort); peers still run everything")
    args = ap.parse_args()
    reps = 2 if args.quick else 5
    flags = (["--quick"] if args.quick else []) + (["--only", args.only] if args.only else [])

    load_at_start = os.getloadavg()[0]
    rows, meta = {}, {}
    have_jit = run_binary(os.path.join(args.build, "bench", "jit_bench"), flags, rows, meta)
    eager_flags = flags
    if have_jit and not args.only:  # jit_bench timed eager beside jit; the rest is dispatch and grad
        eager_flags = flags + ["--only", "dispatch,grad"]
    run_binary(os.path.join(args.build, "bench", "jx_bench"), eager_flags, rows, meta)

    peers, jax_c = {}, {}
    if not args.no_peers:
        for name, fn in (("numpy", numpy_workloads), ("jax", jax_workloads), ("torch", torch_workloads),
                         ("torch_compile", torch_compile_workloads)):
            log(f"running peer {name}")
            try:
                peers[name] = fn(reps, args.quick)
            except ImportError:
                peers[name] = None
            except Exception as e:  # a peer that fails is reported, never guessed
                log(f"{name} failed: {e!r}")
                peers[name] = None
        if peers.get("jax") is not None:
            try:
                jax_c = jax_compile(args.quick)
            except Exception as e:
                log(f"jax compile timing failed: {e!r}")
    present = {k: v for k, v in peers.items() if v is not None}

    if args.json:
        with open(args.json, "w") as f:
            for table in rows.values():
                for impls in table.values():
                    for r in impls.values():
                        f.write(json.dumps(r) + "\n")

    limits = rows.get("limit", {})
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  threads={meta.get('threads')}  "
          f"stream triad bandwidth={meta.get('stream_GBps')} GB/s  read bandwidth={meta.get('read_GBps')} GB/s  load average (1 min) at start "
          f"{load_at_start:.2f}, at end {os.getloadavg()[0]:.2f}, on {os.cpu_count()} CPUs")
    if meta.get("blas_kernels"):
        forced = os.environ.get("OPENBLAS_CORETYPE")
        chose = meta.get("blas_kernels_openblas_chose")
        print(f"OpenBLAS kernels: {meta['blas_kernels']}" +
              (f" (OPENBLAS_CORETYPE={forced} in the environment)" if forced is not None else
               f" (jx's choice by the CPU's features: OpenBLAS, not knowing this CPU, chose {chose})"
               if chose and chose != meta["blas_kernels"] else " (OpenBLAS's choice for this CPU)"))
    costs = [f"{w[len('libmvec_'):]} {r['limit']['ns_per_element_per_thread']:.3f}" for w, r in limits.items()
             if w.startswith("libmvec_")]
    peak = limits.get("fma_peak_float64", {}).get("limit", {}).get("gflops")
    if peak:
        print(f"FMA peak (float64, all threads busy): {peak:.1f} GFLOP/s (float32 twice that): the matmul limit")
    if costs:
        print(f"libmvec {'AVX-512' if any('_ZGVe' in r['limit'].get('symbol', '') for w, r in limits.items() if w.startswith('libmvec_')) else 'AVX2'} ns/element/thread (all threads busy): " + ", ".join(costs))
    for name in PEERS:
        if not args.no_peers and peers.get(name) is None:
            print(f"peer {name}: absent")
    if not have_jit:
        print("jx jit: absent (jit_bench not built)")

    for key, title in SECTIONS:
        table = rows.get(key, {})
        if not table:
            continue
        if key == "compile":
            print_compile(table, jax_c)
        else:
            print_section(title, {w: i for w, i in table.items() if not w.startswith("error_")}, present)
            if f"error_{key}" in table:
                print(f"  * jit section failed: {table[f'error_{key}']['jx_jit'].get('error')}")

    grads = rows.get("grad", {})
    if grads:
        gp = grad_peers(reps) if not args.no_peers else {}
        print()
        hdr = (f"{'grad workload':28} {'jx eval':>10} {'jx grad':>10} {'jx ratio':>9} {'jax ratio':>10} "
               f"{'jax grad':>10} {'torch ratio':>11} {'torch grad':>10}")
        print(hdr)
        print("-" * len(hdr))
        for w, impls in grads.items():
            ev, gr = impls["jx_eval"]["seconds"], impls["jx_grad"]["seconds"]
            cells = []
            for peer in ("jax", "torch"):
                p = gp.get((peer, w))
                cells += [f"{p[1] / p[0]:.2f}" if p else "-", fmt(p[1]) if p else "-"]
            print(f"{w:28} {fmt(ev):>10} {fmt(gr):>10} {gr / ev:>9.2f} {cells[0]:>10} {cells[1]:>10} "
                  f"{cells[2]:>11} {cells[3]:>10}")

    print_targets(rows, present)


class Tee:
    """Writes to stdout and keeps a copy (the report, for --readme)."""
    def __init__(self, out):
        self.out, self.parts = out, []

    def write(self, text):
        self.parts.append(text)
        return self.out.write(text)

    def flush(self):
        self.out.flush()


def write_readme(path, report, command):
    begin, end = "<!-- bench-report:begin -->", "<!-- bench-report:end -->"
    with open(path) as f:
        text = f.read()
    if begin not in text or end not in text:
        log(f"{path} has no {begin} ... {end} lines: not written")
        return
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    block = f"{begin}\n`{command}`:\n\n```\n{report.rstrip()}\n```\n{end}"
    with open(path, "w") as f:
        f.write(head + block + tail)
    log(f"wrote the report into {path}")


if __name__ == "__main__":
    if "--readme" in sys.argv:
        tee = Tee(sys.stdout)
        sys.stdout = tee
        try:
            main()
        finally:
            sys.stdout = tee.out
        i = sys.argv.index("--readme")
        cmd = "python3 bench/run.py " + " ".join(a for k, a in enumerate(sys.argv[1:], 1) if k not in (i, i + 1))
        write_readme(sys.argv[i + 1], "".join(tee.parts), cmd.strip())
    else:
        main()
