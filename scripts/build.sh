#!/usr/bin/env bash
# Configures and builds into build/ (Release, Ninja). Extra args go to cmake.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${CMPI_BUILD_DIR:-$ROOT/build}"
JOBS="${CMPI_JOBS:-$(nproc)}"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$BUILD" -j "$JOBS"
