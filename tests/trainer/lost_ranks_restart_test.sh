#!/usr/bin/env bash
# Two ranks lost in successive attempts under scripts/cmpi-run, inside
# communication calls of a pipeline layout (dp2 x pp2, the tiny model cut
# down, 24 steps, a checkpoint every 4), each found by the watchdog
# (run.timeout 5 s), the job restarted from the newest complete checkpoint:
#   attempt 1: world rank 1 stops itself (SIGSTOP) inside its 60th call on
#              its pp group (CMPI_TEST_FAULT=stop:1:pp:60, a few steps in): a
#              node frozen mid-exchange, its peers waiting on it;
#   attempt 2: world rank 2 spins at its 260th communication call
#              (CMPI_TEST_FAULT=spin:2:260): a rank stuck in its own code;
#   attempt 3: no fault, runs to the end.
# (CMPI_TEST_FAULT holds one fault; a wrapper picks it by CMPI_RUN_ATTEMPT,
# which cmpi-run sets.) Checked: cmpi-run logs exactly two failures and the
# third attempt's success; each failure is one watchdog line naming its rank
# (rank 1 did not answer; rank 2 is in no communication call); attempts 2
# and 3 resumed from checkpoints after step 0, the second later than the
# first; and the 24 losses of metrics.jsonl equal those of one uninterrupted
# run, bit for bit (a float32 printed with 9 significant digits identifies
# it): each resume continued exactly where the checkpoint was taken.
# Usage: lost_ranks_restart_test.sh CMPI_TRAIN CONFIG WORKDIR
set -uo pipefail
exe="$1"; config="$2"; work="$3"
root="$(cd "$(dirname "$0")/../.." && pwd)"
rm -rf "$work"; mkdir -p "$work"
small=(--set model.hidden=32 --set model.vocab_size=64 --set model.seq_len=16 --set model.layers=2
       --set training.global_batch=8 --set training.micro_batch=2 --set training.warmup_steps=3
       --set training.steps=24 --set parallel.pipeline=2 --set parallel.zero_stage=1
       --set run.timeout=5 --set log.every=1 --set run.dir="$work"
       --set checkpoint.every=4 --set checkpoint.keep_last=0)
fail() { echo "FAIL: $1"; [ -f "${2:-}" ] && cat "$2"; exit 1; }
mpi=(mpirun -np 4 --oversubscribe --bind-to none)
losses() { grep -o '"loss":[^,]*' "$1"; }

timeout 200 "${mpi[@]}" "$exe" --config "$config" "${small[@]}" --set run.name=whole \
  > "$work/whole.txt" 2>&1 || fail "uninterrupted run: exit $?" "$work/whole.txt"

# The fault of each attempt; cmpi-run appends --resume auto to the command.
by_attempt=(bash -c 'case "$CMPI_RUN_ATTEMPT" in
  1) export CMPI_TEST_FAULT=stop:1:pp:60 ;;
  2) export CMPI_TEST_FAULT=spin:2:260 ;;
  *) unset CMPI_TEST_FAULT ;;
esac
exec "$@"' fault-by-attempt)
out="$work/restarted.txt"
timeout 400 "$root/scripts/cmpi-run" --max-restarts 3 --backoff 0.2 -- "${by_attempt[@]}" \
  "${mpi[@]}" "$exe" --config "$config" "${small[@]}" --set run.name=restarted > "$out" 2>&1
code=$?
[ "$code" -eq 0 ] || fail "cmpi-run: exit $code (want 0: the third attempt completes)" "$out"
[ "$(grep -c 'cmpi-run: .*failed (exit code' "$out")" -eq 2 ] || fail "not exactly two failures logged" "$out"
grep -q "attempt 3 of 4 succeeded" "$out" || fail "no success of attempt 3 logged" "$out"
grep -q "test fault: stopping inside communication call 60 on pp" "$out" ||
  fail "rank 1 did not stop in attempt 1" "$out"
grep -q "test fault: spinning at communication call 260" "$out" ||
  fail "rank 2 did not spin in attempt 2" "$out"
[ "$(grep -c 'watchdog:' "$out")" -eq 2 ] || fail "not exactly one watchdog line per failure" "$out"
first=$(sed '/attempt 1 of 4 failed/q' "$out")
second=$(sed -n '/attempt 1 of 4 failed/,/attempt 2 of 4 failed/p' "$out")
grep "watchdog:" <<< "$first" | grep -q "; world rank 1 did not answer (stopped or dead)" ||
  fail "attempt 1's watchdog line does not name rank 1 as silent" "$out"
grep "watchdog:" <<< "$second" | grep -q "; world rank 2 is in no communication call" ||
  fail "attempt 2's watchdog line does not name rank 2 as outside any call" "$out"
read -r -a resumed <<< "$(grep -o 'checkpoint: resumed at step [0-9]*' "$out" | grep -o '[0-9]*$' | tr '\n' ' ')"
[ "${#resumed[@]}" -eq 2 ] && [ "${resumed[0]}" -gt 0 ] && [ "${resumed[1]}" -gt "${resumed[0]}" ] ||
  fail "resumed at steps '${resumed[*]}', want two checkpoints after step 0, the second later" "$out"
[ "$(losses "$work/restarted/metrics.jsonl" | wc -l)" -eq 24 ] ||
  fail "metrics.jsonl of the restarted run does not hold 24 steps" "$out"
diff <(losses "$work/whole/metrics.jsonl") <(losses "$work/restarted/metrics.jsonl") > "$work/diff.txt" ||
  fail "losses of the restarted run differ from the uninterrupted run's" "$work/diff.txt"
echo "rank 1 stopped in a pp call, rank 2 spinning; resumed at ${resumed[*]}; 24 losses bit-exact"
echo PASS
