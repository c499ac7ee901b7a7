#!/usr/bin/env bash
# A bad config or an error on one rank ends the whole 4-rank job with the
# message and a nonzero exit, without hanging (the CTest TIMEOUT bounds it).
# Usage: failure_behaviour_test.sh CMPI_TRAIN CONFIG WORKDIR
set -uo pipefail
exe="$1"; config="$2"; work="$3"
mkdir -p "$work"
run() { timeout 120 mpirun -np 4 --oversubscribe --bind-to none "$exe" "$@" > "$work/out.txt" 2>&1; }

run --config "$config" --set training.micro_batch=-3
code=$?
[ "$code" -eq 2 ] || { echo "FAIL: bad value exit code $code (want 2)"; cat "$work/out.txt"; exit 1; }
grep -q "training.micro_batch" "$work/out.txt" || { echo "FAIL: message does not name the key"; cat "$work/out.txt"; exit 1; }
[ "$(grep -c 'training.micro_batch' "$work/out.txt")" -eq 1 ] || { echo "FAIL: message printed more than once"; cat "$work/out.txt"; exit 1; }

run --config "$config" --set parallel.tensor=3
code=$?
[ "$code" -eq 2 ] || { echo "FAIL: bad layout exit code $code"; cat "$work/out.txt"; exit 1; }
grep -q "group" "$work/out.txt" || { echo "FAIL: layout message does not name the group"; cat "$work/out.txt"; exit 1; }

run --config "$work/does-not-exist.yaml"
code=$?
[ "$code" -eq 2 ] || { echo "FAIL: missing file exit code $code"; cat "$work/out.txt"; exit 1; }

# Only rank 0 writes the run directory: make that impossible so rank 0 fails
# while the other ranks are already inside a collective.
touch "$work/not-a-dir"
run --config "$config" --set run.dir="$work/not-a-dir" --set training.steps=3 \
  --set training.warmup_steps=1
code=$?
[ "$code" -ne 0 ] && [ "$code" -ne 124 ] || { echo "FAIL: runtime error exit code $code"; cat "$work/out.txt"; exit 1; }
grep -q "rank 0/4: error" "$work/out.txt" || { echo "FAIL: no rank-tagged error"; cat "$work/out.txt"; exit 1; }
echo PASS
