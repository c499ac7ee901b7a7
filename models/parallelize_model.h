// parallelize_model: the torch-facing half of the model-family registry
// (models/family/model_family.h): builds this rank's part of the configured
// family's model for the layout of `groups`, as a TrainModel. The trainer
// asks this one function; each family's case calls its own parallelize.
#pragma once

#include <memory>

#include "config/config.h"
#include "models/gpt_parallelize.h"
#include "models/train_model.h"
#include "parallel/mesh/process_groups.h"

namespace cmpi::models {

// What the run adds to the config. `source` and `dump_tensors` are the
// GPT's (GptBuildOptions); a family that reads no tokens refuses
// dump_tensors (std::invalid_argument naming the flag).
using ModelBuildOptions = GptBuildOptions;

std::unique_ptr<TrainModel> parallelize_model(const config::Config& config,
                                              parallel::ProcessGroups& groups,
                                              ModelBuildOptions options);

}  // namespace cmpi::models
