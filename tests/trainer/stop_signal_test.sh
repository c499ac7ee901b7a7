#!/usr/bin/env bash
# SIGTERM or SIGINT (Ctrl-C) sent to mpirun while training stops every rank
# within seconds: each rank says so ("cmpi-train: rank R/4: stopped by ..."),
# the job exits nonzero, and no process of it is left behind.
# Usage: stop_signal_test.sh CMPI_TRAIN CONFIG WORKDIR
set -uo pipefail
exe="$1"; config="$2"; work="$3"
source "$(dirname "$0")/fault_test_lib.sh"
rm -rf "$work"; mkdir -p "$work"

for signal in TERM INT; do
  start_job "$work/out-$signal.txt" "$work/stopped-$signal" --set training.steps=100000
  wait_for_training
  kill -"$signal" "$job_pid"
  wait_for_end 15
  [ "$job_code" -ne 0 ] || fail "SIG$signal: exit code 0"
  for rank in 0 1 2 3; do
    grep -q "^cmpi-train: rank $rank/4: stopped by SIG" "$job_out" \
      || fail "SIG$signal: rank $rank did not report being stopped"
  done
  assert_no_leftovers
  echo "SIG$signal to mpirun: job ended in $job_seconds s, exit code $job_code"
done
echo PASS
