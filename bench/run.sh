#!/usr/bin/env bash
# Builds jx's benchmarks (jx_bench: eager jx and the hardware limit; jit_bench: jx::jit) and
# runs them beside NumPy (and JAX / PyTorch when installed) in one run: bench/run.py prints
# one table per workload section with the ratios. Peers live in a virtual environment,
# .venv/ (NumPy always; JX_BENCH_PEERS=all also installs jax[cpu] and SciPy (NumPy's erf)
# from PyPI, and JX_BENCH_PEERS=all+torch PyTorch too: PyPI's Linux wheel carries CUDA
# libraries, gigabytes the bench never uses). Extra arguments go to run.py (--quick, --json FILE).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install_deps.sh"
JX_BUILD_DIR="$root/build" "$root/scripts/build.sh" -DJX_BUILD_BENCH=ON
if [ ! -x "$root/.venv/bin/python" ]; then python3 -m venv "$root/.venv"; fi
"$root/.venv/bin/python" -m pip install -q numpy
case "${JX_BENCH_PEERS:-}" in
  all) "$root/.venv/bin/python" -m pip install -q "jax[cpu]" scipy ;;
  all+torch) "$root/.venv/bin/python" -m pip install -q "jax[cpu]" scipy torch ;;
esac
"$root/.venv/bin/python" "$root/bench/run.py" --build "$root/build" "$@"
