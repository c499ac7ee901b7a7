// Global average pool: per-tile sums and pixel count in one buffer, one
// reduce_from_sp, then sums / count (see spatial_global_pool.h).
#include "parallel/spatial/spatial_global_pool.h"

#include <stdexcept>
#include <string>

#include "parallel/spatial/sp_reductions.h"

namespace cmpi::parallel::spatial {

torch::Tensor SpatialGlobalAvgPoolImpl::forward(const torch::Tensor& tile) {
  if (tile.dim() != 4)
    throw std::invalid_argument("spatial global average pool: sp rank " +
                                std::to_string(sp_.rank()) + " expects a tile [N, C, H, W], got " +
                                std::to_string(tile.dim()) + " dims");
  const int64_t batch = tile.size(0), channels = tile.size(1);
  const torch::Tensor pixels =
      torch::full({1}, double(tile.size(2) * tile.size(3)), tile.options());
  const torch::Tensor sums =
      reduce_from_sp(torch::cat({tile.sum({2, 3}).reshape({-1}), pixels}), sp_, buffer_key_);
  const torch::Tensor count = sums.narrow(0, batch * channels, 1).detach();
  return sums.narrow(0, 0, batch * channels).view({batch, channels}) / count;
}

}  // namespace cmpi::parallel::spatial
