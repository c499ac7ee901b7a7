// GptParamUnit: which part of the GPT a parameter belongs to, read from the
// global name the model gives it (gpt.cpp): "block<N>.…" is transformer block
// N (its global layer, the same on every pipeline stage), "final_norm.…" and
// "output_head.…" are the head, every other name (the token and position
// tables) the embedding. The one place that reads these names, for ZeRO-3's
// per-layer gathers (GptImpl::layer_schedule) and DiLoCo's fragments
// (gpt_parallelize.cpp), so a renamed parameter cannot put the two apart.
#pragma once

#include <cstdint>
#include <string>

namespace cmpi::models {

struct GptParamUnit {
  enum class Kind { kEmbedding, kBlock, kHead };
  Kind kind = Kind::kEmbedding;
  int64_t layer = -1;  // kBlock only: the block's global layer

  // The unit's name in the layer schedule: "embedding", "block<N>", "head".
  std::string name() const;
};

// Throws std::invalid_argument naming the parameter when a "block" name has
// no layer number before its first '.'.
GptParamUnit gpt_param_unit(const std::string& param_name);

}  // namespace cmpi::models
