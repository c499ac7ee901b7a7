// Pipeline stage partition: which consecutive layers of an L-layer model each
// of P pipeline stages holds. The first stage also holds the embedding, the
// last one the head (final norm, output projection, loss).
//
// Balanced by default: every stage gets L / P layers and the first L % P
// stages one more, so counts differ by at most one and the extra layers sit
// away from the last stage, which already runs the head (the vocabulary-wide
// output projection is usually the costliest single piece of a small model).
// Uneven counts are given explicitly (config key parallel.stage_layers).
//
// Torch-free: plain numbers, used by the config loader for validation and by
// the trainer to build this rank's part of the model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cmpi::parallel {

// One stage's share of the model.
struct PipelineStage {
  int64_t first_layer = 0;
  int64_t end_layer = 0;  // one past the stage's last layer
  bool has_embedding = false;
  bool has_head = false;
  int64_t layers() const { return end_layer - first_layer; }
};

// L / P layers per stage, the first L % P stages one more. Throws
// std::invalid_argument naming parallel.pipeline when stages < 1 or a stage
// would get no layer (layers < stages).
std::vector<int64_t> balanced_stage_layers(int64_t layers, int64_t stages);

// The stages of a `layers`-layer model over `stages` stages: `stage_layers`
// gives the layer count of each stage, or is empty for the balanced split.
// Throws std::invalid_argument whose message names parallel.stage_layers (or
// parallel.pipeline) when the list's length is not `stages`, a count is < 1 or
// the counts do not sum to `layers`.
std::vector<PipelineStage> partition_layers(int64_t layers, int64_t stages,
                                            const std::vector<int64_t>& stage_layers = {});

// partition_layers(...)[stage], checking 0 <= stage < stages.
PipelineStage stage_of(int64_t layers, int64_t stages, int64_t stage,
                       const std::vector<int64_t>& stage_layers = {});

// "[3, 1]": counts as written in the config.
std::string stage_layers_text(const std::vector<int64_t>& stage_layers);

}  // namespace cmpi::parallel
