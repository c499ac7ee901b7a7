// The model shape a ModelConfig describes (plain numbers, torch-free): the
// GPT's and the ResNet's, for the trainers that build them and for the checks
// that size them beforehand.
#pragma once

#include <cstdint>

#include "models/cnn/resnet_plan.h"
#include "models/gpt_options.h"
#include "trainer/config.h"

namespace cmpi::trainer {

inline models::GptOptions gpt_options(const ModelConfig& m) {
  models::GptOptions o;
  o.vocab_size = m.vocab_size;
  o.seq_len = m.seq_len;
  o.layers = m.layers;
  o.hidden = m.hidden;
  o.heads = m.heads;
  o.mlp_ratio = m.mlp_ratio;
  o.dropout = m.dropout;
  o.init_std = m.init_std;
  o.tie_embeddings = m.tie_embeddings;
  return o;
}

// `seed` initialises the layers (run.seed). Throws std::invalid_argument for
// an unknown model.activation (the config loader refuses it first).
inline models::ResnetOptions resnet_options(const ModelConfig& m, uint64_t seed) {
  models::ResnetOptions o;
  o.depth = m.depth;
  o.width = m.width;
  o.image_size = m.image_size;
  o.channels = m.channels;
  o.classes = m.classes;
  o.seed = seed;
  o.activation = models::parse_activation(m.activation);
  return o;
}

}  // namespace cmpi::trainer
