#include "models/family/model_family.h"

#include <stdexcept>

#include "models/family/gpt_family.h"
#include "models/family/resnet_family.h"

namespace cmpi::models {

ModelFamilyRegistry ModelFamilyRegistry::with_builtin_families() {
  ModelFamilyRegistry registry;
  registry.add(gpt_family());
  registry.add(resnet_family());
  return registry;
}

void ModelFamilyRegistry::add(ModelFamilySpec spec) {
  for (ModelFamilySpec& existing : specs_)
    if (existing.id == spec.id) {
      existing = std::move(spec);
      return;
    }
  specs_.push_back(std::move(spec));
}

const ModelFamilySpec& ModelFamilyRegistry::at(config::ModelFamily id) const {
  for (const ModelFamilySpec& spec : specs_)
    if (spec.id == id) return spec;
  throw std::logic_error(std::string("model family ") + config::name_of(id) +
                         " is not registered (models/family/model_family.cpp)");
}

const ModelFamilySpec& family_of(const config::ModelConfig& model) {
  // Built once and never changed: a read-only table, like the enums' spellings.
  static const ModelFamilyRegistry builtin = ModelFamilyRegistry::with_builtin_families();
  return builtin.at(model.kind);
}

std::map<std::string, int64_t> checkpoint_shape(const config::ModelConfig& model) {
  return family_of(model).checkpoint_shape(model);
}

std::vector<parallel::MemoryEstimate> estimate_stage_memory(const config::Config& config,
                                                            const parallel::ParallelDims& dims) {
  const ModelFamilySpec& family = family_of(config.model);
  if (!family.estimate_stage_memory)
    throw std::logic_error(std::string("model.kind ") + config::name_of(config.model.kind) +
                           " has no memory estimate");
  return family.estimate_stage_memory(config, dims);
}

parallel::MemoryEstimate estimate_memory(const config::Config& config,
                                         const parallel::ParallelDims& dims) {
  return parallel::busiest_stage(estimate_stage_memory(config, dims));
}

}  // namespace cmpi::models
