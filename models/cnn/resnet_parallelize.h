// parallelize_resnet: builds this rank's part of a ResNet for the layout of
// `groups` and returns it as a TrainModel. The parallelisms are applied in
// this order, each needing what the one before made:
//   1. the layer plan (stem, bottleneck blocks, head) and, with sp > 1, which
//      pipeline stages run on tiles (parallel.spatial_stages) and how the
//      images are cut (parallel.spatial_slicing);
//   2. pipeline stage: which layers this rank's pp coordinate holds;
//   3. spatial tiling: a spatial stage's convolutions exchange halos over sp
//      (SpatialConvLayerFactory), and the last spatial stage gathers the
//      tiles; the stage's activation estimate follows from its tiles and the
//      schedule's micro-batches in flight;
//   4. the pipeline engine over pp (pp > 1), sending tiles where the stage
//      boundary is spatial;
//   5. equal replicas: dp rank 0's weights and BatchNorm statistics
//      broadcast over dp;
//   6. the data-parallel optimizer, with the gradient reduction held back
//      until backward ends when the sp sum or the bi-directional sum must
//      come first;
//   7. with parallel.bidirectional, replica B: the same steps 2-6 for stage
//      S-1-r over the reversed pp group (and its own copy of the sp group),
//      with its own optimizer, which applies the same reduced gradients.
// Throws std::invalid_argument for a layout it cannot run.
#pragma once

#include <memory>

#include "config/config.h"
#include "models/train_model.h"

namespace cmpi::parallel {
class ProcessGroups;
}

namespace cmpi::models {

std::unique_ptr<TrainModel> parallelize_resnet(const config::Config& config,
                                               parallel::ProcessGroups& groups);

}  // namespace cmpi::models
