#!/usr/bin/env bash
# The first quick-start command: install dependencies, build, run the tour.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install_deps.sh"
JX_BUILD_DIR="$root/build" "$root/scripts/build.sh" -DJX_BUILD_TESTS=OFF -DJX_BUILD_BENCH=OFF -DJX_BUILD_EXAMPLES=ON
"$root/build/examples/tour"
