#!/usr/bin/env bash
# A resume under compression.preset: auto continues bit for bit: the routes
# auto chose by timing, and everything it learnt (each slot's memory, trials,
# link estimates, loss trend, the period's measurements, the last loss it is
# owed), are in the checkpoint (rank state comm/<group>/adaptive_policy,
# training/previous_loss) and restored. To compare with an uninterrupted run
# at all, auto must decide alike in two runs: the test-only
# CMPI_TEST_FAULT=auto_timing:100 (comm/test_faults.h) replaces every time
# it measures by one computed from the bytes (a 100 Mbit/s link). dp2 x tp2,
# 20 steps, preset_locality any (one machine), checkpoint at step 10:
#  * two uninterrupted runs give the same losses (the hook makes auto
#    deterministic) and auto changed a route before step 10 (so the
#    checkpoint holds decisions that matter);
#  * a run resumed at step 10 logs the uninterrupted run's losses of steps
#    11-20 bit for bit (a float32 printed with 9 significant digits
#    identifies it), and its step-20 shards equal the uninterrupted run's
#    byte for byte (parameters, optimizer and rank state, auto's included).
# Usage: resume_auto_test.sh CMPI_TRAIN CONFIG WORKDIR
set -uo pipefail
exe="$1"; config="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
small=(--set model.hidden=64 --set model.vocab_size=64 --set model.seq_len=16 --set model.layers=2
       --set training.global_batch=8 --set training.micro_batch=2 --set training.warmup_steps=2
       --set training.steps=20 --set parallel.tensor=2
       --set compression.preset=auto --set compression.preset_locality=any
       --set compression.min_bytes=1KiB --set compression.auto.trend_window=3
       --set log.every=1 --set run.dir="$work" --set checkpoint.every=10 --set checkpoint.keep_last=0)
source "$(dirname "$0")/resume_check_lib.sh"
run() {  # run NAME ARGS...
  local name="$1"; shift
  CMPI_TEST_FAULT=auto_timing:100 timeout 200 mpirun -np 4 --oversubscribe --bind-to none \
    -x CMPI_TEST_FAULT "$exe" --config "$config" "${small[@]}" --set run.name="$name" "$@" \
    > "$work/$name.txt" 2>&1 || fail "$name: exit $?" "$work/$name.txt"
}

run whole
run again
diff <(losses "$work/whole/metrics.jsonl" 1) <(losses "$work/again/metrics.jsonl" 1) ||
  fail "two uninterrupted runs under auto_timing differ: auto is not deterministic with it"
python3 -c 'import json,sys
changed = [r["step"] for r in map(json.loads, open(sys.argv[1]))
           if r["step"] <= 10 and "\"changed\":true" in json.dumps(r, separators=(",", ":"))]
sys.exit(0 if changed else 1)' "$work/whole/metrics.jsonl" ||
  fail "auto changed no route before step 10: the checkpoint holds no decision to restore" \
    "$work/whole.txt"
run resumed --resume "$work/whole/checkpoints/step_00000010"
! grep -q "have no place in this run" "$work/resumed.txt" ||
  fail "the resume dropped saved state" "$work/resumed.txt"
expect_resumed_bit_exact whole resumed 10 20 4
echo "auto resumed at step 10: steps 11-20 and the step-20 shards bit for bit"
echo PASS
