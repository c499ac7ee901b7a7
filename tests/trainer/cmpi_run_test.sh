#!/usr/bin/env bash
# scripts/cmpi-run on stand-in jobs (bash one-liners, no MPI; cmpi-run appends
# "--resume auto", which `bash -c` takes as its $0 and $1):
#  * a job that keeps failing runs 1 + --max-restarts times, each restart
#    logged with the doubling backoff, and cmpi-run exits with its code;
#  * exit 2 (bad config) is not retried;
#  * CMPI_RUN_ATTEMPT counts the attempts, and a later success ends with 0;
#  * SIGTERM to cmpi-run ends the job in flight, without a restart;
#  * bad options and a command that has --resume: exit 2 and one message.
# Usage: cmpi_run_test.sh WORKDIR
set -uo pipefail
work="$1"
run="$(cd "$(dirname "$0")/../.." && pwd)/scripts/cmpi-run"
rm -rf "$work"; mkdir -p "$work"
out="$work/out.txt"
fail() { echo "FAIL: $1"; cat "$out"; exit 1; }

timeout 30 "$run" --max-restarts 2 --backoff 0.1 -- bash -c 'exit 3' > "$out" 2>&1
code=$?
[ "$code" -eq 3 ] || fail "failing job: exit $code (want 3)"
[ "$(grep -c 'failed (exit code 3' "$out")" -eq 3 ] || fail "not 3 attempts"
grep -q "restart 1 of 2 in 0.1 s" "$out" && grep -q "restart 2 of 2 in 0.2 s" "$out" ||
  fail "restarts or backoff not logged"
grep -q "attempt 3 of 3 failed (exit code 3 .*no restarts left (--max-restarts 2)" "$out" ||
  fail "the last failure does not say that no restarts are left"

timeout 30 "$run" --backoff 0 -- bash -c 'exit 2' > "$out" 2>&1
code=$?
[ "$code" -eq 2 ] && [ "$(grep -c 'failed\|exit code 2' "$out")" -eq 1 ] &&
  grep -q "not restarting" "$out" || fail "exit 2 was retried or not reported (exit $code)"

timeout 30 "$run" --backoff 0 -- bash -c '[ "$CMPI_RUN_ATTEMPT" -ge 3 ] && [ "$1" = auto ]' > "$out" 2>&1
code=$?
[ "$code" -eq 0 ] && grep -q "attempt 3 of 4 succeeded" "$out" ||
  fail "CMPI_RUN_ATTEMPT or --resume auto not passed (exit $code)"

marker="cmpi-run-test-$$"
"$run" --backoff 0 -- bash -c "sleep 60; : $marker" > "$out" 2>&1 &
launcher=$!
# The job itself (cmpi-run's own command line holds the marker too).
for _ in $(seq 50); do pgrep -f -- "^bash -c sleep 60; : $marker" > /dev/null && break; sleep 0.1; done
kill -TERM "$launcher"
for _ in $(seq 50); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.1; done
kill -0 "$launcher" 2>/dev/null && { kill -9 "$launcher"; fail "cmpi-run still running 5 s after SIGTERM"; }
wait "$launcher"
code=$?
[ "$code" -ne 0 ] && grep -q "stopped by SIGTERM during attempt 1" "$out" ||
  fail "SIGTERM: exit $code, or not reported"
grep -q "restart [0-9]" "$out" && fail "SIGTERM led to a restart"
sleep 0.5
pgrep -f -- "$marker" > /dev/null && fail "the job outlived cmpi-run's SIGTERM"

for bad in "--max-restarts x:--max-restarts expects a whole number" "--backoff -1:--backoff expects seconds" \
           "--bogus:unknown option '--bogus'" ":no command to run" \
           "-- mpirun --resume:cmpi-run adds --resume auto itself"; do
  read -r -a args <<< "${bad%%:*}"
  "$run" "${args[@]}" > "$out" 2>&1
  code=$?
  [ "$code" -eq 2 ] && [ "$(grep -c . "$out")" -eq 1 ] && grep -q -- "${bad#*:}" "$out" ||
    fail "'${bad%%:*}': exit $code, want 2 and one line saying '${bad#*:}'"
done
echo PASS
