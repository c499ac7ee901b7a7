#!/usr/bin/env bash
# SIGTERM or SIGINT (Ctrl-C) sent to mpirun while training stops every rank
# within seconds, the job exits nonzero, no process of it is left behind, and
# the ranks say so ("cmpi-train: rank R/4: stopped by SIGTERM": mpirun passes
# both signals on to the ranks as SIGTERM; a terminal's Ctrl-C reaches only
# mpirun, since OpenMPI puts each rank in a process group of its own).
# mpirun SIGKILLs a rank 1 s after its SIGTERM (odls_base_sigkill_timeout)
# and may drop the line of a rank starved for that long on a loaded machine,
# so one line is required, not four.
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
  reports=$(grep -Ec "^cmpi-train: rank [0-3]/4: stopped by SIG(TERM|INT)$" "$job_out")
  [ "$reports" -ge 1 ] || fail "SIG$signal: no rank reported being stopped"
  assert_no_leftovers
  echo "SIG$signal to mpirun: job ended in $job_seconds s, exit code $job_code, $reports ranks reported"
done
echo PASS
