// Spatial BatchNorm2d: the statistics are sums, so a tile computes its
// partial sums and sum_over_sp (an allreduce whose backward is an allreduce)
// completes them; everything else is plain differentiable tensor code, and
// autograd derives the backward, including its reductions over sp.
#include "parallel/spatial/spatial_batch_norm.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "parallel/spatial/sp_reductions.h"

namespace cmpi::parallel::spatial {

SpatialBatchNorm2dImpl::SpatialBatchNorm2dImpl(int64_t channels, comm::Communicator& sp, double eps,
                                               double momentum, uint64_t buffer_key)
    : sp_(sp), eps_(eps), momentum_(momentum), buffer_key_(buffer_key) {
  weight = register_parameter("weight", torch::ones({channels}));
  bias = register_parameter("bias", torch::zeros({channels}));
  running_mean = register_buffer("running_mean", torch::zeros({channels}));
  running_var = register_buffer("running_var", torch::ones({channels}));
}

torch::Tensor SpatialBatchNorm2dImpl::forward(const torch::Tensor& x) {
  const int64_t channels = weight.size(0);
  if (x.dim() != 4 || x.size(1) != channels)
    throw std::invalid_argument("spatial BatchNorm2d of " + std::to_string(channels) +
                                " channels: expects a tile [N, " + std::to_string(channels) +
                                ", H, W], got " + std::to_string(x.dim()) + " dims");
  if (!is_training())
    return torch::batch_norm(x, weight, bias, running_mean, running_var, false, momentum_, eps_,
                             false);
  const std::vector<int64_t> reduce_dims{0, 2, 3};
  const auto per_channel = [&](const torch::Tensor& t) { return t.view({1, channels, 1, 1}); };
  // [sum x per channel..., element count]: one reduction for both.
  const torch::Tensor local_count = torch::full({1}, double(x.numel() / channels), x.options());
  const torch::Tensor sums =
      sum_over_sp(torch::cat({x.sum(reduce_dims), local_count}), sp_, buffer_key_ * 2);
  const torch::Tensor count = sums.narrow(0, channels, 1).detach();
  const torch::Tensor mean = sums.narrow(0, 0, channels) / count;
  const torch::Tensor centred = x - per_channel(mean);
  const torch::Tensor var =
      sum_over_sp(centred.square().sum(reduce_dims), sp_, buffer_key_ * 2 + 1) / count;
  const torch::Tensor y = centred * per_channel(torch::rsqrt(var + eps_));
  {
    torch::NoGradGuard no_grad;
    const double n = count.item<double>();
    running_mean.mul_(1 - momentum_).add_(mean.detach(), momentum_);
    running_var.mul_(1 - momentum_).add_(var.detach() * (n / std::max(n - 1, 1.0)), momentum_);
  }
  return y * per_channel(weight) + per_channel(bias);
}

}  // namespace cmpi::parallel::spatial
