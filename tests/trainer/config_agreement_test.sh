#!/usr/bin/env bash
# One config per job, checked before anything runs (4 ranks):
#  * a config on stdin (only rank 0 can read it) trains exactly as the same
#    file does, instead of the other ranks reading an empty file;
#  * an empty config file is an error, printed once, exit 2;
#  * ranks started with different overrides (an MPMD launch) stop with an
#    error naming the rank, exit 2, no hang;
#  * a model that cannot fit the node's memory is refused before allocation,
#    naming the keys; a legal but absurd chunk size is warned about once.
# Usage: config_agreement_test.sh CMPI_TRAIN CONFIG WORKDIR
set -uo pipefail
exe="$1"; config="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
short=(--set training.steps=3 --set training.warmup_steps=1)
run() { timeout 60 mpirun -np 4 --oversubscribe --bind-to none "$@" > "$work/out.txt" 2>&1; }
fail() { echo "FAIL: $1"; cat "$work/out.txt"; exit 1; }
final_loss() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["final_loss"])' "$1"; }

run "$exe" --config "$config" "${short[@]}" --set run.dir="$work/file" --set run.name=r
[ $? -eq 0 ] || fail "the run from the file failed"
run "$exe" --config /dev/stdin "${short[@]}" --set run.dir="$work/stdin" --set run.name=r < "$config"
code=$?
[ "$code" -eq 0 ] || fail "config on stdin: exit $code (124 = hung)"
[ "$(final_loss "$work/file/r/summary.json")" = "$(final_loss "$work/stdin/r/summary.json")" ] ||
  fail "stdin run's loss differs from the file run's"

: > "$work/empty.yaml"
run "$exe" --config "$work/empty.yaml"
code=$?
[ "$code" -eq 2 ] || fail "empty config: exit $code (want 2)"
[ "$(grep -c 'the config is empty' "$work/out.txt")" -eq 1 ] || fail "empty config: message not printed once"

timeout 60 mpirun -np 2 --oversubscribe --bind-to none "$exe" --config "$config" "${short[@]}" \
  : -np 2 "$exe" --config "$config" "${short[@]}" --set training.lr=0.01 > "$work/out.txt" 2>&1
code=$?
[ "$code" -eq 2 ] || fail "different overrides: exit $code (want 2; 124 = hung)"
grep -q "rank 2 of 4 resolved a different config" "$work/out.txt" || fail "mismatch not named"

run "$exe" --config "$config" --set model.hidden=65536
code=$?
[ "$code" -eq 2 ] || fail "model too large for memory: exit $code (want 2)"
[ "$(grep -c 'memory: each rank needs about' "$work/out.txt")" -eq 1 ] || fail "memory message not printed once"
grep -q "model.hidden = 65536 (--set model.hidden=65536)" "$work/out.txt" || fail "memory message does not name the key"

run "$exe" --config "$config" "${short[@]}" --set run.dir="$work/warn" --set compression.chunk_bytes=4
[ $? -eq 0 ] || fail "a tiny chunk is legal"
[ "$(grep -c 'warning: --set compression.chunk_bytes=4: compression.chunk_bytes: 4 bytes' "$work/out.txt")" -eq 1 ] ||
  fail "tiny chunk: no single warning naming the key"
echo PASS
