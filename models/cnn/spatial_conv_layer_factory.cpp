#include "models/cnn/spatial_conv_layer_factory.h"

#include <string>

#include "parallel/spatial/spatial_batch_norm.h"
#include "parallel/spatial/spatial_global_pool.h"
#include "parallel/spatial/spatial_window_layers.h"

namespace cmpi::models {
namespace {

namespace sp = parallel::spatial;

sp::Window window_of(int64_t kernel, int64_t stride, int64_t padding, int64_t dilation = 1) {
  sp::Window w;
  w.kernel = kernel;
  w.stride = stride;
  w.padding = padding;
  w.dilation = dilation;
  return w;
}

}  // namespace

SpatialConvLayerFactory::SpatialConvLayerFactory(comm::Communicator& sp,
                                                 parallel::spatial::Slicing slicing)
    : sp_(sp), slicing_(slicing) {}

std::string SpatialConvLayerFactory::name(const char* kind) const {
  return std::string("spatial ") + kind + " " + std::to_string(next_key_);
}

torch::nn::AnyModule SpatialConvLayerFactory::conv2d(const Conv2dSpec& s) const {
  const auto w = window_of(s.kernel, s.stride, s.padding, s.dilation);
  const std::string layer = name("conv") + " (" + w.describe() + ")";
  return torch::nn::AnyModule(sp::SpatialConv2d(s.in_channels, s.out_channels, w, s.bias, slicing_,
                                                sp_, layer, next_key()));
}

torch::nn::AnyModule SpatialConvLayerFactory::batch_norm(int64_t channels) const {
  return torch::nn::AnyModule(sp::SpatialBatchNorm2d(channels, sp_, 1e-5, 0.1, next_key()));
}

torch::nn::AnyModule SpatialConvLayerFactory::max_pool(int64_t kernel, int64_t stride,
                                                       int64_t padding) const {
  const auto w = window_of(kernel, stride, padding);
  const std::string layer = name("max pool") + " (" + w.describe() + ")";
  return torch::nn::AnyModule(sp::SpatialMaxPool2d(w, slicing_, sp_, layer, next_key()));
}

torch::nn::AnyModule SpatialConvLayerFactory::avg_pool(int64_t kernel, int64_t stride,
                                                       int64_t padding) const {
  const auto w = window_of(kernel, stride, padding);
  const std::string layer = name("avg pool") + " (" + w.describe() + ")";
  return torch::nn::AnyModule(sp::SpatialAvgPool2d(w, slicing_, sp_, layer, next_key()));
}

torch::nn::AnyModule SpatialConvLayerFactory::global_avg_pool() const {
  return torch::nn::AnyModule(sp::SpatialGlobalAvgPool(sp_, next_key()));
}

}  // namespace cmpi::models
