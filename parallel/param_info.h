// ParamInfo: what the optimizer and gradient clipping need to know about a
// parameter of a (possibly tensor- or pipeline-parallel) model: whether this
// rank holds a distinct shard of it (tensor_parallel: its gradient norm must
// be summed over the tp group, not counted once) and whether weight decay
// applies. The model produces them; the data-parallel optimizer consumes them.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace cmpi::parallel {

struct ParamInfo {
  std::string name;
  torch::Tensor tensor;
  bool tensor_parallel = false;  // sharded over tp: every tp rank holds a different slice
  bool weight_decay = true;      // false for biases, LayerNorm, position table
};

}  // namespace cmpi::parallel
