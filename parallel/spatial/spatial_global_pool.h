// Global average pooling over the tiles of the sp group: [N, C, h, w] tiles
// -> [N, C] means over the whole images, the same on every sp rank, for a
// classifier replicated over sp (ResNet's end). Each rank sums its tile and
// counts its pixels; reduce_from_sp (allreduce forward, identity backward)
// completes both. Backward: every rank holds the same, whole gradient of the
// means and spreads it over its own pixels, so the input gradient equals the
// single-rank one. The classifier after it gets whole, equal parameter
// gradients on every sp rank: leave its parameters out of
// allreduce_spatial_gradients.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "comm/communicator.h"

namespace cmpi::parallel::spatial {

class SpatialGlobalAvgPoolImpl : public torch::nn::Module {
 public:
  explicit SpatialGlobalAvgPoolImpl(comm::Communicator& sp, uint64_t buffer_key = 0)
      : sp_(sp), buffer_key_(buffer_key) {}
  torch::Tensor forward(const torch::Tensor& tile);

 private:
  comm::Communicator& sp_;
  uint64_t buffer_key_;
};
TORCH_MODULE(SpatialGlobalAvgPool);

}  // namespace cmpi::parallel::spatial
