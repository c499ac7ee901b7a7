// GPT decoder: token + learned position embeddings (or, with
// options.position kRotary, no position table and rotary positions in every
// attention), a stack of pre-LN transformer blocks (sequential, or with
// options.parallel_residual parallel), a final norm (LayerNorm or RMSNorm), and an output head
// tied to the token embedding (logits = h · Wteᵀ), or with
// options.tie_embeddings false its own table "output_head.weight"
// (logits = h · Woutᵀ, GPT-NeoX style; the token embedding's gradient then
// holds only the rows of the tokens the step saw). Weights are drawn from
// N(0, options.input_init_std()), the residual output projections from
// N(0, options.output_init_std()) (GPT-2's or GPT-NeoX's scheme).
//
// Tensor parallel over groups.tp(): attention heads, MLP features and the
// vocabulary are split across the tp ranks (Megatron style), the logits
// stay split and the loss is the vocab-parallel cross-entropy. Pipeline
// stages: a StagePlan selects the blocks [first_layer, end_layer) and
// whether the stage holds the embedding and/or the head. Tied, a head-only
// stage keeps its own copy of the tied table under the same name,
// kTokenEmbeddingWeight; whoever runs the pipeline sums the two copies'
// gradients. Initial weights depend only on (options.seed, parameter name,
// element index), so every layout starts from the single-rank model's global
// weights, and a ZeRO-3 rank generates its shard alone (fill_initial_values)
// when options.materialize_parameters is false.
//
// Activation recomputation (options.recompute): every block's attention core
// (selective), or the first options.recompute_layers blocks of the stage
// whole (full, 0: all), keep only their inputs and run again in backward
// (models/recompute.h).
//
// Sequence parallel (options.sequence_parallel, Megatron-SP): the embedding
// reduce-scatters its sum along the sequence, so every tp rank holds positions
// [r*T/tp, (r+1)*T/tp) of the residual stream from there to the final
// LayerNorm; run_blocks takes and returns [B, T/tp, H] (what pipeline stages
// send each other), and the head all-gathers the normalised states before the
// vocab-parallel logits, so the loss sees the whole sequence. Parameters used
// on a rank's positions only (LayerNorms, row-parallel biases, the position
// table) have their gradients summed over tp (parallel/
// sequence_parallel_ops.h). The dropouts on the residual stream differ per tp
// rank: the embedding's draws from its own generator ("embedding.dropout",
// seeded per tp rank), a block's from its attention's.
//
// Per-layer ZeRO-3: with a LayerGate set, every piece of forward (embedding,
// each block, head and loss: the uses of layer_schedule()) is wrapped by
// parallel::enter_use/leave_use, so the gate gathers a layer's parameters
// just before it runs, forward and backward, and frees them after.
//
// Context parallel (groups.cp() of more than one rank): every cp rank holds
// two of 2·cp chunks of each sequence (parallel/context/context_shard.h).
// embed() and head_loss() still take whole sequences [B, T] and keep this
// rank's part, so run_blocks, pipeline stages and the loss see [B, T/cp, ...]
// (under sequence parallelism [B, T/cp/tp, H] between the blocks); learned
// and rotary positions are the chunks' global ones, the attention is a ring
// over cp (parallel/context/ring_attention.h), and head_loss is the mean over
// this rank's positions: the mean over the cp ranks is the sequence's.
// forward() returns this rank's positions' logits.
//
// Inference with a KV cache (forward_cached, models/kv_cache.h): a whole
// model in eval mode runs only the new positions of a sequence, their
// learned or rotary positions continuing from the cache's length, every
// block's attention reading the earlier positions' keys and values from the
// cache. Used by generation (generate/); the training path never builds one.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/gpt_options.h"
#include "models/kv_cache.h"
#include "models/norm.h"
#include "models/param_layout.h"
#include "models/stage_plan.h"
#include "parallel/context/context_shard.h"
#include "parallel/param_info.h"
#include "parallel/zero/layer_schedule.h"

namespace cmpi::comm {
class Communicator;
}
namespace cmpi::parallel {
class ProcessGroups;
class VocabParallelEmbeddingImpl;
}  // namespace cmpi::parallel

namespace cmpi::models {

// The token embedding's parameter name ("token_embedding.weight"), the one
// spelling that the model, its parallelization (which flags the parameter:
// sparse, tied across pipeline stages) and its checkpoints use. The tied
// table's head copy on the last pipeline stage has the same name.
inline constexpr const char* kTokenEmbeddingWeight = "token_embedding.weight";

class TransformerBlockImpl;

class GptImpl : public torch::nn::Module {
 public:
  // Throws std::invalid_argument for a stage plan outside the model or a
  // shape the tp group cannot split (naming the field).
  GptImpl(const GptOptions& options, parallel::ProcessGroups& groups, StagePlan stage = {});

  // tokens [B, T] int64 -> hidden [B, T, H] (sequence parallel: this rank's
  // [B, T/tp, H]). Needs stage().has_embedding.
  torch::Tensor embed(const torch::Tensor& tokens);
  // This stage's blocks; appends each block's output (detached) to
  // `block_outputs` if given.
  torch::Tensor run_blocks(const torch::Tensor& hidden,
                           std::vector<torch::Tensor>* block_outputs = nullptr);
  // Mean cross-entropy of predicting targets [B, T] from the last block's
  // output. Needs stage().has_head. The same value on every tp rank.
  torch::Tensor head_loss(const torch::Tensor& hidden, const torch::Tensor& targets);
  // embed + run_blocks + head_loss (a single-stage model).
  torch::Tensor loss(const torch::Tensor& tokens, const torch::Tensor& targets);
  // Single-stage model: tokens [B, T] -> this tp rank's slice of the logits,
  // [B, T, vocab/tp] (the whole vocabulary with one tp rank).
  torch::Tensor forward(const torch::Tensor& tokens,
                        std::vector<torch::Tensor>* block_outputs = nullptr);
  // An empty cache for `batch` sequences of up to model.seq_len positions
  // (this rank's key/value heads, the compute dtype).
  KvCache make_kv_cache(int64_t batch) const;
  // Whole model, eval mode: tokens [B, T] at positions cache.length() ..
  // + T - 1 -> this tp rank's logits [B, T, vocab/tp] in float32, as
  // forward() of the whole sequence would give at those positions (within
  // rounding: the products are summed in another order); the cache then
  // holds T more positions. Throws std::out_of_range when the positions
  // would pass model.seq_len, std::logic_error in training mode, under
  // sequence parallelism or with a layer gate set.
  torch::Tensor forward_cached(const torch::Tensor& tokens, KvCache& cache);

  // Every parameter of this rank, in registration order.
  std::vector<parallel::ParamInfo> param_infos() const;
  const std::vector<ParamLayout>& layouts() const { return layouts_; }
  // The tied table's shard (kTokenEmbeddingWeight): defined on stages with
  // the embedding or the head (one tensor when a stage has both); undefined
  // when the embeddings are untied.
  torch::Tensor tied_embedding_weight() const;

  // Elements [offset, offset + length) (row-major) of parameter `param`'s
  // initial value on this rank (its tp slice), as the constructor would
  // materialise them; param indexes param_infos().
  void fill_initial_values(size_t param, size_t offset, size_t length, float* out) const;
  // Gather units and uses of this stage's parameters (see layer_schedule.h):
  // units "embedding" (token and position tables, or the head stage's copy of
  // the tied table), "block<N>" and "head" (final LayerNorm, and the untied
  // output head); uses in forward order: embedding, blocks, head (which also
  // reads the tied table).
  parallel::LayerSchedule layer_schedule() const;
  // Calls `gate` around every use from now on (nullptr: no calls). The gate
  // must outlive the model's forward and backward passes.
  void set_layer_gate(parallel::LayerGate* gate) { gate_ = gate; }
  // This rank's own dropout generators by name ("block3.attention.dropout"),
  // beside the process-wide default generator the other dropouts draw from;
  // checkpoints save their states.
  std::vector<std::pair<std::string, at::Generator>> dropout_generators();

  const GptOptions& options() const { return options_; }
  // The activations' dtype (options().precision): float32, bfloat16 or half.
  torch::ScalarType compute_dtype() const;
  const StagePlan& stage() const { return stage_; }  // end_layer resolved

 private:
  void require_whole_model(const char* what) const;
  void collect_layouts();
  size_t first_block_use() const { return stage_.has_embedding ? 1 : 0; }
  size_t head_use() const { return first_block_use() + blocks_.size(); }
  torch::Tensor head_weight() const;                 // the logits' projection table
  torch::Tensor final_norm(const torch::Tensor& x);  // in float32, rounded to x's dtype
  // The final LayerNorm and the logits' projection: [B, T, V/tp].
  torch::Tensor logits_of(const torch::Tensor& hidden);
  torch::Tensor embedding_dropout(const torch::Tensor& x);
  // Under context parallelism: this rank's part [B, T/cp, ...] of a whole
  // sequence x [B, T, ...]; otherwise x.
  torch::Tensor context_part(const torch::Tensor& x) const;

  GptOptions options_;
  StagePlan stage_;
  comm::Communicator* tp_;
  std::unique_ptr<parallel::ContextShard> context_shard_;  // cp > 1 only
  parallel::ContextGroup context_;
  std::shared_ptr<parallel::VocabParallelEmbeddingImpl> token_embedding_;
  torch::nn::Embedding position_embedding_{nullptr};
  std::vector<std::shared_ptr<TransformerBlockImpl>> blocks_;
  Norm final_norm_{nullptr};
  std::shared_ptr<parallel::VocabParallelEmbeddingImpl> output_head_;  // untied only
  torch::nn::Dropout dropout_{nullptr};
  at::Generator embedding_dropout_generator_;  // sequence or context parallel only
  std::vector<ParamLayout> layouts_;
  parallel::LayerGate* gate_ = nullptr;
};
TORCH_MODULE(Gpt);

}  // namespace cmpi::models
