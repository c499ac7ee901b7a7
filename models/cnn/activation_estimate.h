// What one micro-batch of a CNN stage keeps for backward, estimated from the
// layer plan (torch-free): the tensors autograd saves in each layer, per
// image. A pre-activation bottleneck saves its input and relu(bn1) (C_in
// pixels each), conv1's output and relu(bn2) (mid channels at the input side),
// conv2's output and relu(bn3) (mid channels at the output side); the stem
// saves the images, the head its input and relu(bn). A layer's output is
// counted as the next layer's input. `pixels(side)` is how many pixels of a
// side x side image this rank holds (side² whole, a tile's h·w under spatial
// parallelism). Halo-extended inputs of spatial convolutions and the
// gathered image at a spatial-to-layer boundary are not counted.
//
// With recomputation the stage's first `recomputed_blocks` bottlenecks keep
// only their input, and backward rebuilds one of them at a time: the largest
// such block's other tensors are counted once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "models/cnn/resnet_plan.h"

namespace cmpi::models {

inline int64_t saved_activation_elements(const std::vector<CnnLayerSpec>& plan, int64_t first,
                                         int64_t end, const std::function<int64_t(int64_t)>& pixels,
                                         int64_t recomputed_blocks = 0) {
  int64_t elements = 0, rebuilt = 0, recomputed = 0;
  for (int64_t i = first; i < end; ++i) {
    const CnnLayerSpec& l = plan[size_t(i)];
    switch (l.kind) {
      case CnnLayerSpec::Kind::kStem:
        elements += l.in_channels * pixels(l.in_size);
        break;
      case CnnLayerSpec::Kind::kBottleneck: {
        const int64_t input = l.in_channels * pixels(l.in_size);
        const int64_t inner = l.in_channels * pixels(l.in_size) +
                              2 * l.mid_channels * pixels(l.in_size) +
                              2 * l.mid_channels * pixels(l.out_size);
        if (recomputed++ < recomputed_blocks) {
          elements += input;
          rebuilt = std::max(rebuilt, inner);
        } else {
          elements += input + inner;
        }
        break;
      }
      case CnnLayerSpec::Kind::kHead:
        elements += 2 * l.in_channels * pixels(l.in_size);
        break;
    }
  }
  return elements + rebuilt;
}

}  // namespace cmpi::models
