// Rotary position embeddings (Su et al., "RoFormer", 2021) in GPT-NeoX's
// convention: of each head's head_dim dimensions, the first `dims` rotate and
// the rest pass unchanged; within them, dimension i pairs with i + dims/2
// ("rotate half", not RoFormer's adjacent pairs 2i, 2i+1). At position p,
// pair i turns by the angle p·θ_i with θ_i = base^(-2i/dims):
//   x'_i          = x_i · cos(p·θ_i) − x_{i+dims/2} · sin(p·θ_i)
//   x'_{i+dims/2} = x_{i+dims/2} · cos(p·θ_i) + x_i · sin(p·θ_i)
// Applied to queries and keys alike, the score q'·k' then depends on the two
// positions only through their difference. Positions count from 0 at the
// first token of the sequence, whatever the layout: every pipeline stage and
// tp rank sees whole sequences, and a tp rank whole heads.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "models/gpt_options.h"

namespace cmpi::models {

class RotaryEmbedding {
 public:
  // Angles for positions [0, max_positions); `dims` even and in (0, head_dim].
  // Throws std::invalid_argument otherwise. `scaling`: Llama 3's frequency
  // scaling (factor 0: none).
  RotaryEmbedding(int64_t head_dim, int64_t dims, double base, int64_t max_positions,
                  const RopeScaling& scaling = {});

  // x [..., T, head_dim] -> x with its first `dims` dimensions of every
  // position turned; differentiable. Row t of x sits at position
  // first_position + t (nonzero only for the inference-only cached path,
  // models/kv_cache.h, whose new tokens continue a sequence); the positions
  // must lie below max_positions.
  torch::Tensor apply(const torch::Tensor& x, int64_t first_position = 0) const;

  int64_t dims() const { return dims_; }
  // Moves the angle tables to the device of the tensors apply() turns.
  void to(const torch::Device& device);

 private:
  int64_t head_dim_;
  int64_t dims_;
  torch::Tensor cos_;  // [max_positions, dims/2]
  torch::Tensor sin_;
};

}  // namespace cmpi::models
