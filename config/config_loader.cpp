// Loading works in three passes over one YAML tree: the `--set` overrides are
// written into the tree; each section is read into its struct by a MapReader
// (types, ranges and unknown keys checked key by key, each key's position
// recorded); then the checks that relate keys to each other run on the typed
// Config, naming the key at fault by its recorded position.
#include "config/config_loader.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "comm/powersgd_settings.h"
#include "compress/codec_registry.h"
#include "config/compression_config.h"
#include "config/config_limits.h"
#include "config/config_overrides.h"
#include "config/config_sections.h"
#include "config/model_shape.h"
#include "config/spatial_resnet_check.h"
#include "data/tokenizer.h"
#include "models/cnn/resnet_plan.h"
#include "parallel/parallel_dims.h"
#include "parallel/pipeline_stages.h"
#include "parallel/spatial/tile_geometry.h"

namespace cmpi::config {
namespace {

[[noreturn]] void fail_at(const Config& config, const std::string& key, const std::string& why) {
  throw ConfigError(origin_of(config, key) + ": " + key + ": " + why);
}

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
parallel::MeshSizes requested_sizes(const ParallelConfig& p) {
  parallel::MeshSizes sizes{};
  sizes[size_t(parallel::MeshDim::kDp)] = p.data;
  sizes[size_t(parallel::MeshDim::kTp)] = p.tensor;
  sizes[size_t(parallel::MeshDim::kPp)] = p.pipeline;
  sizes[size_t(parallel::MeshDim::kSp)] = p.spatial;
  return sizes;
}

parallel::ModelShape model_shape(const ModelConfig& model) {
  parallel::ModelShape shape;
  if (model.kind == "resnet") {
    shape.layers = models::resnet_layer_count(model.depth);
    shape.image_rows = model.image_size;
    return shape;
  }
  shape.layers = model.layers;
  shape.heads = model.heads;
  shape.hidden = model.hidden;
  shape.vocab_size = model.vocab_size;
  shape.image_rows = 0;  // a GPT has no spatial dimension
  return shape;
}

// "parallel (data: auto, tensor: 2, pipeline: 1, spatial: 1)"
std::string layout_text(const ParallelConfig& p) {
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
  const ParallelConfig& p = config.parallel;
  try {
    return parallel::ParallelDims::resolve(requested_sizes(p), p.zero_stage, world_size,
                                           model_shape(config.model));
  } catch (const parallel::LayoutError& e) {
    const std::string key = layout_key_at_fault(config, key_of_group(e.what()));
    std::string why = e.what();
    if (config.model.kind == "resnet")
      why += " (model.kind resnet: model.depth " + std::to_string(config.model.depth) + " makes " +
             std::to_string(models::resnet_layer_count(config.model.depth)) +
             " layers: the stem, each bottleneck block, the head)";
    fail_at(config, key, layout_text(p) + world_text + ": " + why);
  }
}

// Checks relating keys to each other, and the layout against the model for
// the smallest world it fits (the world size itself is only known at launch).
// A ResNet's keys against the rest: its data, the layouts it supports.
void check_resnet(const Config& c) {
  if (c.data.kind != "images")
    fail_at(c, "data.kind",
            "model.kind resnet trains on images (data.kind: images), got " + c.data.kind);
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
  if (c.training.precision != "fp32")
    fail_at(c, "training.precision",
            "model.kind resnet trains in fp32 only (mixed precision covers the GPT), got " +
                c.training.precision);
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
  const ParallelConfig& p = c.parallel;
  const auto plan = models::resnet_layers(resnet_options(c.model, c.run.seed));
  const int64_t spatial_stages = p.spatial_stages > 0 ? p.spatial_stages : p.pipeline;
  const auto stages = parallel::partition_layers(int64_t(plan.size()), p.pipeline, p.stage_layers);
  const auto slicing = parallel::spatial::parse_slicing(p.spatial_slicing);
  try {
    for (int64_t s = 0; s < spatial_stages; ++s)
      models::check_spatial_resnet_layers(plan, stages[size_t(s)].first_layer,
                                          stages[size_t(s)].end_layer, int(p.spatial), slicing);
  } catch (const parallel::spatial::GeometryError& e) {
    const std::string why = e.what();
    const bool slicing_at_fault = why.find("square number") != std::string::npos;
    const std::string key = slicing_at_fault                      ? "parallel.spatial_slicing"
                            : c.origins.count("parallel.spatial") ? "parallel.spatial"
                                                                  : "model.image_size";
    fail_at(c, key, why);
  }
}

void check_bidirectional(const Config& c) {
  if (c.model.kind != "resnet")
    fail_at(c, "parallel.bidirectional",
            "the bi-directional pipeline is implemented for model.kind resnet only");
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

// Rotary dimensions turn in pairs (models/rotary_embedding.h): each head
// needs an even, positive number of them.
void check_rotary(const Config& c) {
  const int64_t head_dim = c.model.hidden / c.model.heads;
  const int64_t dims = gpt_options(c.model).rotary_dims();
  if (dims < 2 || dims % 2 != 0)
    fail_at(c, "model.rotary_pct",
            "rotates head_dim x rotary_pct = " + std::to_string(head_dim) + " x " +
                format_real(c.model.rotary_pct) + " -> " + std::to_string(dims) +
                " dimensions per head (rounded down); rotary needs an even number >= 2");
}

// The key the user wrote the split under (the newer one unless only the
// older was given), for errors about it.
std::string stage_layers_key(const Config& c) {
  return c.origins.count("parallel.stage_layers") ? "parallel.stage_layers"
                                                  : "parallel.pipeline_balance";
}

void check_consistency(const Config& c) {
  if (c.parallel.bidirectional) check_bidirectional(c);
  if (c.model.kind == "resnet") {
    check_resnet(c);
  } else if (c.data.kind == "images") {
    fail_at(c, "data.kind", "images are read only by model.kind resnet (model.kind is gpt)");
  }
  if (c.model.kind == "gpt" && c.model.hidden % c.model.heads != 0)
    fail_at(c, "model.heads",
            "model.hidden (" + std::to_string(c.model.hidden) +
                ") must be divisible by model.heads (" + std::to_string(c.model.heads) + ")");
  if (c.model.kind == "gpt" && c.model.position == "rotary") check_rotary(c);
  if (c.model.kind == "gpt" && c.parallel.sequence_parallel &&
      c.model.seq_len % c.parallel.tensor != 0)
    fail_at(c, "parallel.sequence_parallel",
            "splits every sequence over the parallel.tensor (" + std::to_string(c.parallel.tensor) +
                ") ranks, so model.seq_len (" + std::to_string(c.model.seq_len) +
                ") must be divisible by it");
  if (c.training.global_batch % c.training.micro_batch != 0)
    fail_at(c, "training.global_batch",
            "must be a multiple of training.micro_batch (" +
                std::to_string(c.training.micro_batch) + "), got " +
                std::to_string(c.training.global_batch));
  if (c.training.recompute_layers > 0 && c.training.recompute != "full")
    fail_at(c, "training.recompute_layers",
            "counts the blocks recomputed whole, so it needs training.recompute: full (got " +
                c.training.recompute + ")");
  if (c.training.min_lr > c.training.lr)
    fail_at(c, "training.min_lr",
            "must be <= training.lr (" + format_real(c.training.lr) + "), got " +
                format_real(c.training.min_lr));
  if (c.training.warmup_steps > c.training.steps)
    fail_at(c, "training.warmup_steps",
            "must be <= training.steps (" + std::to_string(c.training.steps) + "), got " +
                std::to_string(c.training.warmup_steps));
  if (c.parallel.zero_gradient_memory == "shard" && c.parallel.zero_stage < 2)
    fail_at(c, "parallel.zero_gradient_memory",
            "shard keeps only the 1/dp gradient shard, which needs parallel.zero_stage 2 or 3, "
            "got " +
                std::to_string(c.parallel.zero_stage));
  // PowerSGD replaces the dp gradient allreduce of ZeRO stages 0/1 (its
  // per-rank state goes into checkpoints: checkpoint/rank_state.h).
  for (const comm::PolicyRule& rule : c.compression.rules) {
    if (!rule.codec || !comm::is_powersgd(*rule.codec)) continue;
    if (c.parallel.zero_stage >= 2)
      fail_at(c, "parallel.zero_stage",
              "compression rule " + rule.origin +
                  " uses powersgd, which replaces the gradient allreduce of zero_stage 0 and 1; "
                  "stage " +
                  std::to_string(c.parallel.zero_stage) +
                  " reduce-scatters the gradients, which a low-rank factorisation cannot do");
  }
  if (c.eval.every > 0 && c.data.kind == "indexed" && c.data.split[1] == 0)
    fail_at(c, "data.split",
            "eval.every is " + std::to_string(c.eval.every) +
                " but the valid share (second item) is 0: no documents are held out");
  if (!c.data.tokenizer.empty()) {
    uint64_t ids = 0;
    try {
      ids = data::make_tokenizer(c.data.tokenizer, "", "")->vocab_size();
    } catch (const std::exception& e) {
      fail_at(c, "data.tokenizer", e.what());
    }
    if (ids > uint64_t(c.model.vocab_size))
      fail_at(c, "model.vocab_size",
              "is " + std::to_string(c.model.vocab_size) + " but data.tokenizer " +
                  c.data.tokenizer + " has " + std::to_string(ids) + " ids");
  }
  if (c.model.kind == "gpt" && c.data.branching > c.model.vocab_size)
    fail_at(c, "data.branching",
            "a token cannot have more successors than model.vocab_size (" +
                std::to_string(c.model.vocab_size) + "), got " + std::to_string(c.data.branching));

  const ParallelConfig& p = c.parallel;
  const __int128 ranks = __int128(p.data > 0 ? p.data : 1) * p.tensor * p.pipeline * p.spatial;
  if (ranks > kMaxRanks)
    fail_at(c, "parallel.data",
            layout_text(p) + " needs more than " + std::to_string(kMaxRanks) + " ranks");
  resolve_layout(c, int(ranks), "");
  if (!p.stage_layers.empty()) {
    try {
      parallel::partition_layers(model_shape(c.model).layers, p.pipeline, p.stage_layers);
    } catch (const std::invalid_argument& e) {
      const std::string prefix = "parallel.stage_layers ";
      std::string why = e.what();
      if (why.compare(0, prefix.size(), prefix) == 0) why = why.substr(prefix.size());
      const std::string gpt_layers = "model.layers is ";
      const size_t at = why.find(gpt_layers);
      if (c.model.kind == "resnet" && at != std::string::npos)
        why.replace(at, gpt_layers.size(), "the ResNet has ");
      if (c.model.kind == "resnet")
        why += " (model.depth " + std::to_string(c.model.depth) + " makes " +
               std::to_string(models::resnet_layer_count(c.model.depth)) +
               " layers: the stem, each bottleneck block, the head)";
      fail_at(c, stage_layers_key(c), why);
    }
  }
  if (c.model.kind == "resnet" && p.stage_layers.empty() && p.pipeline_balance == "auto")
    fail_at(c, "parallel.pipeline_balance",
            "auto weighs the GPT's embedding, blocks and head by their memory; model.kind resnet "
            "takes uniform or a list of layer counts per stage");
  if (c.model.kind == "resnet" && p.spatial > 1) check_spatial_geometry(c);
}

Config parse_tree(YAML::Node root, const std::string& source,
                  const std::vector<std::string>& overrides) {
  ReadContext context(source);
  Config config;
  config.source = source;
  try {
    for (const std::string& text : overrides) apply_override(root, text, context);
    MapReader top(root, "", context);
    read_run(top.section("run"), config.run);
    read_model(top.section("model"), config.model);
    read_parallel(top.section("parallel"), config.parallel);
    read_training(top.section("training"), config.training);
    read_data(top.section("data"), config.data);
    read_eval(top.section("eval"), config.eval);
    config.compression = read_compression_config(top.section("compression"),
                                                 compress::CodecRegistry::with_builtin_codecs());
    read_checkpoint(top.section("checkpoint"), config.checkpoint);
    read_log(top.section("log"), config.log);
    top.finish();
  } catch (const YAML::Exception& e) {
    // The reader checks node kinds before using them; this is a safety net.
    throw ConfigError(source + ": unreadable config: " + e.what());
  }
  config.origins = context.locations();
  // A ResNet reads images unless data.kind says otherwise (then refused).
  if (config.model.kind == "resnet" && !config.origins.count("data.kind"))
    config.data.kind = "images";
  check_size_limits(config);
  check_consistency(config);
  return config;
}

}  // namespace

std::string read_config_text(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw ConfigError(path + ": is a directory, not a config file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open the config file: " + std::strerror(errno));
  std::string text;
  char block[1 << 16];
  while (in.read(block, sizeof block) || in.gcount() > 0) {
    text.append(block, size_t(in.gcount()));
    if (text.size() > kMaxConfigBytes)
      throw ConfigError(path + ": is larger than " + format_size(int64_t(kMaxConfigBytes)) +
                        "; that is not a config file");
  }
  if (in.bad()) throw ConfigError(path + ": cannot read the config file: " + std::strerror(errno));
  return text;
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  return parse_config(read_config_text(path), path, overrides);
}

Config parse_config(const std::string& yaml_text, const std::string& source,
                    const std::vector<std::string>& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(source + ":" + std::to_string(e.mark.line + 1) +
                      ": not valid YAML: " + e.msg);
  }
  // An empty file is far more often a failed copy, a wrong path or a stdin
  // only one rank could read than a wish for every default.
  if (root.IsNull())
    throw ConfigError(source +
                      ": the config is empty (nothing but whitespace or comments); to run with "
                      "every default on purpose, write `{}` in it");
  return parse_tree(root, source, overrides);
}

parallel::ParallelDims validate_layout(const Config& config, int world_size) {
  if (world_size < 1)
    throw ConfigError("world size must be >= 1, got " + std::to_string(world_size));
  const std::string world_text = " on " + std::to_string(world_size) + " ranks";
  const parallel::ParallelDims dims = resolve_layout(config, world_size, world_text);
  const TrainingConfig& t = config.training;
  const int64_t per_step = t.micro_batch * dims.dp;
  if (t.global_batch % per_step != 0)
    fail_at(config, "training.global_batch",
            std::to_string(t.global_batch) + " sequences do not split into micro-batches of " +
                std::to_string(t.micro_batch) + " over " + std::to_string(dims.dp) +
                " data-parallel ranks (" + dims.to_string() + world_text + "): it must be a " +
                "multiple of training.micro_batch x dp = " + std::to_string(per_step));
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

std::string to_yaml(const Config& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  const auto section = [&out](const char* name, const auto& write) {
    out << YAML::Key << name << YAML::Value << YAML::BeginMap;
    write(out);
    out << YAML::EndMap;
  };
  section("run", [&](YAML::Emitter& o) { write_run(o, c.run); });
  section("model", [&](YAML::Emitter& o) { write_model(o, c.model); });
  section("parallel", [&](YAML::Emitter& o) { write_parallel(o, c.parallel); });
  section("training", [&](YAML::Emitter& o) { write_training(o, c.training); });
  section("data", [&](YAML::Emitter& o) { write_data(o, c.data); });
  section("eval", [&](YAML::Emitter& o) { write_eval(o, c.eval); });
  section("compression", [&](YAML::Emitter& o) { write_compression_config(o, c.compression); });
  section("checkpoint", [&](YAML::Emitter& o) { write_checkpoint(o, c.checkpoint); });
  section("log", [&](YAML::Emitter& o) { write_log(o, c.log); });
  out << YAML::EndMap;
  const std::string from = c.source.empty() ? "" : " of " + c.source;
  return "# Resolved config" + from + ": every key, defaults included.\n" + out.c_str() + "\n";
}

std::string origin_of(const Config& config, const std::string& key_path) {
  const auto it = config.origins.find(key_path);
  if (it != config.origins.end()) return it->second;
  return config.source.empty() ? std::string("<config>") : config.source;
}

}  // namespace cmpi::config
