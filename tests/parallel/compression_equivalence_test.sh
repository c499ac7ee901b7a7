#!/usr/bin/env bash
# On dp2 x tp2 x pp2 (8 ranks) every reduction is over 2 ranks, where a sum
# has one possible order: so the loss and gradient-norm trajectories must be
# bit-identical (a) with the lossless mpc codec on every message of every
# group, (b) with the identity codec on the same compressed algorithms, and
# (c) with no compression at all (plain MPI).
# Usage: compression_equivalence_test.sh CMPI_TRAIN CONFIG WORKDIR
set -euo pipefail
exe="$1"; config="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
common=(--set run.dir="$work" --set training.steps=10 --set training.warmup_steps=2
        --set model.layers=4 --set training.global_batch=16 --set compression.preset=none
        --set compression.min_bytes=0)
run() {
  local name="$1"; shift
  mpirun -np 8 --oversubscribe --bind-to none "$exe" --config "$config" "${common[@]}" \
    --set run.name="$name" "$@" > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; exit 1; }
  sed -E 's/.*"loss":([^,]+),.*"grad_norm":([^,]+),.*/\1 \2/' "$work/$name/metrics.jsonl" > "$work/$name.curve"
}
run plain
run identity --set 'compression.rules=[{match: {}, codec: identity}]'
run mpc --set 'compression.rules=[{match: {}, codec: mpc}]'
grep -q '"tp":' "$work/mpc/metrics.jsonl" || { echo "FAIL: no tp stats"; exit 1; }
for name in identity mpc; do
  grep -q "\"compressed_calls\":[1-9]" "$work/$name/metrics.jsonl" \
    || { echo "FAIL: $name run compressed nothing"; exit 1; }
done
echo "loss grad_norm per step (plain):"; cat "$work/plain.curve"
cmp "$work/mpc.curve" "$work/identity.curve" || { echo "FAIL: mpc differs from identity"; paste "$work/mpc.curve" "$work/identity.curve"; exit 1; }
cmp "$work/mpc.curve" "$work/plain.curve" || { echo "FAIL: mpc differs from plain MPI"; paste "$work/mpc.curve" "$work/plain.curve"; exit 1; }
echo PASS
