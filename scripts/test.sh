#!/usr/bin/env bash
# Quick start #2: set up, build, and run the whole test suite.
#   scripts/test.sh [CTEST_ARGS ...]
#   scripts/test.sh --sanitize address,undefined [CTEST_ARGS ...]
#   scripts/test.sh --sanitize thread [CTEST_ARGS ...]
# With --sanitize, the torch-free layers and their tests are built with those
# sanitizers into build-san-<list>/ (the prebuilt LibTorch is not
# instrumented, so the torch-facing tests do not run there;
# docs/hardening.md) and ctest runs in that directory.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
sanitize=""
if [ "${1:-}" = "--sanitize" ]; then
  sanitize="${2:?--sanitize needs a list: address,undefined or thread}"
  shift 2
fi
if [ -z "$sanitize" ]; then
  "$ROOT/scripts/setup.sh"
  "$ROOT/scripts/build.sh"
  source "$ROOT/scripts/mpi_env.sh"
  cd "$ROOT/build"
  ctest --output-on-failure -j "${CMPI_TEST_JOBS:-$(nproc)}" "$@"
  exit
fi

case "$sanitize" in
  address | undefined | address,undefined | undefined,address | thread) ;;
  *) echo "scripts/test.sh: --sanitize takes address,undefined or thread, not '$sanitize'" >&2
     exit 2 ;;
esac
BUILD="$ROOT/build-san-${sanitize//,/-}"
CMPI_BUILD_DIR="$BUILD" "$ROOT/scripts/build.sh" -DCMPI_SANITIZE="$sanitize"
source "$ROOT/scripts/mpi_env.sh"
# Every ASan/UBSan/TSan report ends the test with a failure, leaks at exit
# included, but for reports inside OpenMPI, which is not instrumented and
# keeps its own allocations to the end (tests/support/lsan_openmpi.supp and
# tsan_openmpi.supp say which and why).
# fast_unwind_on_malloc=0: OpenMPI is built without frame pointers, so the
# fast unwinder loses the allocation stacks that the suppressions match.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:fast_unwind_on_malloc=0:abort_on_error=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$ROOT/tests/support/lsan_openmpi.supp:print_suppressions=0}"
# Keep OpenMPI's components loaded to the end, so that a leak made inside
# one is named by its module (mca_*.so), not "<unknown module>".
export OMPI_MCA_mca_base_component_disable_dlclose=1
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/tests/support/tsan_openmpi.supp}"
cd "$BUILD"
ctest --output-on-failure -j "${CMPI_TEST_JOBS:-$(nproc)}" "$@"
