// Pre-LayerNorm transformer block, sequential (GPT-2):
//   h = x + attn(ln1(x));  out = h + mlp(ln2(h))
// or with options.parallel_residual (GPT-NeoX), both branches read x:
//   out = x + attn(ln1(x)) + mlp(ln2(x))
// where the MLP is Linear(H, I) -> GeLU (exact, or its tanh approximation:
// options.activation) -> Linear(I, H), or gated (SwiGLU, Llama):
// down(silu(gate(x)) · up(x)) with gate and up Linear(H, I) (fc_gate, fc_in)
// and down Linear(I, H) (fc_out); I = options.mlp_width(). The norms are
// LayerNorm or RMSNorm (models/norm.h). Under tensor
// parallelism the first MLP linear is column-parallel and the second
// row-parallel (so is the gate), so the I activations stay split and the block
// communicates twice forward (after attention and after the MLP) and twice
// backward; the LayerNorms are replicated. Under sequence parallelism
// (options.sequence_parallel) x, the LayerNorms, the residual adds and the
// dropouts hold this rank's 1/tp of the sequence; the block communicates
// an all-gather before each column-parallel linear and a reduce-scatter
// after each row-parallel one (backward: the converse); the LayerNorms'
// gradients are summed over tp, and their dropouts differ per tp rank,
// drawing from the attention's per-rank generator (which recomputation
// replays and checkpoints save).
// Recomputed whole (set_recompute(kFull)), the block keeps only its input
// between forward and backward and runs again in backward, its two tp
// allreduces included (models/recompute.h); with kSelective only the
// attention core is recomputed.
// Inference only (forward_cached): the same arithmetic with the attention
// reading and extending a KvCache (models/kv_cache.h).
#pragma once

#include <functional>

#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "models/attention.h"
#include "models/norm.h"

namespace cmpi::models {

class TransformerBlockImpl : public torch::nn::Module {
 public:
  // Uses the error-feedback keys buffer_key .. buffer_key + 3; dropout_seed
  // seeds this rank's attention-dropout generator; future_mask is the
  // model's causal_future_mask; `context`: the cp group the attention's
  // ring runs over (inactive: none); `stream_dropout_seed`: see
  // CausalSelfAttentionImpl.
  TransformerBlockImpl(const GptOptions& options, comm::Communicator& tp, uint64_t buffer_key,
                       uint64_t dropout_seed, torch::Tensor future_mask,
                       parallel::ContextGroup context = {},
                       std::optional<uint64_t> stream_dropout_seed = std::nullopt);
  torch::Tensor forward(const torch::Tensor& x);
  // Inference (eval mode): x [B, T, H] holds positions cache.length() ..
  // + T - 1; the attention appends their keys and values as block `layer`
  // of the cache.
  torch::Tensor forward_cached(const torch::Tensor& x, KvCache& cache, int64_t layer);
  // What this block recomputes in backward while training.
  void set_recompute(Recompute what);
  void describe(const std::string& prefix, const GptOptions& options,
                std::vector<ParamLayout>& out) const;

  Norm ln1{nullptr}, ln2{nullptr};
  CausalSelfAttention attention{nullptr};
  parallel::ColumnParallelLinear fc_gate{nullptr};  // gated MLP only
  parallel::ColumnParallelLinear fc_in{nullptr};
  parallel::RowParallelLinear fc_out{nullptr};

 private:
  torch::Tensor mlp(const torch::Tensor& x);
  torch::Tensor norm(Norm& layer, const torch::Tensor& x);
  torch::Tensor dropout(const torch::Tensor& x);
  torch::Tensor compute(const torch::Tensor& x);  // the block's arithmetic
  // The generators a whole recomputed block replays: the attention's, and
  // the residual stream's where it has its own.
  std::vector<at::Generator> recomputed_generators();
  // The block's arithmetic with `attend` as its attention branch.
  torch::Tensor compute(const torch::Tensor& x,
                        const std::function<torch::Tensor(const torch::Tensor&)>& attend);

  torch::nn::Dropout dropout_{nullptr};
  comm::Communicator* tp_;
  bool parallel_residual_;
  bool sequence_parallel_;
  // Sequence or context parallel: the residual stream's positions differ per
  // rank, so its dropout draws from the rank's own generator.
  bool per_rank_dropout_;
  double dropout_p_;
  MlpActivation activation_;
  bool recompute_whole_ = false;
};
TORCH_MODULE(TransformerBlock);

}  // namespace cmpi::models
