#include "models/cnn/resnet_blocks.h"

namespace cmpi::models {

ResnetStemImpl::ResnetStemImpl(const CnnLayerSpec& spec, const ConvLayerFactory& factory) {
  conv_ = factory.conv2d({spec.in_channels, spec.out_channels, 3, 1, 1, 1, false});
  register_module("conv", conv_.ptr());
}

torch::Tensor ResnetStemImpl::forward(const torch::Tensor& images) {
  return conv_.forward(images);
}

PreActBottleneckImpl::PreActBottleneckImpl(const CnnLayerSpec& spec,
                                           const ConvLayerFactory& factory) {
  bn1_ = factory.batch_norm(spec.in_channels);
  conv1_ = factory.conv2d({spec.in_channels, spec.mid_channels, 1, 1, 0, 1, false});
  bn2_ = factory.batch_norm(spec.mid_channels);
  conv2_ = factory.conv2d({spec.mid_channels, spec.mid_channels, 3, spec.stride, 1, 1, false});
  bn3_ = factory.batch_norm(spec.mid_channels);
  conv3_ = factory.conv2d({spec.mid_channels, spec.out_channels, 1, 1, 0, 1, false});
  register_module("bn1", bn1_.ptr());
  register_module("conv1", conv1_.ptr());
  register_module("bn2", bn2_.ptr());
  register_module("conv2", conv2_.ptr());
  register_module("bn3", bn3_.ptr());
  register_module("conv3", conv3_.ptr());
  if (spec.stride != 1 || spec.in_channels != spec.out_channels) {
    projection_ =
        factory.conv2d({spec.in_channels, spec.out_channels, 1, spec.stride, 0, 1, false});
    register_module("projection", projection_.ptr());
  }
}

torch::Tensor PreActBottleneckImpl::forward(const torch::Tensor& x) {
  auto a = torch::relu(bn1_.forward(x));
  auto shortcut = projection_.is_empty() ? x : projection_.forward(a);
  auto out = conv1_.forward(a);
  out = conv2_.forward(torch::relu(bn2_.forward(out)));
  out = conv3_.forward(torch::relu(bn3_.forward(out)));
  return out + shortcut;
}

ResnetHeadImpl::ResnetHeadImpl(const CnnLayerSpec& spec, const ConvLayerFactory& factory) {
  bn_ = factory.batch_norm(spec.in_channels);
  pool_ = factory.global_avg_pool();
  classifier_ = torch::nn::Linear(spec.in_channels, spec.out_channels);
  register_module("bn", bn_.ptr());
  register_module("pool", pool_.ptr());
  register_module("classifier", classifier_);
}

torch::Tensor ResnetHeadImpl::forward(const torch::Tensor& x) {
  return classifier_->forward(pool_.forward(torch::relu(bn_.forward(x))));
}

}  // namespace cmpi::models
