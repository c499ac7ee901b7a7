// CnnStage: the consecutive layers [first, end) of a CNN's layer plan that
// one pipeline stage holds (all of them without pipeline parallelism). Layer
// i is initialised from a generator seeded with (seed, i) alone, so a layer
// starts with the same weights whichever stage builds it, and parameters are
// named by the global layer index ("layer3.conv1.weight").
//
// Activation recomputation (training.recompute: full): the first
// `recomputed_blocks` bottleneck blocks of the stage keep only their input
// for backward and run again there (models/recompute.h), so gradients are
// bit-identical to a stored run. A block's BatchNorms update their running
// statistics when it runs: the rerun puts them back as the first run left
// them, so the statistics too equal a stored run's. Collectives inside a
// block (a spatial BatchNorm's statistics, halo exchanges) happen again in
// the rerun, on every rank of the group at the same backward node.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/cnn/conv_layer_factory.h"
#include "models/cnn/resnet_plan.h"
#include "parallel/param_info.h"

namespace cmpi::models {

class CnnStageImpl : public torch::nn::Module {
 public:
  // Throws std::invalid_argument when [first, end) is empty or outside the plan.
  CnnStageImpl(const std::vector<CnnLayerSpec>& plan, int64_t first, int64_t end,
               const ConvLayerFactory& factory, uint64_t seed, int64_t recomputed_blocks = 0);

  // The stage's layers in order: images or the previous stage's activations
  // in; activations, or logits [N, classes] on the stage with the head, out.
  torch::Tensor forward(torch::Tensor x);

  int64_t first_layer() const { return first_; }
  // How many of the stage's bottleneck blocks recompute in backward.
  int64_t recomputed_blocks() const { return recomputed_blocks_; }
  int64_t end_layer() const { return end_; }
  bool has_head() const;
  // What the data-parallel optimizer needs: no weight decay on BatchNorm and
  // biases (tensors of one dimension).
  std::vector<parallel::ParamInfo> param_infos();
  // BatchNorm running means and variances (not learned, not in param_infos).
  std::vector<torch::Tensor> running_statistics();
  // The same, with their names ("layer3.bn1.running_mean"), for checkpoints.
  std::vector<std::pair<std::string, torch::Tensor>> named_running_statistics();

 private:
  std::vector<CnnLayerSpec> plan_;
  int64_t first_, end_;
  int64_t recomputed_blocks_ = 0;
  std::vector<torch::nn::AnyModule> layers_;
  std::vector<bool> recomputed_;  // per layer of layers_
};
TORCH_MODULE(CnnStage);

}  // namespace cmpi::models
