// ModelFamily registry: what the trainer, the CLI and the planner ask about a
// model family instead of branching on model.kind. Each family (GPT, ResNet,
// ...) registers one ModelFamilySpec: its config checks, the shape that
// constrains the parallel layout, the keys its checkpoints must match and,
// where it has one, its per-stage memory estimate. Torch-free, so the config
// checks and the planner use it without LibTorch; the family's torch-facing
// half (building and parallelizing the model) is models/parallelize_model.h.
//
//   const auto families = ModelFamilyRegistry::with_builtin_families();
//   const ModelFamilySpec& family = families.at(config.model.kind);
//   family.validate(config);  // config::ConfigError at the key at fault
//
// Adding a family: a folder under models/, a value in config::ModelFamily
// (config/config_enums.h), its spec registered in with_builtin_families(),
// its case in parallelize_model (docs/architecture.md has the checklist).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "parallel/memory_estimate.h"
#include "parallel/mesh/parallel_dims.h"

namespace cmpi::models {

struct ModelFamilySpec {
  config::ModelFamily id = config::ModelFamily::kGpt;
  // The checks of the family's keys against each other and against the rest
  // of the config, before any layout is known. Throws config::ConfigError
  // naming the key at fault (config::fail_at).
  std::function<void(const config::Config&)> validate;
  // The checks that need the layout (the smallest world the config fits,
  // `dims`) and the pipeline stages it cuts; may be empty.
  std::function<void(const config::Config&, const parallel::ParallelDims&)> validate_layout;
  // What constrains the parallel layout: layers, heads, width, image rows.
  std::function<parallel::ModelShape(const config::ModelConfig&)> layout_shape;
  // Where the layer count comes from, for layout errors ("model.depth 29
  // makes 11 layers: ..."); empty where model.layers says it.
  std::function<std::string(const config::ModelConfig&)> layer_count_note;
  // A stage-split error (parallel::partition_layers' message, key prefix
  // dropped) in the family's words; empty: as it is.
  std::function<std::string(const config::ModelConfig&, std::string why)> explain_stage_split;
  // The keys a checkpoint must match to load into this model (its metadata's
  // model map): the sizes and the switches that change what weights mean.
  std::function<std::map<std::string, int64_t>(const config::ModelConfig&)> checkpoint_shape;
  // Every pipeline stage's memory estimate for this layout (the busiest is
  // the memory pre-flight's and the planner's figure); empty: the family has
  // no estimate, so neither the pre-flight nor --plan covers it.
  std::function<std::vector<parallel::MemoryEstimate>(const config::Config&,
                                                      const parallel::ParallelDims&)>
      estimate_stage_memory;
  // Whether the family trains on a token stream (data/token_source.h) that
  // the launcher opens and checks before training.
  bool reads_tokens = false;
};

class ModelFamilyRegistry {
 public:
  // GPT and ResNet.
  static ModelFamilyRegistry with_builtin_families();

  void add(ModelFamilySpec spec);
  // Throws std::logic_error for a family nobody registered (a build that
  // forgot a registration, never a user's input: the parser knows the names).
  const ModelFamilySpec& at(config::ModelFamily id) const;

 private:
  std::vector<ModelFamilySpec> specs_;
};

// Shorthands over the built-in registry for code that needs one answer.
std::map<std::string, int64_t> checkpoint_shape(const config::ModelConfig& model);
const ModelFamilySpec& family_of(const config::ModelConfig& model);

// The busiest pipeline stage's estimate (std::logic_error for a family
// without one).
parallel::MemoryEstimate estimate_memory(const config::Config& config,
                                         const parallel::ParallelDims& dims);
std::vector<parallel::MemoryEstimate> estimate_stage_memory(const config::Config& config,
                                                            const parallel::ParallelDims& dims);

}  // namespace cmpi::models
