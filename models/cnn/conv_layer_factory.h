// ConvLayerFactory: where a CNN gets its convolutions, pools and BatchNorms.
// The models ask the factory instead of constructing LibTorch modules, so a
// spatial-parallel factory (tiles with halo exchange, BatchNorm statistics
// reduced over the sp group, a global pool that sums over tiles) can replace
// the plain single-rank one without touching the model code.
//
// Every module maps a tensor to a tensor: [N, C, H, W] -> [N, C', H', W'],
// except global_avg_pool, [N, C, H, W] -> [N, C].
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace cmpi::models {

struct Conv2dSpec {
  int64_t in_channels = 1, out_channels = 1;
  int64_t kernel = 3, stride = 1, padding = 0, dilation = 1;
  bool bias = false;  // BatchNorm follows every convolution of the ResNet
};

class ConvLayerFactory {
 public:
  virtual ~ConvLayerFactory() = default;
  virtual torch::nn::AnyModule conv2d(const Conv2dSpec& spec) const = 0;
  // Training mode normalises with the statistics of the batch it is given
  // (one micro-batch), as torch.nn.BatchNorm2d does.
  virtual torch::nn::AnyModule batch_norm(int64_t channels) const = 0;
  virtual torch::nn::AnyModule max_pool(int64_t kernel, int64_t stride, int64_t padding) const = 0;
  virtual torch::nn::AnyModule avg_pool(int64_t kernel, int64_t stride, int64_t padding) const = 0;
  virtual torch::nn::AnyModule global_avg_pool() const = 0;
};

// The whole image on one rank: plain LibTorch modules.
class LocalConvLayerFactory final : public ConvLayerFactory {
 public:
  torch::nn::AnyModule conv2d(const Conv2dSpec& spec) const override;
  torch::nn::AnyModule batch_norm(int64_t channels) const override;
  torch::nn::AnyModule max_pool(int64_t kernel, int64_t stride, int64_t padding) const override;
  torch::nn::AnyModule avg_pool(int64_t kernel, int64_t stride, int64_t padding) const override;
  torch::nn::AnyModule global_avg_pool() const override;
};

// Mean over the spatial dimensions: [N, C, H, W] -> [N, C].
class GlobalAvgPoolImpl : public torch::nn::Module {
 public:
  torch::Tensor forward(const torch::Tensor& x) { return x.mean({2, 3}); }
};
TORCH_MODULE(GlobalAvgPool);

}  // namespace cmpi::models
