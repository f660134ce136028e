#!/usr/bin/env bash
# Workload 12 (collectives), one command: builds collectives_bench and runs it in one
# process over 2 CPU devices (allreduce bandwidth against the memory limit, per-collective
# latency), again with one thread per device for the data-parallel step's scaling from 1
# to 2 devices, and under mpirun over 2 ranks (jx's MPI transport against MPI_Allreduce).
# --quick: fewer sizes and repetitions.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${JX_BUILD_DIR:-$root/build}"
if [ ! -f "$build/CMakeCache.txt" ]; then
  "$root/scripts/install_deps.sh"
  JX_BUILD_DIR="$build" "$root/scripts/build.sh" -DJX_BUILD_BENCH=ON
fi
cmake --build "$build" --target collectives_bench
bench="$build/bench/collectives_bench"
ranks="${JX_BENCH_RANKS:-2}"
JX_NUM_CPU_DEVICES="$ranks" "$bench" --only allreduce "$@"
JX_NUM_CPU_DEVICES="$ranks" JX_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$bench" --only scaling "$@"
mpirun --allow-run-as-root --oversubscribe -np "$ranks" -x JX_NUM_CPU_DEVICES=1 -x JX_NUM_THREADS=1 \
  -x OPENBLAS_NUM_THREADS=1 "$bench" "$@"
