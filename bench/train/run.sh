#!/usr/bin/env bash
# End-to-end training benchmark: cmpi-train x {links, policies, layouts} and the PyTorch DDP peer
# on the emulated cluster. Options: bench/train/run.sh --help; guide: bench/train/README.md.
#   sudo bench/train/run.sh --build-dir build --reps 3 --steps 30
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Debian's python3 (python3-torch, python3-matplotlib, python3-yaml), not a pyenv/venv one.
PYTHON=${CMPI_BENCH_PYTHON:-/usr/bin/python3}
exec "$PYTHON" "$HERE/run_bench.py" --python "$PYTHON" "$@"
