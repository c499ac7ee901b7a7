#include "parallel/memory_estimate.h"

#include <algorithm>

#include "parallel/pipeline_stages.h"

namespace cmpi::parallel {
namespace {

using Real = long double;
constexpr Real kFloat = 4;

MemoryEstimate estimate_stage(const MemoryEstimateInput& in, const PipelineStage& stage,
                              int stage_index) {
  const Real h = Real(in.hidden), r = Real(in.mlp_ratio), tp = Real(in.tp), dp = Real(in.dp);
  const Real seq = Real(in.seq_len), vocab = Real(in.vocab_size), heads = Real(in.heads);
  const Real per_block = 4 * h + (3 * h * h + 3 * h + h * h + 2 * r * h * h + r * h) / tp + h;
  Real params = Real(stage.layers()) * per_block;
  if (stage.has_embedding) params += vocab * h / tp + seq * h;
  // The head's table: tied, the embedding's (a copy on a head-only stage).
  const bool own_head_table = !in.tie_embeddings || !stage.has_embedding;
  if (stage.has_head) params += 2 * h + (own_head_table ? vocab * h / tp : 0);

  MemoryEstimate e;
  e.stage = stage_index;
  const Real param_bytes = params * kFloat;
  e.parameter_bytes = param_bytes;
  if (in.zero_stage == 3) {
    // Gathered at once per layer: the use running and the one prefetched.
    const Real embedding = (in.tie_embeddings || stage.has_embedding ? vocab * h / tp : 0) +
                           (stage.has_embedding ? seq * h : 0);
    const Real head_use = 2 * h + vocab * h / tp;
    Real gathered = stage.layers() >= 2 ? 2 * per_block : per_block;
    if (stage.has_embedding) gathered = std::max(gathered, embedding + per_block);
    if (stage.has_head) gathered = std::max(gathered, head_use + per_block);
    const Real gathered_bytes = std::min(gathered * kFloat, param_bytes);
    e.parameter_bytes = param_bytes / dp + (in.zero3_per_layer ? gathered_bytes : param_bytes);
  }
  e.gradient_bytes = param_bytes;
  e.optimizer_bytes = 2 * param_bytes / (in.zero_stage >= 1 ? dp : 1);

  const Real tokens = Real(in.micro_batch) * seq;
  Real per_micro_batch =
      tokens * Real(stage.layers()) * ((10 + 2 * r) * h / tp + 2 * heads / tp * seq);
  if (stage.has_head) per_micro_batch += tokens * 3 * vocab / tp;
  if (stage.has_embedding) per_micro_batch += tokens * h;
  Real in_flight = 1;
  if (in.pp > 1)
    in_flight = in.gpipe ? Real(in.micro_batches)
                         : std::min(Real(in.micro_batches), Real(in.pp - stage_index));
  e.activation_bytes = per_micro_batch * in_flight * kFloat;
  e.buffer_bytes = std::min(2 * Real(in.bucket_bytes), param_bytes);
  return e;
}

}  // namespace

MemoryEstimate estimate_rank_memory(const MemoryEstimateInput& in) {
  const auto stages = partition_layers(in.layers, in.pp, in.stage_layers);
  MemoryEstimate worst;
  for (size_t s = 0; s < stages.size(); ++s) {
    const MemoryEstimate e = estimate_stage(in, stages[s], int(s));
    if (s == 0 || e.total() > worst.total()) worst = e;
  }
  return worst;
}

}  // namespace cmpi::parallel
