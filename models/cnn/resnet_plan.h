// The layer plan of a pre-activation ResNet v2 with bottleneck blocks (He et
// al., "Identity Mappings in Deep Residual Networks", 2016; CIFAR variant):
// plain numbers, torch-free, so the config loader can validate pipeline
// splits and the trainer can size the activations between stages.
//
// depth = 9n + 2: a 3x3 stem convolution (channels -> width), then three
// groups of n bottleneck blocks (1x1, 3x3, 1x1 convolutions: 3 per block)
// whose inner widths are width, 2·width, 4·width and outputs 4x that; the
// first block of groups 2 and 3 halves the image side (stride 2 in its 3x3
// convolution and its projection shortcut), then a head (BatchNorm, ReLU,
// global average pool, linear classifier). ResNet-110 of Hy-Fi is n = 12.
// The activation is ReLU, or SiLU (x * sigmoid(x)) where a smooth one is
// wanted: ReLU's derivative jumps at 0, so two runs whose pre-activations
// differ by rounding can route one element's gradient differently (the
// trajectory tests of parallel layouts use SiLU for that reason).
//
// The model is a sequence of 3n + 2 pipeline "layers": the stem, each block,
// the head. A pipeline stage holds consecutive layers.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cmpi::models {

enum class Activation { kRelu, kSilu };

// "relu" | "silu"; throws std::invalid_argument for anything else.
inline Activation parse_activation(const std::string& name) {
  if (name == "relu") return Activation::kRelu;
  if (name == "silu") return Activation::kSilu;
  throw std::invalid_argument("activation '" + name + "' is unknown (known: relu, silu)");
}

struct ResnetOptions {
  int64_t depth = 29;  // 9n + 2, n >= 1
  int64_t width = 16;  // inner width of the first group's blocks
  int64_t image_size = 16;
  int64_t channels = 3;
  int64_t classes = 10;
  uint64_t seed = 1234;  // initialisation: layer i draws from seed and i alone
  Activation activation = Activation::kRelu;
};

struct CnnLayerSpec {
  enum class Kind { kStem, kBottleneck, kHead };
  Kind kind = Kind::kStem;
  int64_t in_channels = 0, mid_channels = 0, out_channels = 0;
  int64_t stride = 1;
  int64_t in_size = 0, out_size = 0;  // image side before and after (head: out_size 1)
  Activation activation = Activation::kRelu;
};

// An empty string when the options describe a ResNet, else why not, naming
// the field (depth, width, ...) at fault.
inline std::string resnet_options_error(const ResnetOptions& o) {
  if (o.depth < 11 || (o.depth - 2) % 9 != 0)
    return "depth must be 9n + 2 with n >= 1 (11, 20, 29, ..., 110), got " +
           std::to_string(o.depth);
  if (o.width < 1) return "width must be >= 1, got " + std::to_string(o.width);
  if (o.image_size < 4) return "image_size must be >= 4, got " + std::to_string(o.image_size);
  if (o.channels < 1) return "channels must be >= 1, got " + std::to_string(o.channels);
  if (o.classes < 2) return "classes must be >= 2, got " + std::to_string(o.classes);
  return "";
}

// 3n + 2 for depth 9n + 2.
inline int64_t resnet_layer_count(int64_t depth) {
  return (depth - 2) / 9 * 3 + 2;
}

// The side a 3x3 (padding 1) or 1x1 (padding 0) convolution of `stride` leaves.
inline int64_t strided_size(int64_t size, int64_t stride) {
  return (size - 1) / stride + 1;
}

// Throws std::invalid_argument with resnet_options_error's text.
inline std::vector<CnnLayerSpec> resnet_layers(const ResnetOptions& o) {
  const std::string error = resnet_options_error(o);
  if (!error.empty()) throw std::invalid_argument("resnet: " + error);
  constexpr int64_t kExpansion = 4;
  std::vector<CnnLayerSpec> layers;
  CnnLayerSpec stem;
  stem.kind = CnnLayerSpec::Kind::kStem;
  stem.in_channels = o.channels;
  stem.out_channels = o.width;
  stem.in_size = stem.out_size = o.image_size;
  stem.activation = o.activation;
  layers.push_back(stem);
  const int64_t blocks = (o.depth - 2) / 9;
  int64_t channels = o.width, size = o.image_size;
  for (int64_t group = 0; group < 3; ++group)
    for (int64_t b = 0; b < blocks; ++b) {
      CnnLayerSpec block;
      block.kind = CnnLayerSpec::Kind::kBottleneck;
      block.in_channels = channels;
      block.mid_channels = o.width << group;
      block.out_channels = block.mid_channels * kExpansion;
      block.stride = group > 0 && b == 0 ? 2 : 1;
      block.in_size = size;
      block.out_size = strided_size(size, block.stride);
      block.activation = o.activation;
      layers.push_back(block);
      channels = block.out_channels;
      size = block.out_size;
    }
  CnnLayerSpec head;
  head.kind = CnnLayerSpec::Kind::kHead;
  head.in_channels = channels;
  head.out_channels = o.classes;
  head.in_size = size;
  head.out_size = 1;
  head.activation = o.activation;
  layers.push_back(head);
  return layers;
}

// Learnable parameters of the whole model (weights, BatchNorm scale and shift,
// classifier bias).
inline int64_t resnet_parameter_count(const ResnetOptions& o) {
  int64_t count = 0;
  for (const CnnLayerSpec& l : resnet_layers(o)) {
    switch (l.kind) {
      case CnnLayerSpec::Kind::kStem:
        count += l.out_channels * l.in_channels * 9;
        break;
      case CnnLayerSpec::Kind::kBottleneck:
        count += 2 * l.in_channels + l.in_channels * l.mid_channels;        // bn1, conv1
        count += 2 * l.mid_channels + l.mid_channels * l.mid_channels * 9;  // bn2, conv2
        count += 2 * l.mid_channels + l.mid_channels * l.out_channels;      // bn3, conv3
        if (l.stride != 1 || l.in_channels != l.out_channels)
          count += l.in_channels * l.out_channels;  // projection
        break;
      case CnnLayerSpec::Kind::kHead:
        count += 2 * l.in_channels + l.in_channels * l.out_channels + l.out_channels;
        break;
    }
  }
  return count;
}

}  // namespace cmpi::models
