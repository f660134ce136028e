#!/usr/bin/env bash
# The second quick-start command: install dependencies, build everything and run the
# whole test suite; then the same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
# JX_SKIP_SANITIZE=1 skips the sanitizer pass (for quick local runs).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install_deps.sh"
jobs="$(nproc)"

JX_BUILD_DIR="$root/build" "$root/scripts/build.sh" -DJX_BUILD_TESTS=ON -DJX_BUILD_BENCH=ON -DJX_BUILD_EXAMPLES=ON
(cd "$root/build" && ctest --output-on-failure -j "$jobs" --timeout 600)

if [ "${JX_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== the suite again under ASan + UBSan =="
  # -O1 keeps the instrumented build quick on 2 cores; -g1 keeps stack traces readable.
  JX_BUILD_DIR="$root/build-sanitize" JX_BUILD_TYPE=Release "$root/scripts/build.sh" \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1" -DJX_SANITIZE=ON -DJX_BUILD_TESTS=ON -DJX_BUILD_BENCH=OFF -DJX_BUILD_EXAMPLES=OFF
  (cd "$root/build-sanitize" && ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j "$jobs" --timeout 900 -E consumer_project)
fi
