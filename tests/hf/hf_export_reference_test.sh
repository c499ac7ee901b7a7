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
# Then the transformers package itself loads the directory
# (GPTNeoXForCausalLM / GPT2LMHeadModel.from_pretrained, hf_transformers_check.py):
# no weight missing, the rotary settings read as config.json states them, and
# its logits and loss of the same batch within the same bounds.
# The neox model: rotary 0.25, parallel residual, untied, gelu_tanh; gpt2:
# learned positions, tied, sequential, exact GeLU; llama: grouped-query
# attention, RMSNorm, SwiGLU, no biases, whole-head rotary with Llama 3's
# scaling, untied. Also checks the export's
# refusals (an untied GPT-2 style model) and that --export-hf needs --resume.
# With VOCAB odd (127), tp2 pads the tables to 128 rows (model.vocab_multiple):
# the export and the one-rank resume must both drop the padding.
# Usage: hf_export_reference_test.sh CMPI_TRAIN CONFIG WORKDIR neox|gpt2|llama LAYOUT [VOCAB]
# Exit 77 (skipped) only when the project's python cannot import transformers
# (after the rest has passed, where it has torch and numpy).
set -uo pipefail
exe="$1"; config="$2"; work="$3"; arch="$4"; layout="$5"; vocab="${6:-128}"
here="$(cd "$(dirname "$0")" && pwd)"
# The project's Python environment (scripts/setup.sh installs torch and transformers into it).
source "$here/../../scripts/python_env.sh"
python="$CMPI_PYTHON"
if ! "$python" -c "import torch, numpy" > /dev/null 2>&1; then
  echo "SKIP: $python cannot import torch and numpy, nor therefore transformers (run scripts/setup.sh)"
  exit 77
fi
# transformers loads the exported directory only: nothing may come from a hub.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HOME="$work/hf_home"
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"; mkdir -p "$work"
# hidden 128 over 4 heads: head_dim 32, so rotary 0.25 turns 8 dimensions.
sets=(--set model.hidden=128 --set model.heads=4 --set model.layers=2 --set model.vocab_size="$vocab"
      --set model.seq_len=32 --set training.steps=3 --set training.global_batch=4
      --set training.micro_batch=2 --set training.lr=1e-2 --set training.warmup_steps=0
      --set log.every=100 --set run.dir="$work" --set run.name="$arch" --set checkpoint.every=3)
case "$arch" in
  gpt2) type=gpt2 ;;
  neox) type=gpt_neox
    sets+=(--set model.position=rotary --set model.rotary_pct=0.25 --set model.rotary_base=10000
           --set model.parallel_residual=true --set model.tie_embeddings=false
           --set model.mlp_activation=gelu_tanh --set model.init=neox) ;;
  llama) type=llama
    # Llama 3's switches; 2 key/value heads (tp2 splits them), an MLP 320 wide,
    # rope scaling over an original context of 16 (all its regimes used).
    sets+=(--set model.position=rotary --set model.rotary_pct=1 --set model.rotary_base=500000
           --set model.norm=rmsnorm --set model.mlp_activation=swiglu --set model.bias=false
           --set model.kv_heads=2 --set model.intermediate_size=320 --set model.tie_embeddings=false
           --set model.rope_scaling_factor=8 --set model.rope_original_max_positions=16) ;;
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
# Both readers run, whatever the first says, so that a failure shows what each sees.
failed=()
"$python" "$here/hf_reference.py" "$work/hf" "$work/dump" --expect-type "$type" || failed+=("$arch reference")
if "$python" -c "import transformers, safetensors" > /dev/null 2>&1; then
  have_transformers=1
  "$python" "$here/hf_transformers_check.py" compare "$work/hf" "$work/dump" --expect-type "$type" \
    2> "$work/transformers.txt" || { cat "$work/transformers.txt"; failed+=("$arch transformers"); }
else
  have_transformers=0
fi
[ "${#failed[@]}" = 0 ] || fail "${failed[*]}"

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
if [ "$have_transformers" = 0 ]; then
  echo "SKIP: the independent reference passed, but $python cannot import transformers and"
  echo "safetensors to load the export with (run scripts/setup.sh)"
  exit 77
fi
echo "PASS: $arch ($layout)"
