#!/usr/bin/env bash
# model.init_from against the transformers package: hf_transformers_check.py
# builds a randomly initialised GPTNeoXForCausalLM or GPT2LMHeadModel (seeded,
# configs/tiny.yaml's shape: vocab 256, hidden 64, 4 heads, 2 layers, mlp x4)
# and saves it with save_pretrained, once as one model.safetensors and once in
# several shards with an index, both with the mask / inv_freq buffers
# published checkpoints carry (BOOL and U8 masks, masked_bias, inv_freq) and an
# I64 position_ids no loader reads.
# cmpi-train starts one step from each directory on one rank
# (--dump-tensors) at lr 1e-30, which moves no weight in float32, so the
# dumped forward (logits, loss) is that of the imported weights. transformers
# runs the same tokens: the logits agree within 1e-5 x max(1, largest
# |logit|), and transformers' loss is cmpi-train's first-step loss and dumped
# loss within a relative 1e-5 (float32 both; see hf_transformers_check.py).
# The sharded import's first loss equals the single file's bit for bit.
# Then a weight whose header claims I32 refuses the directory: exit 2, one
# message naming the file and the tensor.
# Both are initialised with initializer_range 0.1 (transformers' default is
# 0.02), so that logits are O(1) and the loss lies well away from ln(vocab).
#   neox: rotary_pct 0.5, rotary_base 1000 (not the defaults, so config.json's
#     rope_parameters, as transformers 5 writes them, must be read), parallel
#     residual, untied, exact GeLU;
#   gpt2: 128 stored positions of which seq_len 64 are used, tied, gelu_new;
#   llama: 2 key/value heads for 4 query heads, RMSNorm, SwiGLU (160 wide), no
#     biases, whole-head rotary at theta 500000 with Llama 3's scaling (factor
#     8 over an original context of 16, so every regime of it is used), untied.
# Usage: hf_transformers_import_test.sh CMPI_TRAIN CONFIG WORKDIR neox|gpt2|llama
# Exit 77 (skipped) only when the project's python cannot import transformers.
set -uo pipefail
exe="$1"; config="$2"; work="$3"; arch="$4"
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../../scripts/python_env.sh"
python="$CMPI_PYTHON"
if ! "$python" -c "import transformers, safetensors, torch, numpy" > /dev/null 2>&1; then
  echo "SKIP: $python cannot import transformers, safetensors, torch and numpy (run scripts/setup.sh)"
  exit 77
fi
# Models are built here from configs; nothing may come from a hub.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HOME="$work/hf_home"
fail() { echo "FAIL: $*"; exit 1; }
check() { "$python" "$here/hf_transformers_check.py" "$@"; }
rm -rf "$work"; mkdir -p "$work"
seed="${CMPI_TEST_SEED:-$(date +%s)}"
echo "seed $seed (set CMPI_TEST_SEED to replay)"

sets=(--set training.steps=1 --set training.global_batch=4 --set training.micro_batch=4
      --set training.lr=1e-30 --set training.min_lr=1e-30 --set training.warmup_steps=0
      --set log.every=100 --set run.dir="$work")
case "$arch" in
  neox) type=gpt_neox; broken=gpt_neox.layers.1.attention.dense.weight
    save=(--rotary-pct 0.5 --rotary-base 1000)
    sets+=(--set model.position=rotary --set model.rotary_pct=0.5 --set model.rotary_base=1000
           --set model.parallel_residual=true --set model.tie_embeddings=false
           --set model.mlp_activation=gelu) ;;
  llama) type=llama; broken=model.layers.1.self_attn.k_proj.weight
    save=(--kv-heads 2 --intermediate 160 --rotary-base 500000)
    sets+=(--set model.position=rotary --set model.rotary_pct=1 --set model.rotary_base=500000
           --set model.norm=rmsnorm --set model.mlp_activation=swiglu --set model.bias=false
           --set model.kv_heads=2 --set model.intermediate_size=160 --set model.tie_embeddings=false
           --set model.rope_scaling_factor=8 --set model.rope_original_max_positions=16) ;;
  gpt2) type=gpt2; broken=transformer.h.1.attn.c_attn.weight
    save=(--positions 128)
    sets+=(--set model.mlp_activation=gelu_tanh) ;;
  *) echo "unknown architecture $arch"; exit 2 ;;
esac
run() {
  timeout 120 mpirun -np 1 --oversubscribe --bind-to none "$exe" --config "$config" "${sets[@]}" "$@"
}

check save "$arch" "$work/one" --shards "$work/sharded" --with-buffers --seed "$seed" --init-std 0.1 \
  "${save[@]}" \
  2> "$work/save.txt" || { cat "$work/save.txt"; fail "saving the transformers model"; }
for layout in one sharded; do
  run --set run.name="$layout" --set model.init_from="$work/$layout" --dump-tensors "$work/dump_$layout" \
    > "$work/$layout.txt" 2>&1 || { cat "$work/$layout.txt"; fail "cmpi-train from $work/$layout"; }
  grep -q "initialised the weights from $work/$layout" "$work/$layout.txt" ||
    { cat "$work/$layout.txt"; fail "$layout: no import line"; }
  check compare "$work/$layout" "$work/dump_$layout" --expect-type "$type" \
    --metrics "$work/$layout/metrics.jsonl" 2> "$work/compare_$layout.txt" ||
    { cat "$work/compare_$layout.txt"; fail "$arch from $layout: cmpi-train and transformers differ"; }
done
first_loss() { grep '"step":1,' "$work/$1/metrics.jsonl" | sed -E 's/.*"loss":([-0-9.e+]+).*/\1/'; }
[ -n "$(first_loss one)" ] && [ "$(first_loss one)" = "$(first_loss sharded)" ] ||
  fail "first loss from one file $(first_loss one), from shards $(first_loss sharded)"

# A weight (not a buffer) in a dtype no loader widens refuses the directory.
cp -r "$work/sharded" "$work/retyped"
check retype "$work/retyped" "$broken" I32 || fail "retyping $broken"
shard=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["weight_map"][sys.argv[2]])' \
  "$work/retyped/model.safetensors.index.json" "$broken")
run --set run.name=retyped --set model.init_from="$work/retyped" > "$work/retyped.txt" 2>&1; code=$?
pattern="model.init_from: $work/retyped/$shard: tensor $broken: dtype I32 is not supported for a weight"
[ "$code" = 2 ] && [ "$(grep -c -- "$pattern" "$work/retyped.txt")" = 1 ] ||
  { cat "$work/retyped.txt"; fail "retyped weight: exit $code, or not one '$pattern'"; }
shards=("$work/sharded"/*.safetensors)
echo "PASS: $arch from transformers (one file and ${#shards[@]} shards)"
