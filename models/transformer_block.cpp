#include "models/transformer_block.h"

#include <utility>

#include "models/recompute.h"
#include "parallel/low_precision_ops.h"
#include "parallel/tensor/sequence_parallel_ops.h"

namespace cmpi::models {
namespace {

// The gated MLP's gate layer takes its error-feedback key here: the block's
// four keys (buffer_key .. + 3) are spaced four apart by layer, and changing
// that would change the keys of existing checkpoints' residuals.
constexpr uint64_t kGateKeyOffset = uint64_t(1) << 24;

}  // namespace

TransformerBlockImpl::TransformerBlockImpl(const GptOptions& options, comm::Communicator& tp,
                                           uint64_t buffer_key, uint64_t dropout_seed,
                                           torch::Tensor future_mask,
                                           parallel::ContextGroup context,
                                           std::optional<uint64_t> stream_dropout_seed)
    : tp_(&tp),
      parallel_residual_(options.parallel_residual),
      sequence_parallel_(options.sequence_parallel),
      per_rank_dropout_(options.sequence_parallel || context.active()),
      dropout_p_(options.dropout),
      activation_(options.activation) {
  const int64_t h = options.hidden;
  ln1 = register_module("ln1", Norm(options, h));
  attention = register_module(
      "attention", CausalSelfAttention(options, tp, buffer_key, dropout_seed,
                                       std::move(future_mask), context, stream_dropout_seed));
  ln2 = register_module("ln2", Norm(options, h));
  parallel::ParallelLinearOptions in_options;
  in_options.in_features = h;
  in_options.out_features = options.mlp_width();
  in_options.bias = options.bias;
  in_options.buffer_key = buffer_key + 2;
  in_options.materialize = options.materialize_parameters;
  in_options.sequence_parallel = options.sequence_parallel;
  if (options.gated_mlp()) {
    auto gate_options = in_options;
    gate_options.buffer_key = buffer_key + kGateKeyOffset;
    fc_gate = register_module("fc_gate", parallel::ColumnParallelLinear(gate_options, tp));
  }
  fc_in = register_module("fc_in", parallel::ColumnParallelLinear(in_options, tp));
  parallel::ParallelLinearOptions out_options;
  out_options.in_features = options.mlp_width();
  out_options.out_features = h;
  out_options.bias = options.bias;
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
  // Absent parameters (no bias; RMSNorm's bias) are not listed.
  const auto add = [&out](ParamLayout layout) {
    if (layout.tensor.defined()) out.push_back(std::move(layout));
  };
  add({prefix + "ln1.weight", ln1->weight, -1, Init::kOnes, 0, false});
  add({prefix + "ln1.bias", ln1->bias, -1, Init::kZeros, 0, false});
  attention->describe(prefix + "attention.", options, out);
  add({prefix + "ln2.weight", ln2->weight, -1, Init::kOnes, 0, false});
  add({prefix + "ln2.bias", ln2->bias, -1, Init::kZeros, 0, false});
  if (fc_gate) {
    add({prefix + "fc_gate.weight", fc_gate->weight, 0, Init::kNormal, options.input_init_std(),
         true});
    add({prefix + "fc_gate.bias", fc_gate->bias, 0, Init::kZeros, 0, false});
  }
  add({prefix + "fc_in.weight", fc_in->weight, 0, Init::kNormal, options.input_init_std(), true});
  add({prefix + "fc_in.bias", fc_in->bias, 0, Init::kZeros, 0, false});
  add({prefix + "fc_out.weight", fc_out->weight, 1, Init::kNormal, options.output_init_std(),
       true});
  add({prefix + "fc_out.bias", fc_out->bias, -1, Init::kZeros, 0, false});
}

torch::Tensor TransformerBlockImpl::mlp(const torch::Tensor& x) {
  if (fc_gate) {
    // The up and gate projections read the same input: it enters the tp
    // region once for both (under SP one all-gather, not two).
    const auto [inner, gate_input] = fc_in->forward_with(*fc_gate, x);
    const auto gate =
        parallel::in_float32(gate_input, [](const torch::Tensor& in) { return torch::silu(in); });
    return fc_out->forward(gate * inner);
  }
  const auto inner = fc_in->forward(x);
  const bool tanh = activation_ == MlpActivation::kGeluTanh;
  return fc_out->forward(parallel::gelu(inner, tanh ? "tanh" : "none"));
}

// The norms compute in float32 under a 16-bit compute dtype (models/norm.h);
// under sequence parallelism their parameters' gradients are summed over tp.
torch::Tensor TransformerBlockImpl::norm(Norm& layer, const torch::Tensor& x) {
  return layer->forward(x, sequence_parallel_ ? tp_ : nullptr);
}
torch::Tensor TransformerBlockImpl::dropout(const torch::Tensor& x) {
  if (per_rank_dropout_)
    return dropout_drawn_from(x, is_training() ? dropout_p_ : 0.0,
                              attention->stream_dropout_generator());
  return parallel::in_float32(x, [this](const torch::Tensor& in) { return dropout_->forward(in); });
}

void TransformerBlockImpl::set_recompute(Recompute what) {
  recompute_whole_ = what == Recompute::kFull;
  attention->set_recompute_core(what == Recompute::kSelective);
}

std::vector<at::Generator> TransformerBlockImpl::recomputed_generators() {
  std::vector<at::Generator> out = {attention->dropout_generator()};
  if (attention->has_stream_dropout_generator())
    out.push_back(attention->stream_dropout_generator());
  return out;
}

torch::Tensor TransformerBlockImpl::forward(const torch::Tensor& x) {
  if (!recompute_whole_ || !is_training()) return compute(x);
  return recompute_in_backward(
      [this](const torch::autograd::variable_list& in) -> torch::autograd::variable_list {
        return {compute(in[0])};
      },
      {x}, recomputed_generators())[0];
}

torch::Tensor TransformerBlockImpl::forward_cached(const torch::Tensor& x, KvCache& cache,
                                                   int64_t layer) {
  return compute(
      x, [&](const torch::Tensor& in) { return attention->forward_cached(in, cache, layer); });
}

torch::Tensor TransformerBlockImpl::compute(const torch::Tensor& x) {
  return compute(x, [this](const torch::Tensor& in) { return attention->forward(in); });
}

torch::Tensor TransformerBlockImpl::compute(
    const torch::Tensor& x, const std::function<torch::Tensor(const torch::Tensor&)>& attend) {
  if (parallel_residual_) return x + attend(norm(ln1, x)) + dropout(mlp(norm(ln2, x)));
  auto h = x + attend(norm(ln1, x));
  return h + dropout(mlp(norm(ln2, h)));
}

}  // namespace cmpi::models
