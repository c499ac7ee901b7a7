// The model shape a ModelConfig describes (plain numbers, torch-free): the
// GPT's and the ResNet's, for the trainers that build them and for the checks
// that size them beforehand.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "config/config.h"
#include "models/cnn/resnet_plan.h"
#include "models/gpt_options.h"

namespace cmpi::config {

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

// The shape keys a checkpoint must match to be loaded into this model (the
// metadata's model map): the GPT's sizes, or the ResNet's.
inline std::map<std::string, int64_t> checkpoint_shape(const ModelConfig& m) {
  if (m.kind == "resnet")
    return {{"depth", m.depth},
            {"width", m.width},
            {"image_size", m.image_size},
            {"channels", m.channels},
            {"classes", m.classes}};
  return {{"vocab_size", m.vocab_size},
          {"seq_len", m.seq_len},
          {"layers", m.layers},
          {"hidden", m.hidden},
          {"heads", m.heads},
          {"mlp_ratio", m.mlp_ratio},
          {"tie_embeddings", m.tie_embeddings ? 1 : 0}};
}

}  // namespace cmpi::config
