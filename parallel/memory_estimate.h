// A rank's memory for one training step of the GPT, estimated from the
// config alone (no tensor is allocated), for the pre-flight check that fails
// a run before it allocates what the machine cannot hold.
//
// For the busiest pipeline stage (most parameters plus activations), float32:
//   parameters  the stage's weights split over tp (embedding and head on the
//               end stages); ZeRO-3 keeps its 1/dp shard plus, gathering per
//               layer (zero3_per_layer), about two layers' weights: the
//               largest of two blocks, a block and the embedding unit, or a
//               block and the head's use (final LayerNorm and the tied or
//               own head table); gathering per model, the whole stage's weights;
//   gradients   a flat buffer the size of the parameters (ZeRO-2/3 shrink
//               only what is held between steps, not the peak);
//   optimizer   AdamW's two moments, split over dp from ZeRO-1 on;
//   activations what autograd keeps per micro-batch in flight: per token and
//               layer about (10 + 2 x mlp_ratio) x hidden / tp floats plus the
//               attention scores (2 x heads / tp x seq_len), and the logits
//               (3 x vocab / tp per token) on the last stage; GPipe keeps every
//               micro-batch of the step, 1F1B at most `pipeline` of them;
//   buffers     communication staging: a gradient bucket, twice (one being
//               reduced while the next fills), capped at the gradients;
//   runtime     what a rank holds before the model exists (LibTorch, MPI,
//               BLAS buffers): ~190 MiB measured (max RSS of a 120k-parameter
//               run), counted as kRuntimeBytes.
// All arithmetic is in long double, so absurd shapes give huge numbers rather
// than overflow. It is an estimate: within a factor of ~1.5 of what LibTorch
// allocates for the shapes in configs/, which is what a pre-flight check
// needs (the planner of a later issue will calibrate it). Measured on one
// rank (max RSS): hidden 512, 4 layers, seq 256, micro-batch 8 used 848 MiB
// against 750 MiB estimated; hidden 256, 2 layers, seq 512, micro-batch 16,
// vocab 8192 used 1292 MiB against 1568 MiB.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cmpi::parallel {

struct MemoryEstimateInput {
  int64_t vocab_size = 0, seq_len = 0, layers = 0, hidden = 0, heads = 0, mlp_ratio = 0;
  bool tie_embeddings = true;  // false: the head stage holds a table of its own
  int dp = 1, tp = 1, pp = 1;
  int zero_stage = 0;
  int64_t micro_batch = 1;
  int64_t micro_batches = 1;          // per rank per step
  bool gpipe = false;                 // schedule; false = 1F1B
  std::vector<int64_t> stage_layers;  // empty = balanced
  int64_t bucket_bytes = 0;
  bool zero3_per_layer = true;  // parallel.zero3_gather: layer (false: model)
};

// What a rank holds before the model exists (see runtime above).
constexpr long double kRuntimeBytes = 200.0L * (1 << 20);

struct MemoryEstimate {
  long double parameter_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0, activation_bytes = 0,
              buffer_bytes = 0, runtime_bytes = kRuntimeBytes;
  int stage = 0;  // the pipeline stage these are for
  long double total() const {
    return parameter_bytes + gradient_bytes + optimizer_bytes + activation_bytes + buffer_bytes +
           runtime_bytes;
  }
};

// The estimate for the pipeline stage with the largest total.
MemoryEstimate estimate_rank_memory(const MemoryEstimateInput& in);

}  // namespace cmpi::parallel
