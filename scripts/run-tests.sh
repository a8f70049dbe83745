#!/usr/bin/env bash
# Runs every test: the release build's suites (GUI tests offscreen), the style
# checks (scripts/check-style.sh: clang-format over every tracked C/C++ file,
# clang-tidy over core with the release build's compile database), then the
# suites of what reads foreign bytes (core's base, format, open and recording
# stages, the importers, the hostile corpus) again under AddressSanitizer and
# UndefinedBehaviorSanitizer (the asan preset: MEMSCOPE_TEST_SCOPE=input).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${MEMSCOPE_JOBS:-$(nproc)}

# Each step's wall time, so that a slow CI run says where its time went.
step() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "memscope: $name took $((SECONDS - start)) s"
}
asan_configure() {
  cmake --preset asan >build-asan-configure.log 2>&1 || { cat build-asan-configure.log; return 1; }
}

step "release build" scripts/build.sh
step "release tests" env QT_QPA_PLATFORM=offscreen ctest --preset release -j "$jobs"
step "style checks" env MEMSCOPE_JOBS="$jobs" scripts/check-style.sh build
step "sanitizer configure" asan_configure
step "sanitizer build" cmake --build --preset asan -j "$jobs"
step "sanitizer tests" ctest --preset asan -j "$jobs"
