// GPT decoder: token + learned position embeddings, a stack of pre-LN
// transformer blocks, a final LayerNorm, and an output head tied to the
// token embedding (logits = h · Wteᵀ). Weights are drawn from N(0, init_std)
// with the residual output projections scaled by 1/sqrt(2·layers) (GPT-2).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "models/gpt_options.h"
#include "models/transformer_block.h"

namespace cmpi::models {

class GptImpl : public torch::nn::Module {
 public:
  explicit GptImpl(const GptOptions& options);

  // tokens [B, T] (int64) -> logits [B, T, vocab]. If `block_outputs` is
  // given, each block's output is appended to it (detached).
  torch::Tensor forward(const torch::Tensor& tokens,
                        std::vector<torch::Tensor>* block_outputs = nullptr);
  // Mean cross-entropy of predicting targets [B, T] from tokens [B, T].
  torch::Tensor loss(const torch::Tensor& tokens, const torch::Tensor& targets);

  const GptOptions& options() const { return options_; }

  torch::nn::Embedding token_embedding{nullptr}, position_embedding{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm final_norm{nullptr};

 private:
  void init_weights();
  GptOptions options_;
  torch::nn::Dropout dropout_{nullptr};
};
TORCH_MODULE(Gpt);

}  // namespace cmpi::models
