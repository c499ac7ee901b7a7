// CnnStage: the consecutive layers [first, end) of a CNN's layer plan that
// one pipeline stage holds (all of them without pipeline parallelism). Layer
// i is initialised from a generator seeded with (seed, i) alone, so a layer
// starts with the same weights whichever stage builds it, and parameters are
// named by the global layer index ("layer3.conv1.weight").
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
               const ConvLayerFactory& factory, uint64_t seed);

  // The stage's layers in order: images or the previous stage's activations
  // in; activations, or logits [N, classes] on the stage with the head, out.
  torch::Tensor forward(torch::Tensor x);

  int64_t first_layer() const { return first_; }
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
  std::vector<torch::nn::AnyModule> layers_;
};
TORCH_MODULE(CnnStage);

}  // namespace cmpi::models
