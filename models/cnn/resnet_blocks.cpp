#include "models/cnn/resnet_blocks.h"

namespace cmpi::models {
namespace {

torch::Tensor activate(const torch::Tensor& x, Activation activation) {
  return activation == Activation::kSilu ? torch::silu(x) : torch::relu(x);
}

}  // namespace

ResnetStemImpl::ResnetStemImpl(const CnnLayerSpec& spec, const ConvLayerFactory& factory) {
  conv_ = factory.conv2d({spec.in_channels, spec.out_channels, 3, 1, 1, 1, false});
  register_module("conv", conv_.ptr());
}

torch::Tensor ResnetStemImpl::forward(const torch::Tensor& images) {
  return conv_.forward(images);
}

PreActBottleneckImpl::PreActBottleneckImpl(const CnnLayerSpec& spec,
                                           const ConvLayerFactory& factory)
    : activation_(spec.activation) {
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
  auto a = activate(bn1_.forward(x), activation_);
  auto shortcut = projection_.is_empty() ? x : projection_.forward(a);
  auto out = conv1_.forward(a);
  out = conv2_.forward(activate(bn2_.forward(out), activation_));
  out = conv3_.forward(activate(bn3_.forward(out), activation_));
  return out + shortcut;
}

ResnetHeadImpl::ResnetHeadImpl(const CnnLayerSpec& spec, const ConvLayerFactory& factory)
    : activation_(spec.activation) {
  bn_ = factory.batch_norm(spec.in_channels);
  pool_ = factory.global_avg_pool();
  classifier_ = torch::nn::Linear(spec.in_channels, spec.out_channels);
  register_module("bn", bn_.ptr());
  register_module("pool", pool_.ptr());
  register_module("classifier", classifier_);
}

torch::Tensor ResnetHeadImpl::forward(const torch::Tensor& x) {
  return classifier_->forward(pool_.forward(activate(bn_.forward(x), activation_)));
}

}  // namespace cmpi::models
