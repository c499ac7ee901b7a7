// load_model: a ModelSource's GPT on this one process, whatever layout
// wrote it. The model is built whole (tp 1, one pipeline stage, float32,
// no dropout) over a process group of this process alone, and each
// parameter takes its global tensor: from a checkpoint, reassembled from the
// slices its tp/pp/dp/ZeRO layout cut (checkpoint::LoadedCheckpoint, as
// --resume and --export-hf read them); from a Hugging Face directory, read
// through the import's name and layout map (hf::HfPretrained, as
// model.init_from reads it). MPI must be initialised (the model's layers
// hold a communicator, of size 1 here).
#pragma once

#include <memory>

#include "generate/model_source.h"
#include "models/gpt.h"
#include "parallel/mesh/process_groups.h"

namespace cmpi::generate {

class LoadedModel {
 public:
  // Throws std::runtime_error naming the file at fault (a missing or
  // corrupt shard, a tensor of another shape).
  static std::unique_ptr<LoadedModel> load(const ModelSource& source);

  models::Gpt model() const { return model_; }

 private:
  LoadedModel() = default;
  std::unique_ptr<parallel::ProcessGroups> groups_;  // outlives the model's layers
  models::Gpt model_{nullptr};
};

}  // namespace cmpi::generate
