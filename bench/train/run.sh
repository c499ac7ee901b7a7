#!/usr/bin/env bash
# End-to-end training benchmark: cmpi-train x {links, policies, layouts} and the PyTorch DDP peer
# on the emulated cluster. Options: bench/train/run.sh --help; guide: bench/train/README.md.
#   sudo bench/train/run.sh --build-dir build --reps 3 --steps 30
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The project's Python environment (scripts/setup.sh): the DDP peer runs on the
# same torch whose LibTorch cmpi-train links; matplotlib and yaml are there too.
source "$HERE/../../scripts/python_env.sh"
PYTHON=${CMPI_BENCH_PYTHON:-$CMPI_PYTHON}
exec "$PYTHON" "$HERE/run_bench.py" --python "$PYTHON" "$@"
