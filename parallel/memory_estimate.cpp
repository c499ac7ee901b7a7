#include "parallel/memory_estimate.h"

#include <algorithm>

#include "parallel/pipeline/pipeline_balance.h"
#include "parallel/pipeline/pipeline_stages.h"

namespace cmpi::parallel {
namespace {

using Real = long double;
constexpr Real kFloat = 4;

// The most floats ZeroLayout puts in one bucket without a break, before
// bucket_bytes cuts it (zero_layout.h): tp > 1 breaks the parameters at
// every tp-replicated one (LayerNorms, row-parallel biases, positions), so a
// block's longest run is its MLP's or its attention's matrices; the token
// table has buckets of its own when untied or tied across pipeline ends;
// per-layer ZeRO-3 breaks at every layer (embedding, block, head).
// One block's parameters, by kind (see MemoryEstimateInput for the switches).
struct BlockShape {
  Real norm;       // one norm's parameters (replicated over tp)
  Real attention;  // qkv weight and bias, output weight (split over tp, whole)
  Real mlp;        // the MLP's matrices and column-parallel biases (whole)
  Real inner;      // the MLP's inner width
  Real replicated_bias;
};

BlockShape block_shape(const MemoryEstimateInput& in) {
  const Real h = Real(in.hidden), b = in.bias ? 1 : 0;
  const Real head_dim = h / Real(in.heads);
  const Real kv = Real(in.kv_heads > 0 ? in.kv_heads : in.heads);
  const Real qkv_rows = h + 2 * kv * head_dim;
  BlockShape s;
  s.norm = (in.rms_norm || !in.bias ? 1 : 2) * h;
  s.inner = in.mlp_width > 0 ? Real(in.mlp_width) : Real(in.mlp_ratio) * h;
  const Real in_matrices = in.gated_mlp ? 2 : 1;
  s.attention = qkv_rows * h + b * qkv_rows + h * h;
  s.mlp = (in_matrices + 1) * s.inner * h + b * in_matrices * s.inner;
  s.replicated_bias = b * h;
  return s;
}

Real longest_bucket_run(const MemoryEstimateInput& in, const PipelineStage& stage, Real per_block,
                        Real params) {
  const Real h = Real(in.hidden), tp = Real(in.tp);
  const BlockShape shape = block_shape(in);
  const Real table = Real(in.vocab_size) * h / tp;
  const Real positions = in.learned_positions ? Real(in.seq_len) * h : 0;
  const bool layers = stage.layers() > 0;
  const bool own_head_table = !in.tie_embeddings || !stage.has_embedding;
  // The embedding's table alone: untied (sparse) or the tied copy over pp.
  const bool embedding_alone = !in.tie_embeddings || in.pp > 1;
  const bool head_table_alone = in.tie_embeddings && in.pp > 1 && !stage.has_embedding;
  if (in.tp > 1) {
    Real run = layers ? std::max(shape.attention / tp, shape.mlp / tp) : 0;
    if (stage.has_embedding || (stage.has_head && own_head_table)) run = std::max(run, table);
    return run;
  }
  if (in.zero_stage == 3 && in.zero3_per_layer) {
    Real run = layers ? per_block : 0;
    if (stage.has_embedding)
      run = std::max(run, embedding_alone ? std::max(table, positions) : table + positions);
    if (stage.has_head) {
      const Real head_table = own_head_table ? table : 0;
      run = std::max(run, head_table_alone ? std::max(shape.norm, table) : shape.norm + head_table);
    }
    return run;
  }
  Real alone = 0;
  if (stage.has_embedding && embedding_alone) alone += table;
  if (stage.has_head && head_table_alone) alone += table;
  return std::max(params - alone, alone > 0 ? table : 0);
}

MemoryEstimate estimate_stage(const MemoryEstimateInput& in, const PipelineStage& stage,
                              int stage_index) {
  const Real h = Real(in.hidden), tp = Real(in.tp), dp = Real(in.dp);
  const Real seq = Real(in.seq_len), vocab = Real(in.vocab_size), heads = Real(in.heads);
  const Real position_table = in.learned_positions ? seq * h : 0;
  const BlockShape shape = block_shape(in);
  const Real per_block =
      2 * shape.norm + (shape.attention + shape.mlp) / tp + shape.replicated_bias;
  Real params = Real(stage.layers()) * per_block;
  if (stage.has_embedding) params += vocab * h / tp + position_table;
  // The head's table: tied, the embedding's (a copy on a head-only stage).
  const bool own_head_table = !in.tie_embeddings || !stage.has_embedding;
  if (stage.has_head) params += shape.norm + (own_head_table ? vocab * h / tp : 0);

  MemoryEstimate e;
  e.stage = stage_index;
  e.layers = stage.layers();
  const Real param_bytes = params * kFloat;
  e.parameter_bytes = param_bytes;
  if (in.zero_stage == 3) {
    // Gathered at once per layer: the use running and the one prefetched.
    const Real embedding = (in.tie_embeddings || stage.has_embedding ? vocab * h / tp : 0) +
                           (stage.has_embedding ? position_table : 0);
    const Real head_use = shape.norm + vocab * h / tp;
    Real gathered = stage.layers() >= 2 ? 2 * per_block : per_block;
    if (stage.has_embedding) gathered = std::max(gathered, embedding + per_block);
    if (stage.has_head) gathered = std::max(gathered, head_use + per_block);
    // Where a forward follows a forward (GPipe; 1F1B's warm-up on every
    // stage but the last) the last use stays gathered for its backward while
    // the next micro-batch's first two are gathered.
    const bool forward_after_forward =
        in.pp > 1 && in.micro_batches > 1 && (in.gpipe || stage_index < in.pp - 1);
    if (forward_after_forward) gathered += stage.has_head ? head_use : per_block;
    const Real gathered_bytes = std::min(gathered * kFloat, param_bytes);
    e.parameter_bytes = param_bytes / dp + (in.zero3_per_layer ? gathered_bytes : param_bytes);
  }
  // The flat buffer micro-batches accumulate into, plus (ZeRO 2/3) the shard
  // its reduce-scatter fills: both are alive at the step's peak.
  e.gradient_bytes = param_bytes + (in.zero_stage >= 2 ? param_bytes / dp : 0);
  e.optimizer_bytes = 2 * param_bytes / (in.zero_stage >= 1 ? dp : 1);
  // A piece is 1/dp of the largest bucket, which a run of parameters bounds:
  // an untied token embedding is cut into buckets of its own (ZeroLayout).
  Real largest_run = param_bytes;
  if (stage.has_embedding && !in.tie_embeddings) {
    const Real table = vocab * h / tp * kFloat;
    largest_run = std::max(table, param_bytes - table);
  }
  // With tp > 1 every tp-replicated parameter breaks the run (ZeroLayout).
  if (in.tp > 1)
    largest_run = std::min(largest_run, longest_bucket_run(in, stage, per_block, params) * kFloat);
  const Real bucket = std::min(Real(in.bucket_bytes), largest_run);
  if (in.zero_stage >= 2 && in.shard_gradient_memory) {
    const Real span =
        std::min(Real(in.bucket_bytes), longest_bucket_run(in, stage, per_block, params) * kFloat);
    // Shard-only (zero_shard_gradients.cpp): the shard, the gradients
    // autograd holds until their bucket is packed — about one bucket, or the
    // largest tensor, which is freed only when its last bucket is packed,
    // plus the tied table on a pipeline end, held over the step — and
    // (buffers) two packed buckets and one received piece.
    const Real table = vocab * h / tp * kFloat;
    Real largest_tensor = stage.layers() > 0 ? shape.inner * h / tp * kFloat : 0;
    if (stage.has_embedding || stage.has_head) largest_tensor = std::max(largest_tensor, table);
    const bool holds_tied_copy =
        in.pp > 1 && in.tie_embeddings && (stage.has_embedding || stage.has_head);
    const Real held = std::max(span, largest_tensor) + (holds_tied_copy ? table : 0);
    e.gradient_bytes = param_bytes / dp + std::min(param_bytes, held);
    e.buffer_bytes = (param_bytes > span ? 2 : 1) * span + (in.dp > 1 ? span / dp : 0);
  }

  const Real tokens = Real(in.micro_batch) * seq / Real(in.cp);
  const bool ring = in.cp > 1;
  // Per token of one block, in values of the compute dtype (see the header).
  const Real value = Real(in.activation_value_bytes);
  const Real replicated = (in.parallel_residual ? 3 : 4) + (in.dropout ? 2 : 0);
  // q, k and v (grouped-query: k and v of kv_heads, and also repeated for
  // every query head), the heads' output and the MLP's inner tensors (gated:
  // about four), in units of hidden.
  const Real qkv_width =
      (h + 2 * Real(in.kv_heads > 0 ? in.kv_heads : in.heads) * (h / Real(in.heads))) / h;
  // The ring widens the key/value heads per block, never keeping them.
  const Real repeated_kv = in.kv_heads > 0 && in.kv_heads < in.heads && !ring ? 2 : 0;
  const Real split = qkv_width + repeated_kv + 1 + (in.gated_mlp ? 4 : 2) * shape.inner / h;
  // The core's rows; the ring keeps none, but its float32 output and
  // log-sum-exp per query head, in values of the compute dtype.
  const Real core = ring ? 0 : (in.dropout ? 3 : 1) * heads / tp * seq;
  const Real ring_kept = ring ? (h + heads) / tp * kFloat / Real(in.activation_value_bytes) : 0;
  // Sequence parallel: the replicated tensors (and a block's kept input) hold
  // 1/tp of the tokens.
  const Real sequence_split = in.sequence_parallel ? tp : 1;
  const Real block_input = h / sequence_split;
  const Real stored_block = replicated * h / sequence_split + split * h / tp + core + ring_kept;
  const Real layers = Real(stage.layers());
  // Per micro-batch in flight: what each block keeps (and of it the core's
  // scores); once per stage: what the recomputation running in backward
  // rebuilds (one core, or one block less its kept input).
  Real kept = layers * stored_block, kept_scores = layers * core;
  Real selective_core = 0, recomputed_block = 0;
  if (in.recompute == ActivationRecompute::kSelective && stage.layers() > 0) {
    kept = layers * (stored_block - core);
    kept_scores = 0;
    selective_core = core;
  } else if (in.recompute == ActivationRecompute::kFull && stage.layers() > 0) {
    const Real whole =
        in.recompute_layers == 0 ? layers : std::min(layers, Real(in.recompute_layers));
    kept = whole * block_input + (layers - whole) * stored_block;
    kept_scores = (layers - whole) * core;
    recomputed_block = stored_block - block_input;
  }
  // The logits (and what the loss keeps of them) on the last stage, float32
  // whatever the compute dtype.
  const Real head = stage.has_head ? tokens * 2 * vocab / tp * kFloat : 0;
  Real per_micro_batch = tokens * kept * value + head;
  if (stage.has_embedding) per_micro_batch += tokens * block_input * value;
  Real in_flight = 1;
  if (in.pp > 1)
    in_flight = in.gpipe ? Real(in.micro_batches)
                         : std::min(Real(in.micro_batches), Real(in.pp - stage_index));
  // A recomputed core was measured alive beside the running micro-batch's
  // logits; a whole recomputed block only after the head's backward has
  // released them (docs/planner.md), so the larger of the two counts.
  e.activation_bytes = per_micro_batch * in_flight + tokens * selective_core * value - head +
                       std::max(head, tokens * recomputed_block * value);
  const bool rebuilds_a_core = selective_core > 0 || recomputed_block > 0;
  e.attention_score_bytes =
      tokens * (kept_scores * in_flight + (rebuilds_a_core ? core : 0)) * value;
  // ZeRO 1/2 stage one bucket's piece of the updated weights for its
  // allgather, ZeRO-1 one reduced piece too; the other stages reduce and
  // gather in place.
  if ((in.zero_stage == 1 || in.zero_stage == 2) && in.dp > 1)
    e.buffer_bytes += (in.zero_stage == 1 ? 2 : 1) * bucket / dp;
  // One input gradient held after its send, in the compute dtype it travels
  // in (PipelineEngine::set_wire_dtype), and one output gradient received,
  // widened to float32 for the stage's backward.
  const Real sent = tokens * block_input * value, received = tokens * block_input * kFloat;
  if (in.pp > 1)
    e.pipeline_send_bytes = (stage_index > 0 ? sent : 0) + (stage_index + 1 < in.pp ? received : 0);
  if (in.dp > 1) e.scratch_bytes = std::min(Real(in.bucket_bytes), param_bytes);
  if (in.diloco)
    e.outer_state_bytes = 2 * param_bytes + std::min(Real(in.bucket_bytes), param_bytes);
  return e;
}

}  // namespace

MemoryEstimate::Part MemoryEstimate::dominant() const {
  const Part parts[] = {{"parameters", parameter_bytes},
                        {"gradients", gradient_bytes},
                        {"optimizer", optimizer_bytes},
                        {"activations", activation_bytes},
                        {"buffers", buffer_bytes},
                        {"comm scratch", scratch_bytes},
                        {"pipeline sends", pipeline_send_bytes},
                        {"outer state", outer_state_bytes},
                        {"runtime", runtime_bytes}};
  Part largest = parts[0];
  for (const Part& part : parts)
    if (part.bytes > largest.bytes) largest = part;
  return largest;
}

std::vector<int64_t> stage_layers_of(const MemoryEstimateInput& in) {
  if (!in.stage_layers.empty() || !in.auto_balance || in.pp <= 1) return in.stage_layers;
  return min_max_stage_layers(in.layers, in.pp, [&](int64_t stage, int64_t layers) {
    PipelineStage shape;
    shape.end_layer = layers;
    shape.has_embedding = stage == 0;
    shape.has_head = stage + 1 == in.pp;
    return estimate_stage(in, shape, int(stage)).total();
  });
}

std::vector<MemoryEstimate> estimate_stage_memory(const MemoryEstimateInput& in) {
  const auto stages = partition_layers(in.layers, in.pp, stage_layers_of(in));
  std::vector<MemoryEstimate> out;
  for (size_t s = 0; s < stages.size(); ++s) out.push_back(estimate_stage(in, stages[s], int(s)));
  return out;
}

MemoryEstimate busiest_stage(const std::vector<MemoryEstimate>& stages) {
  MemoryEstimate worst;
  bool first = true;
  for (const MemoryEstimate& e : stages) {
    if (first || e.total() > worst.total()) worst = e;
    first = false;
  }
  return worst;
}

}  // namespace cmpi::parallel
