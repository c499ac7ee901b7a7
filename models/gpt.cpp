#include "models/gpt.h"

#include <cmath>
#include <stdexcept>

namespace cmpi::models {

GptImpl::GptImpl(const GptOptions& options) : options_(options) {
  token_embedding =
      register_module("token_embedding", torch::nn::Embedding(options.vocab_size, options.hidden));
  position_embedding =
      register_module("position_embedding", torch::nn::Embedding(options.seq_len, options.hidden));
  dropout_ = register_module("dropout", torch::nn::Dropout(options.dropout));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.layers; ++i) blocks->push_back(TransformerBlock(options));
  final_norm = register_module("final_norm",
                               torch::nn::LayerNorm(torch::nn::LayerNormOptions({options.hidden})));
  init_weights();
}

void GptImpl::init_weights() {
  torch::NoGradGuard no_grad;
  const double std = options_.init_std;
  const double residual_std = std / std::sqrt(2.0 * double(options_.layers));
  token_embedding->weight.normal_(0.0, std);
  position_embedding->weight.normal_(0.0, std);
  for (const auto& module : *blocks) {
    auto block = module->as<TransformerBlockImpl>();
    for (auto* linear : {&block->attention->qkv, &block->fc_in}) {
      (*linear)->weight.normal_(0.0, std);
      (*linear)->bias.zero_();
    }
    for (auto* linear : {&block->attention->out, &block->fc_out}) {
      (*linear)->weight.normal_(0.0, residual_std);
      (*linear)->bias.zero_();
    }
  }
}

torch::Tensor GptImpl::forward(const torch::Tensor& tokens,
                               std::vector<torch::Tensor>* block_outputs) {
  const int64_t time = tokens.size(1);
  if (time > options_.seq_len)
    throw std::invalid_argument("sequence of " + std::to_string(time) +
                                " tokens exceeds model.seq_len " +
                                std::to_string(options_.seq_len));
  auto positions = torch::arange(time, torch::kLong);
  auto x =
      dropout_->forward(token_embedding->forward(tokens) + position_embedding->forward(positions));
  for (const auto& module : *blocks) {
    x = module->as<TransformerBlockImpl>()->forward(x);
    if (block_outputs) block_outputs->push_back(x.detach());
  }
  x = final_norm->forward(x);
  return torch::matmul(x, token_embedding->weight.t());
}

torch::Tensor GptImpl::loss(const torch::Tensor& tokens, const torch::Tensor& targets) {
  auto logits = forward(tokens);
  return torch::nn::functional::cross_entropy(logits.view({-1, options_.vocab_size}),
                                              targets.reshape({-1}));
}

}  // namespace cmpi::models
