// The name hashes with 64-bit FNV-1a (stable across platforms and standard
// libraries, unlike std::hash) and mixes with the run seed by splitmix64.
// The full tensor is drawn from a CPU generator with that seed, then sliced:
// slicing the same draw is what makes every layout agree.
#include "models/param_layout.h"

#include <ATen/CPUGeneratorImpl.h>

#include <stdexcept>

#include "compress/splitmix64.h"

namespace cmpi::models {

using compress::splitmix64;

uint64_t parameter_seed(uint64_t run_seed, const std::string& name) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) hash = (hash ^ c) * 0x100000001b3ULL;
  return splitmix64(run_seed ^ splitmix64(hash));
}

void initialise_shard(const ParamLayout& layout, uint64_t run_seed, int tp_rank, int tp_size) {
  torch::NoGradGuard no_grad;
  std::vector<int64_t> full_shape = layout.tensor.sizes().vec();
  if (layout.split_dim >= int64_t(full_shape.size()))
    throw std::logic_error("parameter " + layout.name + ": split dim " +
                           std::to_string(layout.split_dim) + " out of range");
  if (layout.split_dim >= 0) full_shape[size_t(layout.split_dim)] *= tp_size;
  torch::Tensor full;
  switch (layout.init) {
    case ParamLayout::Init::kNormal: {
      auto generator =
          at::make_generator<at::CPUGeneratorImpl>(parameter_seed(run_seed, layout.name));
      full = at::normal(0.0, layout.std, full_shape, generator);
      break;
    }
    case ParamLayout::Init::kZeros:
      full = torch::zeros(full_shape);
      break;
    case ParamLayout::Init::kOnes:
      full = torch::ones(full_shape);
      break;
  }
  if (layout.split_dim >= 0) full = full.chunk(tp_size, layout.split_dim)[size_t(tp_rank)];
  layout.tensor.copy_(full);
}

}  // namespace cmpi::models
