#include "models/transformer_block.h"

namespace cmpi::models {

TransformerBlockImpl::TransformerBlockImpl(const GptOptions& options) {
  const int64_t h = options.hidden;
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({h})));
  attention = register_module("attention", CausalSelfAttention(options));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({h})));
  fc_in = register_module("fc_in", torch::nn::Linear(h, options.mlp_ratio * h));
  fc_out = register_module("fc_out", torch::nn::Linear(options.mlp_ratio * h, h));
  dropout_ = register_module("dropout", torch::nn::Dropout(options.dropout));
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x) {
  auto h = x + attention->forward(ln1->forward(x));
  auto m = fc_out->forward(torch::gelu(fc_in->forward(ln2->forward(h))));
  return h + dropout_->forward(m);
}

}  // namespace cmpi::models
