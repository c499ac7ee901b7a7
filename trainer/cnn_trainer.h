// CnnTrainer: the training loop of one rank for model.kind resnet, an image
// classifier on synthetic images (data/synthetic_images.h). Per step, for
// each of its micro-batches: forward, cross-entropy scaled by
// 1/(micro-batches x dp), backward; then the data-parallel optimizer (dp
// gradient buckets, ZeRO, clipping, AdamW) as for the GPT. With pp > 1 the
// model's layers (stem, blocks, head) are cut into stages and the pipeline
// engine runs the schedule, sending [micro_batch, C, H, W] activations.
//
// BatchNorm normalises with each micro-batch's own statistics (PyTorch's
// default), so a layout reproduces the single-rank run that uses the same
// micro-batch size. The running statistics (used by evaluation only) are
// averaged over dp after every step so the replicas agree.
//
// With sp > 1 the first parallel.spatial_stages stages run on tiles of the
// images (SpatialConvLayerFactory); the last of them gathers the tiles and
// the stages after it are replicated over sp. The spatial layers' gradients
// are summed over sp before the optimizer (docs/cnn.md).
//
// The header is torch-free; Trainer dispatches here on model.kind.
#pragma once

#include <memory>

#include "trainer/config.h"
#include "trainer/trainer.h"

namespace cmpi::trainer {

class CnnTrainer {
 public:
  // Throws std::invalid_argument for a model.kind other than resnet, a
  // global batch that does not split over dp, or a layout it cannot run.
  CnnTrainer(const Config& config, parallel::ProcessGroups& groups, TrainerOptions options);
  ~CnnTrainer();
  CnnTrainer(const CnnTrainer&) = delete;
  CnnTrainer& operator=(const CnnTrainer&) = delete;

  TrainResult run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cmpi::trainer
