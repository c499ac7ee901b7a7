// export_hf: a checkpoint as a Hugging Face model directory: config.json
// (hf_model_config.h), model.safetensors with Hugging Face's tensor names and
// layouts (hf_tensor_map.h), float32, and the run's tokenizer.json when
// data.tokenizer names one. The checkpoint's global tensors come from
// LoadedCheckpoint, which reassembles them from any dp/tp/pp/ZeRO layout.
// The model section used is the run's config, checked against the model
// shape the checkpoint recorded (as a resume would). Each file is written
// atomically. Torch-free.
#pragma once

#include <cstddef>
#include <string>

#include "checkpoint/loaded_checkpoint.h"
#include "config/config.h"
#include "hf/hf_model_config.h"

namespace cmpi::hf {

struct HfExportResult {
  HfArchitecture architecture = HfArchitecture::kGptNeoX;
  size_t tensors = 0;
  size_t weight_bytes = 0;     // of model.safetensors
  std::string tokenizer_from;  // the tokenizer.json copied; empty: none
  int32_t eos_token_id = -1;   // stated in config.json and generation_config.json; -1: none
};

// Throws std::invalid_argument for a model no Hugging Face config expresses,
// std::runtime_error naming the file for a checkpoint that does not match
// the config or cannot be read, io::FileError for a write that fails.
HfExportResult export_hf(const checkpoint::LoadedCheckpoint& checkpoint,
                         const config::Config& config, const std::string& dir);

std::string architecture_name(HfArchitecture architecture);  // "GPT-NeoX" / "GPT-2"

}  // namespace cmpi::hf
