#include "parallel/pipeline/pipeline_stages.h"

#include <stdexcept>

namespace cmpi::parallel {

std::vector<int64_t> balanced_stage_layers(int64_t layers, int64_t stages) {
  if (stages < 1)
    throw std::invalid_argument("parallel.pipeline: needs at least 1 stage, got " +
                                std::to_string(stages));
  if (layers < stages)
    throw std::invalid_argument("parallel.pipeline: " + std::to_string(stages) +
                                " stages cannot share model.layers = " + std::to_string(layers) +
                                " (every stage needs at least one layer)");
  std::vector<int64_t> counts(size_t(stages), layers / stages);
  for (int64_t s = 0; s < layers % stages; ++s) ++counts[size_t(s)];
  return counts;
}

std::string stage_layers_text(const std::vector<int64_t>& stage_layers) {
  std::string text = "[";
  for (size_t i = 0; i < stage_layers.size(); ++i)
    text += (i ? ", " : "") + std::to_string(stage_layers[i]);
  return text + "]";
}

std::vector<PipelineStage> partition_layers(int64_t layers, int64_t stages,
                                            const std::vector<int64_t>& stage_layers) {
  std::vector<int64_t> counts;
  if (stage_layers.empty()) {
    counts = balanced_stage_layers(layers, stages);
  } else {
    const std::string given = "parallel.stage_layers " + stage_layers_text(stage_layers);
    if (int64_t(stage_layers.size()) != stages)
      throw std::invalid_argument(given + ": lists " + std::to_string(stage_layers.size()) +
                                  " stages, parallel.pipeline is " + std::to_string(stages));
    int64_t sum = 0;
    for (size_t s = 0; s < stage_layers.size(); ++s) {
      if (stage_layers[s] < 1)
        throw std::invalid_argument(given + ": stage " + std::to_string(s) + " gets " +
                                    std::to_string(stage_layers[s]) +
                                    " layers; every stage needs at least one");
      sum += stage_layers[s];
    }
    if (sum != layers)
      throw std::invalid_argument(given + ": the counts sum to " + std::to_string(sum) +
                                  ", model.layers is " + std::to_string(layers));
    counts = stage_layers;
  }
  std::vector<PipelineStage> plan(counts.size());
  int64_t next = 0;
  for (size_t s = 0; s < counts.size(); ++s) {
    plan[s].first_layer = next;
    next += counts[s];
    plan[s].end_layer = next;
    plan[s].has_embedding = s == 0;
    plan[s].has_head = s + 1 == counts.size();
  }
  return plan;
}

PipelineStage stage_of(int64_t layers, int64_t stages, int64_t stage,
                       const std::vector<int64_t>& stage_layers) {
  if (stage < 0 || stage >= stages)
    throw std::invalid_argument("pipeline stage " + std::to_string(stage) + " does not exist in " +
                                std::to_string(stages) + " stages (parallel.pipeline)");
  return partition_layers(layers, stages, stage_layers)[size_t(stage)];
}

}  // namespace cmpi::parallel
