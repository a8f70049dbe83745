#!/usr/bin/env bash
# Runs every test: the release build's suites (GUI tests offscreen), then the
# parsers' suites again under AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${MEMSCOPE_JOBS:-$(nproc)}

scripts/build.sh
QT_QPA_PLATFORM=offscreen ctest --preset release -j "$jobs"

cmake --preset asan >build-asan-configure.log 2>&1 || { cat build-asan-configure.log; exit 1; }
cmake --build --preset asan -j "$jobs"
ctest --preset asan -j "$jobs"
