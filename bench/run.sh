#!/usr/bin/env bash
# Builds jx's benchmarks and runs them beside NumPy (and JAX / PyTorch when installed) in
# one run. Peers live in a virtual environment, .venv/ (NumPy always; JX_BENCH_PEERS=all
# also installs jax[cpu] and torch from PyPI).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install_deps.sh"
JX_BUILD_DIR="$root/build" "$root/scripts/build.sh" -DJX_BUILD_BENCH=ON
if [ ! -x "$root/.venv/bin/python" ]; then python3 -m venv "$root/.venv"; fi
"$root/.venv/bin/python" -m pip install -q numpy
if [ "${JX_BENCH_PEERS:-}" = all ]; then "$root/.venv/bin/python" -m pip install -q "jax[cpu]" torch; fi
"$root/.venv/bin/python" "$root/bench/run.py" --build "$root/build" "$@"
