#include "models/cnn/conv_layer_factory.h"

namespace cmpi::models {

torch::nn::AnyModule LocalConvLayerFactory::conv2d(const Conv2dSpec& s) const {
  return torch::nn::AnyModule(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(s.in_channels, s.out_channels, s.kernel)
                            .stride(s.stride)
                            .padding(s.padding)
                            .dilation(s.dilation)
                            .bias(s.bias)));
}

torch::nn::AnyModule LocalConvLayerFactory::batch_norm(int64_t channels) const {
  return torch::nn::AnyModule(torch::nn::BatchNorm2d(channels));
}

torch::nn::AnyModule LocalConvLayerFactory::max_pool(int64_t kernel, int64_t stride,
                                                     int64_t padding) const {
  return torch::nn::AnyModule(
      torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(kernel).stride(stride).padding(padding)));
}

torch::nn::AnyModule LocalConvLayerFactory::avg_pool(int64_t kernel, int64_t stride,
                                                     int64_t padding) const {
  return torch::nn::AnyModule(
      torch::nn::AvgPool2d(torch::nn::AvgPool2dOptions(kernel).stride(stride).padding(padding)));
}

torch::nn::AnyModule LocalConvLayerFactory::global_avg_pool() const {
  return torch::nn::AnyModule(GlobalAvgPool());
}

}  // namespace cmpi::models
