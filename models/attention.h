// Causal multi-head self-attention: q, k, v from one fused projection, each
// head attends to positions <= its own (upper triangle masked to -inf before
// the softmax), heads concatenated and projected back to the hidden size.
#pragma once

#include <torch/torch.h>

#include "models/gpt_options.h"

namespace cmpi::models {

class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit CausalSelfAttentionImpl(const GptOptions& options);
  torch::Tensor forward(const torch::Tensor& x);  // [B, T, H] -> [B, T, H]

  torch::nn::Linear qkv{nullptr};
  torch::nn::Linear out{nullptr};

 private:
  int64_t heads_;
  int64_t head_dim_;
  torch::nn::Dropout attn_dropout_{nullptr};
  torch::nn::Dropout resid_dropout_{nullptr};
};
TORCH_MODULE(CausalSelfAttention);

}  // namespace cmpi::models
