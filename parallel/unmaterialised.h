// A parameter's stand-in while its values live elsewhere (a ZeRO-3 shard):
// the parameter's shape over ONE float of storage (stride 0), holding NaN, so
// that a forward that runs without gathering it poisons the loss instead of
// silently computing with zeros. Its shape lets the model's modules, the
// optimizer and checkpoints describe the parameter without materialising it.
#pragma once

#include <torch/torch.h>

#include <limits>

namespace cmpi::parallel {

inline torch::Tensor unmaterialised(at::IntArrayRef shape) {
  return torch::full({1}, std::numeric_limits<float>::quiet_NaN(), torch::kFloat).expand(shape);
}

// False for an unmaterialised() stand-in (and for any tensor with less
// storage than elements).
inline bool is_materialised(const torch::Tensor& t) {
  return t.defined() && t.storage().nbytes() >= size_t(t.numel()) * t.element_size();
}

}  // namespace cmpi::parallel
