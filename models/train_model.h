// TrainModel: one model family as the training loop (trainer/trainer.h) sees
// it, whatever parallel layout it was built for. The loop owns what every
// family shares — step numbering, the learning-rate schedule, the non-finite
// guard, metrics, the step report, checkpoint timing (CheckpointManager); a
// TrainModel owns what differs between a GPT and a ResNet: how one step's
// micro-batches go forward and backward through its stages (plain,
// pipelined, bi-directional, on tiles), what its loss means, how it is
// evaluated, and which of its parts a checkpoint holds.
//
// Each family's parallelize function builds one (models/gpt_parallelize.h,
// models/cnn/resnet_parallelize.h) and states the order in which the
// parallelisms are applied. Every call below is collective over the world:
// all ranks make the same calls in the same order. Torch-free header.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_manager.h"
#include "comm/adaptive_policy.h"
#include "comm/comm_stats.h"
#include "parallel/mesh/parallel_dims.h"

namespace cmpi::parallel {
class DataParallelOptimizer;
}

namespace cmpi::models {

// What the non-finite guard needs of one rank after a step.
struct RankHealth {
  int world_rank = 0;
  parallel::GridCoord coord;
  bool computed_loss = false;   // this rank computes the loss (the last pipeline stage)
  double loss = 0;              // over its own micro-batches, when computed_loss
  bool update_skipped = false;  // the optimizer skipped the update (non-finite global norm)
  // See parallel::NonfiniteGradients: the first parameter whose gradient was
  // non-finite from this rank's own backward, and after the reduction over dp.
  std::string own_param;
  std::string reduced_param;

  // fp16 loss scaling: the skipped update was a gradient overflow the loss
  // scale absorbs by backing off (the same on every rank); the scale it ran with.
  bool overflow_absorbed = false;
  double loss_scale = 0;
  bool loss_nonfinite() const { return computed_loss && !std::isfinite(loss); }
};

// A step's or an evaluation's outcome, the same on every rank.
struct Outcome {
  double loss = 0;  // mean over the global batch(es)
  // Share of the samples classified right; negative for models that do not
  // classify (language models).
  double accuracy = -1;
};

// DiLoCo's syncs after a step (parallel/diloco/): the fragments whose
// pseudo-gradients were averaged over dp (empty: none) and the time it took.
struct OuterSync {
  std::vector<int> fragments;
  double seconds = 0;
};

// Communicators outside the process grid that a model also reports (a
// bidirectional pipeline's mirrored groups), by the name they get in the
// groups JSON.
using ExtraGroupStats = std::vector<std::pair<std::string, const comm::CommStats*>>;

class TrainModel {
 public:
  virtual ~TrainModel() = default;

  // Rank 0's "model: ..." line before the first step.
  virtual std::string describe() const = 0;
  virtual int64_t parameter_count() const = 0;        // the whole model's
  virtual int64_t local_parameter_count() const = 0;  // this rank's
  // Tokens a sample is trained on (its sequence length); 0 for image
  // classifiers, whose throughput is counted in images.
  virtual int64_t tokens_per_sample() const = 0;
  // The lowest loss the data allows in expectation (0: unknown).
  virtual double loss_floor() const = 0;

  // Preset auto: every group the model communicates over settles its routes
  // for `step` (ProcessGroups::adapt and the model's own groups), weighing
  // `previous_loss`, the training loss of step - 1 (comm::kNoPreviousLoss:
  // none), for each route's effect on convergence.
  virtual std::vector<comm::AutoDecision> adapt(int64_t step, double previous_loss) = 0;
  // One optimizer step: this rank's micro-batches of global batch `step`
  // forward and backward, the gradients reduced, clipped by the global norm
  // at `clip` (0: not clipped) and applied with learning rate `lr`. With a
  // non-empty `dump_dir` the step's own (unreduced) gradients and activations
  // are written there first (see dumps_tensors).
  virtual Outcome train_step(int64_t step, double lr, double clip, const std::string& dump_dir) = 0;
  // The global gradient norm of the last step (before clipping).
  virtual double last_grad_norm() const = 0;
  virtual RankHealth health() const = 0;
  // Over eval.batches global batches of the valid split, without gradients
  // or dropout.
  virtual Outcome evaluate() = 0;

  virtual parallel::DataParallelOptimizer& optimizer() = 0;
  virtual ExtraGroupStats extra_groups() const { return {}; }
  // The figure the step's memory record adds to the optimizer's: its key in
  // metrics.jsonl and this rank's bytes.
  virtual std::pair<std::string, int64_t> memory_extra() const = 0;

  // Everything a checkpoint of this rank holds (checkpoint_manager.h).
  virtual checkpoint::CheckpointParts checkpoint_parts() = 0;
  // After the last step of a --dump-tensors run: the final weights, where one
  // rank holds them whole (no-op elsewhere).
  virtual void dump_parameters(const std::string& dump_dir) = 0;
  // fp16 loss scaling: the scale the last step ran with; 0 without.
  virtual double loss_scale() const { return 0; }
  // parallel.dp_sync: diloco: what the last train_step synchronised over dp.
  virtual OuterSync last_outer_sync() const { return {}; }
};

}  // namespace cmpi::models
