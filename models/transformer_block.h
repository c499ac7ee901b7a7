// Pre-LayerNorm transformer block: x + attn(ln1(x)), then + mlp(ln2(x)),
// where the MLP is Linear(H, r*H) -> GELU -> Linear(r*H, H).
#pragma once

#include <torch/torch.h>

#include "models/attention.h"

namespace cmpi::models {

class TransformerBlockImpl : public torch::nn::Module {
 public:
  explicit TransformerBlockImpl(const GptOptions& options);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  CausalSelfAttention attention{nullptr};
  torch::nn::Linear fc_in{nullptr}, fc_out{nullptr};

 private:
  torch::nn::Dropout dropout_{nullptr};
};
TORCH_MODULE(TransformerBlock);

}  // namespace cmpi::models
