#include "models/attention.h"

#include <cmath>

namespace cmpi::models {

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const GptOptions& options)
    : heads_(options.heads), head_dim_(options.head_dim()) {
  qkv = register_module("qkv", torch::nn::Linear(options.hidden, 3 * options.hidden));
  out = register_module("out", torch::nn::Linear(options.hidden, options.hidden));
  attn_dropout_ = register_module("attn_dropout", torch::nn::Dropout(options.dropout));
  resid_dropout_ = register_module("resid_dropout", torch::nn::Dropout(options.dropout));
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t batch = x.size(0), time = x.size(1), hidden = x.size(2);
  auto parts = qkv->forward(x).split(hidden, /*dim=*/2);
  auto heads_first = [&](const torch::Tensor& t) {
    return t.view({batch, time, heads_, head_dim_}).transpose(1, 2);  // [B, nh, T, hd]
  };
  auto q = heads_first(parts[0]);
  auto k = heads_first(parts[1]);
  auto v = heads_first(parts[2]);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(head_dim_));
  auto future = torch::ones({time, time}, torch::dtype(torch::kBool)).triu(1);
  scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  auto weights = attn_dropout_->forward(torch::softmax(scores, -1));
  auto y = torch::matmul(weights, v).transpose(1, 2).contiguous().view({batch, time, hidden});
  return resid_dropout_->forward(out->forward(y));
}

}  // namespace cmpi::models
