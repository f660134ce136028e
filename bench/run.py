#!/usr/bin/env python3
"""Runs jx's benchmarks and its peers side by side in one run and prints ratios.

    python3 bench/run.py [--build build] [--quick]

jx's timings come from the jx_bench binary (JSON lines); NumPy, JAX and PyTorch run the
same workloads here when they are importable (a peer that is missing is reported absent,
never guessed). The memory-bandwidth limit is a STREAM triad measured by jx_bench in the
same run: limit = bytes moved / bandwidth (../shared/BENCHMARKS.md).
"""
import argparse
import json
import os
import subprocess
import sys
import time


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


def numpy_workloads(reps):
    import numpy as np
    rng = np.random.default_rng(0)
    out = {}
    a = np.ones(1, np.float32)
    out["dispatch_add_1"] = per_call(lambda: a + a)
    c = np.ones(1024, np.float32)
    out["dispatch_add_1024"] = per_call(lambda: c + c, 5000)
    for dt in ("float32", "float64"):
        x = rng.random((5000, 5000)).astype(dt)
        y = rng.random((5000, 5000)).astype(dt)
        yb = np.arange(5000, dtype=dt)
        out[f"sin_cos_5000x5000_{dt}"] = best(lambda: np.sin(x) + np.cos(y), reps)
        out[f"sin_cos_bcast_5000x5000_{dt}"] = best(lambda: np.sin(x) + np.cos(yb), reps)
        out[f"sin_5000x5000_{dt}"] = best(lambda: np.sin(x), reps)
        del x, y
    x = rng.standard_normal(16000000).astype(np.float32)
    l, al = np.float32(1.0507009873554805), np.float32(1.6732632423543772)
    out["selu_1.6e7_float32"] = best(lambda: l * np.where(x > 0, x, al * np.exp(x) - al), reps)
    for dt in ("float32", "float64"):
        x, y, z = (rng.random(16000000).astype(dt) for _ in range(3))
        out[f"sum_x_2y_z2_1.6e7_{dt}"] = best(lambda: float(np.sum(x + 2 * y + z * z)), reps)
    x = rng.standard_normal((4096, 4096)).astype(np.float32)

    def lse():
        m = x.max(axis=1, keepdims=True)
        return np.log(np.exp(x - m).sum(axis=1)) + m[:, 0]
    out["logsumexp_rows_4096x4096_float32"] = best(lse, reps)
    for n in (256, 1024):
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        out[f"matmul_{n}_float32"] = best(lambda: a @ b, reps)
    return out


def grad_peers(reps):
    """grad / eval ratios of the peers on the workloads of jx_bench's section 2."""
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


def jax_workloads(reps):
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    out = {}
    k = jax.random.PRNGKey(0)
    a = jnp.ones(1, jnp.float32)
    add = jax.jit(lambda p, q: p + q)
    out["dispatch_add_1"] = per_call(lambda: add(a, a).block_until_ready(), 2000)
    f = jax.jit(lambda x, y: jnp.sin(x) + jnp.cos(y))
    for dt in (jnp.float32, jnp.float64):
        x = jax.random.uniform(k, (5000, 5000), dt)
        y = jax.random.uniform(k, (5000, 5000), dt)
        yb = jnp.arange(5000, dtype=dt)
        name = jnp.dtype(dt).name
        out[f"sin_cos_5000x5000_{name}"] = best(lambda: f(x, y).block_until_ready(), reps)
        out[f"sin_cos_bcast_5000x5000_{name}"] = best(lambda: f(x, yb).block_until_ready(), reps)
    x = jax.random.normal(k, (16000000,), jnp.float32)
    selu = jax.jit(lambda x: 1.0507009873554805 * jnp.where(x > 0, x, 1.6732632423543772 * jnp.exp(x) - 1.6732632423543772))
    out["selu_1.6e7_float32"] = best(lambda: selu(x).block_until_ready(), reps)
    red = jax.jit(lambda x, y, z: jnp.sum(x + 2 * y + z * z))
    for dt in (jnp.float32, jnp.float64):
        x = jax.random.uniform(k, (16000000,), dt)
        out[f"sum_x_2y_z2_1.6e7_{jnp.dtype(dt).name}"] = best(lambda: red(x, x, x).block_until_ready(), reps)
    x = jax.random.normal(k, (4096, 4096), jnp.float32)
    lse = jax.jit(lambda x: jax.nn.logsumexp(x, axis=1))
    out["logsumexp_rows_4096x4096_float32"] = best(lambda: lse(x).block_until_ready(), reps)
    mm = jax.jit(lambda a, b: a @ b)
    for n in (256, 1024):
        a = jax.random.normal(k, (n, n), jnp.float32)
        out[f"matmul_{n}_float32"] = best(lambda: mm(a, a).block_until_ready(), reps)
    return out


def torch_workloads(reps):
    import torch
    torch.set_num_threads(os.cpu_count())
    out = {}
    a = torch.ones(1)
    out["dispatch_add_1"] = per_call(lambda: a + a)
    for dt in (torch.float32, torch.float64):
        x = torch.rand(5000, 5000, dtype=dt)
        y = torch.rand(5000, 5000, dtype=dt)
        name = str(dt).split(".")[1]
        out[f"sin_cos_5000x5000_{name}"] = best(lambda: torch.sin(x) + torch.cos(y), reps)
    for n in (256, 1024):
        a = torch.randn(n, n)
        out[f"matmul_{n}_float32"] = best(lambda: a @ a, reps)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    reps = 2 if args.quick else 5

    exe = os.path.join(args.build, "bench", "jx_bench")
    lines = subprocess.run([exe] + (["--quick"] if args.quick else []), check=True,
                           capture_output=True, text=True).stdout.splitlines()
    rows, bw, meta = {}, None, {}
    for line in lines:
        r = json.loads(line)
        if "workload" not in r:
            meta = r
            continue
        if r["workload"] == "stream_triad":
            bw = 1.0 / r["seconds"]
            continue
        rows.setdefault(r["workload"], {})[r["impl"]] = r

    peers = {}
    for name, fn in (("numpy", numpy_workloads), ("jax", jax_workloads), ("torch", torch_workloads)):
        try:
            peers[name] = fn(reps)
        except ImportError:
            peers[name] = None
        except Exception as e:  # a peer that fails is reported, never guessed
            print(f"# {name} failed: {e}", file=sys.stderr)
            peers[name] = None

    print(f"threads={meta.get('threads')}  stream triad bandwidth={meta.get('stream_GBps')} GB/s")
    for name, p in peers.items():
        if p is None:
            print(f"peer {name}: absent")
    hdr = f"{'workload':36} {'jx eager':>10} {'numpy':>10} {'jax.jit':>10} {'torch':>10} {'limit':>10} {'jx/limit':>9} {'numpy/jx':>9}"
    print(hdr)
    print("-" * len(hdr))

    def fmt(t):
        if t is None:
            return "-"
        return f"{t * 1e6:.2f}us" if t < 1e-3 else f"{t * 1e3:.2f}ms"

    grads = {w: impls for w, impls in rows.items() if "jx_grad" in impls}
    for w in grads:
        del rows[w]
    for w, impls in rows.items():
        jx_t = impls.get("jx_eager", {}).get("seconds")
        limit = None
        if "blas_direct" in impls:
            limit = impls["blas_direct"]["seconds"]
        elif impls.get("jx_eager", {}).get("bytes") and bw:
            limit = impls["jx_eager"]["bytes"] / bw
        np_t = (peers.get("numpy") or {}).get(w)
        jax_t = (peers.get("jax") or {}).get(w)
        th_t = (peers.get("torch") or {}).get(w)
        ratio = f"{jx_t / limit:.2f}" if (jx_t and limit) else "-"
        speed = f"{np_t / jx_t:.2f}x" if (jx_t and np_t) else "-"
        print(f"{w:36} {fmt(jx_t):>10} {fmt(np_t):>10} {fmt(jax_t):>10} {fmt(th_t):>10} {fmt(limit):>10} {ratio:>9} {speed:>9}")

    gp = grad_peers(reps)
    print()
    hdr = f"{'grad workload':28} {'jx eval':>10} {'jx grad':>10} {'jx ratio':>9} {'jax ratio':>10} {'jax grad':>10} {'torch ratio':>11} {'torch grad':>10}"
    print(hdr)
    print("-" * len(hdr))
    for w, impls in grads.items():
        ev, gr = impls["jx_eval"]["seconds"], impls["jx_grad"]["seconds"]
        cells = []
        for peer in ("jax", "torch"):
            p = gp.get((peer, w))
            cells += [f"{p[1] / p[0]:.2f}" if p else "-", fmt(p[1]) if p else "-"]
        print(f"{w:28} {fmt(ev):>10} {fmt(gr):>10} {gr / ev:>9.2f} {cells[0]:>10} {cells[1]:>10} {cells[2]:>11} {cells[3]:>10}")


if __name__ == "__main__":
    main()
