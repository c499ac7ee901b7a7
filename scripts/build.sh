#!/usr/bin/env bash
# Configures and builds into build/ (Release, Ninja). Extra args go to cmake.
# LibTorch comes from the project's Python environment (scripts/setup.sh);
# ccache is used where installed.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/python_env.sh"
BUILD="${CMPI_BUILD_DIR:-$ROOT/build}"
JOBS="${CMPI_JOBS:-$(nproc)}"
launcher=()
if command -v ccache >/dev/null 2>&1; then
  # The torch-facing targets share a precompiled header: ccache caches their
  # objects only with these sloppiness settings; relative paths let clones
  # in other folders hit the same cache.
  export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache
            -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMPI_PYTHON=$CMPI_PYTHON" \
  "${launcher[@]}" "$@" >/dev/null
cmake --build "$BUILD" -j "$JOBS"
