// The random generators a model draws from (LibTorch's default CPU generator
// for initialisation and dropout, and a GPT's per-layer dropout generators),
// as checkpoint GeneratorParts: their state as bytes, and back.
#pragma once

#include <ATen/core/Generator.h>

#include <cstdint>
#include <string>

#include "checkpoint/rank_state.h"

namespace cmpi::models {

// "torch/default_generator": LibTorch's default CPU generator.
checkpoint::GeneratorPart default_generator_part();

// `name` (e.g. "model/block0.attention"): a generator the model owns; the
// part shares its state with `generator`.
checkpoint::GeneratorPart generator_part(const std::string& name, at::Generator generator);

// The default generator after a resume under another layout: the run seed
// mixed with the step, the same on every rank (as at the start, so that
// tensor-parallel ranks keep drawing the same masks) but not step 0's.
void restart_default_generator(uint64_t run_seed, int64_t step);

}  // namespace cmpi::models
