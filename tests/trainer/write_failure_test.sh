#!/usr/bin/env bash
# A run whose files cannot be written fails loudly: nonzero exit, one message
# naming the file and the OS error, every rank gone, and no "run directory:"
# success line. Cases (second argument):
#   full-disk: run.dir on a small tmpfs filled almost to the brim, so that
#     metrics.jsonl fails after a few records, or (with metrics.jsonl off)
#     summary.json fails. Needs mount(2): skips (exit 77) where not permitted.
#   run-dir: the run directory cannot be created (a file is in the way); and
#     a run with log.metrics_jsonl off lists only the files it wrote.
#   sync-shard: a synchronous checkpoint save (step 10) whose shard write
#     fails on rank 1 (a directory stands where its shard goes, which no
#     permission bit could do for root): exit 2 with one message naming the
#     shard, no metadata.yaml published for step 10, and the previous
#     checkpoint (step 5, keep_last 1) intact: complete and resumable.
# Usage: write_failure_test.sh CMPI_TRAIN CONFIG WORKDIR full-disk|run-dir|sync-shard
set -uo pipefail
exe="$1"; config="$2"; work="$3"; case_name="$4"
source "$(dirname "$0")/fault_test_lib.sh"
short_run=(--set training.steps=30 --set training.warmup_steps=2)

# run_to_end OUT RUN_DIR ARGS...: a whole job, at most 120 s.
run_to_end() {
  start_job "$@"
  wait_for_end 120
  assert_no_leftovers
}

# The job failed with MESSAGE (an ERE) from rank 0 and claimed no success.
assert_failed_with() {
  [ "$job_code" -ne 0 ] || fail "exit code 0 (want nonzero)"
  grep -Eq "^cmpi-train: rank 0/4: error: $1" "$job_out" || fail "no message matching: $1"
  ! grep -q "run directory:" "$job_out" || fail "reported success: $(grep 'run directory:' "$job_out")"
}

case "$case_name" in
full-disk)
  fs="$work/fs"
  mountpoint -q "$fs" 2>/dev/null && umount "$fs"  # left by a test killed outright
  rm -rf "$work"; mkdir -p "$fs"
  if ! mount_error=$(mount -t tmpfs -o size=256k tmpfs "$fs" 2>&1); then
    echo "SKIP: cannot mount a tmpfs to fill (needs root or CAP_SYS_ADMIN): $mount_error"
    exit 77
  fi
  trap 'umount "$fs" || umount -l "$fs"' EXIT
  # fill_leaving KB: everything but KB of the file system is taken.
  fill_leaving() {
    rm -rf "${fs:?}"/*
    dd if=/dev/zero of="$fs/filler" bs=4k 2>/dev/null
    truncate -s "-${1}K" "$fs/filler" || fail "cannot shrink the filler"
  }

  # 12 KiB: config.yaml (~1 KiB) and attempts.jsonl (a line per launch) fit,
  # one page each; metrics.jsonl (~1.2 KiB a step) does not for long.
  fill_leaving 12
  run_to_end "$work/out-metrics.txt" "$fs" "${short_run[@]}"
  assert_failed_with "cannot write $fs/tiny/metrics.jsonl: No space left on device"
  echo "metrics.jsonl on a full disk: exit code $job_code, $(grep -c . "$fs/tiny/metrics.jsonl") records kept"

  # 8 KiB (two pages): config.yaml and attempts.jsonl take them, summary.json
  # finds none.
  fill_leaving 8
  run_to_end "$work/out-summary.txt" "$fs" "${short_run[@]}" --set log.metrics_jsonl=false
  assert_failed_with "cannot write $fs/tiny/summary.json: No space left on device"
  [ ! -e "$fs/tiny/summary.json" ] || fail "a partial summary.json was left"
  [ -z "$(find "$fs/tiny" -name '.summary.json.tmp*')" ] || fail "temporary file left behind"
  echo "summary.json on a full disk: exit code $job_code"
  ;;
run-dir)
  rm -rf "$work"; mkdir -p "$work"
  touch "$work/a-file"
  run_to_end "$work/out-mkdir.txt" "$work/a-file" "${short_run[@]}"
  assert_failed_with "cannot create directory $work/a-file/tiny: Not a directory"
  echo "uncreatable run directory: exit code $job_code"

  run_to_end "$work/out-listing.txt" "$work/runs" "${short_run[@]}" --set log.metrics_jsonl=false
  [ "$job_code" -eq 0 ] || fail "run without metrics.jsonl: exit code $job_code"
  grep -qx "run directory: $work/runs/tiny (config.yaml, attempts.jsonl, summary.json)" "$job_out" \
    || fail "the success line does not list exactly the files written"
  [ ! -e "$work/runs/tiny/metrics.jsonl" ] || fail "metrics.jsonl written although disabled"
  [ -s "$work/runs/tiny/summary.json" ] && [ -s "$work/runs/tiny/config.yaml" ] \
    || fail "summary.json or config.yaml missing"
  ;;
sync-shard)
  rm -rf "$work"; mkdir -p "$work"
  ckpt="$work/ckpt"
  blocker="$ckpt/step_00000010/shard_00001.bin"
  mkdir -p "$blocker/in-the-way"
  run_to_end "$work/out-sync.txt" "$work/runs" "${short_run[@]}" --set checkpoint.every=5 \
    --set checkpoint.keep_last=1 --set checkpoint.async=false --set checkpoint.dir="$ckpt"
  [ "$job_code" -eq 2 ] || fail "exit code $job_code (want 2)"
  [ "$(grep -c "^cmpi-train:" "$job_out")" -eq 1 ] || fail "not exactly one message"
  grep -q "^cmpi-train: checkpoint: .*$blocker" "$job_out" || fail "the message does not name $blocker"
  ! grep -q "run directory:" "$job_out" || fail "reported success"
  [ ! -e "$ckpt/step_00000010/metadata.yaml" ] || fail "the failed save of step 10 was published"
  [ -s "$ckpt/step_00000005/metadata.yaml" ] || fail "the previous checkpoint (step 5) is gone"
  for rank in 0 1 2 3; do
    [ -s "$ckpt/step_00000005/shard_0000$rank.bin" ] || fail "step 5 lost shard_0000$rank.bin"
  done
  # Intact: it resumes (shard sizes and checksums checked) and trains on.
  rm -rf "$blocker"
  run_to_end "$work/out-resume.txt" "$work/runs" "${short_run[@]}" --set checkpoint.every=100 \
    --set checkpoint.dir="$ckpt" --resume "$ckpt/step_00000005"
  [ "$job_code" -eq 0 ] || fail "resuming the previous checkpoint: exit code $job_code"
  grep -q "checkpoint: resumed at step 5" "$job_out" || fail "did not resume at step 5"
  echo "failed synchronous shard write: exit code 2, $(grep "^cmpi-train:" "$work/out-sync.txt")"
  ;;
*)
  echo "unknown case: $case_name"; exit 2 ;;
esac
echo PASS
