#!/usr/bin/env bash
# What a run reports about its speed and its history, end to end on 2 ranks:
#   - every progress line of a GPT shows per-rank FLOP/s, MFU and an ETA;
#     metrics.jsonl and summary.json hold tflops_per_rank, mfu and hfu, the
#     peak being the GEMM rate measured at start-up (run.peak_flops auto), a
#     device's datasheet rate (run.peak_flops: a100) or refused with exit 2
#     naming the key (an unknown device);
#   - --resume on a finished run says so, exits 0 and leaves summary.json and
#     metrics.jsonl as they were;
#   - a run resumed to more steps reports all of them: steps, first loss,
#     attempts and restarts, and the time of both attempts.
# Usage: run_report_test.sh CMPI_TRAIN CONFIG WORK_DIR
set -euo pipefail
exe="$1"; config="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
run="$work/report"
train() {
  mpirun -np 2 --oversubscribe --bind-to none "$exe" --config "$config" --set run.dir="$work" \
    --set run.name=report --set training.warmup_steps=1 --set log.every=1 \
    --set checkpoint.every=2 "$@"
}
fail() { echo "FAIL: $*"; exit 1; }
field() { sed -E "s/.*\"$1\":\"?([^,\"}]+).*/\1/" "$2"; }

train --set training.steps=4 >"$work/first.out" 2>&1 || { cat "$work/first.out"; fail "first run"; }
progress=$(grep -c -E '^step [0-9]+/4 \| .* tok/s \| [0-9.]+ [kMGT]?FLOP/s/rank, MFU [0-9.]+% \|' \
  "$work/first.out" || true)
[ "$progress" = 4 ] || { cat "$work/first.out"; fail "$progress of 4 progress lines show FLOP/s and MFU"; }
grep -q -E '^step 1/4 .* \| ETA [0-9]+s$' "$work/first.out" || { cat "$work/first.out"; fail "no ETA"; }
[ "$(grep -c '"mfu":' "$run/metrics.jsonl")" = 4 ] || fail "mfu not in every metrics line"
summary="$run/summary.json"
for key in tflops_per_rank mfu hfu peak_flops forward_flops_per_token; do
  grep -q "\"$key\":[0-9]" "$summary" || { cat "$summary"; fail "summary has no $key"; }
done
grep -q '"peak_source":"measured fp32 GEMM, 1 thread"' "$summary" || { cat "$summary"; fail "peak source"; }
grep -q '"attempts":1,"restarts":0' "$summary" || { cat "$summary"; fail "attempts of a first run"; }
grep -q '"loss_floor":' "$summary" || fail "the Markov chain's floor is missing"
first_loss=$(field first_loss "$summary")
first_seconds=$(field seconds "$summary")

# Resuming the finished run: a message, exit 0, its files untouched.
cp "$summary" "$work/summary.before"; cp "$run/metrics.jsonl" "$work/metrics.before"
train --set training.steps=4 --resume auto >"$work/again.out" 2>&1 || { cat "$work/again.out"; fail "exit $? resuming a finished run"; }
grep -q "already finished: checkpoint .* is at step 4 of training.steps 4" "$work/again.out" ||
  { cat "$work/again.out"; fail "no message for a finished run"; }
cmp -s "$summary" "$work/summary.before" || fail "summary.json rewritten by a finished run's resume"
cmp -s "$run/metrics.jsonl" "$work/metrics.before" || fail "metrics.jsonl rewritten"

# Resumed to 6 steps: the summary covers both attempts.
train --set training.steps=6 --resume auto >"$work/resumed.out" 2>&1 || { cat "$work/resumed.out"; fail "resumed run"; }
grep -q '"steps":6,' "$summary" || { cat "$summary"; fail "steps of all attempts"; }
grep -q '"attempts":2,"restarts":1' "$summary" || { cat "$summary"; fail "attempts"; }
grep -q '"resumed_from_step":4,"steps_this_attempt":2' "$summary" || { cat "$summary"; fail "this attempt"; }
[ "$(field first_loss "$summary")" = "$first_loss" ] || { cat "$summary"; fail "first loss not step 1's"; }
awk -v all="$(field seconds "$summary")" -v one="$first_seconds" 'BEGIN { exit !(all > one) }' ||
  { cat "$summary"; fail "seconds do not cover both attempts"; }
grep -q '^done: 6 steps (2 this launch, from step 4) in [0-9.]* s over 2 attempts' "$work/resumed.out" || { cat "$work/resumed.out"; fail "done line"; }

# A device's datasheet peak, and a device the table does not know.
train --set training.steps=1 --set checkpoint.every=0 --set run.peak_flops=a100 >"$work/a100.out" 2>&1 ||
  { cat "$work/a100.out"; fail "run.peak_flops a100"; }
grep -q '"peak_flops":1.95e+13,"peak_source":"a100 fp32 datasheet"' "$summary" || { cat "$summary"; fail "a100 peak"; }
set +e
train --set training.steps=1 --set run.peak_flops=a10 >"$work/a10.out" 2>&1; code=$?
set -e
[ "$code" = 2 ] && grep "run.peak_flops" "$work/a10.out" | grep -q "unknown device 'a10'" ||
  { cat "$work/a10.out"; fail "exit $code for an unknown device, want 2 naming run.peak_flops"; }
echo PASS
