#include "plan/model_flops.h"

#include "models/family/gpt_family.h"

namespace cmpi::plan {

double forward_flops_per_token(const config::Config& c, const StageShape& s, int tp) {
  const double h = double(c.model.hidden);
  // Matmul weights of the blocks (norms and biases carry no matmul): the
  // attention's q, k, v and output, and the MLP's two or (gated) three.
  const models::GptOptions o = models::gpt_options(c.model);
  const double qkv_rows = double((o.heads + 2 * o.kv_head_count()) * o.head_dim());
  const double mlp_matrices = o.gated_mlp() ? 3 : 2;
  const double block_weights =
      (qkv_rows * h + h * h + mlp_matrices * double(o.mlp_width()) * h) / tp;
  double flops = 2 * double(s.layers) * block_weights;
  flops += double(s.layers) * attention_core_flops_per_token(c, tp);
  if (s.has_head) flops += 2 * h * double(o.padded_vocab_size(tp)) / tp;
  return flops;
}

double attention_core_flops_per_token(const config::Config& c, int tp) {
  // Each token's query meets every key and weighs every value.
  return 4 * double(c.model.seq_len) * double(c.model.hidden) / tp;
}

double recompute_flops_per_token(const config::Config& c, const StageShape& s, int tp) {
  // The ring attention (context parallelism) keeps what its backward needs:
  // selective recomputation has no core to run again.
  if (c.training.recompute == "selective" && c.parallel.context > 1) return 0;
  if (c.training.recompute == "selective")
    return double(s.layers) * attention_core_flops_per_token(c, tp);
  const double block = forward_flops_per_token(c, {0, 1, false, false, 0}, tp);
  return double(recomputed_blocks(c, s.layers)) * block;
}

TokenFlops model_flops_per_token(const config::Config& c, const parallel::ParallelDims& dims) {
  TokenFlops total;
  if (c.model.kind != config::ModelFamily::kGpt) return total;
  for (int stage = 0; stage < dims.pp; ++stage) {
    const StageShape shape = stage_shape(c, dims, stage);
    total.forward += forward_flops_per_token(c, shape, 1);
    total.recompute += recompute_flops_per_token(c, shape, 1);
  }
  return total;
}

}  // namespace cmpi::plan
