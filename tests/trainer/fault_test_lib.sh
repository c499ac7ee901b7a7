# Shared by the fault tests (sourced): start a 4-rank cmpi-train job in the
# background, wait for it to train or to end, and check that nothing of it is
# left running. Every job's command line carries a marker (its run.dir, unique
# per test case) so that pgrep finds this job's processes and no one else's.
# Job control (set -m) gives each job its own process group, as a shell
# would, so that SIGINT is not ignored in the background and cleanup can
# kill the whole group.
set -m

fail() {
  echo "FAIL: $*"
  [ -n "${job_out:-}" ] && [ -f "$job_out" ] && { echo "--- job output ---"; cat "$job_out"; }
  [ -n "${job_pid:-}" ] && kill -9 -- "-$job_pid" 2>/dev/null
  [ -n "${job_marker:-}" ] && for p in $(pgrep -f -- "$job_marker"); do kill -9 "$p"; done
  exit 1
}

# A test stopped from outside (CTest's timeout, Ctrl-C) still kills its job
# and runs its EXIT trap.
trap 'fail "test interrupted"' TERM INT HUP

# start_job OUT MARKER_RUN_DIR ARGS...: mpirun -np 4 EXE --config CONFIG
# --set run.dir=MARKER_RUN_DIR ARGS... in the background; sets job_pid.
start_job() {
  job_out="$1"; job_marker="run.dir=$2"; shift 2
  mpirun -np 4 --oversubscribe --bind-to none "$exe" --config "$config" \
    --set "$job_marker" "$@" > "$job_out" 2>&1 &
  job_pid=$!
  job_start_ns=$(date +%s%N)
}

# Waits until rank 0 reported its first step (every rank is then training).
wait_for_training() {
  for _ in $(seq 600); do
    grep -q "^step 1/" "$job_out" && return 0
    kill -0 "$job_pid" 2>/dev/null || fail "job ended before training"
    sleep 0.1
  done
  fail "no training step within 60 s"
}

# wait_for_end LIMIT_S: waits for the job to end, at most LIMIT_S seconds
# counted from now; sets job_code and job_seconds (from now).
wait_for_end() {
  local limit_ns=$(( $1 * 1000000000 )) from_ns
  from_ns=$(date +%s%N)
  while kill -0 "$job_pid" 2>/dev/null; do
    (( $(date +%s%N) - from_ns > limit_ns )) && fail "job still running after $1 s"
    sleep 0.1
  done
  wait "$job_pid"; job_code=$?
  job_seconds=$(awk -v ns=$(( $(date +%s%N) - from_ns )) 'BEGIN { printf "%.1f", ns / 1e9 }')
}

# The ranks (and mpirun) of the job must be gone, at most 3 s after it ended.
assert_no_leftovers() {
  for _ in $(seq 30); do
    pgrep -f -- "$job_marker" > /dev/null || return 0
    sleep 0.1
  done
  fail "processes left behind: $(pgrep -a -f -- "$job_marker")"
}

# rank_pid RANK: the pid of the job's process with OMPI_COMM_WORLD_RANK=RANK.
rank_pid() {
  local p
  for p in $(pgrep -f -- "$job_marker"); do
    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" \
      && { echo "$p"; return 0; }
  done
  return 1
}
