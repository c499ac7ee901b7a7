#!/usr/bin/env bash
# Restarts: a 200-step run (the tiny config cut down, 4 ranks, dp4 ZeRO 1,
# checkpoint.every 20) under scripts/cmpi-run, with two ranks killed at
# different steps by the test-only fault injection (CMPI_TEST_KILL_AT_STEP,
# trainer/injected_kill.h: rank 1 raises SIGKILL as it begins step 41 in the
# first attempt, rank 2 at step 121 in the second), completes in the third
# attempt. Checked:
#  * cmpi-run logs both failures and restarts twice, no more;
#  * each attempt resumed (--resume auto) from the newest complete checkpoint:
#      sync:  steps 40 and 120 (saved before the kills);
#      async: steps 20 and 100: the saves of steps 40 and 120 were still in
#             flight (snapshot taken, metadata.yaml not yet published) when
#             the rank died, so the previous complete checkpoints were used;
#  * its metrics.jsonl losses equal, at every step, those of one
#    uninterrupted synchronous run: so from each resume point on. A loss is a
#    float32 printed with 9 significant digits, which identifies it exactly:
#    the comparison is bit for bit.
# Usage: restart_test.sh CMPI_TRAIN CONFIG WORKDIR sync|async
set -uo pipefail
exe="$1"; config="$2"; work="$3"; mode="$4"
root="$(cd "$(dirname "$0")/../.." && pwd)"
rm -rf "$work"; mkdir -p "$work"
small=(--set model.hidden=32 --set model.vocab_size=64 --set model.seq_len=16 --set model.layers=2
       --set training.global_batch=8 --set training.micro_batch=2 --set training.warmup_steps=5
       --set training.steps=200 --set parallel.zero_stage=1 --set parallel.dp_bucket_bytes=16KiB
       --set log.every=20 --set run.dir="$work" --set checkpoint.every=20 --set checkpoint.keep_last=2)
fail() { echo "FAIL: $1"; [ -f "$2" ] && cat "$2"; exit 1; }
mpi=(mpirun -np 4 --oversubscribe --bind-to none)
losses() { grep -o '"loss":[^,]*' "$1"; }

case "$mode" in
sync) async=false; resumed_at=(40 120) ;;
async) async=true; resumed_at=(20 100) ;;
*) echo "unknown mode: $mode"; exit 2 ;;
esac

timeout 200 "${mpi[@]}" "$exe" --config "$config" "${small[@]}" --set run.name=whole \
  > "$work/whole.txt" 2>&1 || fail "uninterrupted run: exit $?" "$work/whole.txt"

out="$work/restarted.txt"
CMPI_TEST_KILL_AT_STEP=1:41,2:121 timeout 300 "$root/scripts/cmpi-run" --max-restarts 3 \
  --backoff 0.2 -- "${mpi[@]}" "$exe" --config "$config" "${small[@]}" --set run.name=restarted \
  --set checkpoint.async=$async > "$out" 2>&1
code=$?
[ "$code" -eq 0 ] || fail "cmpi-run: exit $code (want 0: the third attempt completes)" "$out"
[ "$(grep -c 'cmpi-run: .*failed (exit code' "$out")" -eq 2 ] || fail "not exactly two failures logged" "$out"
grep -q "restart 1 of 3 in 0.2 s" "$out" && grep -q "restart 2 of 3 in 0.4 s" "$out" ||
  fail "restarts (with the doubling backoff) not logged" "$out"
grep -q "attempt 3 of 4 succeeded" "$out" || fail "no success of attempt 3 logged" "$out"
grep -q "no complete checkpoint under .*starting at step 0" "$out" ||
  fail "the first attempt did not start fresh under --resume auto" "$out"
resumes=$(grep -o 'checkpoint: resumed at step [0-9]*' "$out" | grep -o '[0-9]*$' | tr '\n' ' ')
[ "$resumes" = "${resumed_at[0]} ${resumed_at[1]} " ] ||
  fail "resumed at steps '$resumes', want '${resumed_at[*]} '" "$out"
if [ "$mode" = async ]; then
  # The first attempt published the save of step 20 and never that of 40.
  first_attempt=$(sed '/attempt 1 of 4 failed/q' "$out")
  grep -q "checkpoint: step 20 saved .*in the background" <<< "$first_attempt" ||
    fail "attempt 1 did not publish step 20 asynchronously" "$out"
  # ... at a step boundary soon after its shards were durable, not only when
  # the next save (step 40) came due.
  grep -m1 -E "checkpoint: step 20 saved|^step 40/" <<< "$first_attempt" | grep -q "step 20 saved" ||
    fail "attempt 1 published step 20 only after step 40 (no polling at step boundaries)" "$out"
  ! grep -q "checkpoint: step 40 saved" <<< "$first_attempt" ||
    fail "attempt 1 published step 40 although its rank died before the next step ended" "$out"
fi
[ "$(losses "$work/restarted/metrics.jsonl" | wc -l)" -eq 200 ] ||
  fail "metrics.jsonl of the restarted run does not hold 200 steps" "$out"
diff <(losses "$work/whole/metrics.jsonl") <(losses "$work/restarted/metrics.jsonl") > "$work/diff.txt" ||
  fail "losses of the restarted run differ from the uninterrupted run's" "$work/diff.txt"
echo "$mode: killed at steps 41 and 121, resumed at ${resumed_at[*]}, 200 losses bit-exact"
echo PASS
