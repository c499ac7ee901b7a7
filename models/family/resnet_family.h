// The ResNet family (models/cnn/, docs/cnn.md): its options from the config
// and its ModelFamilySpec. Torch-free.
#pragma once

#include <cstdint>

#include "config/config.h"
#include "models/cnn/resnet_plan.h"
#include "models/family/model_family.h"

namespace cmpi::models {

// `seed` initialises the layers (run.seed). Throws std::invalid_argument for
// an unknown model.activation (the config parser refuses it first).
ResnetOptions resnet_options(const config::ModelConfig& model, uint64_t seed);

ModelFamilySpec resnet_family();

}  // namespace cmpi::models
