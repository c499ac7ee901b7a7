// The model section of a run against Hugging Face's config.json. A GPT with
// rotary positions is a GPT-NeoX (GPTNeoXConfig: hidden_size,
// num_attention_heads, num_hidden_layers, intermediate_size, rotary_pct,
// rotary_emb_base (transformers 5: rope_parameters), use_parallel_residual,
// tie_word_embeddings, hidden_act, layer_norm_eps, ...); one with a learned
// position table is a GPT-2 (GPT2Config: n_embd, n_head, n_layer, n_inner,
// n_positions, activation_function, layer_norm_epsilon, ...). What neither
// class can express (an untied or parallel-residual GPT-2 style model; a
// ResNet) is refused by its model.* key. A GPT with RMSNorm is a Llama
// (LlamaConfig: hidden_size, intermediate_size, num_attention_heads,
// num_key_value_heads, rms_norm_eps, rope_theta, rope_scaling (llama3),
// tie_word_embeddings; transformers 5: rope_parameters), which needs the
// rest of Llama's switches too: SwiGLU, no biases, rotary over the whole
// head, sequential blocks. Both classes' remaining switches
// are pinned to what this project computes: LayerNorm eps 1e-5, biases
// everywhere, attention scaled by 1/sqrt(head_dim), NeoX's rotate-half
// rotary on the first int(head_dim · rotary_pct) dimensions. Reading a
// config.json checks every field that changes the weights' shapes or
// meaning against the config, naming both values and the file; absent
// fields take the Hugging Face classes' defaults. Torch-free.
#pragma once

#include <string>

#include "config/config.h"
#include "data/json_value.h"

namespace cmpi::hf {

enum class HfArchitecture { kGptNeoX, kGpt2, kLlama };

// Which architecture expresses `model`. Throws std::invalid_argument naming
// the model.* key that none can express.
HfArchitecture hf_architecture(const config::ModelConfig& model);

// The special token ids an export states (config.json and
// generation_config.json), from the run's tokenizer.
struct HfTokenIds {
  int32_t bos = 0, eos = 0;
};

// config.json for `model` (checked by hf_architecture), with bos_token_id and
// eos_token_id where `ids` is given.
std::string hf_config_json(const config::ModelConfig& model, const HfTokenIds* ids = nullptr);

// generation_config.json: bos/eos/pad ids (pad: eos, as GPT-2 and Llama
// generation pad) so that generate() stops at the end of a document; without
// ids, only the format's fields.
std::string hf_generation_config_json(const HfTokenIds* ids);

// What a checked config.json says beyond the config.
struct HfConfigFacts {
  HfArchitecture architecture = HfArchitecture::kGptNeoX;
  // GPT-2: rows of the stored position table (n_positions), at least
  // model.seq_len; the first seq_len are used.
  int64_t position_rows = 0;
};

// Checks config.json (`path`, already parsed) against `model`. Throws
// std::runtime_error "PATH: FIELD is X, but model.KEY is Y" for the first
// disagreement, or naming a field whose value this project does not
// implement.
HfConfigFacts check_hf_config(const data::JsonValue& json, const config::ModelConfig& model,
                              const std::string& path);

}  // namespace cmpi::hf
