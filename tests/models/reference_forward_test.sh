#!/usr/bin/env bash
# cmpi-train's GPT against an independent implementation: one rank trains a
# small model for a few steps (so LayerNorms and biases are no longer their
# initial ones and zeros) with --dump-tensors, which writes the final weights
# and the forward of one batch (logits, loss); gpt_reference.py, plain PyTorch
# written from the published architectures, loads those weights, runs the same
# batch and must match the logits within 1e-5 (absolute; they are O(1)) and
# the loss within a relative 1e-5, fp32 both.
# Usage: reference_forward_test.sh CMPI_TRAIN CONFIG WORKDIR gpt2|neox
# Exit 77 (skipped) only when the project's python cannot import torch and numpy.
set -uo pipefail
exe="$1"; config="$2"; work="$3"; arch="$4"
here="$(cd "$(dirname "$0")" && pwd)"
# The project's Python environment (scripts/setup.sh installs torch into it).
source "$here/../../scripts/python_env.sh"
python="$CMPI_PYTHON"
if ! "$python" -c "import torch, numpy" > /dev/null 2>&1; then
  echo "SKIP: $python cannot import torch and numpy (run scripts/setup.sh)"
  exit 77
fi
rm -rf "$work"; mkdir -p "$work"
# hidden 128 over 4 heads: head_dim 32, so rotary 0.25 turns 8 dimensions (4 pairs).
sets=(--set model.hidden=128 --set model.heads=4 --set model.layers=2 --set model.vocab_size=128
      --set model.seq_len=32 --set training.steps=3 --set training.global_batch=4
      --set training.micro_batch=4 --set training.lr=1e-2 --set training.warmup_steps=0
      --set log.every=100 --set run.dir="$work" --set run.name="$arch")
reference=(--layers 2 --heads 4)
case "$arch" in
  gpt2) ;;
  neox)
    sets+=(--set model.position=rotary --set model.rotary_pct=0.25 --set model.rotary_base=10000
           --set model.parallel_residual=true --set model.tie_embeddings=false
           --set model.mlp_activation=gelu_tanh --set model.init=neox)
    reference+=(--position rotary --rotary-pct 0.25 --rotary-base 10000 --parallel-residual
                --untied --activation gelu_tanh) ;;
  *) echo "unknown architecture $arch"; exit 2 ;;
esac
timeout 120 mpirun -np 1 --oversubscribe --bind-to none "$exe" --config "$config" "${sets[@]}" \
  --dump-tensors "$work/dump" > "$work/out.txt" 2>&1 || { cat "$work/out.txt"; echo "FAIL: cmpi-train"; exit 1; }
for f in parameters.f32 parameters.txt forward_logits.f32 forward_tokens.i64 forward_loss.txt; do
  [ -s "$work/dump/$f" ] || { echo "FAIL: cmpi-train wrote no $f"; exit 1; }
done
"$python" "$here/gpt_reference.py" "$work/dump" "${reference[@]}" || { echo "FAIL: $arch"; exit 1; }
echo "PASS: $arch"
