#!/usr/bin/env bash
# What a user sees when training goes NaN (training.lr = 1e6 on the tiny
# config: the loss is NaN from step 2). Every case checks that the job ends
# (the timeout), that metrics.jsonl (and summary.json) parse as JSON, and:
#   abort     default policy on dp2 x pp2: exit 1 at step 2, one message naming
#             the step, the ranks with their coordinates, the loss and the
#             gradients' parameter, and the hint;
#   skip      skip_step with max_skipped_steps 2 under ZeRO-2: steps 2 and 3
#             skipped (metrics say so), step 4 stops the job with that reason;
#   lossy     skip_step under the zhybrid preset on every link (zfp on dp
#             gradients): the run completes, reports its skipped steps, and
#             the dp group's stats count the zfp chunks sent raw because of
#             the NaNs.
# Usage: nonfinite_behaviour_test.sh CMPI_TRAIN CONFIG WORKDIR abort|skip|lossy
set -uo pipefail
exe="$1"; config="$2"; work="$3"; mode="$4"
rm -rf "$work/$mode"; mkdir -p "$work/$mode"
out="$work/$mode/out.txt"; run="$work/$mode/runs/nan"
fail() { echo "FAIL ($mode): $*"; cat "$out"; exit 1; }
train() {
  local ranks="$1"; shift
  timeout 120 mpirun -np "$ranks" --oversubscribe --bind-to none "$exe" --config "$config" \
    --set run.dir="$work/$mode/runs" --set run.name=nan --set training.lr=1e6 \
    --set training.warmup_steps=0 --set log.every=1 "$@" > "$out" 2>&1
}
valid_json_lines() {
  python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$1" \
    || fail "$1 holds a line that is not JSON"
}
# Field $2 of metrics line $1 (1-based), as Python prints it.
metric() {
  python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[int(sys.argv[2]) - 1]).get(sys.argv[3]))' \
    "$run/metrics.jsonl" "$1" "$2"
}

case "$mode" in
  abort)
    train 4 --set parallel.pipeline=2 --set training.steps=20
    code=$?
    [ "$code" -ne 124 ] || fail "timed out: ranks left hanging"
    [ "$code" -eq 1 ] || fail "exit code $code (want 1)"
    [ "$(grep -c 'Lower training.lr or set training.on_nonfinite: skip_step' "$out")" -eq 1 ] \
      || fail "the message is not printed exactly once"
    grep -q "error: step 2: the loss went non-finite (nan) on world rank 2 (dp 0, tp 0, pp 1), world rank 3 (dp 1, tp 0, pp 1);" "$out" \
      || fail "no step, loss and last-stage ranks in the message"
    grep -Eq "the gradients went non-finite \(global norm nan\): the first non-finite gradient is [a-z_.0-9]+ from the own backward of world rank [0-3] \(dp [01], tp 0, pp [01]\)" "$out" \
      || fail "the message does not name the gradients' parameter and rank"
    grep -q "the step's update was not applied" "$out" || fail "no word on the update"
    valid_json_lines "$run/metrics.jsonl"
    [ "$(wc -l < "$run/metrics.jsonl")" -eq 2 ] || fail "metrics do not stop at step 2"
    [ "$(metric 2 loss)" = None ] || fail "step 2's loss is not null"
    [ "$(metric 2 nonfinite)" = "['loss', 'grad_norm']" ] || fail "step 2 does not name its non-finite fields"
    ;;
  skip)
    train 2 --set training.on_nonfinite=skip_step --set training.max_skipped_steps=2 \
      --set parallel.zero_stage=2 --set training.steps=20
    code=$?
    [ "$code" -ne 124 ] || fail "timed out: ranks left hanging"
    [ "$code" -eq 1 ] || fail "exit code $code (want 1)"
    [ "$(grep -c 'error: step 4: ' "$out")" -eq 1 ] || fail "no single stop message at step 4"
    grep -q "that is 3 skipped steps in a row, more than training.max_skipped_steps (2) allows" "$out" \
      || fail "the message does not say too many steps in a row were skipped"
    [ "$(grep -c '^warning: step [23]: .*; skipped (' "$out")" -eq 2 ] \
      || fail "steps 2 and 3 are not reported as skipped"
    valid_json_lines "$run/metrics.jsonl"
    [ "$(wc -l < "$run/metrics.jsonl")" -eq 4 ] || fail "metrics do not stop at step 4"
    [ "$(metric 1 skipped)" = False ] || fail "step 1 marked skipped"
    [ "$(metric 3 skipped)" = True ] || fail "step 3 not marked skipped"
    [ "$(metric 3 skipped_steps)" = 2 ] || fail "skipped_steps at step 3 is not 2"
    ;;
  lossy)
    train 2 --set training.on_nonfinite=skip_step --set training.max_skipped_steps=100 \
      --set training.steps=5 --set compression.preset=zhybrid \
      --set compression.preset_locality=any
    code=$?
    [ "$code" -eq 0 ] || fail "exit code $code (want 0: every NaN step skipped)"
    valid_json_lines "$run/metrics.jsonl"
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$run/summary.json" \
      || fail "summary.json is not JSON"
    [ "$(metric 5 skipped_steps)" = 4 ] || fail "steps 2-5 are not all skipped"
    grep -q "5 steps in .* | 4 skipped steps" "$out" || fail "the summary line does not report skipped steps"
    python3 - "$run/summary.json" "$run/metrics.jsonl" <<'PY' || fail "no raw chunks counted"
import json, sys
summary = json.load(open(sys.argv[1]))
assert summary["skipped_steps"] == 4, summary
assert summary["final_loss"] is None and "final_loss" in summary["nonfinite"], summary
assert summary["groups"]["dp"]["nonfinite_raw_chunks"] > 0, summary["groups"]["dp"]
last = json.loads(open(sys.argv[2]).readlines()[-1])
assert last["groups"]["dp"]["nonfinite_raw_chunks"] > 0, last["groups"]["dp"]
first = json.loads(open(sys.argv[2]).readline())
assert first["groups"]["dp"]["nonfinite_raw_chunks"] == 0, first["groups"]["dp"]
PY
    grep -q "codec chunks sent raw because they held NaN or infinity" "$out" \
      || fail "the summary does not mention the raw chunks"
    ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
echo "PASS ($mode)"
