// BatchNorm2d over the tiles of the sp group: in train mode the per-channel
// batch statistics are those of the whole images, so the output (and, by
// autograd through sum_over_sp, the input and parameter gradients) equal
// single-rank BatchNorm2d's. In eval mode it normalises with the running
// statistics and communicates nothing.
//
// Statistics, per channel c over (N, H, W) of the whole image:
//   mean = sum_sp(sum x, count) -> sum / count
//   var  = sum_sp(sum (x - mean)^2) / count        (biased, for normalising)
// Two reductions instead of one of (sum, sum of squares): the centred second
// pass avoids the cancellation of E[x^2] - mean^2. Their backward runs the
// same two reductions over the gradients (the mean and variance terms of
// BatchNorm's backward). Running statistics as torch: momentum-weighted,
// unbiased variance (count / (count - 1)).
//
// weight (gamma) and bias (beta) are replicated: .grad after backward is
// this tile's contribution; sum it over sp with allreduce_spatial_gradients.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "comm/communicator.h"

namespace cmpi::parallel::spatial {

class SpatialBatchNorm2dImpl : public torch::nn::Module {
 public:
  SpatialBatchNorm2dImpl(int64_t channels, comm::Communicator& sp, double eps = 1e-5,
                         double momentum = 0.1, uint64_t buffer_key = 0);
  torch::Tensor forward(const torch::Tensor& tile);

  torch::Tensor weight, bias, running_mean, running_var;

 private:
  comm::Communicator& sp_;
  double eps_, momentum_;
  uint64_t buffer_key_;
};
TORCH_MODULE(SpatialBatchNorm2d);

}  // namespace cmpi::parallel::spatial
