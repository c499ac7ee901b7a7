#!/usr/bin/env bash
# model.init_from end to end (GPT-NeoX architecture: rotary 0.25, parallel
# residual, untied, gelu_tanh):
#  * round trip: run A trains 3 steps under dp2 x tp2 and checkpoints;
#    --export-hf writes its Hugging Face directory; run B starts from that
#    directory under tp2 x pp2 and run C resumes A's checkpoint under the same
#    tp2 x pp2. Both take one step at lr 1e-30, which moves no weight in
#    float32 (every |w| is far above 1e-30 / its ulp), and evaluate: B's
#    val_loss equals C's bit for bit (the import loads exactly the
#    checkpoint's weights), and A's within 1e-6 (another layout sums in
#    another order);
#  * the same for a GPT-2 (1 rank -> dp2), also with the names of the
#    original GPT-2 release (no "transformer." prefix);
#  * sharded: the same directory split into two safetensors files with a
#    model.safetensors.index.json loads to the same val_loss, bit for bit;
#  * bad input, exit 2 with the culprit named: a config whose model.hidden
#    differs from config.json (field, both values, file), a directory without
#    config.json, a weight file without one tensor, a tensor of the wrong
#    shape, a directory that does not exist.
# Usage: hf_import_test.sh CMPI_TRAIN CONFIG WORKDIR
set -uo pipefail
exe="$1"; config="$2"; work="$3"
# The project's Python environment (only its standard library is used here).
source "$(cd "$(dirname "$0")" && pwd)/../../scripts/python_env.sh"
python="$CMPI_PYTHON"
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"; mkdir -p "$work"
sets=(--set model.hidden=64 --set model.heads=4 --set model.layers=2 --set model.vocab_size=128
      --set model.seq_len=32 --set training.global_batch=4 --set training.micro_batch=2
      --set training.warmup_steps=0 --set log.every=100 --set run.dir="$work"
      --set eval.batches=2 --set model.position=rotary --set model.rotary_pct=0.25
      --set model.parallel_residual=true --set model.tie_embeddings=false
      --set model.mlp_activation=gelu_tanh --set model.init=neox)
run() {
  local n="$1"; shift
  timeout 120 mpirun -np "$n" --oversubscribe --bind-to none "$exe" --config "$config" "${sets[@]}" "$@"
}
val_loss() {  # val_loss of the last evaluation in RUN's metrics.jsonl
  grep '"val_loss"' "$work/$1/metrics.jsonl" | tail -1 | sed -E 's/.*"val_loss":([-0-9.e+]+).*/\1/'
}
still=(--set training.lr=1e-30 --set training.min_lr=1e-30 --set eval.every=1)
tp2pp2=(--set parallel.tensor=2 --set parallel.pipeline=2 --set parallel.data=1)

run 4 --set run.name=a --set training.steps=3 --set checkpoint.every=3 --set eval.every=3 \
  --set parallel.tensor=2 > "$work/a.txt" 2>&1 || { cat "$work/a.txt"; fail "run A (dp2 x tp2)"; }
run 1 --set run.name=a --resume "$work/a/checkpoints" --export-hf "$work/hf" > "$work/export.txt" 2>&1 ||
  { cat "$work/export.txt"; fail "--export-hf"; }
run 4 --set run.name=b --set training.steps=1 "${still[@]}" "${tp2pp2[@]}" \
  --set model.init_from="$work/hf" > "$work/b.txt" 2>&1 || { cat "$work/b.txt"; fail "run B (import, tp2 x pp2)"; }
grep -q "initialised the weights from $work/hf" "$work/b.txt" || { cat "$work/b.txt"; fail "B: no import line"; }
run 4 --set run.name=c --set training.steps=4 "${still[@]}" "${tp2pp2[@]}" \
  --resume "$work/a/checkpoints" > "$work/c.txt" 2>&1 || { cat "$work/c.txt"; fail "run C (resume, tp2 x pp2)"; }
a=$(val_loss a); b=$(val_loss b); c=$(val_loss c)
echo "val_loss: A (dp2 x tp2, trained) $a; B (imported, tp2 x pp2) $b; C (resumed, tp2 x pp2) $c"
[ -n "$a" ] && [ "$b" = "$c" ] || fail "imported val_loss $b differs from the resumed $c"
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-6 * a) }' ||
  fail "imported val_loss $b is not within 1e-6 of the exporting run's $a"

# ZeRO-3 (parameters generated shard by shard, never whole): the import fills the shards.
run 2 --set run.name=z3 --set training.steps=1 "${still[@]}" --set parallel.zero_stage=3 \
  --set model.init_from="$work/hf" > "$work/z3.txt" 2>&1 || { cat "$work/z3.txt"; fail "import under ZeRO-3"; }
z3=$(val_loss z3); echo "val_loss: imported under dp2 ZeRO-3 $z3"
awk -v a="$a" -v b="$z3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-6 * a) }' ||
  fail "ZeRO-3 import: val_loss $z3 is not within 1e-6 of the exporting run's $a"

# The same weights in two shards with an index.
mkdir -p "$work/sharded"; cp "$work/hf/config.json" "$work/sharded/"
"$python" - "$work/hf/model.safetensors" "$work/sharded" <<'PY' || fail "sharding the export"
import json, struct, sys
src, out = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n]); base = 8 + n
names = [k for k in header if k != "__metadata__"]
weight_map = {}
for part, chunk in enumerate([names[: len(names) // 2], names[len(names) // 2:]]):
    file = "model-%05d-of-00002.safetensors" % (part + 1)
    new_header, blob = {}, b""
    for name in chunk:
        begin, end = header[name]["data_offsets"]
        new_header[name] = dict(header[name], data_offsets=[len(blob), len(blob) + end - begin])
        blob += data[base + begin: base + end]
        weight_map[name] = file
    text = json.dumps(new_header).encode()
    text += b" " * (-len(text) % 8)
    open(f"{out}/{file}", "wb").write(struct.pack("<Q", len(text)) + text + blob)
json.dump({"metadata": {}, "weight_map": weight_map}, open(f"{out}/model.safetensors.index.json", "w"))
PY
run 4 --set run.name=sharded --set training.steps=1 "${still[@]}" "${tp2pp2[@]}" \
  --set model.init_from="$work/sharded" > "$work/sharded.txt" 2>&1 ||
  { cat "$work/sharded.txt"; fail "import of the sharded directory"; }
[ "$(val_loss sharded)" = "$b" ] || fail "sharded import: val_loss $(val_loss sharded), one file: $b"

# GPT-2 (learned positions, tied, exact GeLU): the same round trip on one
# rank -> dp2, also from a copy whose names lack the "transformer." prefix
# (as the original GPT-2 release stores them).
gpt2=(--set model.position=learned --set model.parallel_residual=false --set model.tie_embeddings=true
      --set model.mlp_activation=gelu --set model.init=gpt2)
run 1 --set run.name=g --set training.steps=2 --set checkpoint.every=2 "${gpt2[@]}" \
  > "$work/g.txt" 2>&1 || { cat "$work/g.txt"; fail "GPT-2 run"; }
run 1 --set run.name=g --resume "$work/g/checkpoints" --export-hf "$work/g_hf" "${gpt2[@]}" \
  > "$work/g_export.txt" 2>&1 || { cat "$work/g_export.txt"; fail "GPT-2 --export-hf"; }
mkdir -p "$work/g_bare"; cp "$work/g_hf/config.json" "$work/g_bare/"
"$python" - "$work/g_hf/model.safetensors" "$work/g_bare/model.safetensors" <<'PY' || fail "renaming"
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
header = {k[len("transformer."):] if k.startswith("transformer.") else k: v for k, v in header.items()}
text = json.dumps(header).encode(); text += b" " * (-len(text) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
PY
for case in "gi --set model.init_from=$work/g_hf" "gb --set model.init_from=$work/g_bare" \
            "gr --resume $work/g/checkpoints"; do
  read -r name args <<< "$case"
  steps=1; [ "$name" = gr ] && steps=3
  # shellcheck disable=SC2086
  run 2 --set run.name="$name" --set training.steps=$steps "${still[@]}" "${gpt2[@]}" $args \
    > "$work/$name.txt" 2>&1 || { cat "$work/$name.txt"; fail "GPT-2 $name"; }
done
echo "GPT-2 val_loss: imported $(val_loss gi), without prefix $(val_loss gb), resumed $(val_loss gr)"
[ "$(val_loss gi)" = "$(val_loss gr)" ] && [ "$(val_loss gb)" = "$(val_loss gr)" ] ||
  fail "GPT-2 import differs from the resume"

# Bad directories: exit 2, one message naming the file and what is wrong.
expect_refusal() {  # NAME PATTERN ARGS...
  local name="$1" pattern="$2"; shift 2
  run 2 --set run.name="$name" --set training.steps=1 "$@" > "$work/$name.txt" 2>&1; local code=$?
  [ "$code" = 2 ] && grep -q -- "$pattern" "$work/$name.txt" ||
    { cat "$work/$name.txt"; fail "$name: exit $code, or no '$pattern'"; }
  [ "$(grep -c "$pattern" "$work/$name.txt")" = 1 ] || { cat "$work/$name.txt"; fail "$name: said more than once"; }
}
expect_refusal shape "$work/hf/config.json: hidden_size is 64, but model.hidden is 128" \
  --set model.hidden=128 --set model.init_from="$work/hf"
expect_refusal untied_config "$work/hf/config.json: tie_word_embeddings is false, but model.tie_embeddings is true" \
  --set model.tie_embeddings=true --set model.init_from="$work/hf"
expect_refusal nowhere "$work/nowhere: not a directory" --set model.init_from="$work/nowhere"
mkdir -p "$work/noconfig"; cp "$work/hf/model.safetensors" "$work/noconfig/"
expect_refusal noconfig "$work/noconfig/config.json: missing" --set model.init_from="$work/noconfig"
# One tensor left out, and one tensor stored with another shape (header edited).
for bad in missing reshaped; do
  mkdir -p "$work/$bad"; cp "$work/hf/config.json" "$work/$bad/"
  "$python" - "$work/hf/model.safetensors" "$work/$bad/model.safetensors" "$bad" <<'PY' || fail "writing $bad"
import json, struct, sys
src, dst, how = sys.argv[1:]
data = open(src, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n]); blob = data[8 + n:]
if how == "missing":
    del header["gpt_neox.layers.1.mlp.dense_4h_to_h.bias"]
else:
    rows, cols = header["gpt_neox.layers.0.attention.dense.weight"]["shape"]
    header["gpt_neox.layers.0.attention.dense.weight"]["shape"] = [rows // 2, cols * 2]
text = json.dumps(header).encode(); text += b" " * (-len(text) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + blob)
PY
done
expect_refusal missing "$work/missing/model.safetensors: no tensor gpt_neox.layers.1.mlp.dense_4h_to_h.bias" \
  --set model.init_from="$work/missing"
expect_refusal reshaped "$work/reshaped/model.safetensors: tensor gpt_neox.layers.0.attention.dense.weight has shape \[32, 128\], this config needs \[64, 64\]" \
  --set model.init_from="$work/reshaped"
echo "PASS"
