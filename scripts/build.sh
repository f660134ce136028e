#!/usr/bin/env bash
# Configures and builds jx into build/ (or $JX_BUILD_DIR). Extra arguments go to cmake.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${JX_BUILD_DIR:-$root/build}"
# ccache (when installed) hashes paths relative to the checkout, so a fresh clone reuses
# the objects another clone of the same sources compiled (CI builds in a fresh clone).
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${JX_BUILD_TYPE:-Release}" "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
