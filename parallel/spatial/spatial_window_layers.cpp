// Window layers = halo exchange (halo_exchange_op.h) + the plain LibTorch op
// with no padding of its own: the exchanged local input already holds the
// padding at the true image border, so the op yields exactly this rank's
// output tile. Autograd then does the rest: the op's backward gives the
// gradient of the local input, the halo exchange's backward returns the halo
// part of it to the ranks that own those pixels.
#include "parallel/spatial/spatial_window_layers.h"

#include <cmath>
#include <limits>
#include <vector>

#include "parallel/spatial/halo_exchange_op.h"

namespace cmpi::parallel::spatial {
namespace {

void require_no_dilation(const Window& window, const std::string& name) {
  if (window.dilation != 1)
    throw GeometryError("layer " + name + ": average pooling has no dilation (" +
                        window.describe() + ")");
}

}  // namespace

SpatialConv2dImpl::SpatialConv2dImpl(int64_t in_channels, int64_t out_channels,
                                     const Window& window, bool with_bias, const TileGrid& input,
                                     comm::Communicator& sp, const std::string& name,
                                     uint64_t buffer_key)
    : plan_(input, window, name), sp_(sp), buffer_key_(buffer_key) {
  require_group_matches(input, sp, name);
  init_parameters(in_channels, out_channels, with_bias);
}

SpatialConv2dImpl::SpatialConv2dImpl(int64_t in_channels, int64_t out_channels,
                                     const Window& window, bool with_bias, Slicing slicing,
                                     comm::Communicator& sp, const std::string& name,
                                     uint64_t buffer_key)
    : plan_(slicing, window, name), sp_(sp), buffer_key_(buffer_key) {
  grid_shape(slicing, sp.size());  // a square slicing on a non-square group fails now
  init_parameters(in_channels, out_channels, with_bias);
}

void SpatialConv2dImpl::init_parameters(int64_t in_channels, int64_t out_channels, bool with_bias) {
  const int64_t k = plan_.window().kernel;
  weight = register_parameter("weight", torch::empty({out_channels, in_channels, k, k}));
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (with_bias) {
    const double bound = 1.0 / std::sqrt(double(in_channels * k * k));
    bias = register_parameter("bias", torch::empty({out_channels}).uniform_(-bound, bound));
  }
}

torch::Tensor SpatialConv2dImpl::forward(const torch::Tensor& tile) {
  const WindowPlan& plan = plan_.for_tile(tile, sp_);
  const Window& w = plan.window();
  const torch::Tensor local = halo_exchange(tile, plan, sp_, 0.0, buffer_key_);
  const std::vector<int64_t> stride{w.stride, w.stride}, no_padding{0, 0},
      dilation{w.dilation, w.dilation};
  return torch::conv2d(local, weight, bias, stride, no_padding, dilation);
}

template <PoolKind kKind>
SpatialPool2dImpl<kKind>::SpatialPool2dImpl(const Window& window, const TileGrid& input,
                                            comm::Communicator& sp, const std::string& name,
                                            uint64_t buffer_key)
    : plan_(input, window, name), sp_(sp), buffer_key_(buffer_key) {
  if (kKind == PoolKind::kAverage) require_no_dilation(window, name);
  require_group_matches(input, sp, name);
}

template <PoolKind kKind>
SpatialPool2dImpl<kKind>::SpatialPool2dImpl(const Window& window, Slicing slicing,
                                            comm::Communicator& sp, const std::string& name,
                                            uint64_t buffer_key)
    : plan_(slicing, window, name), sp_(sp), buffer_key_(buffer_key) {
  if (kKind == PoolKind::kAverage) require_no_dilation(window, name);
  grid_shape(slicing, sp.size());
}

template <PoolKind kKind>
torch::Tensor SpatialPool2dImpl<kKind>::forward(const torch::Tensor& tile) {
  const WindowPlan& plan = plan_.for_tile(tile, sp_);
  const Window& w = plan.window();
  // The halo pads with what cannot win a max, or with the zeros an average
  // over a padded window counts.
  const double pad = kKind == PoolKind::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
  const torch::Tensor local = halo_exchange(tile, plan, sp_, pad, buffer_key_);
  if (kKind == PoolKind::kMax)
    return torch::max_pool2d(local, {w.kernel, w.kernel}, {w.stride, w.stride}, {0, 0},
                             {w.dilation, w.dilation});
  return torch::avg_pool2d(local, {w.kernel, w.kernel}, {w.stride, w.stride}, {0, 0});
}

template class SpatialPool2dImpl<PoolKind::kMax>;
template class SpatialPool2dImpl<PoolKind::kAverage>;

}  // namespace cmpi::parallel::spatial
