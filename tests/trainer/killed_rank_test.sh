#!/usr/bin/env bash
# A rank killed with SIGKILL while training (the first, a middle and the last)
# ends the whole job within seconds with a nonzero exit, mpirun naming the
# rank and the signal, and no process of the job left behind.
# Usage: killed_rank_test.sh CMPI_TRAIN CONFIG WORKDIR
set -uo pipefail
exe="$1"; config="$2"; work="$3"
source "$(dirname "$0")/fault_test_lib.sh"
rm -rf "$work"; mkdir -p "$work"

for victim in 0 2 3; do
  start_job "$work/out-$victim.txt" "$work/killed-$victim" --set training.steps=100000
  wait_for_training
  pid=$(rank_pid "$victim") || fail "no process for rank $victim"
  kill -9 "$pid"
  wait_for_end 15
  [ "$job_code" -ne 0 ] || fail "rank $victim killed: exit code 0"
  grep -q "rank $victim .*signal 9" "$job_out" || fail "no message naming rank $victim and signal 9"
  assert_no_leftovers
  echo "rank $victim killed: job ended in $job_seconds s, exit code $job_code"
done
echo PASS
