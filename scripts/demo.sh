#!/usr/bin/env bash
# Quick start #1: set up, build, and train the tiny GPT on 4 MPI ranks.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
source "$ROOT/scripts/mpi_env.sh"
cd "$ROOT"
exec mpirun -np "${CMPI_RANKS:-4}" --oversubscribe --bind-to none \
  "$ROOT/build/trainer/cmpi-train" --config "${1:-configs/tiny.yaml}" "${@:2}"
