// The model section a Hugging Face config.json describes: the converse of
// hf_config_json (hf_model_config.h), for tools that open a Hugging Face
// directory without a run's config (cmpi-generate). Reads the fields each
// class (GPTNeoXConfig, GPT2Config, LlamaConfig) defines, with the classes'
// defaults for absent ones; model.seq_len is the model's position count
// (max_position_embeddings, GPT-2's n_positions). What this project cannot
// express (an MLP width that is no multiple of the hidden size outside a
// Llama, a model_type it does not implement) is refused naming the field;
// the rest is then checked field by field by check_hf_config, as an import
// would. Torch-free.
#pragma once

#include <string>

#include "config/config.h"
#include "data/json_value.h"

namespace cmpi::hf {

// Throws std::runtime_error "PATH: FIELD ..." for a field it cannot map.
config::ModelConfig model_config_from_hf(const data::JsonValue& json, const std::string& path);

}  // namespace cmpi::hf
