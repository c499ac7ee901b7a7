// The three kinds of layer a pre-activation ResNet v2 is made of (see
// resnet_plan.h for the shapes): the stem convolution, the bottleneck block
// and the classifier head. Each builds its convolutions, BatchNorms and pools
// through a ConvLayerFactory, so spatial-parallel versions can be swapped in.
//
// Bottleneck (pre-activation): a = relu(bn1(x)) (or SiLU: spec.activation); the shortcut is x, or a
// 1x1 projection of a (stride s) where the shape changes; then
//   conv3(relu(bn3(conv2(relu(bn2(conv1(a))))))) + shortcut
// with conv1 1x1 (in -> mid), conv2 3x3 stride s (mid -> mid), conv3 1x1
// (mid -> out). No activation after the sum: the next block normalises.
#pragma once

#include <torch/torch.h>

#include "models/cnn/conv_layer_factory.h"
#include "models/cnn/resnet_plan.h"

namespace cmpi::models {

class ResnetStemImpl : public torch::nn::Module {
 public:
  ResnetStemImpl(const CnnLayerSpec& spec, const ConvLayerFactory& factory);
  torch::Tensor forward(const torch::Tensor& images);

 private:
  torch::nn::AnyModule conv_;
};
TORCH_MODULE(ResnetStem);

class PreActBottleneckImpl : public torch::nn::Module {
 public:
  PreActBottleneckImpl(const CnnLayerSpec& spec, const ConvLayerFactory& factory);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::AnyModule bn1_, conv1_, bn2_, conv2_, bn3_, conv3_;
  torch::nn::AnyModule projection_;  // empty when the shortcut is the identity
  Activation activation_;
};
TORCH_MODULE(PreActBottleneck);

// BatchNorm, ReLU, global average pool, linear: [N, C, H, W] -> logits [N, classes].
class ResnetHeadImpl : public torch::nn::Module {
 public:
  ResnetHeadImpl(const CnnLayerSpec& spec, const ConvLayerFactory& factory);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::AnyModule bn_, pool_;
  torch::nn::Linear classifier_{nullptr};
  Activation activation_;
};
TORCH_MODULE(ResnetHead);

}  // namespace cmpi::models
