#!/usr/bin/env bash
# Builds jx's benchmarks (jx_bench: eager jx and the hardware limit; jit_bench: jx::jit) and
# runs them beside NumPy (and JAX / PyTorch when installed) in one run: bench/run.py prints
# one table per workload section with the ratios. Peers live in a virtual environment,
# .venv/ (NumPy always; JX_BENCH_PEERS=all also installs jax[cpu], SciPy for NumPy's erf,
# and PyTorch's CPU-only wheel). Extra arguments go to run.py (--quick, --json FILE).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install_deps.sh"
JX_BUILD_DIR="$root/build" "$root/scripts/build.sh" -DJX_BUILD_BENCH=ON
if [ ! -x "$root/.venv/bin/python" ]; then python3 -m venv "$root/.venv"; fi
"$root/.venv/bin/python" -m pip install -q numpy
if [ "${JX_BENCH_PEERS:-}" = all ]; then
  "$root/.venv/bin/python" -m pip install -q "jax[cpu]" scipy
  # The CPU wheel: PyPI's default torch for Linux carries CUDA (gigabytes) the bench never uses.
  "$root/.venv/bin/python" -m pip install -q torch --index-url https://download.pytorch.org/whl/cpu
fi
"$root/.venv/bin/python" "$root/bench/run.py" --build "$root/build" "$@"
