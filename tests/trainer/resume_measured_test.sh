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
fail() { echo "FAIL: $1"; [ -f "${2:-}" ] && cat "$2"; exit 1; }
# losses FILE FROM: "step loss" of every step >= FROM in metrics.jsonl.
losses() {
  python3 -c 'import json,sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["step"] >= int(sys.argv[2]): print(r["step"], r["loss"])' "$1" "$2"
}
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
grep -q "checkpoint: resumed at step 10" "$work/resumed.txt" || fail "did not resume at step 10" \
  "$work/resumed.txt"
[ "$(losses "$work/resumed/metrics.jsonl" 11 | wc -l)" -eq 10 ] ||
  fail "the resumed run did not log steps 11-20" "$work/resumed/metrics.jsonl"
diff <(losses "$work/sparse/metrics.jsonl" 11) <(losses "$work/resumed/metrics.jsonl" 11) ||
  fail "the resumed run's losses differ from the uninterrupted run's (it decided the route anew)"
for rank in 0 1 2 3; do
  shard="step_00000020/shard_0000$rank.bin"
  cmp -s "$work/sparse/checkpoints/$shard" "$work/resumed/checkpoints/$shard" ||
    fail "$shard of the resumed run differs from the uninterrupted run's"
done
echo "resumed at step 10 with the saved block-sparse decision: steps 11-20 and the step-20 shards bit for bit"
echo PASS
