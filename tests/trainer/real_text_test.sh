#!/usr/bin/env bash
# Real text end to end: the first 40 chapters of the King James Bible
# (scripts/prepare_real_text.sh) train for 6 steps on 2 data-parallel ranks
# with validation loss every 3 steps; the loss is finite and falls, val_loss
# is in metrics.jsonl and summary.json, no loss floor is; a second run reads the sample index
# cache instead of building it; a vocabulary too small for the bytes and a
# missing dataset stop the job with exit 2 naming the key and the file.
# Skipped (77) without the `bible` reader.
# Usage: real_text_test.sh CMPI_TRAIN CMPI_DATA CONFIG WORK_DIR
set -euo pipefail
exe="$1"; cmpi_data="$2"; config="$3"; work="$4"
command -v bible >/dev/null || { echo "SKIP: no 'bible' (packages bible-kjv bible-kjv-text)"; exit 77; }
root="$(cd "$(dirname "$0")/../.." && pwd)"
rm -rf "$work"; mkdir -p "$work"
CMPI_DATA="$cmpi_data" bash "$root/scripts/prepare_real_text.sh" "$work/data" 40
train() {
  mpirun -np 2 --oversubscribe --bind-to none "$exe" --config "$config" \
    --set run.dir="$work" --set data.paths="$work/data/kjv_bytes" --set training.steps=6 \
    --set training.warmup_steps=1 --set model.seq_len=64 --set model.hidden=32 \
    --set training.global_batch=8 --set training.micro_batch=4 --set eval.every=3 \
    --set eval.batches=1 --set log.every=1 "$@"
}
train --set run.name=first >"$work/first.log" 2>&1 || { cat "$work/first.log"; echo "FAIL: run"; exit 1; }
grep -q "index built into" "$work/first.log" || { cat "$work/first.log"; echo "FAIL: no index built"; exit 1; }
metrics="$work/first/metrics.jsonl"
[ "$(grep -c '"val_loss":[0-9]' "$metrics")" = 2 ] || { cat "$metrics"; echo "FAIL: val_loss not on steps 3 and 6"; exit 1; }
grep '"step":3,' "$metrics" | grep -q '"val_loss"' || { echo "FAIL: no val_loss at step 3"; exit 1; }
summary="$work/first/summary.json"
field() { sed -E "s/.*\"$1\":([-0-9.e+]+).*/\1/" "$summary"; }
first=$(field first_loss); final=$(field final_loss); val=$(field val_loss)
echo "loss $first -> $final, val_loss $val"
awk -v a="$first" -v b="$final" -v v="$val" 'BEGIN { exit !(b < a && v > 0 && v < 20) }' \
  || { echo "FAIL: loss not finite and falling, or no val_loss"; exit 1; }
grep -q "val_loss" "$work/first.log" || { echo "FAIL: no val_loss in the progress line"; exit 1; }
# Real text has no entropy floor to report (only the Markov chain has one).
if grep -q "loss_floor" "$summary" "$metrics" || grep -q "floor" "$work/first.log"; then
  echo "FAIL: a loss floor reported for real text"; exit 1
fi

train --set run.name=second >"$work/second.log" 2>&1 || { cat "$work/second.log"; echo "FAIL: second run"; exit 1; }
[ "$(grep -c 'index read from' "$work/second.log")" = 2 ] || { cat "$work/second.log"; echo "FAIL: cache not reused"; exit 1; }

set +e
# Without data.tokenizer (the config names bytes, whose 257 ids would be refused
# first): the dataset's own tokens are what is checked here.
train --set run.name=bad --set model.vocab_size=256 --set 'data.tokenizer=""' >"$work/bad.log" 2>&1; code=$?
set -e
[ "$code" = 2 ] || { cat "$work/bad.log"; echo "FAIL: exit $code for a too small vocabulary, want 2"; exit 1; }
grep -q "data.paths\[0\]: $work/data/kjv_bytes.bin: tokens" "$work/bad.log" &&
  grep -q "model.vocab_size = 256" "$work/bad.log" || { cat "$work/bad.log"; echo "FAIL: message"; exit 1; }
[ "$(grep -c 'error\|tokens' "$work/bad.log")" -le 2 ] || { cat "$work/bad.log"; echo "FAIL: reported more than once"; exit 1; }
set +e
train --set run.name=bad --set data.paths="$work/nowhere" >"$work/missing.log" 2>&1; code=$?
set -e
[ "$code" = 2 ] && grep -q "data.paths\[0\]: $work/nowhere.idx" "$work/missing.log" ||
  { cat "$work/missing.log"; echo "FAIL: missing dataset: exit $code"; exit 1; }
echo PASS
