#!/usr/bin/env bash
# The watchdog (comm/watchdog.h) on jobs of watchdog_probe that hang:
#   mismatch  mismatched collectives (3 ranks)
#   device_mismatch  the same on device buffers (a FakeDevice per rank)
#   spin      one rank of 4 stuck in a loop of its own (CMPI_TEST_FAULT)
#   stopped   one rank of 4 stopped with SIGSTOP
#   healthy   long compute between calls must not trip the deadline
# A hanging job ends within the timeout + 10 s, nonzero, with exactly one
# "watchdog:" line naming the operation and group, and no rank adds a
# "stopped by SIGTERM" line. The test itself cannot hang: each job runs
# under timeout(1).
# Usage: watchdog_probe_test.sh PROBE SCENARIO
set -uo pipefail
probe="$1"; scenario="$2"
timeout_s=2
out=$(mktemp); trap 'rm -f "$out"' EXIT
fail() { echo "FAIL ($scenario): $*"; echo "--- job output ---"; cat "$out"; exit 1; }
run() { # RANKS [ENV=VALUE...]: the probe under mpirun, in the background
  local ranks="$1"; shift
  env "$@" timeout -s KILL $((timeout_s + 30)) mpirun -np "$ranks" --oversubscribe --bind-to none \
    -x CMPI_TEST_FAULT "$probe" "$probe_scenario" "$timeout_s" > "$out" 2>&1 &
  job=$!
}
start_ns=$(date +%s%N)
operation=allreduce
case "$scenario" in
  mismatch) probe_scenario=mismatch; run 3 CMPI_TEST_FAULT= ;;
  device_mismatch) probe_scenario=device_mismatch; operation="device allreduce"; run 3 CMPI_TEST_FAULT= ;;
  spin) probe_scenario=loop; run 4 CMPI_TEST_FAULT=spin:2:20 ;;
  stopped)
    probe_scenario=loop; run 4 CMPI_TEST_FAULT=
    # Stopped only once every rank is past start-up (MPI_Init and the
    # watchdog's set-up are not watched), which under a sanitizer takes
    # longer than the couple of seconds it takes otherwise.
    for _ in $(seq 300); do grep -q "probe looping" "$out" && break; sleep 0.1; done
    grep -q "probe looping" "$out" || fail "the probe did not start its loop within 30 s"
    victim=""
    for p in $(pgrep -f -- "$probe loop"); do
      tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && victim=$p
    done
    [ -n "$victim" ] || fail "no process for rank 1"
    kill -STOP "$victim"
    start_ns=$(date +%s%N) ;;
  healthy) probe_scenario=healthy; run 3 CMPI_TEST_FAULT= ;;
  *) echo "unknown scenario $scenario"; exit 2 ;;
esac
wait "$job"; code=$?
seconds=$(( ($(date +%s%N) - start_ns) / 1000000000 ))
if [ "$scenario" = healthy ]; then
  [ "$code" -eq 0 ] || fail "exit code $code (want 0)"
  grep -q "probe finished" "$out" || fail "the job did not finish"
  ! grep -q "watchdog" "$out" || fail "the watchdog fired on a healthy job"
  echo "PASS: healthy job finished (${seconds} s)"; exit 0
fi
[ "$code" -ne 0 ] || fail "exit code 0"
[ "$code" -ne 137 ] || fail "the job hung (killed after $((timeout_s + 30)) s)"
[ "$seconds" -le $((timeout_s + 10)) ] || fail "the job took ${seconds} s (timeout ${timeout_s} s)"
lines=$(grep -c "watchdog:" "$out")
[ "$lines" -eq 1 ] || fail "$lines watchdog lines (want 1)"
grep -Eq "^cmpi-probe: rank [0-9]/[34]: watchdog: $operation on group (dp|tp) of [34] ranks has waited .*, for world ranks? [0-9]" "$out" ||
  fail "the line does not name the rank, operation, group and peers"
! grep -q "stopped by SIG" "$out" || fail "a rank reported being stopped by a signal"
echo "PASS: $scenario: job ended in ${seconds} s, exit code $code: $(grep 'watchdog:' "$out")"
