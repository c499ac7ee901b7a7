// ResnetTrainModel: the ResNet image classifier (model.kind resnet, synthetic
// images: data/synthetic_images.h) as a TrainModel. Per step, for each of
// this rank's micro-batches: forward, cross-entropy scaled by
// 1/(micro-batches x dp), backward; then the data-parallel optimizer (dp
// gradient buckets, ZeRO, clipping, AdamW) as for the GPT. With pp > 1 the
// layers (stem, blocks, head) are cut into stages and the pipeline engine
// runs the schedule, sending [micro_batch, C, H, W] activations.
//
// BatchNorm normalises with each micro-batch's own statistics (PyTorch's
// default), so a layout reproduces the single-rank run that uses the same
// micro-batch size. The running statistics (used by evaluation only) are
// averaged over dp after every step so the replicas agree; checkpoints hold
// them as plain tensors, so they survive a reshard.
//
// With sp > 1 the first parallel.spatial_stages stages run on tiles of the
// images (SpatialConvLayerFactory); the last of them gathers the tiles and
// the stages after it are replicated over sp. The spatial layers' gradients
// are summed over sp before the optimizer (docs/cnn.md). With
// parallel.bidirectional a second replica (B) runs the stages in reverse pp
// order on half of the micro-batches (docs/cnn.md). Built by
// parallelize_resnet (resnet_parallelize.h), which fills ResnetParts.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/synthetic_images.h"
#include "models/cnn/cnn_stage.h"
#include "models/cnn/resnet_plan.h"
#include "models/train_model.h"
#include "parallel/pipeline/pipeline_engine.h"
#include "parallel/spatial/tile_geometry.h"

namespace cmpi::comm {
class Communicator;
}
namespace cmpi::parallel {
class ProcessGroups;
}  // namespace cmpi::parallel

namespace cmpi::models {

// How one replica's pipeline stage meets spatial parallelism: whether it runs
// on tiles, the grid of its input and output images, whether it gathers its
// output tiles into whole images (the last spatial stage before a
// non-spatial tail), and the sp communicator its layers use.
struct SpatialStage {
  bool spatial = false;
  bool gather_output = false;
  std::optional<parallel::spatial::TileGrid> input_grid, output_grid;
  comm::Communicator* sp = nullptr;
  // Bytes autograd keeps for backward at the schedule's peak (micro-batches
  // in flight), estimated from the plan (models/cnn/activation_estimate.h).
  int64_t activation_bytes = 0;
  // Parameters whose gradients are summed over sp: every spatial layer's,
  // not the classifier's (replicated after the global pool, whole gradients).
  std::vector<torch::Tensor> tiled_parameters;
};

// One model replica on this rank: its stage, tiles, engine (pp > 1) and
// optimizer.
struct ResnetReplica {
  CnnStage stage{nullptr};
  SpatialStage spatial;
  std::unique_ptr<parallel::PipelineEngine> pipeline;
  std::unique_ptr<parallel::DataParallelOptimizer> optimizer;
};

// What parallelize_resnet builds for one rank.
struct ResnetParts {
  std::vector<CnnLayerSpec> plan;
  ResnetReplica a;
  // parallel.bidirectional only: replica B (stage S-1-r), its reversed pp
  // group, and its own copy of the sp group (B's halos run on B's thread
  // while A's run on this one, so their messages must not match each other's).
  ResnetReplica b;
  std::unique_ptr<comm::Communicator> reversed_pp, sp_b;
  int64_t micro_batches = 1;
};

class ResnetTrainModel : public TrainModel {
 public:
  ResnetTrainModel(const config::Config& config, parallel::ProcessGroups& groups,
                   ResnetParts parts);
  ~ResnetTrainModel() override;

  std::string describe() const override;
  int64_t parameter_count() const override;
  int64_t local_parameter_count() const override;
  int64_t tokens_per_sample() const override { return 0; }
  double loss_floor() const override { return 0; }

  std::vector<comm::AutoDecision> adapt(int64_t step, double previous_loss) override;
  Outcome train_step(int64_t step, double lr, double clip, const std::string& dump_dir) override;
  double last_grad_norm() const override { return last_grad_norm_; }
  RankHealth health() const override;
  Outcome evaluate() override;

  parallel::DataParallelOptimizer& optimizer() override { return *parts_.a.optimizer; }
  ExtraGroupStats extra_groups() const override;
  std::pair<std::string, int64_t> memory_extra() const override;
  checkpoint::CheckpointParts checkpoint_parts() override;
  void dump_parameters(const std::string&) override {}

 private:
  // One micro-batch: images [micro_batch, C, S, S] and their labels.
  struct ImageBatch {
    torch::Tensor images, labels;
  };
  // This rank's micro-batch m of global batch `batch`: positions
  // (dp · micro_batches + m) · micro_batch ... of that batch.
  ImageBatch micro_batch(data::ImageSplit split, int64_t batch, int64_t m) const;
  // Cross-entropy of the logits; adds the right answers to `counter`.
  torch::Tensor classify_loss(const torch::Tensor& logits, const torch::Tensor& labels,
                              double& counter) const;
  // The stage's forward, gathering its output tiles where it must.
  torch::Tensor stage_forward(CnnStage& stage, const SpatialStage& spatial,
                              const torch::Tensor& x) const;
  // What the first stage is fed: the images, or this sp rank's tile of them.
  torch::Tensor stage_input(const SpatialStage& spatial, const torch::Tensor& images) const;
  // Sums the spatial layers' gradients over sp (before the dp reduction).
  void reduce_spatial_gradients();
  void average_running_statistics(CnnStage& stage);
  parallel::PipelineStageWork stage_work(ResnetReplica& replica, data::ImageSplit split,
                                         int64_t batch, int64_t first, double& counter);
  // Micro-batches [first, first + count) of the step through `replica`.
  double pipeline_step(ResnetReplica& replica, double& counter, int64_t step, int64_t first,
                       int64_t count, double scale, bool overlap);
  // Both replicas, B on its own thread so each fills the other's bubbles;
  // then every stage's two copies sum their gradients.
  double bidirectional_step(int64_t step, double scale);

  const config::Config& config_;
  parallel::ProcessGroups& groups_;
  ResnetParts parts_;
  data::SyntheticImages images_;
  double correct_ = 0;    // right answers of this rank's micro-batches in the step
  double correct_b_ = 0;  // replica B's
  double last_local_loss_ = 0;
  double last_grad_norm_ = 0;
};

}  // namespace cmpi::models
