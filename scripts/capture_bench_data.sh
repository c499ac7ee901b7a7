#!/usr/bin/env bash
# Regenerates the codec benchmark's captured data, bench/data/gradients.f32 and
# bench/data/activations.f32: trains the tiny GPT (configs/tiny.yaml) for 20
# steps and dumps the last step's gradients and block activations as tensor
# files (io/tensor_file.h: a header with magic, dtype and shape, then
# little-endian float32). Extra arguments go to cmpi-train, e.g.
#   scripts/capture_bench_data.sh --set model.hidden=256 --set model.layers=4
# for a larger capture. Needs build/trainer/cmpi-train (scripts/build.sh);
# CMPI_BUILD_DIR picks another build directory, CMPI_RANKS the rank count (1).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${CMPI_BUILD_DIR:-$ROOT/build}"
TRAIN="$BUILD/trainer/cmpi-train"
DEST="$ROOT/bench/data"

if [ ! -x "$TRAIN" ]; then
  echo "capture_bench_data: $TRAIN not found; build the trainer first (scripts/build.sh)" >&2
  exit 1
fi

# shellcheck source=scripts/mpi_env.sh
source "$ROOT/scripts/mpi_env.sh"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

cd "$ROOT"
mpirun -np "${CMPI_RANKS:-1}" --oversubscribe --bind-to none \
  "$TRAIN" --config configs/tiny.yaml --set run.name=capture --set run.dir="$WORK/runs" \
  --dump-tensors "$WORK/dump" --set training.steps=20 "$@"

mkdir -p "$DEST"
for name in gradients activations; do
  file="$WORK/dump/$name.f32"
  if [ ! -s "$file" ]; then
    echo "capture_bench_data: the trainer wrote no $file" >&2
    exit 1
  fi
  bytes=$(stat -c %s "$file")
  if [ "$(head -c 8 "$file")" != CMPITNSR ]; then
    echo "capture_bench_data: $file is not a tensor file (io/tensor_file.h)" >&2
    exit 1
  fi
  # The header: 20 bytes, then 8 per dimension (u32 ndim at byte 16).
  ndim=$(od -An -tu4 -j16 -N4 "$file" | tr -d ' ')
  values=$(((bytes - 20 - 8 * ndim) / 4))
  # Copy next to the destination, then rename: a reader never sees half a file.
  cp "$file" "$DEST/.$name.f32.tmp"
  mv "$DEST/.$name.f32.tmp" "$DEST/$name.f32"
  echo "capture_bench_data: $DEST/$name.f32: $values floats"
done
