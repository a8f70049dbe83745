#!/usr/bin/env bash
# Configures and builds every component this machine can build (build/).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${MEMSCOPE_JOBS:-$(nproc)}
cmake --preset release >build-configure.log 2>&1 || { cat build-configure.log; exit 1; }
sed -n '/The following features have been enabled/,/Configuring done/p' build-configure.log
cmake --build --preset release -j "$jobs"
