#include "models/attention.h"

#include "parallel/low_precision_ops.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace cmpi::models {

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const GptOptions& options, comm::Communicator& tp,
                                                 uint64_t buffer_key, uint64_t dropout_seed)
    : local_heads_(parallel::tp_split(options.heads, tp, "model.heads")),
      head_dim_(options.head_dim()),
      attn_dropout_(options.dropout),
      attn_dropout_generator_(at::make_generator<at::CPUGeneratorImpl>(dropout_seed)) {
  if (!(options.dropout >= 0.0 && options.dropout < 1.0))
    throw std::invalid_argument("model.dropout must lie in [0, 1), got " +
                                std::to_string(options.dropout));
  parallel::ParallelLinearOptions qkv_options;
  qkv_options.in_features = options.hidden;
  qkv_options.out_features = 3 * options.hidden;
  qkv_options.buffer_key = buffer_key;
  qkv_options.materialize = options.materialize_parameters;
  qkv = register_module("qkv", parallel::ColumnParallelLinear(qkv_options, tp));
  parallel::ParallelLinearOptions out_options;
  out_options.in_features = options.hidden;
  out_options.out_features = options.hidden;
  out_options.buffer_key = buffer_key + 1;
  out_options.materialize = options.materialize_parameters;
  out = register_module("out", parallel::RowParallelLinear(out_options, tp));
  resid_dropout_ = register_module("resid_dropout", torch::nn::Dropout(options.dropout));
  if (options.position == PositionEncoding::kRotary)
    rotary_.emplace(head_dim_, options.rotary_dims(), options.rotary_base, options.seq_len);
}

void CausalSelfAttentionImpl::describe(const std::string& prefix, const GptOptions& options,
                                       std::vector<ParamLayout>& out_layouts) const {
  using Init = ParamLayout::Init;
  out_layouts.push_back(
      {prefix + "qkv.weight", qkv->weight, 0, Init::kNormal, options.input_init_std(), true});
  out_layouts.push_back({prefix + "qkv.bias", qkv->bias, 0, Init::kZeros, 0, false});
  out_layouts.push_back(
      {prefix + "out.weight", out->weight, 1, Init::kNormal, options.output_init_std(), true});
  out_layouts.push_back({prefix + "out.bias", out->bias, -1, Init::kZeros, 0, false});
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t batch = x.size(0), time = x.size(1);
  // [B, T, heads, (q k v), head_dim] for this rank's heads.
  const auto fused = qkv->forward(x).view({batch, time, local_heads_, 3, head_dim_});
  auto heads_first = [&](int64_t which) { return fused.select(3, which).transpose(1, 2); };
  auto q = heads_first(0), k = heads_first(1);  // [B, nh, T, hd]
  const auto v = heads_first(2);
  if (rotary_) {
    const auto rotate = [this](const torch::Tensor& in) { return rotary_->apply(in); };
    q = parallel::in_float32(q, rotate);
    k = parallel::in_float32(k, rotate);
  }
  // Scores in the compute dtype; scaling, mask and softmax in float32 (a
  // 16-bit compute dtype: its fused softmax's precision), the weights in the
  // compute dtype for the product with v.
  auto weights = parallel::scaled_causal_softmax(parallel::mixed_matmul(q, k.transpose(-2, -1)),
                                                 std::sqrt(double(head_dim_)));
  if (is_training() && attn_dropout_ > 0) {
    weights = parallel::in_float32(weights, [this](const torch::Tensor& in) {
      auto keep = torch::empty_like(in).bernoulli_(1.0 - attn_dropout_, attn_dropout_generator_);
      return in * keep / (1.0 - attn_dropout_);
    });
  }
  auto y = parallel::mixed_matmul(weights, v)
               .transpose(1, 2)
               .reshape({batch, time, local_heads_ * head_dim_});
  return parallel::in_float32(
      out->forward(y), [this](const torch::Tensor& in) { return resid_dropout_->forward(in); });
}

}  // namespace cmpi::models
