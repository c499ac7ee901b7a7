#include "models/transformer_block.h"

#include <utility>

#include "models/recompute.h"
#include "parallel/low_precision_ops.h"
#include "parallel/tensor/sequence_parallel_ops.h"

namespace cmpi::models {

TransformerBlockImpl::TransformerBlockImpl(const GptOptions& options, comm::Communicator& tp,
                                           uint64_t buffer_key, uint64_t dropout_seed,
                                           torch::Tensor future_mask)
    : tp_(&tp),
      parallel_residual_(options.parallel_residual),
      sequence_parallel_(options.sequence_parallel),
      dropout_p_(options.dropout),
      activation_(options.activation) {
  const int64_t h = options.hidden;
  ln1 = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({h})));
  attention = register_module(
      "attention",
      CausalSelfAttention(options, tp, buffer_key, dropout_seed, std::move(future_mask)));
  ln2 = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({h})));
  parallel::ParallelLinearOptions in_options;
  in_options.in_features = h;
  in_options.out_features = options.mlp_ratio * h;
  in_options.buffer_key = buffer_key + 2;
  in_options.materialize = options.materialize_parameters;
  in_options.sequence_parallel = options.sequence_parallel;
  fc_in = register_module("fc_in", parallel::ColumnParallelLinear(in_options, tp));
  parallel::ParallelLinearOptions out_options;
  out_options.in_features = options.mlp_ratio * h;
  out_options.out_features = h;
  out_options.buffer_key = buffer_key + 3;
  out_options.materialize = options.materialize_parameters;
  out_options.sequence_parallel = options.sequence_parallel;
  out_options.sum_in_input_dtype = options.tp_sums_in_compute_dtype;
  fc_out = register_module("fc_out", parallel::RowParallelLinear(out_options, tp));
  dropout_ = register_module("dropout", torch::nn::Dropout(options.dropout));
}

void TransformerBlockImpl::describe(const std::string& prefix, const GptOptions& options,
                                    std::vector<ParamLayout>& out) const {
  using Init = ParamLayout::Init;
  out.push_back({prefix + "ln1.weight", ln1->weight, -1, Init::kOnes, 0, false});
  out.push_back({prefix + "ln1.bias", ln1->bias, -1, Init::kZeros, 0, false});
  attention->describe(prefix + "attention.", options, out);
  out.push_back({prefix + "ln2.weight", ln2->weight, -1, Init::kOnes, 0, false});
  out.push_back({prefix + "ln2.bias", ln2->bias, -1, Init::kZeros, 0, false});
  out.push_back(
      {prefix + "fc_in.weight", fc_in->weight, 0, Init::kNormal, options.input_init_std(), true});
  out.push_back({prefix + "fc_in.bias", fc_in->bias, 0, Init::kZeros, 0, false});
  out.push_back({prefix + "fc_out.weight", fc_out->weight, 1, Init::kNormal,
                 options.output_init_std(), true});
  out.push_back({prefix + "fc_out.bias", fc_out->bias, -1, Init::kZeros, 0, false});
}

torch::Tensor TransformerBlockImpl::mlp(const torch::Tensor& x) {
  const auto inner = fc_in->forward(x);
  const bool tanh = activation_ == MlpActivation::kGeluTanh;
  return fc_out->forward(parallel::gelu(inner, tanh ? "tanh" : "none"));
}

// LayerNorm and dropout in float32 under a 16-bit compute dtype (see
// parallel/low_precision_ops.h); the plain modules for float32 inputs.
// Under sequence parallelism the parameters enter through
// sum_gradient_over_tp (each rank normalises its own positions).
torch::Tensor TransformerBlockImpl::norm(torch::nn::LayerNorm& layer, const torch::Tensor& x) {
  if (sequence_parallel_) {
    const auto weight = parallel::sum_gradient_over_tp(layer->weight, *tp_);
    const auto bias = parallel::sum_gradient_over_tp(layer->bias, *tp_);
    return parallel::layer_norm(x, weight, bias, layer->options.eps());
  }
  if (!parallel::is_low_precision(x)) return layer->forward(x);
  return parallel::layer_norm(x, layer->weight, layer->bias, layer->options.eps());
}
torch::Tensor TransformerBlockImpl::dropout(const torch::Tensor& x) {
  if (sequence_parallel_)
    return dropout_drawn_from(x, is_training() ? dropout_p_ : 0.0, attention->dropout_generator());
  return parallel::in_float32(x, [this](const torch::Tensor& in) { return dropout_->forward(in); });
}

void TransformerBlockImpl::set_recompute(Recompute what) {
  recompute_whole_ = what == Recompute::kFull;
  attention->set_recompute_core(what == Recompute::kSelective);
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x) {
  if (!recompute_whole_ || !is_training()) return compute(x);
  return recompute_in_backward(
      [this](const torch::autograd::variable_list& in) -> torch::autograd::variable_list {
        return {compute(in[0])};
      },
      {x}, {attention->dropout_generator()})[0];
}

torch::Tensor TransformerBlockImpl::compute(const torch::Tensor& x) {
  if (parallel_residual_) return x + attention->forward(norm(ln1, x)) + dropout(mlp(norm(ln2, x)));
  auto h = x + attention->forward(norm(ln1, x));
  return h + dropout(mlp(norm(ln2, h)));
}

}  // namespace cmpi::models
