#!/usr/bin/env bash
# Checkpoints through the command line (4 ranks, the tiny config cut down):
#  * resume is bit-exact: a run stopped at step 3 and resumed (--resume, the
#    latest checkpoint) writes metrics.jsonl losses equal, as printed with 9
#    digits, to an uninterrupted run's; for dp+ZeRO-2, tp+ZeRO-1 and pp+ZeRO-3;
#  * keep_last prunes; a checkpoint without metadata.yaml (a save that never
#    finished) is skipped for the previous one, and refused when named;
#  * a save that cannot be written stops every rank with one message;
#  * validation before any step: another model shape or architecture, a truncated shard, a
#    corrupted shard, a missing shard -> one error naming the file, exit 2 on
#    every rank, no hang;
#  * error-feedback residuals are saved (metadata residual_buffers) and a
#    resume under another layout drops them with a warning;
#  * --export writes safetensors that python3 + numpy read back independently
#    and match the trainer's own dump of its final weights exactly.
# Usage: checkpoint_cli_test.sh CMPI_TRAIN CONFIG WORKDIR
set -uo pipefail
exe="$1"; config="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
small=(--set model.hidden=32 --set model.vocab_size=64 --set model.seq_len=16 --set model.layers=2
       --set training.global_batch=8 --set training.micro_batch=2 --set training.warmup_steps=2
       --set parallel.dp_bucket_bytes=16KiB --set log.every=100 --set run.dir="$work")
fail() { echo "FAIL: $1"; cat "$work/out.txt"; exit 1; }
train() { timeout 120 mpirun -np 4 --oversubscribe --bind-to none "$exe" --config "$config" \
            "${small[@]}" "$@" > "$work/out.txt" 2>&1; }
losses() { grep -o '"loss":[^,]*' "$1"; }

# --- bit-exact resume, three layouts
for layout in "dp:--set parallel.zero_stage=2" \
              "tp:--set parallel.tensor=2 --set parallel.zero_stage=1" \
              "pp:--set parallel.pipeline=2 --set parallel.zero_stage=3"; do
  name="${layout%%:*}"; read -r -a opts <<< "${layout#*:}"
  train "${opts[@]}" --set run.name="$name-full" --set training.steps=6 || fail "$name: full run"
  train "${opts[@]}" --set run.name="$name-cut" --set training.steps=3 --set checkpoint.every=3 ||
    fail "$name: run to step 3"
  train "${opts[@]}" --set run.name="$name-cut" --set training.steps=6 --set checkpoint.every=3 --resume ||
    fail "$name: resume"
  grep -q "checkpoint: step 6 saved" "$work/out.txt" || fail "$name: no save at step 6"
  [ "$(losses "$work/$name-cut/metrics.jsonl" | wc -l)" -eq 6 ] || fail "$name: metrics.jsonl not 6 steps"
  diff <(losses "$work/$name-full/metrics.jsonl") <(losses "$work/$name-cut/metrics.jsonl") ||
    fail "$name: resumed losses differ from the uninterrupted run's"
done
echo "bit-exact resume: dp, tp, pp ok"

# --- keep_last, incomplete checkpoints
train --set run.name=keep --set training.steps=8 --set checkpoint.every=2 --set checkpoint.keep_last=2 ||
  fail "keep_last run"
ckpts="$work/keep/checkpoints"
[ "$(ls "$ckpts")" = "$(printf 'step_00000006\nstep_00000008')" ] || fail "keep_last=2 kept: $(ls "$ckpts")"
rm "$ckpts/step_00000008/metadata.yaml"  # as if the save of step 8 had crashed
train --set run.name=keep --set training.steps=8 --resume || fail "resume past an incomplete save"
grep -q "done: 8 steps (2 this launch, from step 6)" "$work/out.txt" || fail "did not resume from step 6"
train --set run.name=keep --set training.steps=8 --resume "$ckpts/step_00000008"
[ $? -eq 2 ] && grep -q "incomplete checkpoint" "$work/out.txt" || fail "incomplete checkpoint accepted"
echo "keep_last and incomplete saves ok"

# --- validation: each must fail on every rank with exit 2, naming the file
good="$work/dp-cut/checkpoints/step_00000006"
expect_refused() {  # what, pattern, train args...
  local what="$1" pattern="$2"; shift 2
  train --set parallel.zero_stage=2 --set run.name=v --set training.steps=8 "$@"
  local code=$?
  [ "$code" -eq 2 ] || fail "$what: exit $code (want 2; 124 = hung)"
  grep -q -- "$pattern" "$work/out.txt" || fail "$what: message does not say '$pattern'"
  [ "$(grep -c "$pattern" "$work/out.txt")" -eq 1 ] || fail "$what: message not printed once"
  grep -q "step 1/" "$work/out.txt" && fail "$what: training started"
  return 0
}
expect_refused "other model" "model.hidden = 32, this config has 64" --resume "$good" --set model.hidden=64
# Architecture switches that keep the shapes but change the arithmetic, both ways round.
expect_refused "other residual" "model.parallel_residual = ?, this config has 1" --resume "$good" \
  --set model.parallel_residual=true
train --set model.position=rotary --set run.name=rotary --set training.steps=2 \
  --set checkpoint.every=2 || fail "rotary: save"
expect_refused "rotary checkpoint, learned config" \
  "model.rotary_base = 10000, which this config does not have" \
  --resume "$work/rotary/checkpoints/step_00000002"
bad="$work/bad"; cp -r "$good" "$bad"
truncate -s 1000 "$bad/shard_00002.bin"
expect_refused "truncated shard" "shard_00002.bin: 1000 bytes" --resume "$bad"
cp "$good/shard_00002.bin" "$bad/shard_00002.bin"
printf '\x01' | dd of="$bad/shard_00001.bin" bs=1 seek=4000 conv=notrunc status=none
expect_refused "corrupted shard" "shard_00001.bin: checksum" --resume "$bad"
cp "$good/shard_00001.bin" "$bad/shard_00001.bin"; rm "$bad/shard_00003.bin"
expect_refused "missing shard" "shard_00003.bin: missing" --resume "$bad"
echo "validation ok"

# --- error feedback: residuals saved; a resume under another layout drops them and says so
ef=(--set 'compression.rules=[{match: {group: [dp, zero], role: gradient, min_bytes: 0}, codec: {name: topk, ratio: 0.1}, error_feedback: true}]')
train "${ef[@]}" --set parallel.zero_stage=1 --set run.name=ef --set training.steps=2 \
  --set checkpoint.every=2 || fail "error feedback: save"
grep -q "residual_buffers: [1-9]" "$work/ef/checkpoints/step_00000002/metadata.yaml" ||
  fail "error feedback: no residuals in the checkpoint"
train "${ef[@]}" --set parallel.zero_stage=1 --set parallel.tensor=2 --set run.name=ef \
  --set training.steps=3 --resume || fail "error feedback: resume under tp2"
grep -q "error-feedback residual buffers .* are dropped" "$work/out.txt" ||
  fail "error feedback: reshard without the warning"
echo "error feedback reshard ok"

# --- a save that cannot be written ends every rank with one message, no hang
: > "$work/not-a-dir"
train --set run.name=nosave --set training.steps=2 --set checkpoint.every=1 \
  --set checkpoint.dir="$work/not-a-dir/ckpt"
code=$?
[ "$code" -ne 0 ] && [ "$code" -ne 124 ] || fail "unwritable checkpoint.dir: exit $code (124 = hung)"
[ "$(grep -c "checkpoint: .*not-a-dir" "$work/out.txt")" -eq 1 ] || fail "save failure not reported once"
echo "save failure ok"

# --- export: safetensors read back by numpy against the trainer's dump (1 rank)
timeout 120 mpirun -np 1 "$exe" --config "$config" "${small[@]}" --set run.name=one \
  --set training.steps=3 --set checkpoint.every=3 --dump-tensors "$work/dump" > "$work/out.txt" 2>&1 ||
  fail "1-rank run"
timeout 60 mpirun -np 2 --oversubscribe "$exe" --config "$config" "${small[@]}" --set run.name=one \
  --resume --export "$work/one.safetensors" > "$work/out.txt" 2>&1 || fail "export"
# Debian's python3 (python3-numpy, scripts/setup.sh), not a pyenv shim's.
py=python3; [ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" - "$work/one.safetensors" "$work/dump" > "$work/out.txt" 2>&1 <<'PY' || fail "safetensors check"
import json, struct, sys
import numpy as np
path, dump = sys.argv[1], sys.argv[2]
raw = open(path, "rb").read()
(n,) = struct.unpack("<Q", raw[:8])
header = json.loads(raw[8:8 + n])
data = raw[8 + n:]
header.pop("__metadata__", None)
dumped = open(dump + "/parameters.f32", "rb").read()  # a tensor file (io/tensor_file.h)
assert dumped[:8] == b"CMPITNSR", "parameters.f32 has no tensor header"
(ndim,) = struct.unpack("<I", dumped[16:20])
weights = np.frombuffer(dumped[20 + 8 * ndim:], dtype="<f4")
at = 0
names = []
for line in open(dump + "/parameters.txt"):
    name, *shape = line.split()
    shape = [int(d) for d in shape]
    count = int(np.prod(shape))
    entry = header[name]
    assert entry["dtype"] == "F32", entry
    assert entry["shape"] == shape, (name, entry["shape"], shape)
    b, e = entry["data_offsets"]
    got = np.frombuffer(data[b:e], dtype="<f4").reshape(shape)
    want = weights[at:at + count].reshape(shape)
    assert np.array_equal(got, want), name
    at += count
    names.append(name)
assert at == weights.size and sorted(names) == sorted(header), "tensor sets differ"
print("safetensors: %d tensors match" % len(names))
PY
echo "export ok"
echo PASS
