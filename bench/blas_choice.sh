#!/usr/bin/env bash
# Compares OpenBLAS and BLIS on sgemm/dgemm (n = 256, 1024, 2048; 2 threads; best of
# several runs) to choose jx's default BLAS (CMake option JX_BLAS). Usage:
#   bench/blas_choice.sh            # prints a GFLOP/s table
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
inc=/usr/include/x86_64-linux-gnu/openblas-pthread  # cblas.h; BLIS exports the same CBLAS symbols
cc -O2 -I"$inc" "$here/blas_choice.c" -o "$tmp/with_openblas" -lopenblas
cc -O2 -I"$inc" "$here/blas_choice.c" -o "$tmp/with_blis" -lblis
threads="${JX_BENCH_THREADS:-2}"
OPENBLAS_NUM_THREADS=$threads "$tmp/with_openblas" > "$tmp/openblas.txt"
BLIS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "$tmp/with_blis" > "$tmp/blis.txt"
echo "GFLOP/s, $threads threads, best of several runs"
printf "%6s  %16s %12s  %16s %12s\n" n "sgemm OpenBLAS" "sgemm BLIS" "dgemm OpenBLAS" "dgemm BLIS"
paste "$tmp/openblas.txt" "$tmp/blis.txt" |
  awk '{ printf "%6d  %16.1f %12.1f  %16.1f %12.1f\n", $1, $2, $5, $3, $6 }'
