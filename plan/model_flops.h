// The GPT's FLOPs per token: the one formula the planner's compute model,
// the compute probe and the trainer's MFU / TFLOP/s figures share, so that a
// plan's projected step and a run's measured utilisation count the same work.
//
// Forward, per token, for the blocks a rank holds (its 1/tp share):
//   2 x every matmul weight: attention's q, k, v (grouped-query attention:
//       heads + 2 x kv_heads head-widths of rows) and output projection, the
//       MLP's two matrices (three for a gated SwiGLU MLP, at its inner
//       width), and on the last stage the output head (hidden x the padded
//       vocabulary, model.vocab_multiple: its rows are multiplied too; tied
//       or not: the head is a matmul either way; the embedding lookup and
//       the position table are not);
//   + 4 x seq x hidden per layer for attention's QK^T and AV: each token's
//       query meets all seq keys (2 x seq x hidden multiply-adds) and the
//       probabilities weigh all seq values (the same again). The causal mask
//       is applied to full [seq, seq] scores, so the masked half is computed
//       and counted, as in Megatron-LM's and PaLM's MFU formulas (PaLM's
//       6N + 12 L H Q T is 3 x this).
// Norms, softmax, activations, rotary and the loss are not matmuls and are
// left out (a few percent at these shapes).
// Training: 3 x forward (backward computes the input and the weight
// gradients, two matmuls per forward one): the model FLOPs of MFU.
// Recomputation adds forward work inside backward: whole blocks
// (training.recompute full, the first recompute_layers of each stage) or
// attention's QK^T and AV (selective). It counts toward the hardware FLOPs
// (HFU) only: it is work the run chose to redo, not work the model needs.
#pragma once

#include "config/config.h"
#include "parallel/mesh/parallel_dims.h"
#include "plan/step_traffic.h"

namespace cmpi::plan {

struct TokenFlops {
  double forward = 0;    // one token's forward
  double recompute = 0;  // forward work redone during its backward
  double model_training() const { return 3 * forward; }
  double hardware_training() const { return 3 * forward + recompute; }
};

// Forward FLOPs per token of one rank of a stage: 2 x its matmul weights
// (blocks, and the head on the last stage) + attention's QK^T and AV.
double forward_flops_per_token(const config::Config& config, const StageShape& stage, int tp);

// Attention's QK^T and AV per token and block on one rank (4 x seq x
// hidden / tp, causal mask not exploited): the part of the forward above
// that the attention core runs.
double attention_core_flops_per_token(const config::Config& config, int tp);

// The forward FLOPs per token that recomputation repeats in a stage's
// backward on one rank (0 with training.recompute none).
double recompute_flops_per_token(const config::Config& config, const StageShape& stage, int tp);

// The whole model's (every stage, tp 1) for the layout `dims`, whose
// pipeline split decides which blocks full recomputation repeats. Zero for
// families other than the GPT, which have no FLOP count.
TokenFlops model_flops_per_token(const config::Config& config, const parallel::ParallelDims& dims);

}  // namespace cmpi::plan
