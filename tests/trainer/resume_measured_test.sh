#!/usr/bin/env bash
# A resume continues bit for bit also where the run decided by timing: with
# compression.sparse_embedding: auto, the untied embedding's gradient (dp4)
# takes the block-sparse allreduce or the dense route as a crossover
# calibrated by timing says, and timings differ from run to run (as do the
# sums: the two routes add the ranks' blocks in different orders). The
# test-only CMPI_TEST_FAULT=block_sparse:sparse|dense (comm/test_faults.h)
# makes the calibration come out one way or the other without timing:
#  * an uninterrupted 20-step run calibrated "sparse" and one calibrated
#    "dense" must differ in their losses (else this test could not tell);
#  * a run resumed from the sparse run's checkpoint of step 10, calibrating
#    "dense" if it measured again, must take the checkpoint's decision: its
#    losses of steps 11-20 equal the sparse run's, bit for bit (a float32
#    printed with 9 significant digits identifies it), and so do the shards
#    of its checkpoint of step 20 (parameters, optimizer and rank state), byte
#    for byte: a rounding difference the losses do not show still shows there.
# Usage: resume_measured_test.sh CMPI_TRAIN CONFIG WORKDIR
set -uo pipefail
exe="$1"; config="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
small=(--set model.hidden=32 --set model.vocab_size=64 --set model.seq_len=16 --set model.layers=2
       --set training.global_batch=8 --set training.micro_batch=2 --set training.warmup_steps=2
       --set training.steps=20 --set model.tie_embeddings=false
       --set compression.sparse_embedding=auto --set compression.min_bytes=1KiB
       --set parallel.dp_bucket_bytes=16KiB
       --set log.every=1 --set run.dir="$work" --set checkpoint.every=10 --set checkpoint.keep_last=0)
source "$(dirname "$0")/resume_check_lib.sh"
run() {  # run NAME FORCED ARGS...
  local name="$1" forced="$2"; shift 2
  CMPI_TEST_FAULT="block_sparse:$forced" timeout 200 mpirun -np 4 --oversubscribe --bind-to none \
    -x CMPI_TEST_FAULT "$exe" --config "$config" "${small[@]}" --set run.name="$name" "$@" \
    > "$work/$name.txt" 2>&1 || fail "$name: exit $?" "$work/$name.txt"
}

run sparse sparse
run dense dense
[ "$(losses "$work/sparse/metrics.jsonl" 1)" != "$(losses "$work/dense/metrics.jsonl" 1)" ] ||
  fail "the block-sparse and the dense route gave the same losses: the test cannot tell them apart"
run resumed dense --resume "$work/sparse/checkpoints/step_00000010"
expect_resumed_bit_exact sparse resumed 10 20 4
echo "resumed at step 10 with the saved block-sparse decision: steps 11-20 and the step-20 shards bit for bit"
echo PASS
