#!/usr/bin/env bash
# --export-hf against an independent reader: a small model trains a few
# steps under a sharded layout (LAYOUT: "dp2tp2" on 4 ranks, "pp2" on 2,
# ...) and checkpoints; --export-hf writes the Hugging Face directory from
# that checkpoint; one rank resumes the same checkpoint without training
# (resharded) and dumps the forward of one batch (--dump-tensors:
# forward_logits.f32, forward_loss.txt). hf_reference.py, plain PyTorch
# written from Hugging Face's published GPT-NeoX / GPT-2 definitions, loads
# config.json + model.safetensors by Hugging Face's names and must reproduce
# the logits within 1e-5 (absolute) and the loss within a relative 1e-5, fp32.
# The neox model: rotary 0.25, parallel residual, untied, gelu_tanh; gpt2:
# learned positions, tied, sequential, exact GeLU. Also checks the export's
# refusals (an untied GPT-2 style model) and that --export-hf needs --resume.
# Usage: hf_export_reference_test.sh CMPI_TRAIN CONFIG WORKDIR neox|gpt2 LAYOUT
# Exit 77 (skipped) only when python3 cannot import torch and numpy.
set -uo pipefail
exe="$1"; config="$2"; work="$3"; arch="$4"; layout="$5"
here="$(cd "$(dirname "$0")" && pwd)"
python=python3; [ -x /usr/bin/python3 ] && python=/usr/bin/python3
if ! "$python" -c "import torch, numpy" > /dev/null 2>&1; then
  echo "SKIP: python3 cannot import torch and numpy (Debian: apt-get install python3-torch)"
  exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"; mkdir -p "$work"
# hidden 128 over 4 heads: head_dim 32, so rotary 0.25 turns 8 dimensions.
sets=(--set model.hidden=128 --set model.heads=4 --set model.layers=2 --set model.vocab_size=128
      --set model.seq_len=32 --set training.steps=3 --set training.global_batch=4
      --set training.micro_batch=2 --set training.lr=1e-2 --set training.warmup_steps=0
      --set log.every=100 --set run.dir="$work" --set run.name="$arch" --set checkpoint.every=3)
case "$arch" in
  gpt2) type=gpt2 ;;
  neox) type=gpt_neox
    sets+=(--set model.position=rotary --set model.rotary_pct=0.25 --set model.rotary_base=10000
           --set model.parallel_residual=true --set model.tie_embeddings=false
           --set model.mlp_activation=gelu_tanh --set model.init=neox) ;;
  *) echo "unknown architecture $arch"; exit 2 ;;
esac
case "$layout" in
  dp2tp2) np=4; layout_sets=(--set parallel.tensor=2 --set parallel.zero_stage=1) ;;
  pp2) np=2; layout_sets=(--set parallel.pipeline=2 --set parallel.data=1) ;;
  *) echo "unknown layout $layout"; exit 2 ;;
esac
run() {
  local n="$1"; shift
  timeout 120 mpirun -np "$n" --oversubscribe --bind-to none "$exe" --config "$config" "${sets[@]}" "$@"
}
run "$np" "${layout_sets[@]}" > "$work/train.txt" 2>&1 || { cat "$work/train.txt"; fail "training ($layout)"; }
checkpoint="$work/$arch/checkpoints"
run 1 --resume "$checkpoint" --export-hf "$work/hf" > "$work/export.txt" 2>&1 ||
  { cat "$work/export.txt"; fail "--export-hf"; }
cat "$work/export.txt"
for f in config.json model.safetensors; do [ -s "$work/hf/$f" ] || fail "--export-hf wrote no $f"; done
[ ! -e "$work/hf/tokenizer.json" ] || fail "tokenizer.json written though data.tokenizer names none"
run 1 --resume "$checkpoint" --dump-tensors "$work/dump" > "$work/dump.txt" 2>&1 ||
  { cat "$work/dump.txt"; fail "resumed forward"; }
"$python" "$here/hf_reference.py" "$work/hf" "$work/dump" --expect-type "$type" || fail "$arch reference"

# What no Hugging Face config expresses is refused by its key, exit 2.
if [ "$arch" = gpt2 ]; then
  run 1 --resume "$checkpoint" --export-hf "$work/untied" --set model.tie_embeddings=false \
    > "$work/untied.txt" 2>&1; code=$?
  [ "$code" = 2 ] && grep -q "model.tie_embeddings false with model.position learned" "$work/untied.txt" ||
    { cat "$work/untied.txt"; fail "untied GPT-2 export: exit $code"; }
  [ ! -e "$work/untied/model.safetensors" ] || fail "untied GPT-2: files written"
fi
run 1 --export-hf "$work/none" > "$work/noresume.txt" 2>&1; code=$?
[ "$code" = 2 ] && grep -q -- "--export-hf needs --resume" "$work/noresume.txt" ||
  { cat "$work/noresume.txt"; fail "--export-hf without --resume: exit $code"; }
echo "PASS: $arch ($layout)"
