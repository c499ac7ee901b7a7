// Causal multi-head self-attention with its heads split across the tp group
// (Megatron style): the fused q/k/v projection is column-parallel, so each
// rank computes q, k and v of its heads only; each head attends to positions
// <= its own (upper triangle masked to -inf before the softmax); the output
// projection is row-parallel and sums the heads' contributions over the
// group. The fused projection's rows are laid out head by head — [q; k; v]
// of head 0, then of head 1, ... — so that the tp slices of the full weight
// are whole heads and every layout uses the same global weights. With
// grouped-query attention (options.kv_heads < heads; Llama) each key/value
// head serves heads / kv_heads query heads, and the rows run by key/value
// group — [q of its query heads; k; v] of group 0, then of group 1, ... — so
// tp splits the key/value heads (model.kv_heads divisible by the tp size)
// and a rank holds whole groups.
// Dropout of the attention probabilities acts on this rank's heads only, so
// it draws from a generator of its own, seeded per layer and tp rank (as
// Megatron's model-parallel RNG): the shared global generator would drop the
// same pattern in different heads on every tp rank. Dropout after the output
// projection acts on the replicated activation and uses the global generator,
// identical on every tp rank. Under sequence parallelism (options.
// sequence_parallel) the input is this rank's part of the sequence: the
// fused projection all-gathers it, the heads attend over the whole sequence
// (rotary positions are the gathered sequence's, unchanged), and the output
// projection reduce-scatters back to this rank's positions, whose dropout then
// differs per tp rank too and draws from the rank's generator.
// With rotary positions (options.position) the queries and keys of every head
// turn by their position before the scores (models/rotary_embedding.h).
// The causal mask is built once per model (causal_future_mask) and shared by
// its attentions, not per forward. With selective recomputation the core
// (scores, mask, softmax, dropout, ·V) keeps only q, k and v for backward
// and runs again there (models/recompute.h), so the [B, heads, T, T] scores,
// probabilities and dropout mask are never held between forward and backward.
// With options.attention_block_size the core runs in key blocks with an
// online softmax and never builds a [B, heads, T, T] tensor at all
// (models/blocked_attention.h).
// Context parallel (a ContextGroup given): x holds this cp rank's two chunks
// of the sequence (parallel/context/context_shard.h); each chunk's queries
// and keys turn by their global positions, and the core is the ring
// attention over the cp group (parallel/context/ring_attention.h), which
// keeps only q, k, v, the output and the log-sum-exp for backward, so
// selective recomputation has nothing to add there. The output dropout then
// draws from the rank's generator (its positions are its own).
// Inference only (forward_cached): the new positions' keys and values join
// those of the earlier positions kept in a KvCache (models/kv_cache.h), the
// rotary turn counts from the cache's length, and each new query attends to
// every cached position and the new ones up to its own; no dropout, no
// sequence parallelism. The training path (forward) never reads a cache.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "models/gpt_options.h"
#include "models/kv_cache.h"
#include "models/param_layout.h"
#include "models/rotary_embedding.h"
#include "parallel/context/context_shard.h"
#include "parallel/tensor/tensor_parallel_layers.h"

namespace cmpi::models {

class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  // `buffer_key`, `buffer_key + 1`: error-feedback keys of its two tp calls;
  // `dropout_seed`: of this rank's attention-dropout generator;
  // `future_mask`: causal_future_mask(options.seq_len), shared; `context`:
  // the cp group and shard (inactive: no context parallelism);
  // `stream_dropout_seed`: under context parallelism without sequence
  // parallelism, of the generator the residual stream's dropouts draw from
  // (the same on the tp ranks of a cp rank: they hold the same activations).
  CausalSelfAttentionImpl(const GptOptions& options, comm::Communicator& tp, uint64_t buffer_key,
                          uint64_t dropout_seed, torch::Tensor future_mask,
                          parallel::ContextGroup context = {},
                          std::optional<uint64_t> stream_dropout_seed = std::nullopt);
  // [B, T, H] -> [B, T, H]; sequence parallel: [B, T/tp, H] -> [B, T/tp, H].
  torch::Tensor forward(const torch::Tensor& x);
  // Module::to, and the causal mask and rotary tables that are no
  // parameters or buffers along with them.
  using torch::nn::Module::to;
  void to(torch::Device device, bool non_blocking = false) override;
  // Inference (eval mode): x [B, T, H] holds the positions cache.length() ..
  // + T - 1; appends their keys and values to block `layer` of the cache
  // (the caller advances it once every block has) and returns [B, T, H].
  // Throws std::logic_error in training mode, under sequence or context
  // parallelism.
  torch::Tensor forward_cached(const torch::Tensor& x, KvCache& cache, int64_t layer);
  // Whether the core is recomputed in backward (selective recomputation;
  // off inside a block that is recomputed whole).
  void set_recompute_core(bool on) { recompute_core_ = on; }
  void describe(const std::string& prefix, const GptOptions& options,
                std::vector<ParamLayout>& out) const;

  // This rank's attention-dropout generator (checkpoints save its state;
  // recomputation replays it).
  at::Generator& dropout_generator() { return attn_dropout_generator_; }
  // What this rank's residual-stream dropouts draw from when its positions
  // are its own: the attention's generator under sequence parallelism (the
  // tp ranks hold other positions), the stream generator under context
  // parallelism alone (the tp ranks hold the same ones).
  at::Generator& stream_dropout_generator() {
    return stream_dropout_generator_ ? *stream_dropout_generator_ : attn_dropout_generator_;
  }
  // Whether the stream generator is one of its own (checkpoints save it).
  bool has_stream_dropout_generator() const { return stream_dropout_generator_.has_value(); }

  parallel::ColumnParallelLinear qkv{nullptr};  // H -> (heads + 2 kv_heads)·hd (this rank's)
  parallel::RowParallelLinear out{nullptr};     // H (this rank's heads) -> H

 private:
  struct Heads {
    torch::Tensor q, k, v;  // q [B, heads, T, hd]; k, v [B, kv heads, T, hd]
  };
  // The fused projection of x split into heads, q and k turned by rotary
  // positions first_position .. + T - 1.
  Heads project(const torch::Tensor& x, int64_t first_position);
  // k, v [B, kv heads, T, hd] -> [B, heads, T, hd]: each key/value head
  // serves its group's query heads.
  torch::Tensor repeat_for_groups(const torch::Tensor& kv) const;
  // [B, heads, T, hd] -> the output projection's [B, T, H] (dropped out).
  torch::Tensor merge_heads(const torch::Tensor& attended);
  // q, k, v [B, nh, T, hd] -> softmax(mask(q kᵀ / √hd)) (dropped out) · v.
  torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v);
  // Whether attend() runs LibTorch's fused kernel for q (AttentionBackend).
  bool fused_for(const torch::Tensor& q) const;

  int64_t local_kv_heads_;
  int64_t group_;  // query heads per key/value head
  int64_t local_heads_;
  int64_t head_dim_;
  double attn_dropout_;
  at::Generator attn_dropout_generator_;
  std::optional<at::Generator> stream_dropout_generator_;
  std::optional<RotaryEmbedding> rotary_;  // rotary positions only
  torch::nn::Dropout resid_dropout_{nullptr};
  torch::Tensor future_mask_;  // [seq_len, seq_len] bool, true above the diagonal
  int64_t block_size_;         // options.attention_block_size
  AttentionBackend backend_;   // options.attention_backend
  bool sequence_parallel_;
  parallel::ContextGroup context_;
  uint64_t buffer_key_;
  bool recompute_core_ = false;
};
TORCH_MODULE(CausalSelfAttention);

// Inverted dropout of x (in float32 under a 16-bit dtype) drawing its mask
// from `generator`; x itself when p is 0.
torch::Tensor dropout_drawn_from(const torch::Tensor& x, double p, at::Generator& generator);

// [seq_len, seq_len] bool, true where a key lies after its query: what the
// scores mask to -inf. One per model, shared by its attentions.
torch::Tensor causal_future_mask(int64_t seq_len);

}  // namespace cmpi::models
