#!/usr/bin/env bash
# The watchdog in cmpi-train (4 ranks, run.timeout = 3 s), case $4:
#   stopped  one rank stopped with SIGSTOP while training (a node swapping,
#            a hung device);
#   stopped_pp  dp2 x pp2, rank 3 (the last stage) stopped: the rank whose
#            deadline passes first may be one waiting on a rank that itself
#            waits on rank 3; the line must still name rank 3 alone;
#   spin     one rank stuck in a loop of its own (CMPI_TEST_FAULT=spin:...).
# The job must end within run.timeout + 10 s, nonzero, with exactly one
# watchdog line naming a rank, the operation, its group and the ranks it
# waits for, no "stopped by" line, and no process left behind. The line names
# the culprit alone, from the other ranks' answers (issue 41): stopped:
# "world rank 2 did not answer" and no other rank silent; spin: "world rank 1
# is in no communication call" and every other rank waiting in a call.
#   stopped_tp  dp1 x tp4, rank 1 stopped (SIGSTOP) inside a tensor-parallel
#            all-reduce (CMPI_TEST_FAULT=stop:1:tp:200, a few steps in): the
#            line names the op and group (allreduce on tp) and rank 1 alone
#            as silent; the clock starts when rank 1 says it stops;
#   stopped_auto  rank 1 stopped a few steps in under the default
#            run.timeout: auto (no timeout given): the deadline is the floor
#            (20 s, comm/auto_deadline.h), so the job ends within 30 s and
#            the line says which deadline passed;
#   slow_auto  run.timeout: auto with a floor of 2 s, rank 1 slower by
#            0.5 s more every step from step 3 (CMPI_TEST_FAULT=slowing):
#            the others' waits reach 3 s, past the floor, but grow slowly
#            enough for the deadline (10 x the slowest recent wait) to
#            follow: the run finishes, exit 0, no watchdog line;
#   slow_save_auto  the same floor, rank 1 4 s late to a checkpoint save
#            (CMPI_TEST_FAULT=slow_save): saves get the long allowance, the
#            run finishes;
#   lone_node  rank 2 believes itself alone on its node while MPI groups all
#            four together (CMPI_TEST_FAULT=lone_node:2), as on a cluster
#            whose nodes report one host name: the start-up (memory check,
#            process groups) must not hang; one warning, and the run trains.
# Usage: watchdog_test.sh CMPI_TRAIN CONFIG WORKDIR
#          stopped|stopped_pp|stopped_tp|spin|stopped_auto|slow_auto|slow_save_auto|lone_node
set -uo pipefail
exe="$1"; config="$2"; work="$3"; case_name="$4"
source "$(dirname "$0")/fault_test_lib.sh"
rm -rf "$work"; mkdir -p "$work"
timeout_s=3
args=(--set training.steps=100000 --set run.timeout=$timeout_s --set log.every=1)

if [ "$case_name" = lone_node ]; then
  CMPI_TEST_FAULT=lone_node:2 timeout 60 mpirun -np 4 --oversubscribe --bind-to none "$exe" \
    --config "$config" --set run.dir="$work/lone" --set training.steps=3 \
    --set training.warmup_steps=1 --set run.timeout=$timeout_s > "$work/out.txt" 2>&1
  code=$?
  job_out="$work/out.txt"
  [ "$code" -eq 0 ] || fail "lone_node: exit code $code (124: hung)"
  [ "$(grep -c 'warning: the ranks disagree on which of them share a node' "$job_out")" -eq 1 ] ||
    fail "lone_node: not exactly one warning"
  grep "warning: the ranks disagree" "$job_out"
  echo PASS; exit 0
fi

# A run under auto that must finish: exit 0, no watchdog line.
finishes_under_auto() { # FAULT ARGS...
  export CMPI_TEST_FAULT="$1"; shift
  start_job "$work/out.txt" "$work/$case_name" --set log.every=1 \
    --set run.timeout=auto --set run.timeout_floor=2 --set training.warmup_steps=1 "$@"
  wait_for_end 120
  [ "$job_code" -eq 0 ] || fail "$case_name: exit code $job_code"
  ! grep -q "watchdog:" "$job_out" || fail "$case_name: the watchdog ended a healthy run"
  assert_no_leftovers
  echo "$case_name: finished in $job_seconds s"; echo PASS; exit 0
}

case "$case_name" in
  slow_auto) finishes_under_auto slowing:1:3:500 --set training.steps=8 ;;
  slow_save_auto)
    finishes_under_auto slow_save:1:4000 --set training.steps=6 --set checkpoint.every=3 ;;
esac

limit_s=$((timeout_s + 10))
case "$case_name" in
  stopped_auto)
    # No run.timeout: the default, auto.
    start_job "$work/out.txt" "$work/stopped_auto" --set training.steps=100000 --set log.every=1
    for _ in $(seq 600); do
      grep -q "^step 5/" "$job_out" && break
      kill -0 "$job_pid" 2>/dev/null || fail "job ended before step 5"
      sleep 0.1
    done
    pid=$(rank_pid 1) || fail "no process for rank 1"
    kill -STOP "$pid"
    limit_s=30 ;;
  stopped_tp)
    export CMPI_TEST_FAULT=stop:1:tp:200
    start_job "$work/out.txt" "$work/stopped_tp" "${args[@]}" --set parallel.tensor=4
    wait_for_training
    for _ in $(seq 300); do
      grep -q "test fault: stopping inside" "$job_out" && break
      sleep 0.1
    done
    grep -q "test fault: stopping inside" "$job_out" || fail "rank 1 did not stop" ;;
  stopped)
    start_job "$work/out.txt" "$work/stopped" "${args[@]}"
    wait_for_training
    pid=$(rank_pid 2) || fail "no process for rank 2"
    kill -STOP "$pid" ;;
  stopped_pp)
    start_job "$work/out.txt" "$work/stopped_pp" "${args[@]}" --set parallel.pipeline=2
    wait_for_training
    pid=$(rank_pid 3) || fail "no process for rank 3"
    kill -STOP "$pid" ;;
  spin)
    # Rank 1 spins at its 200th communication call, a few steps in; the
    # clock starts when it says so.
    export CMPI_TEST_FAULT=spin:1:200
    start_job "$work/out.txt" "$work/spin" "${args[@]}"
    wait_for_training
    for _ in $(seq 300); do
      grep -q "test fault: spinning" "$job_out" && break
      sleep 0.1
    done
    grep -q "test fault: spinning" "$job_out" || fail "rank 1 did not start spinning" ;;
  *) fail "unknown case $case_name" ;;
esac
wait_for_end "$limit_s"
[ "$job_code" -ne 0 ] || fail "$case_name: exit code 0"
[ "$(grep -c 'watchdog:' "$job_out")" -eq 1 ] || fail "$case_name: not exactly one watchdog line"
grep -Eq "^cmpi-train: rank [0-3]/4: watchdog: [A-Za-z_ ]+ on group [a-z]+ of [0-9]+ ranks? has waited .* for world ranks? [0-9]" "$job_out" ||
  fail "$case_name: the line does not name the rank, operation, group and peers"
! grep -q "stopped by SIG" "$job_out" || fail "$case_name: a rank reported a signal"
line=$(grep "watchdog:" "$job_out")
case "$case_name" in
  stopped_auto)
    grep -q "; world rank 1 did not answer (stopped or dead)" <<< "$line" ||
      fail "$case_name: the line does not name rank 1 alone as silent"
    grep -q "over run.timeout (auto: 20 s = run.timeout_floor; the slowest wait" <<< "$line" ||
      fail "$case_name: the line does not state the auto deadline" ;;
  stopped_tp)
    grep -q "watchdog: allreduce on group tp of 4 ranks" <<< "$line" ||
      fail "$case_name: the line does not name the tp all-reduce"
    grep -q "; world rank 1 did not answer (stopped or dead)" <<< "$line" ||
      fail "$case_name: the line does not name rank 1 alone as silent" ;;
  stopped|stopped_pp)
    culprit=$([ "$case_name" = stopped ] && echo 2 || echo 3)
    grep -q "; world rank $culprit did not answer (stopped or dead)" <<< "$line" ||
      fail "$case_name: the line does not name rank $culprit alone as silent" ;;
  spin)
    grep -q "; world rank 1 is in no communication call" <<< "$line" ||
      fail "spin: the line does not name rank 1 as outside any call"
    ! grep -q "did not answer" <<< "$line" || fail "spin: a rank blamed as silent" ;;
esac
assert_no_leftovers
echo "$case_name: job ended in $job_seconds s (limit $limit_s s), exit code $job_code"
grep "watchdog:" "$job_out"
echo PASS
