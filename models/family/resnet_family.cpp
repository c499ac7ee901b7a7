#include "models/family/resnet_family.h"

#include <string>

#include "config/config_loader.h"
#include "models/cnn/spatial_resnet_check.h"
#include "parallel/pipeline/pipeline_stages.h"
#include "parallel/spatial/tile_geometry.h"

namespace cmpi::models {
namespace {

using config::Config;
using config::fail_at;

void check_bidirectional(const Config& c) {
  if (c.parallel.pipeline < 2)
    fail_at(c, "parallel.bidirectional",
            "needs a pipeline (parallel.pipeline >= 2), got parallel.pipeline " +
                std::to_string(c.parallel.pipeline));
  if (c.parallel.zero_stage > 1)
    fail_at(c, "parallel.zero_stage",
            "the bi-directional pipeline supports ZeRO stages 0 and 1, got " +
                std::to_string(c.parallel.zero_stage));
  if (c.eval.every > 0)
    fail_at(c, "eval.every", "evaluation is not implemented with parallel.bidirectional");
}

// A ResNet's keys against the rest: its data, the layouts it supports.
void validate(const Config& c) {
  if (c.parallel.bidirectional) check_bidirectional(c);
  if (c.data.kind != config::DataKind::kImages)
    fail_at(c, "data.kind",
            std::string("model.kind resnet trains on images (data.kind: images), got ") +
                config::name_of(c.data.kind));
  if (c.parallel.tensor > 1)
    fail_at(c, "parallel.tensor",
            "model.kind resnet has no tensor-parallel layers; use parallel.tensor 1, got " +
                std::to_string(c.parallel.tensor));
  if (c.parallel.spatial > 1 && c.parallel.zero_stage > 1)
    fail_at(c, "parallel.zero_stage",
            "spatial parallelism (parallel.spatial " + std::to_string(c.parallel.spatial) +
                ") supports ZeRO stages 0 and 1 (the spatial gradients are summed over sp "
                "before the dp reduction), got " +
                std::to_string(c.parallel.zero_stage));
  if (c.parallel.spatial_stages > c.parallel.pipeline)
    fail_at(c, "parallel.spatial_stages",
            "cannot exceed parallel.pipeline (" + std::to_string(c.parallel.pipeline) + "), got " +
                std::to_string(c.parallel.spatial_stages));
  if (c.training.precision != config::Precision::kFp32)
    fail_at(c, "training.precision",
            std::string("model.kind resnet trains in fp32 only (mixed precision covers the GPT), "
                        "got ") +
                config::name_of(c.training.precision));
  if (c.parallel.sequence_parallel)
    fail_at(c, "parallel.sequence_parallel",
            "splits a GPT's token sequence over the tp ranks; model.kind resnet has no tensor "
            "parallelism (its spatial parallelism is parallel.spatial)");
  if (c.training.on_nonfinite != "abort")
    fail_at(c, "training.on_nonfinite",
            "model.kind resnet supports only abort (a skipped step would still have updated "
            "the BatchNorm running statistics), got " +
                c.training.on_nonfinite);
  if (c.training.recompute == "selective")
    fail_at(c, "training.recompute",
            "model.kind resnet has no attention core, which selective recomputes; use full "
            "(whole bottleneck blocks) or none");
}

// Every layer of the spatial stages must fit the tile grid (named errors of
// the tile geometry, reported at the key the user can change).
void check_spatial_geometry(const Config& c) {
  const config::ParallelConfig& p = c.parallel;
  const auto plan = resnet_layers(resnet_options(c.model, c.run.seed));
  const int64_t spatial_stages = p.spatial_stages > 0 ? p.spatial_stages : p.pipeline;
  const auto stages = parallel::partition_layers(int64_t(plan.size()), p.pipeline, p.stage_layers);
  const auto slicing = parallel::spatial::parse_slicing(p.spatial_slicing);
  try {
    for (int64_t s = 0; s < spatial_stages; ++s)
      check_spatial_resnet_layers(plan, stages[size_t(s)].first_layer, stages[size_t(s)].end_layer,
                                  int(p.spatial), slicing);
  } catch (const parallel::spatial::GeometryError& e) {
    const std::string why = e.what();
    const bool slicing_at_fault = why.find("square number") != std::string::npos;
    const std::string key = slicing_at_fault                      ? "parallel.spatial_slicing"
                            : c.origins.count("parallel.spatial") ? "parallel.spatial"
                                                                  : "model.image_size";
    fail_at(c, key, why);
  }
}

void validate_layout(const Config& c, const parallel::ParallelDims&) {
  const config::ParallelConfig& p = c.parallel;
  if (p.stage_layers.empty() && p.pipeline_balance == "auto")
    fail_at(c, "parallel.pipeline_balance",
            "auto weighs the GPT's embedding, blocks and head by their memory; model.kind resnet "
            "takes uniform or a list of layer counts per stage");
  if (p.spatial > 1) check_spatial_geometry(c);
}

parallel::ModelShape layout_shape(const config::ModelConfig& model) {
  parallel::ModelShape shape;
  shape.layers = resnet_layer_count(model.depth);
  shape.image_rows = model.image_size;
  return shape;
}

std::string layer_count_note(const config::ModelConfig& model) {
  return "model.depth " + std::to_string(model.depth) + " makes " +
         std::to_string(resnet_layer_count(model.depth)) +
         " layers: the stem, each bottleneck block, the head";
}

// The split's message speaks of model.layers; a ResNet's come from its depth.
std::string explain_stage_split(const config::ModelConfig& model, std::string why) {
  const std::string gpt_layers = "model.layers is ";
  const size_t at = why.find(gpt_layers);
  if (at != std::string::npos) why.replace(at, gpt_layers.size(), "the ResNet has ");
  return why + " (" + layer_count_note(model) + ")";
}

std::map<std::string, int64_t> checkpoint_shape_of(const config::ModelConfig& m) {
  return {{"depth", m.depth},
          {"width", m.width},
          {"image_size", m.image_size},
          {"channels", m.channels},
          {"classes", m.classes}};
}

}  // namespace

ResnetOptions resnet_options(const config::ModelConfig& m, uint64_t seed) {
  ResnetOptions o;
  o.depth = m.depth;
  o.width = m.width;
  o.image_size = m.image_size;
  o.channels = m.channels;
  o.classes = m.classes;
  o.seed = seed;
  o.activation = parse_activation(m.activation);
  return o;
}

ModelFamilySpec resnet_family() {
  ModelFamilySpec spec;
  spec.id = config::ModelFamily::kResnet;
  spec.validate = validate;
  spec.validate_layout = validate_layout;
  spec.layout_shape = layout_shape;
  spec.layer_count_note = layer_count_note;
  spec.explain_stage_split = explain_stage_split;
  spec.checkpoint_shape = checkpoint_shape_of;
  spec.reads_tokens = false;
  return spec;
}

}  // namespace cmpi::models
