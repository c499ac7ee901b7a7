#include "models/norm.h"

#include "parallel/low_precision_ops.h"
#include "parallel/tensor/sequence_parallel_ops.h"

namespace cmpi::models {

NormImpl::NormImpl(const GptOptions& options, int64_t features)
    : kind_(options.norm), eps_(options.norm_eps) {
  weight = register_parameter("weight", torch::ones({features}));
  if (kind_ == NormKind::kLayerNorm && options.bias)
    bias = register_parameter("bias", torch::zeros({features}));
}

torch::Tensor NormImpl::forward(const torch::Tensor& x, comm::Communicator* sequence_tp) {
  auto w = sequence_tp ? parallel::sum_gradient_over_tp(weight, *sequence_tp) : weight;
  auto b =
      bias.defined() && sequence_tp ? parallel::sum_gradient_over_tp(bias, *sequence_tp) : bias;
  if (kind_ == NormKind::kLayerNorm) return parallel::layer_norm(x, w, b, eps_);
  const double eps = eps_;
  return parallel::in_float32(x, [&w, eps](const torch::Tensor& in) {
    return in * torch::rsqrt(in.pow(2).mean(-1, /*keepdim=*/true) + eps) * w;
  });
}

}  // namespace cmpi::models
