// The GPT family (models/gpt.h): its options from the config, its memory
// estimate's inputs and stage split, and its ModelFamilySpec. Torch-free.
#pragma once

#include <cstdint>
#include <vector>

#include "config/config.h"
#include "models/family/model_family.h"
#include "models/gpt_options.h"
#include "parallel/memory_estimate.h"
#include "parallel/mesh/parallel_dims.h"

namespace cmpi::models {

GptOptions gpt_options(const config::ModelConfig& model);

// The memory model's view of a GPT run under `dims` (parallel/memory_estimate.h).
parallel::MemoryEstimateInput gpt_memory_estimate_input(const config::Config& config,
                                                        const parallel::ParallelDims& dims);

// The GPT's layers per pipeline stage under parallel.pipeline_balance (the
// explicit list, the auto split for this layout, or empty for uniform), as
// parallel::partition_layers takes them. Every rank derives the same.
std::vector<int64_t> gpt_stage_layers(const config::Config& config,
                                      const parallel::ParallelDims& dims);

ModelFamilySpec gpt_family();

}  // namespace cmpi::models
