// The GPT shape a ModelConfig describes (plain numbers, torch-free), for the
// trainer that builds the model and for the checks that size it beforehand.
#pragma once

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

}  // namespace cmpi::trainer
