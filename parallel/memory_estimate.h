// A rank's memory for one training step of the GPT, estimated from the
// config alone (no tensor is allocated), for the pre-flight check that fails
// a run before it allocates what the machine cannot hold.
//
// For the busiest pipeline stage (most parameters plus activations), float32:
//   parameters  the stage's weights split over tp (embedding and head on the
//               end stages); ZeRO-3 keeps its 1/dp shard plus, gathering per
//               layer (zero3_per_layer), about two layers' weights: the
//               largest of two blocks, a block and the embedding unit, or a
//               block and the head's use (final LayerNorm and the tied
//               or own head table), plus where a forward follows a forward (GPipe,
//               1F1B's warm-up on all but the last stage) the stage's last
//               use, kept for its backward while the next micro-batch's
//               forward gathers; capped at the stage; gathering per model, the
//               whole stage's weights;
//   gradients   a flat buffer the size of the parameters, plus under
//               ZeRO-2/3 the 1/dp shard its reduce-scatter fills (both are
//               alive at the peak; the stages shrink only what is held
//               between steps); ZeRO-1 reduce-scatters back into the flat
//               buffer (no shard);
//   optimizer   AdamW's two moments, split over dp from ZeRO-1 on;
//   activations what autograd keeps per micro-batch in flight, per token
//               and block: the replicated [., hidden] tensors (block input,
//               the LayerNorms' outputs, the mid-block sum unless the residual
//               is parallel, two dropout masks with dropout), the tp-split
//               ones (q, k and v, the heads' output, the MLP's two r·hidden
//               tensors) and the attention core's
//               [heads/tp, seq_len] rows (probabilities; with dropout also
//               its mask and the dropped probabilities); and the logits
//               (3 x vocab / tp per token) on the last stage; under sequence
//               parallelism (sequence_parallel) the replicated tensors, the
//               embedding's output and a fully recomputed block's input hold
//               1/tp of the tokens (so do the pipeline's messages); GPipe keeps every
//               micro-batch of the step, 1F1B at most `pipeline` of them. With
//               bf16/fp16 compute the blocks' and the embedding's values take
//               activation_value_bytes (2) each, and so does the gradient a
//               stage holds after sending it (16-bit words on the wire; a
//               received one is widened to float32); the logits stay float32
//               (the cross-entropy runs in float32).
//               Recomputation (recompute): selective drops the core's rows
//               from every block and adds one block's back for the
//               recomputation running in backward; full keeps only the input
//               of each recomputed block (the first recompute_layers of the
//               stage) and adds one whole block for the recomputation;
//   buffers     the optimizer's communication staging: ZeRO-1/2 copy one
//               bucket's 1/dp piece of the updated weights for its allgather,
//               and ZeRO-1 takes one bucket's reduced 1/dp piece in another;
//               stage 0 and 3 reduce and gather in place (none);
//   pipeline sends  the messages between stages alive beside the
//               activations (parallel/pipeline/pipeline_engine.h): the input
//               gradient sent back, held until the stage's next action
//               (every stage but the first), and the output gradient
//               received for the running backward (every stage but the
//               last); one micro-batch's [micro_batch, seq_len, hidden] each
//               (seq_len / tp under sequence parallelism),
//               however many micro-batches the step has;
//   scratch     what communication allocates beside the optimizer's state
//               for the largest gradient reduction: a bucket (MPI's
//               temporary for the reduction, or the codec's payloads), with
//               dp > 1 only;
//   outer state parallel.dp_sync: diloco (parallel/diloco/diloco_sync.h): the
//               outer weights and the outer momentum, two float32 copies of
//               the stage's parameters, and one bucket of pseudo-gradient
//               scratch (not part of state(): the optimizer does not count it);
//   runtime     what a rank holds before the model exists (LibTorch, MPI,
//               BLAS buffers): ~190 MiB measured (max RSS of a 120k-parameter
//               run), counted as kRuntimeBytes.
// All arithmetic is in long double, so absurd shapes give huge numbers rather
// than overflow. Checked against the trainer: parameters + gradients +
// optimizer + buffers (state()) equal what the optimizer counts, per stage,
// for dp/tp/pp and ZeRO 0-3 (test plan_traffic_matches_trainer); the total
// came within 10 % of the peak resident set of every rank of gpt-3m's
// benchmark cells (docs/planner.md). Activations are the rough part: on one
// rank, hidden 512, 4 layers, seq 256, micro-batch 8 used 848 MiB of RSS
// against 750 MiB estimated; hidden 256, 2 layers, seq 512, micro-batch 16,
// vocab 8192 used 1292 MiB against 1568 MiB (before scratch was counted).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cmpi::parallel {

// training.recompute (models/recompute.h).
enum class ActivationRecompute { kNone, kSelective, kFull };

struct MemoryEstimateInput {
  int64_t vocab_size = 0, seq_len = 0, layers = 0, hidden = 0, heads = 0, mlp_ratio = 0;
  // The Llama switches (models/gpt_options.h): key/value heads (0: heads),
  // the MLP's inner width (0: mlp_ratio · hidden), a gated MLP (three
  // matrices; it keeps about four inner-width tensors per token instead of
  // two: an estimate not yet checked against measurement), biases, RMSNorm
  // (a weight only).
  int64_t kv_heads = 0, mlp_width = 0;
  bool gated_mlp = false, bias = true, rms_norm = false;
  bool tie_embeddings = true;     // false: the head stage holds a table of its own
  bool learned_positions = true;  // false (rotary): no position table
  // dp: the ranks ZeRO shards over and gradients are reduced in, the dp
  // group's size (dp x cp under context parallelism).
  int dp = 1, tp = 1, pp = 1;
  // Context parallelism (parallel.context): a rank's activations hold
  // seq_len / cp tokens, and the ring attention keeps its output and the
  // rows' log-sum-exp (float32) instead of the core's [heads/tp, seq_len]
  // rows, recomputed or not (parallel/context/ring_attention.h).
  int cp = 1;
  int zero_stage = 0;
  int64_t micro_batch = 1;
  int64_t micro_batches = 1;          // per rank per step
  bool gpipe = false;                 // schedule; false = 1F1B
  std::vector<int64_t> stage_layers;  // empty = uniform, or auto_balance
  // parallel.pipeline_balance: auto (with stage_layers empty): the layers
  // are split to minimise the largest stage total (parallel/pipeline/pipeline_balance.h).
  bool auto_balance = false;
  int64_t bucket_bytes = 0;
  bool zero3_per_layer = true;  // parallel.zero3_gather: layer (false: model)
  // ZeRO 2/3, parallel.zero_gradient_memory: shard (no flat gradient buffer).
  bool shard_gradient_memory = false;
  // training.precision: bytes of one activation value the blocks keep for
  // backward (4 float32; 2 bf16/fp16, whose masters, gradients and moments
  // stay float32).
  int activation_value_bytes = 4;
  bool parallel_residual = false;
  bool dropout = false;  // model.dropout > 0: dropout masks are kept
  ActivationRecompute recompute = ActivationRecompute::kNone;
  int64_t recompute_layers = 0;    // full: the first this many blocks per stage (0: all)
  bool sequence_parallel = false;  // parallel.sequence_parallel (see activations)
  bool diloco = false;             // parallel.dp_sync: diloco (see outer state)
};

// What a rank holds before the model exists (see runtime above).
constexpr long double kRuntimeBytes = 200.0L * (1 << 20);

struct MemoryEstimate {
  long double parameter_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0, activation_bytes = 0,
              buffer_bytes = 0, scratch_bytes = 0, pipeline_send_bytes = 0, outer_state_bytes = 0,
              runtime_bytes = kRuntimeBytes;
  int stage = 0;       // the pipeline stage these are for
  int64_t layers = 0;  // the stage's layers
  // Of activation_bytes: the attention core's [B, heads/tp, T, T] tensors.
  long double attention_score_bytes = 0;
  // What the trainer's optimizer counts (metrics.jsonl memory.peak_bytes):
  // parameters, gradients, optimizer state and staging buffers.
  long double state() const {
    return parameter_bytes + gradient_bytes + optimizer_bytes + buffer_bytes;
  }
  // The largest part of total(): its name ("activations", "optimizer", ...)
  // and bytes.
  struct Part {
    const char* name;
    long double bytes;
  };
  Part dominant() const;
  long double total() const {
    return parameter_bytes + gradient_bytes + optimizer_bytes + activation_bytes + buffer_bytes +
           scratch_bytes + pipeline_send_bytes + outer_state_bytes + runtime_bytes;
  }
};

// Layers per pipeline stage: in.stage_layers if given, else split to
// minimise the largest stage total (auto_balance), else uniform.
std::vector<int64_t> stage_layers_of(const MemoryEstimateInput& in);

// One estimate per pipeline stage, in stage order.
std::vector<MemoryEstimate> estimate_stage_memory(const MemoryEstimateInput& in);

// The estimate of the stage with the largest total (the first of equals):
// what the busiest rank needs. `stages` must not be empty.
MemoryEstimate busiest_stage(const std::vector<MemoryEstimate>& stages);

}  // namespace cmpi::parallel
