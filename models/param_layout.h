// ParamLayout: how one parameter of the (tensor-parallel) model is laid out
// and initialised. Initial weights depend only on (run seed, global name,
// element index): every element of a parameter's FULL (unsharded) tensor is a
// pure function of them (a counter-based generator), so any element range of
// any rank's slice can be generated alone. Every tp/pp/ZeRO layout thereby
// starts from the single-rank model's global weights, bit for bit, and a
// ZeRO-3 rank fills only its shard without ever building the whole tensor.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cmpi::models {

struct ParamLayout {
  enum class Init { kNormal, kZeros, kOnes };

  std::string name;        // global, layout-independent ("block3.fc_in.weight")
  torch::Tensor tensor;    // this rank's shard (or the whole tensor if replicated)
  int64_t split_dim = -1;  // the dim split over the tp group; -1: replicated
  Init init = Init::kZeros;
  double std = 0;  // of kNormal
  bool weight_decay = false;
  // >= 0: rows of dim 0 past this many are padding no token reaches (the
  // vocabulary tables, padded for tp: GptOptions::padded_vocab_size).
  int64_t used_rows = -1;
};

// Seed of a parameter's generator: a stable hash of (run_seed, name).
uint64_t parameter_seed(uint64_t run_seed, const std::string& name);

// Element `index` (row-major in the full tensor) of a N(0, 1) draw keyed by
// `seed`: Box-Muller on the two 32-bit halves of splitmix64(seed, index).
float counter_normal(uint64_t seed, uint64_t index);

// Writes elements [offset, offset + length) (row-major in this rank's slice,
// of shape `local_shape`) of rank `tp_rank`'s slice (of `tp_size` equal ones
// along layout.split_dim) of the parameter's initial tensor to `out`. Reads
// nothing of layout.tensor but what `local_shape` says.
void initial_values(const ParamLayout& layout, const std::vector<int64_t>& local_shape,
                    uint64_t run_seed, int tp_rank, int tp_size, size_t offset, size_t length,
                    float* out);

// Fills layout.tensor (materialised, contiguous) with rank `tp_rank`'s slice.
void initialise_shard(const ParamLayout& layout, uint64_t run_seed, int tp_rank, int tp_size);

}  // namespace cmpi::models
