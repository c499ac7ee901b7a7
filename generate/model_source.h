// ModelSource: what `cmpi-generate --model PATH` names, resolved before
// anything is loaded. PATH may be
//   - a checkpoint directory (holds metadata.yaml) written by any layout;
//   - a directory of checkpoints (step_NNNNNNNN/ ...) or a run directory
//     (its checkpoints/, or the checkpoint.dir of its config.yaml): the
//     newest complete checkpoint;
//   - a Hugging Face GPT-NeoX, GPT-2 or Llama directory (config.json).
// A checkpoint brings the run's resolved config (stored beside its
// metadata), so the model and the tokenizer (data.tokenizer) are the run's;
// a Hugging Face directory brings its config.json (hf/hf_config_reader.h)
// and its tokenizer.json where it has one. Torch-free.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"

namespace cmpi::generate {

struct ModelSource {
  enum class Kind { kCheckpoint, kHuggingFace };
  Kind kind = Kind::kCheckpoint;
  std::string dir;        // the checkpoint or Hugging Face directory itself
  config::Config config;  // the run's; for Hugging Face only the model section means anything
  std::string tokenizer;  // "bytes", a tokenizer.json path, ...; empty: none named
  // Hugging Face: config.json's eos_token_id (what an export states), the
  // stop for token-id prompts when no tokenizer is named; -1: none.
  int64_t end_of_document = -1;
  int64_t step = -1;   // the checkpoint's training steps; -1 for Hugging Face
  std::string layout;  // the saving layout ("dp 2 tp 2 world 4 zero_stage 1")
  // "checkpoint runs/x/checkpoints/step_00000150 (step 150, saved by
  // tp 2 world 2 zero_stage 0)" or
  // "Hugging Face GPT-NeoX model hf/"
  std::string description() const;
};

// Throws std::runtime_error naming PATH for a path that does not exist or
// is none of the above, or naming the file at fault in it.
ModelSource find_model_source(const std::string& path);

}  // namespace cmpi::generate
