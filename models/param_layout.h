// ParamLayout: how one parameter of the (tensor-parallel) model is laid out
// and initialised. Initial weights depend only on (run seed, global name):
// each parameter's FULL tensor is drawn from a generator seeded by them and
// this rank keeps its tp slice, so every tp/pp layout starts from the same
// global weights as the single-rank model.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace cmpi::models {

struct ParamLayout {
  enum class Init { kNormal, kZeros, kOnes };

  std::string name;        // global, layout-independent ("block3.fc_in.weight")
  torch::Tensor tensor;    // this rank's shard (or the whole tensor if replicated)
  int64_t split_dim = -1;  // the dim split over the tp group; -1: replicated
  Init init = Init::kZeros;
  double std = 0;  // of kNormal
  bool weight_decay = false;
};

// Seed of a parameter's generator: a stable hash of (run_seed, name).
uint64_t parameter_seed(uint64_t run_seed, const std::string& name);

// Fills layout.tensor with rank `tp_rank`'s slice (of `tp_size` equal ones
// along split_dim) of the parameter's full initial tensor.
void initialise_shard(const ParamLayout& layout, uint64_t run_seed, int tp_rank, int tp_size);

}  // namespace cmpi::models
