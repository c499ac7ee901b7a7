// StagePlan: which part of the GPT one pipeline stage holds. The default is
// the whole model (one stage): every layer, the embedding and the head.
#pragma once

#include <cstdint>

namespace cmpi::models {

struct StagePlan {
  int64_t first_layer = 0;
  int64_t end_layer = -1;     // one past this stage's last layer; -1: the model's last layer
  bool has_embedding = true;  // token + position embeddings (the first stage)
  bool has_head = true;       // final LayerNorm, tied output head, loss (the last stage)
};

}  // namespace cmpi::models
