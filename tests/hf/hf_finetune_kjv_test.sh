#!/usr/bin/env bash
# Fine-tuning from Hugging Face weights on real text: run A trains a small
# GPT-NeoX-architecture model on the first 40 chapters of the King James
# Bible (scripts/prepare_real_text.sh, byte tokens) with a byte-level
# tokenizer.json that gives exactly those ids, and --export-hf writes its
# directory (config.json and generation_config.json with the end-of-document
# id, model.safetensors, the tokenizer.json copied byte
# for byte). Run B starts from that directory (model.init_from) under another
# layout (pp2) and fine-tunes a few steps: its first loss is A's level, far
# below a fresh model's first loss (the weights were imported), and its
# validation loss ends below A's (fine-tuning lowers it).
# Skipped (77) without the `bible` reader.
# Usage: hf_finetune_kjv_test.sh CMPI_TRAIN CMPI_DATA CONFIG WORK_DIR
set -uo pipefail
exe="$1"; cmpi_data="$2"; config="$3"; work="$4"
command -v bible >/dev/null || { echo "SKIP: no 'bible' (packages bible-kjv bible-kjv-text)"; exit 77; }
root="$(cd "$(dirname "$0")/../.." && pwd)"
python=python3; [ -x /usr/bin/python3 ] && python=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"; mkdir -p "$work"
CMPI_DATA="$cmpi_data" bash "$root/scripts/prepare_real_text.sh" "$work/data" 40 > "$work/prepare.txt" 2>&1 ||
  { cat "$work/prepare.txt"; fail "preparing the text"; }
# Byte-level BPE without merges: GPT-2's byte-to-character table as the
# vocabulary (byte b is id b) and <|endoftext|> 256, the ids of the dataset.
"$python" - "$work/tokenizer.json" <<'PY' || fail "writing tokenizer.json"
import json, sys
printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
table, extra = {}, 0
for b in range(256):
    if b in printable:
        table[b] = chr(b)
    else:
        table[b] = chr(256 + extra); extra += 1
vocab = {table[b]: b for b in range(256)}
vocab["<|endoftext|>"] = 256
json.dump({"version": "1.0", "truncation": None, "padding": None,
           "added_tokens": [{"id": 256, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                             "rstrip": False, "normalized": False, "special": True}],
           "normalizer": None, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
           "post_processor": {"type": "ByteLevel"}, "decoder": {"type": "ByteLevel"},
           "model": {"type": "BPE", "vocab": vocab, "merges": []}}, open(sys.argv[1], "w"))
PY
train() {
  local n="$1"; shift
  timeout 240 mpirun -np "$n" --oversubscribe --bind-to none "$exe" --config "$config" \
    --set run.dir="$work" --set data.paths="$work/data/kjv_bytes" --set data.tokenizer="$work/tokenizer.json" \
    --set model.seq_len=64 --set model.hidden=64 --set model.position=rotary \
    --set model.parallel_residual=true --set model.tie_embeddings=false \
    --set model.mlp_activation=gelu_tanh --set model.init=neox --set training.global_batch=8 \
    --set training.micro_batch=4 --set training.warmup_steps=2 --set eval.batches=2 --set log.every=1 "$@"
}
field() { sed -E "s/.*\"$1\":([-0-9.e+]+).*/\1/" "$work/$2/summary.json"; }
train 2 --set run.name=a --set training.steps=20 --set checkpoint.every=20 --set eval.every=20 \
  > "$work/a.txt" 2>&1 || { cat "$work/a.txt"; fail "run A"; }
train 1 --set run.name=a --resume "$work/a/checkpoints" --export-hf "$work/hf" > "$work/export.txt" 2>&1 ||
  { cat "$work/export.txt"; fail "--export-hf"; }
cmp -s "$work/tokenizer.json" "$work/hf/tokenizer.json" || fail "tokenizer.json not copied as it was"
# The end-of-document id (<|endoftext|>, 256) in config.json and
# generation_config.json, so that generate() stops there; bos as GPT-NeoX's.
"$python" - "$work/hf" <<'PY' || fail "the export's token ids"
import json, sys
for name in ("config.json", "generation_config.json"):
    c = json.load(open(f"{sys.argv[1]}/{name}"))
    if c.get("eos_token_id") != 256 or c.get("bos_token_id") != 256:
        sys.exit(f"{name}: eos_token_id {c.get('eos_token_id')}, bos_token_id {c.get('bos_token_id')}; expected 256")
PY
grep -q "generation_config.json (eos id 256)" "$work/export.txt" || { cat "$work/export.txt"; fail "export line"; }
train 2 --set run.name=b --set parallel.pipeline=2 --set training.steps=8 --set eval.every=8 \
  --set training.lr=1e-3 --set training.min_lr=1e-4 --set model.init_from="$work/hf" \
  > "$work/b.txt" 2>&1 || { cat "$work/b.txt"; fail "run B (fine-tuning the import)"; }
a_first=$(field first_loss a); a_final=$(field final_loss a); a_val=$(field val_loss a)
b_first=$(field first_loss b); b_final=$(field final_loss b); b_val=$(field val_loss b)
echo "A (fresh, 20 steps): loss $a_first -> $a_final, val_loss $a_val"
echo "B (imported, 8 steps): loss $b_first -> $b_final, val_loss $b_val"
awk -v af="$a_first" -v bf="$b_first" 'BEGIN { exit !(bf < af - 1.0) }' ||
  fail "B's first loss $b_first is not far below a fresh model's $a_first: weights not imported"
awk -v a="$a_val" -v b="$b_val" 'BEGIN { exit !(b < a) }' ||
  fail "fine-tuning did not lower the validation loss ($a_val -> $b_val)"
echo "PASS"
