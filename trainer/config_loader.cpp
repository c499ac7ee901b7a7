// Loading works in three passes over one YAML tree: the `--set` overrides are
// written into the tree; each section is read into its struct by a MapReader
// (types, ranges and unknown keys checked key by key, each key's position
// recorded); then the checks that relate keys to each other run on the typed
// Config, naming the key at fault by its recorded position.
#include "trainer/config_loader.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "comm/powersgd_settings.h"
#include "compress/codec_registry.h"
#include "data/tokenizer.h"
#include "models/cnn/resnet_plan.h"
#include "parallel/pipeline_stages.h"
#include "parallel/spatial/tile_geometry.h"
#include "trainer/compression_config.h"
#include "trainer/config_limits.h"
#include "trainer/config_overrides.h"
#include "trainer/model_shape.h"
#include "trainer/spatial_resnet_check.h"

namespace cmpi::trainer {
namespace {

// Upper bound for each parallel dimension and for the ranks they multiply to,
// so that layout arithmetic stays far inside int.
constexpr int64_t kMaxRanks = int64_t(1) << 24;

RealRange at_least(double min) {
  return {min, std::numeric_limits<double>::max(), false, false};
}
RealRange above(double min) {
  return {min, std::numeric_limits<double>::max(), true, false};
}
RealRange unit_interval_open_top() {
  return {0.0, 1.0, false, true};
}

[[noreturn]] void fail_at(const Config& config, const std::string& key, const std::string& why) {
  throw ConfigError(origin_of(config, key) + ": " + key + ": " + why);
}

void read_run(MapReader r, RunConfig& run) {
  r.read("name", run.name);
  r.read("dir", run.dir);
  r.read("seed", run.seed);
  r.read("memory_check", run.memory_check);
  if (run.name.find('/') != std::string::npos || run.name == "." || run.name == "..")
    r.fail("name",
           "must be a plain directory name (the run directory is run.dir/run.name), got \"" +
               run.name + "\"");
  r.finish();
}

void read_model(MapReader r, ModelConfig& model) {
  r.read("kind", model.kind, {"gpt", "resnet"});
  r.read("vocab_size", model.vocab_size, positive());
  r.read("seq_len", model.seq_len, positive());
  r.read("layers", model.layers, positive());
  r.read("hidden", model.hidden, positive());
  r.read("heads", model.heads, positive());
  r.read("mlp_ratio", model.mlp_ratio, positive());
  r.read("dropout", model.dropout, unit_interval_open_top());
  r.read("init_std", model.init_std, above(0.0));
  r.read("tie_embeddings", model.tie_embeddings);
  r.read("depth", model.depth, positive());
  r.read("width", model.width, positive());
  r.read("image_size", model.image_size, IntRange{4, std::numeric_limits<int64_t>::max()});
  r.read("channels", model.channels, positive());
  r.read("classes", model.classes, IntRange{2, std::numeric_limits<int64_t>::max()});
  r.read("activation", model.activation, {"relu", "silu"});
  if (model.kind == "resnet" && (model.depth < 11 || (model.depth - 2) % 9 != 0))
    r.fail("depth", "a ResNet's depth must be 9n + 2 with n >= 1 (11, 20, 29, ..., 110), got " +
                        std::to_string(model.depth));
  r.finish();
}

// `balanced` (or absent) -> empty; else a list of positive layer counts.
// How the counts relate to parallel.pipeline and model.layers is checked in
// check_consistency.
void read_stage_layers(MapReader& r, std::vector<int64_t>& out) {
  const YAML::Node node = r.take("stage_layers");
  const std::string expected = "`balanced` or a list of layer counts per stage, e.g. [3, 1]";
  if (!node.IsDefined() || node.IsNull() || (node.IsScalar() && node.Scalar() == "balanced"))
    return;
  if (!node.IsSequence() || node.size() == 0) r.fail("stage_layers", "expected " + expected);
  out.clear();
  for (const YAML::Node& item : node) {
    const auto count = item.IsScalar() ? parse_integer(item.Scalar()) : std::nullopt;
    if (!count || *count < 1)
      r.context().fail(r.key_path("stage_layers"), item,
                       "every stage needs a whole number of layers >= 1, got " +
                           (item.IsScalar() ? "'" + item.Scalar() + "'" : std::string("a list")));
    out.push_back(*count);
  }
}

void read_parallel(MapReader r, ParallelConfig& parallel) {
  const IntRange dimension{1, kMaxRanks};
  r.read_or_auto("data", parallel.data, dimension, 0);
  r.read("tensor", parallel.tensor, dimension);
  r.read("pipeline", parallel.pipeline, dimension);
  r.read("spatial", parallel.spatial, dimension);
  r.read("zero_stage", parallel.zero_stage, IntRange{0, 3});
  r.read("zero3_gather", parallel.zero3_gather, {"layer", "model"});
  r.read("schedule", parallel.schedule, {"gpipe", "1f1b"});
  read_stage_layers(r, parallel.stage_layers);
  r.read_size("dp_bucket_bytes", parallel.dp_bucket_bytes);
  r.read("bidirectional", parallel.bidirectional);
  r.read("spatial_slicing", parallel.spatial_slicing, {"square", "vertical", "horizontal"});
  r.read("spatial_stages", parallel.spatial_stages, IntRange{0, kMaxRanks});
  r.finish();
}

void read_training(MapReader r, TrainingConfig& training) {
  r.read("steps", training.steps, positive());
  r.read("global_batch", training.global_batch, positive());
  r.read("micro_batch", training.micro_batch, positive());
  r.read("lr", training.lr, above(0.0));
  r.read("min_lr", training.min_lr, at_least(0.0));
  r.read("warmup_steps", training.warmup_steps, non_negative());
  r.read("weight_decay", training.weight_decay, at_least(0.0));
  r.read("beta1", training.beta1, unit_interval_open_top());
  r.read("beta2", training.beta2, unit_interval_open_top());
  r.read("eps", training.eps, above(0.0));
  r.read("grad_clip", training.grad_clip, at_least(0.0));
  r.read("threads", training.threads, IntRange{1, 1024});
  r.read("overlap_grad_reduce", training.overlap_grad_reduce);
  r.read("on_nonfinite", training.on_nonfinite, {"abort", "skip_step"});
  r.read("max_skipped_steps", training.max_skipped_steps, positive());
  r.finish();
}

// A string or a list of strings (paths), else an error naming the key.
std::vector<std::string> read_string_list(MapReader& r, const std::string& key) {
  const YAML::Node node = r.take(key);
  if (!node.IsDefined() || node.IsNull()) return {};
  if (node.IsScalar()) return {node.Scalar()};
  if (!node.IsSequence()) r.fail(key, "expected a path or a list of paths");
  std::vector<std::string> out;
  for (const YAML::Node& item : node) {
    if (!item.IsScalar() || item.Scalar().empty())
      r.context().fail(r.key_path(key), item, "every item must be a non-empty path");
    out.push_back(item.Scalar());
  }
  return out;
}

// A list of finite numbers >= 0, else an error naming the key.
std::vector<double> read_ratio_list(MapReader& r, const std::string& key,
                                    std::vector<double> fallback) {
  const YAML::Node node = r.take(key);
  if (!node.IsDefined() || node.IsNull()) return fallback;
  if (!node.IsSequence()) r.fail(key, "expected a list of numbers, e.g. [0.98, 0.02]");
  std::vector<double> out;
  for (const YAML::Node& item : node) {
    const auto value = item.IsScalar() ? parse_real(item.Scalar()) : std::nullopt;
    if (!value || !(*value >= 0) || !std::isfinite(*value))
      r.context().fail(r.key_path(key), item,
                       "every item must be a number >= 0, got " +
                           (item.IsScalar() ? "'" + item.Scalar() + "'" : std::string("a list")));
    out.push_back(*value);
  }
  return out;
}

void read_data(MapReader r, DataConfig& data) {
  r.read("kind", data.kind, {"markov", "indexed", "images"});
  r.read("seed", data.seed);
  r.read("branching", data.branching, positive());
  r.read("concentration", data.concentration, above(0.0));
  data.paths = read_string_list(r, "paths");
  data.weights = read_ratio_list(r, "weights", {});
  data.split = read_ratio_list(r, "split", data.split);
  r.read("cache_dir", data.cache_dir, {}, /*allow_empty=*/true);
  r.read("tokenizer", data.tokenizer, {}, /*allow_empty=*/true);
  r.read("noise", data.noise, at_least(0.0));
  if (data.kind == "indexed" && data.paths.empty())
    r.fail("paths",
           "data.kind indexed needs a dataset prefix (PREFIX.bin + PREFIX.idx) or a list of them");
  if (data.kind != "indexed" && !data.paths.empty())
    r.fail("paths", "is read only with data.kind: indexed (data.kind is " + data.kind + ")");
  if (!data.weights.empty() && data.weights.size() != data.paths.size())
    r.fail("weights", "needs one weight per entry of data.paths (" +
                          std::to_string(data.paths.size()) + "), got " +
                          std::to_string(data.weights.size()));
  double weight_sum = 0;
  for (double w : data.weights) weight_sum += w;
  if (!data.weights.empty() && !(weight_sum > 0)) r.fail("weights", "must not all be 0");
  if (data.split.size() != 2)
    r.fail("split", "expected the train and valid shares of the documents, e.g. [0.98, 0.02]");
  if (!(data.split[0] > 0)) r.fail("split", "the train share (first item) must be > 0");
  r.finish();
}

void read_eval(MapReader r, EvalConfig& eval) {
  r.read("every", eval.every, non_negative());
  r.read("batches", eval.batches, positive());
  r.finish();
}

void read_checkpoint(MapReader r, CheckpointConfig& checkpoint) {
  r.read("dir", checkpoint.dir, {}, /*allow_empty=*/true);
  r.read("every", checkpoint.every, non_negative());
  r.read("keep_last", checkpoint.keep_last, non_negative());
  r.finish();
}

void read_log(MapReader r, LogConfig& log) {
  r.read("every", log.every, positive());
  r.read("metrics_jsonl", log.metrics_jsonl);
  r.finish();
}

// The config key that sets the size of a group ParallelDims complains about.
std::string key_of_group(const std::string& layout_message) {
  const std::string group = layout_message.substr(0, layout_message.find(' '));
  if (group == "tp") return "parallel.tensor";
  if (group == "pp") return "parallel.pipeline";
  if (group == "sp") return "parallel.spatial";
  if (group == "zero") return "parallel.zero_stage";
  return "parallel.data";
}

// The key a layout error is reported at: the group's own key if the user
// wrote it; otherwise (parallel.data left at auto) the layout key the user
// did write, since that is what they can change. Falls back to the group's
// key, which then points at the config file without a line.
std::string layout_key_at_fault(const Config& config, const std::string& group_key) {
  if (config.origins.count(group_key)) return group_key;
  for (const char* key : {"parallel.tensor", "parallel.pipeline", "parallel.spatial"})
    if (config.origins.count(key)) return key;
  return group_key;
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

std::string layout_text(const ParallelConfig& p) {
  return "parallel (data: " + (p.data > 0 ? std::to_string(p.data) : std::string("auto")) +
         ", tensor: " + std::to_string(p.tensor) + ", pipeline: " + std::to_string(p.pipeline) +
         ", spatial: " + std::to_string(p.spatial) + ")";
}

parallel::ParallelDims resolve_layout(const Config& config, int world_size,
                                      const std::string& world_text) {
  const ParallelConfig& p = config.parallel;
  try {
    return parallel::ParallelDims::resolve(p.data, p.tensor, p.pipeline, p.spatial, p.zero_stage,
                                           world_size, model_shape(config.model));
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
  if (c.checkpoint.every > 0)
    fail_at(c, "checkpoint.every",
            "checkpoints are not implemented for model.kind resnet (BatchNorm running "
            "statistics are not saved); use 0, got " +
                std::to_string(c.checkpoint.every));
  if (c.training.on_nonfinite != "abort")
    fail_at(c, "training.on_nonfinite",
            "model.kind resnet supports only abort (a skipped step would still have updated "
            "the BatchNorm running statistics), got " +
                c.training.on_nonfinite);
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
  if (c.training.global_batch % c.training.micro_batch != 0)
    fail_at(c, "training.global_batch",
            "must be a multiple of training.micro_batch (" +
                std::to_string(c.training.micro_batch) + "), got " +
                std::to_string(c.training.global_batch));
  if (c.training.min_lr > c.training.lr)
    fail_at(c, "training.min_lr",
            "must be <= training.lr (" + format_real(c.training.lr) + "), got " +
                format_real(c.training.min_lr));
  if (c.training.warmup_steps > c.training.steps)
    fail_at(c, "training.warmup_steps",
            "must be <= training.steps (" + std::to_string(c.training.steps) + "), got " +
                std::to_string(c.training.warmup_steps));
  // PowerSGD replaces the dp gradient allreduce of ZeRO stages 0/1 (its
  // per-rank state goes into checkpoints: trainer/rank_state.h).
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
      fail_at(c, "parallel.stage_layers", why);
    }
  }
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

// Writes one `key: value` pair of an open mapping.
void put(YAML::Emitter& out, const char* key, const std::string& value) {
  out << YAML::Key << key << YAML::Value << value;
}
void put(YAML::Emitter& out, const char* key, int64_t value) {
  put(out, key, std::to_string(value));
}
void put(YAML::Emitter& out, const char* key, uint64_t value) {
  put(out, key, std::to_string(value));
}
void put(YAML::Emitter& out, const char* key, double value) {
  put(out, key, format_real(value));
}
void put(YAML::Emitter& out, const char* key, bool value) {
  out << YAML::Key << key << YAML::Value << value;
}

void begin_section(YAML::Emitter& out, const char* name) {
  out << YAML::Key << name << YAML::Value << YAML::BeginMap;
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

  begin_section(out, "run");
  put(out, "name", c.run.name);
  put(out, "dir", c.run.dir);
  put(out, "seed", uint64_t(c.run.seed));
  put(out, "memory_check", c.run.memory_check);
  out << YAML::EndMap;

  begin_section(out, "model");
  put(out, "kind", c.model.kind);
  put(out, "vocab_size", int64_t(c.model.vocab_size));
  put(out, "seq_len", int64_t(c.model.seq_len));
  put(out, "layers", int64_t(c.model.layers));
  put(out, "hidden", int64_t(c.model.hidden));
  put(out, "heads", int64_t(c.model.heads));
  put(out, "mlp_ratio", int64_t(c.model.mlp_ratio));
  put(out, "dropout", c.model.dropout);
  put(out, "init_std", c.model.init_std);
  put(out, "tie_embeddings", c.model.tie_embeddings);
  put(out, "depth", int64_t(c.model.depth));
  put(out, "width", int64_t(c.model.width));
  put(out, "image_size", int64_t(c.model.image_size));
  put(out, "channels", int64_t(c.model.channels));
  put(out, "classes", int64_t(c.model.classes));
  put(out, "activation", c.model.activation);
  out << YAML::EndMap;

  begin_section(out, "parallel");
  put(out, "data", c.parallel.data > 0 ? std::to_string(c.parallel.data) : std::string("auto"));
  put(out, "tensor", int64_t(c.parallel.tensor));
  put(out, "pipeline", int64_t(c.parallel.pipeline));
  put(out, "spatial", int64_t(c.parallel.spatial));
  put(out, "zero_stage", int64_t(c.parallel.zero_stage));
  put(out, "zero3_gather", c.parallel.zero3_gather);
  put(out, "schedule", c.parallel.schedule);
  if (c.parallel.stage_layers.empty()) {
    put(out, "stage_layers", std::string("balanced"));
  } else {
    out << YAML::Key << "stage_layers" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (int64_t count : c.parallel.stage_layers) out << count;
    out << YAML::EndSeq;
  }
  put(out, "dp_bucket_bytes", format_size(c.parallel.dp_bucket_bytes));
  put(out, "spatial_slicing", c.parallel.spatial_slicing);
  put(out, "spatial_stages", int64_t(c.parallel.spatial_stages));
  put(out, "bidirectional", c.parallel.bidirectional);
  out << YAML::EndMap;

  begin_section(out, "training");
  put(out, "steps", int64_t(c.training.steps));
  put(out, "global_batch", int64_t(c.training.global_batch));
  put(out, "micro_batch", int64_t(c.training.micro_batch));
  put(out, "lr", c.training.lr);
  put(out, "min_lr", c.training.min_lr);
  put(out, "warmup_steps", int64_t(c.training.warmup_steps));
  put(out, "weight_decay", c.training.weight_decay);
  put(out, "beta1", c.training.beta1);
  put(out, "beta2", c.training.beta2);
  put(out, "eps", c.training.eps);
  put(out, "grad_clip", c.training.grad_clip);
  put(out, "threads", int64_t(c.training.threads));
  put(out, "overlap_grad_reduce", c.training.overlap_grad_reduce);
  put(out, "on_nonfinite", c.training.on_nonfinite);
  put(out, "max_skipped_steps", int64_t(c.training.max_skipped_steps));
  out << YAML::EndMap;

  begin_section(out, "data");
  put(out, "kind", c.data.kind);
  put(out, "seed", uint64_t(c.data.seed));
  put(out, "branching", int64_t(c.data.branching));
  put(out, "concentration", c.data.concentration);
  out << YAML::Key << "paths" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& path : c.data.paths) out << YAML::DoubleQuoted << path;
  out << YAML::EndSeq;
  for (const auto& [key, list] :
       {std::pair<const char*, const std::vector<double>*>{"weights", &c.data.weights},
        {"split", &c.data.split}}) {
    out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (double value : *list) out << format_real(value);
    out << YAML::EndSeq;
  }
  put(out, "cache_dir", c.data.cache_dir);
  put(out, "tokenizer", c.data.tokenizer);
  put(out, "noise", c.data.noise);
  out << YAML::EndMap;

  begin_section(out, "eval");
  put(out, "every", int64_t(c.eval.every));
  put(out, "batches", int64_t(c.eval.batches));
  out << YAML::EndMap;

  begin_section(out, "compression");
  write_compression_config(out, c.compression);
  out << YAML::EndMap;

  begin_section(out, "checkpoint");
  put(out, "dir", c.checkpoint.dir);
  put(out, "every", int64_t(c.checkpoint.every));
  put(out, "keep_last", int64_t(c.checkpoint.keep_last));
  out << YAML::EndMap;

  begin_section(out, "log");
  put(out, "every", int64_t(c.log.every));
  put(out, "metrics_jsonl", c.log.metrics_jsonl);
  out << YAML::EndMap;

  out << YAML::EndMap;
  const std::string from = c.source.empty() ? "" : " of " + c.source;
  return "# Resolved config" + from + ": every key, defaults included.\n" + out.c_str() + "\n";
}

std::string origin_of(const Config& config, const std::string& key_path) {
  const auto it = config.origins.find(key_path);
  if (it != config.origins.end()) return it->second;
  return config.source.empty() ? std::string("<config>") : config.source;
}

}  // namespace cmpi::trainer
