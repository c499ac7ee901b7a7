#!/usr/bin/env bash
# Asynchronous checkpoint save (checkpoint.async: true), 4 ranks. Cases:
#   same-bytes: a run saving at steps 5 and 10 asynchronously writes shard
#     files byte-identical to a synchronous run's and the same losses: the
#     background writer reads the snapshot, not the parameters the loop goes
#     on updating; the save is announced as written in the background.
#   full-disk: checkpoint.dir on a small tmpfs filled almost to the brim: the
#     background write of a shard fails, and the job ends with exit 2 and one
#     message naming the shard file and the OS error, nothing left running.
#     Needs mount(2): skips (exit 77) where not permitted.
# (A rank killed while an asynchronous save is in flight: restart_async_np4.)
# Usage: async_checkpoint_test.sh CMPI_TRAIN CONFIG WORKDIR same-bytes|full-disk
set -uo pipefail
exe="$1"; config="$2"; work="$3"; case_name="$4"
source "$(dirname "$0")/fault_test_lib.sh"
small=(--set model.hidden=32 --set model.vocab_size=64 --set model.seq_len=16 --set model.layers=2
       --set training.global_batch=8 --set training.micro_batch=2 --set training.warmup_steps=2
       --set parallel.zero_stage=1 --set parallel.dp_bucket_bytes=16KiB --set log.every=1)

case "$case_name" in
same-bytes)
  rm -rf "$work"; mkdir -p "$work"
  for async in false true; do
    start_job "$work/out-$async.txt" "$work/runs" "${small[@]}" --set run.name="async-$async" \
      --set training.steps=10 --set checkpoint.every=5 --set checkpoint.keep_last=0 \
      --set checkpoint.async=$async
    wait_for_end 120
    [ "$job_code" -eq 0 ] || fail "checkpoint.async=$async: exit code $job_code"
  done
  grep -q "checkpoint: step 10 saved .*written in the background" "$work/out-true.txt" ||
    fail "the asynchronous run did not report a background save"
  for step in 00000005 00000010; do
    for rank in 0 1 2 3; do
      shard="step_$step/shard_0000$rank.bin"
      cmp -s "$work/runs/async-false/checkpoints/$shard" "$work/runs/async-true/checkpoints/$shard" ||
        fail "$shard differs between the synchronous and the asynchronous save"
    done
    [ -s "$work/runs/async-true/checkpoints/step_$step/metadata.yaml" ] ||
      fail "step_$step of the asynchronous run has no metadata.yaml"
  done
  diff <(grep -o '"loss":[^,]*' "$work/runs/async-false/metrics.jsonl") \
       <(grep -o '"loss":[^,]*' "$work/runs/async-true/metrics.jsonl") ||
    fail "an asynchronous save changed the losses"
  echo "asynchronous shards byte-identical to synchronous ones at steps 5 and 10"
  ;;
full-disk)
  fs="$work/fs"
  mountpoint -q "$fs" 2>/dev/null && umount "$fs"  # left by a test killed outright
  rm -rf "$work"; mkdir -p "$fs"
  if ! mount_error=$(mount -t tmpfs -o size=256k tmpfs "$fs" 2>&1); then
    echo "SKIP: cannot mount a tmpfs to fill (needs root or CAP_SYS_ADMIN): $mount_error"
    exit 77
  fi
  trap 'umount "$fs" || umount -l "$fs"' EXIT
  # 64 KiB left: the shards of this model (~260 KB in all) do not fit.
  dd if=/dev/zero of="$fs/filler" bs=4k 2>/dev/null
  truncate -s -64K "$fs/filler" || fail "cannot shrink the filler"
  start_job "$work/out.txt" "$work/runs" "${small[@]}" --set training.steps=30 \
    --set checkpoint.every=5 --set checkpoint.async=true --set checkpoint.dir="$fs/ckpt"
  wait_for_end 120
  assert_no_leftovers
  [ "$job_code" -eq 2 ] || fail "exit code $job_code (want 2)"
  pattern="^cmpi-train: checkpoint: cannot write $fs/ckpt/step_00000005/shard_0000[0-3].bin: No space left on device$"
  [ "$(grep -c "^cmpi-train:" "$job_out")" -eq 1 ] && grep -q "$pattern" "$job_out" ||
    fail "not one message naming the shard file and ENOSPC"
  grep -q "^step 6/30" "$job_out" || fail "the loop did not go on training while the shards were written"
  ! grep -q "run directory:" "$job_out" || fail "reported success"
  [ ! -e "$fs/ckpt/step_00000005/metadata.yaml" ] || fail "a failed save was published"
  echo "full disk during an asynchronous save: exit code $job_code, $(grep "^cmpi-train:" "$job_out")"
  ;;
*)
  echo "unknown case: $case_name"; exit 2 ;;
esac
echo PASS
