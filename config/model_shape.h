// The model shape a ModelConfig describes (plain numbers, torch-free): the
// GPT's and the ResNet's, for the trainers that build them and for the checks
// that size them beforehand.
#pragma once

#include <cmath>
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
  o.position = m.position == "rotary" ? models::PositionEncoding::kRotary
                                      : models::PositionEncoding::kLearned;
  o.rotary_pct = m.rotary_pct;
  o.rotary_base = m.rotary_base;
  o.attention_block_size = m.attention_block_size;
  o.parallel_residual = m.parallel_residual;
  o.activation = m.mlp_activation == "gelu_tanh" ? models::MlpActivation::kGeluTanh
                                                 : models::MlpActivation::kGelu;
  o.init = m.init == "neox" ? models::InitScheme::kNeox : models::InitScheme::kGpt2;
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

// The keys a checkpoint must match to be loaded into this model (the
// metadata's model map): the GPT's sizes, or the ResNet's. The GPT's
// architecture switches that change what the weights mean without changing
// their shapes count too, or a resume would silently run other arithmetic on
// the same tensors; each is listed only when it differs from GPT-2's, so the
// checkpoints of GPT-2 style models keep their metadata (and older ones still
// load). Rotary positions are recorded as the rotating dimensions per head
// (also what drops the position table) and the base rounded to an integer.
// model.init is not recorded: it shapes only the initial weights, which a
// resume replaces.
inline std::map<std::string, int64_t> checkpoint_shape(const ModelConfig& m) {
  if (m.kind == "resnet")
    return {{"depth", m.depth},
            {"width", m.width},
            {"image_size", m.image_size},
            {"channels", m.channels},
            {"classes", m.classes}};
  std::map<std::string, int64_t> shape{{"vocab_size", m.vocab_size},
                                       {"seq_len", m.seq_len},
                                       {"layers", m.layers},
                                       {"hidden", m.hidden},
                                       {"heads", m.heads},
                                       {"mlp_ratio", m.mlp_ratio},
                                       {"tie_embeddings", m.tie_embeddings ? 1 : 0}};
  const models::GptOptions o = gpt_options(m);
  if (!o.learned_positions()) {
    shape["rotary_dims"] = o.rotary_dims();
    shape["rotary_base"] = int64_t(std::llround(o.rotary_base));
  }
  if (o.parallel_residual) shape["parallel_residual"] = 1;
  if (o.activation == models::MlpActivation::kGeluTanh) shape["mlp_activation_gelu_tanh"] = 1;
  return shape;
}

}  // namespace cmpi::config
