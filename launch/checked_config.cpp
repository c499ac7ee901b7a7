#include "launch/checked_config.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "config/config_loader.h"
#include "config/config_sections.h"
#include "data/tokenizer_check.h"
#include "models/family/model_family.h"
#include "parallel/pipeline/pipeline_stages.h"
#include "plan/peak_flops.h"

namespace cmpi::launch {
namespace {

using config::Config;
using config::fail_at;

// The config key that sets the size of a group ParallelDims complains about.
std::string key_of_group(const std::string& layout_message) {
  const std::string group = layout_message.substr(0, layout_message.find(' '));
  if (group == "zero") return "parallel.zero_stage";
  for (const parallel::MeshDimInfo& d : parallel::kMesh)
    if (group == comm::to_string(d.group)) return std::string("parallel.") + d.config_key;
  return "parallel.data";
}

// The key a layout error is reported at: the group's own key if the user
// wrote it; otherwise (parallel.data left at auto) the layout key the user
// did write, since that is what they can change. Falls back to the group's
// key, which then points at the config file without a line.
std::string layout_key_at_fault(const Config& config, const std::string& group_key) {
  if (config.origins.count(group_key)) return group_key;
  for (const parallel::MeshDimInfo& d : parallel::kMesh) {
    const std::string key = std::string("parallel.") + d.config_key;
    if (!d.auto_sized && config.origins.count(key)) return key;
  }
  return group_key;
}

// The sizes the parallel section asks for, one per mesh dimension: the one
// place a new dimension's config key meets its MeshDim.
parallel::MeshSizes requested_sizes(const config::ParallelConfig& p) {
  parallel::MeshSizes sizes{};
  sizes[size_t(parallel::MeshDim::kDp)] = p.data;
  sizes[size_t(parallel::MeshDim::kTp)] = p.tensor;
  sizes[size_t(parallel::MeshDim::kPp)] = p.pipeline;
  sizes[size_t(parallel::MeshDim::kSp)] = p.spatial;
  sizes[size_t(parallel::MeshDim::kCp)] = p.context;
  return sizes;
}

// "parallel (data: auto, tensor: 2, pipeline: 1, spatial: 1)"
std::string layout_text(const config::ParallelConfig& p) {
  const parallel::MeshSizes sizes = requested_sizes(p);
  std::string text;
  for (const parallel::MeshDimInfo& d : parallel::kMesh) {
    const int64_t size = sizes[size_t(d.dim)];
    text += std::string(text.empty() ? "" : ", ") + d.config_key + ": " +
            (d.auto_sized && size <= 0 ? std::string("auto") : std::to_string(size));
  }
  return "parallel (" + text + ")";
}

parallel::ParallelDims resolve_layout(const Config& config, int world_size,
                                      const std::string& world_text) {
  const config::ParallelConfig& p = config.parallel;
  const models::ModelFamilySpec& family = models::family_of(config.model);
  try {
    return parallel::ParallelDims::resolve(requested_sizes(p), p.zero_stage, world_size,
                                           family.layout_shape(config.model));
  } catch (const parallel::LayoutError& e) {
    const std::string key = layout_key_at_fault(config, key_of_group(e.what()));
    std::string why = e.what();
    if (family.layer_count_note)
      why += std::string(" (model.kind ") + config::name_of(config.model.kind) + ": " +
             family.layer_count_note(config.model) + ")";
    fail_at(config, key, layout_text(p) + world_text + ": " + why);
  }
}

// The key the user wrote the split under (the newer one unless only the
// older was given), for errors about it.
std::string stage_layers_key(const Config& c) {
  return c.origins.count("parallel.stage_layers") ? "parallel.stage_layers"
                                                  : "parallel.pipeline_balance";
}

// The layout against the model for the smallest world it fits (the world
// size itself is only known at launch), and the explicit stage split.
parallel::ParallelDims check_smallest_layout(const Config& c) {
  const config::ParallelConfig& p = c.parallel;
  // Every dimension's requested size, the auto-sized one (data) taken as 1.
  const parallel::MeshSizes sizes = requested_sizes(p);
  __int128 ranks = 1;
  for (const parallel::MeshDimInfo& d : parallel::kMesh)
    ranks *= __int128(std::max<int64_t>(sizes[size_t(d.dim)], 1));
  if (ranks > config::kMaxRanks)
    fail_at(c, "parallel.data",
            layout_text(p) + " needs more than " + std::to_string(config::kMaxRanks) + " ranks");
  const parallel::ParallelDims dims = resolve_layout(c, int(ranks), "");
  if (!p.stage_layers.empty()) {
    const models::ModelFamilySpec& family = models::family_of(c.model);
    try {
      parallel::partition_layers(family.layout_shape(c.model).layers, p.pipeline, p.stage_layers);
    } catch (const std::invalid_argument& e) {
      const std::string prefix = "parallel.stage_layers ";
      std::string why = e.what();
      if (why.compare(0, prefix.size(), prefix) == 0) why = why.substr(prefix.size());
      if (family.explain_stage_split) why = family.explain_stage_split(c.model, why);
      fail_at(c, stage_layers_key(c), why);
    }
  }
  return dims;
}

}  // namespace

void check_domains(const Config& c) {
  const models::ModelFamilySpec& family = models::family_of(c.model);
  family.validate(c);
  data::check_tokenizer_fits(c);
  const parallel::ParallelDims dims = check_smallest_layout(c);
  if (family.validate_layout) family.validate_layout(c, dims);
  try {
    plan::resolve_peak_flops(c.run.peak_flops, c.training.precision);
  } catch (const std::invalid_argument& e) {
    fail_at(c, "run.peak_flops", e.what());
  }
}

Config parse_checked_config(const std::string& yaml_text, const std::string& source,
                            const std::vector<std::string>& overrides) {
  Config config = config::parse_config(yaml_text, source, overrides);
  check_domains(config);
  return config;
}

Config load_checked_config(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_checked_config(config::read_config_text(path), path, overrides);
}

Config parse_checked_configs(const std::vector<config::ConfigText>& files,
                             const std::vector<std::string>& overrides) {
  Config config = config::parse_configs(files, overrides);
  check_domains(config);
  return config;
}

Config load_checked_config(const std::vector<std::string>& paths,
                           const std::vector<std::string>& overrides) {
  std::vector<config::ConfigText> files;
  for (const std::string& path : paths) files.push_back({path, config::read_config_text(path)});
  return parse_checked_configs(files, overrides);
}

parallel::ParallelDims validate_layout(const Config& config, int world_size) {
  if (world_size < 1)
    throw config::ConfigError("world size must be >= 1, got " + std::to_string(world_size));
  const std::string world_text = " on " + std::to_string(world_size) + " ranks";
  const parallel::ParallelDims dims = resolve_layout(config, world_size, world_text);
  const config::TrainingConfig& t = config.training;
  const int64_t per_step = t.micro_batch * dims.dp;
  if (t.global_batch % per_step != 0)
    fail_at(config, "training.global_batch",
            std::to_string(t.global_batch) + " sequences do not split into micro-batches of " +
                std::to_string(t.micro_batch) + " over " + std::to_string(dims.dp) +
                " data-parallel ranks (" + dims.to_string() + world_text + "): it must be a " +
                "multiple of training.micro_batch x dp = " + std::to_string(per_step));
  if (config.parallel.dp_sync == "diloco" && dims.dp == 1)
    fail_at(config, "parallel.dp_sync",
            "diloco averages the pseudo-gradients of the data-parallel replicas, but " +
                dims.to_string() + world_text +
                " has one replica (dp = 1); use every_step, or more ranks");
  const int64_t micro_batches = t.global_batch / per_step;
  if (config.parallel.bidirectional && micro_batches % 2 != 0)
    fail_at(config, "training.global_batch",
            std::to_string(t.global_batch) + " images make " + std::to_string(micro_batches) +
                " micro-batches per data-parallel rank (" + dims.to_string() + world_text +
                "); parallel.bidirectional splits them between its two replicas, so it needs an "
                "even number: a multiple of 2 x training.micro_batch x dp = " +
                std::to_string(2 * per_step));
  return dims;
}

}  // namespace cmpi::launch
