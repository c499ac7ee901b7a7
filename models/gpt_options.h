// GptOptions: the shape of a GPT decoder (plain numbers, no torch).
#pragma once

#include <cstdint>

namespace cmpi::models {

struct GptOptions {
  int64_t vocab_size = 256;
  int64_t seq_len = 64;
  int64_t layers = 2;
  int64_t hidden = 64;
  int64_t heads = 4;
  int64_t mlp_ratio = 4;
  double dropout = 0.0;
  double init_std = 0.02;
  // false: the output head has its own table ("output_head.weight", split
  // over tp by vocabulary rows like the embedding) instead of the token
  // embedding's.
  bool tie_embeddings = true;
  // Initial weights are a function of (seed, parameter name) alone.
  uint64_t seed = 0;
  // false: parameters are unmaterialised stand-ins (parallel/unmaterialised.h)
  // whose values a ZeRO-3 optimizer generates shard by shard
  // (GptImpl::fill_initial_values); no rank builds a whole tensor.
  bool materialize_parameters = true;

  int64_t head_dim() const { return hidden / heads; }
  // Parameters of the model (one more vocab x hidden table when untied).
  int64_t parameter_count() const {
    const int64_t per_block = 4 * hidden                          // two LayerNorms
                              + 3 * hidden * hidden + 3 * hidden  // qkv
                              + hidden * hidden + hidden          // attention output
                              + 2 * mlp_ratio * hidden * hidden   // MLP weights
                              + mlp_ratio * hidden + hidden;      // MLP biases
    return (tie_embeddings ? 1 : 2) * vocab_size * hidden + seq_len * hidden + layers * per_block +
           2 * hidden;
  }
};

}  // namespace cmpi::models
