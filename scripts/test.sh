#!/usr/bin/env bash
# Quick start #2: set up, build, and run the whole test suite.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
source "$ROOT/scripts/mpi_env.sh"
cd "$ROOT/build"
ctest --output-on-failure -j "${CMPI_TEST_JOBS:-$(nproc)}" "$@"
