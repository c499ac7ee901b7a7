#include "models/transformer_block.h"

#include <cmath>

namespace cmpi::models {

TransformerBlockImpl::TransformerBlockImpl(const GptOptions& options, comm::Communicator& tp,
                                           uint64_t buffer_key, uint64_t dropout_seed) {
  const int64_t h = options.hidden;
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({h})));
  attention =
      register_module("attention", CausalSelfAttention(options, tp, buffer_key, dropout_seed));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({h})));
  parallel::ParallelLinearOptions in_options;
  in_options.in_features = h;
  in_options.out_features = options.mlp_ratio * h;
  in_options.buffer_key = buffer_key + 2;
  in_options.materialize = options.materialize_parameters;
  fc_in = register_module("fc_in", parallel::ColumnParallelLinear(in_options, tp));
  parallel::ParallelLinearOptions out_options;
  out_options.in_features = options.mlp_ratio * h;
  out_options.out_features = h;
  out_options.buffer_key = buffer_key + 3;
  out_options.materialize = options.materialize_parameters;
  fc_out = register_module("fc_out", parallel::RowParallelLinear(out_options, tp));
  dropout_ = register_module("dropout", torch::nn::Dropout(options.dropout));
}

void TransformerBlockImpl::describe(const std::string& prefix, const GptOptions& options,
                                    std::vector<ParamLayout>& out) const {
  using Init = ParamLayout::Init;
  const double residual_std = options.init_std / std::sqrt(2.0 * double(options.layers));
  out.push_back({prefix + "ln1.weight", ln1->weight, -1, Init::kOnes, 0, false});
  out.push_back({prefix + "ln1.bias", ln1->bias, -1, Init::kZeros, 0, false});
  attention->describe(prefix + "attention.", options, out);
  out.push_back({prefix + "ln2.weight", ln2->weight, -1, Init::kOnes, 0, false});
  out.push_back({prefix + "ln2.bias", ln2->bias, -1, Init::kZeros, 0, false});
  out.push_back({prefix + "fc_in.weight", fc_in->weight, 0, Init::kNormal, options.init_std, true});
  out.push_back({prefix + "fc_in.bias", fc_in->bias, 0, Init::kZeros, 0, false});
  out.push_back({prefix + "fc_out.weight", fc_out->weight, 1, Init::kNormal, residual_std, true});
  out.push_back({prefix + "fc_out.bias", fc_out->bias, -1, Init::kZeros, 0, false});
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x) {
  auto h = x + attention->forward(ln1->forward(x));
  auto m = fc_out->forward(torch::gelu(fc_in->forward(ln2->forward(h))));
  return h + dropout_->forward(m);
}

}  // namespace cmpi::models
