#!/usr/bin/env bash
# Quick start #1: set up, build, prepare the real-text dataset (the King
# James Bible, byte tokens) and train a small GPT on it on 4 MPI ranks, with
# validation loss on held-out chapters (about two minutes on 2 cores).
#   scripts/demo.sh                       # configs/real_text.yaml
#   scripts/demo.sh configs/tiny.yaml     # the synthetic Markov-chain demo
# Extra arguments after the config go to cmpi-train (e.g. --set training.steps=50).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
source "$ROOT/scripts/mpi_env.sh"
cd "$ROOT"
config="${1:-configs/real_text.yaml}"
if grep -q "kjv_bytes" "$config"; then "$ROOT/scripts/prepare_real_text.sh"; fi
mpirun -np "${CMPI_RANKS:-4}" --oversubscribe --bind-to none \
  "$ROOT/build/trainer/cmpi-train" --config "$config" "${@:2}"
echo "plot the run: scripts/cmpi-plot runs/<run.name>   (writes cmpi_plot.png)"
