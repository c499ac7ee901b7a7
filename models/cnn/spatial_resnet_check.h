// Whether spatial parallelism can cut a ResNet's layers into tiles
// (torch-free, for the config loader): walks every convolution window of the
// layers [first, end) of the plan over the tile grid of its input image and
// lets the tile geometry (parallel/spatial/tile_geometry.h) refuse what it
// cannot serve (square slicing on a non-square rank count, an image or
// layer output with fewer pixels than tiles, a tile smaller than the halo).
// The errors name the layer ("layer 2 (bottleneck) conv2") and the keys
// parallel.spatial, parallel.spatial_slicing and model.image_size.
#pragma once

#include <cstdint>
#include <vector>

#include "models/cnn/resnet_plan.h"
#include "parallel/spatial/tile_geometry.h"

namespace cmpi::models {

// Throws parallel::spatial::GeometryError.
void check_spatial_resnet_layers(const std::vector<CnnLayerSpec>& plan, int64_t first, int64_t end,
                                 int sp, parallel::spatial::Slicing slicing);

}  // namespace cmpi::models
