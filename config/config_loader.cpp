// Loading works in three passes over one YAML tree: the files are merged
// into one tree (config_layers.h) and the `--set` overrides written into it; each section is read
// into its struct by a MapReader (types, ranges and unknown keys checked key by key, each key's
// position recorded); then the checks that relate keys to each other run on the typed Config,
// naming the key at fault by its recorded position.
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
#include "config/config_layers.h"
#include "config/config_limits.h"
#include "config/config_overrides.h"
#include "config/config_sections.h"
#include "config/neox_config.h"

namespace cmpi::config {
namespace {

// The checks that relate keys to each other within the config alone; the
// checks that need a domain (the model family, the tokenizer, the layout)
// run in launch::check_domains, which owns them.
// DiLoCo (parallel/diloco/) is built for the GPT's dp replicas at ZeRO
// stage 0; what it cannot run is refused here, naming the key to change.
// (dp = 1 is refused once the world size is known: launch/checked_config.cpp.)
void check_diloco(const Config& c) {
  if (c.parallel.dp_sync != "diloco") return;
  const DilocoConfig& d = c.parallel.diloco;
  if (c.model.kind != ModelFamily::kGpt)
    fail_at(c, "parallel.dp_sync",
            std::string("diloco is built for the GPT (model.kind gpt), got model.kind ") +
                name_of(c.model.kind));
  if (c.parallel.zero_stage != 0)
    fail_at(c, "parallel.zero_stage",
            "parallel.dp_sync: diloco keeps every replica's whole AdamW state (each replica "
            "steps alone between syncs, so there is nothing to shard over dp): it needs "
            "zero_stage 0, got " +
                std::to_string(c.parallel.zero_stage));
  if (c.parallel.context > 1)
    fail_at(c, "parallel.context",
            "parallel.dp_sync: diloco does not run with context parallelism (the dp group spans "
            "the cp ranks, whose gradients must still be summed every step), got context " +
                std::to_string(c.parallel.context));
  if (d.fragments > c.model.layers)
    fail_at(c, "parallel.diloco.fragments",
            "cuts the model's layers into fragments, so it can be at most model.layers (" +
                std::to_string(c.model.layers) + "), got " + std::to_string(d.fragments));
  if (d.fragments > d.sync_every)
    fail_at(c, "parallel.diloco.fragments",
            "each fragment is synchronised at its own step of the interval, so it can be at "
            "most parallel.diloco.sync_every (" +
                std::to_string(d.sync_every) + "), got " + std::to_string(d.fragments));
  for (const comm::PolicyRule& rule : c.compression.rules)
    if (rule.codec && comm::is_powersgd(*rule.codec))
      fail_at(c, "parallel.dp_sync",
              "compression rule " + rule.origin +
                  " uses powersgd, which replaces the gradient allreduce of every step; "
                  "parallel.dp_sync: diloco has none (the pseudo-gradients go through the dp "
                  "policy as role pseudo_gradient)");
}

void check_consistency(const Config& c) {
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
  check_diloco(c);
  if (c.eval.every > 0 && c.data.kind == DataKind::kIndexed && c.data.split[1] == 0)
    fail_at(c, "data.split",
            "eval.every is " + std::to_string(c.eval.every) +
                " but the valid share (second item) is 0: no documents are held out");
}

// One file's YAML tree; text that holds no YAML value at all is an error.
YAML::Node parse_yaml(const std::string& yaml_text, const std::string& source) {
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
  return root;
}

Config parse_tree(YAML::Node root, ReadContext& context, const std::vector<std::string>& overrides,
                  const std::string& sources) {
  const std::string& source = context.file();
  Config config;
  config.source = sources;
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
  config.replaced = context.replaced();
  // A ResNet reads images unless data.kind says otherwise (then refused).
  if (config.model.kind == ModelFamily::kResnet && !config.origins.count("data.kind"))
    config.data.kind = DataKind::kImages;
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

Config load_config(const std::vector<std::string>& paths,
                   const std::vector<std::string>& overrides) {
  std::vector<ConfigText> files;
  for (const std::string& path : paths) files.push_back({path, read_config_text(path)});
  return parse_configs(files, overrides);
}

Config parse_config(const std::string& yaml_text, const std::string& source,
                    const std::vector<std::string>& overrides) {
  return parse_configs({{source, yaml_text}}, overrides);
}

Config parse_configs(const std::vector<ConfigText>& files,
                     const std::vector<std::string>& overrides) {
  if (files.empty()) throw ConfigError("no config file given (--config FILE)");
  std::vector<ConfigLayer> layers;
  NeoxTranslator neox;
  for (const ConfigText& file : files) {
    const YAML::Node root = parse_yaml(file.text, file.source);
    // Merging keeps one of two equal keys silently: refuse them first.
    check_unique_keys(root, file.source);
    if (looks_like_neox(root))
      layers.push_back(neox.translate(root, file.source));
    else
      layers.push_back({file.source, root, {}, {}, {}});
  }
  neox.finish();
  ReadContext context(files.front().source);
  const YAML::Node root = merge_layers(layers, context);
  std::string sources;
  for (const ConfigLayer& layer : layers) sources += (sources.empty() ? "" : " + ") + layer.source;
  Config config = parse_tree(root, context, overrides, sources);
  for (const ConfigLayer& layer : layers) {
    config.notes.insert(config.notes.end(), layer.notes.begin(), layer.notes.end());
    config.load_warnings.insert(config.load_warnings.end(), layer.warnings.begin(),
                                layer.warnings.end());
  }
  return config;
}

std::string describe_sources(const Config& c) {
  const std::string first = c.source.substr(0, c.source.find(" + "));
  const bool several = c.source.size() != first.size();
  bool overridden = false;
  for (const auto& [key, where] : c.origins) overridden |= where.rfind("--set ", 0) == 0;
  if (!several && !overridden && c.notes.empty()) return "";
  std::string out =
      "# Read from " + c.source + (overridden ? ", then --set" : "") + "; a later place wins.\n";
  for (const std::string& note : c.notes) out += "# " + note + "\n";
  std::string keys;
  for (const auto& [key, where] : c.origins) {
    if (key.find('.') == std::string::npos && key.find('[') == std::string::npos) continue;
    const auto earlier = c.replaced.find(key);
    const bool from_first =
        where.rfind(first + ":", 0) == 0 && where.find(" (") == std::string::npos;
    if (from_first && earlier == c.replaced.end()) continue;
    keys += "#   " + key + ": " + where;
    if (earlier != c.replaced.end()) keys += " (replaced " + join_words(earlier->second) + ")";
    keys += "\n";
  }
  if (!keys.empty())
    out += "# Keys set elsewhere than a line of " + first + ", or set twice:\n" + keys;
  return out;
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

void fail_at(const Config& config, const std::string& key, const std::string& why) {
  throw ConfigError(origin_of(config, key) + ": " + key + ": " + why);
}

std::string origin_of(const Config& config, const std::string& key_path) {
  const auto it = config.origins.find(key_path);
  if (it != config.origins.end()) return it->second;
  return config.source.empty() ? std::string("<config>") : config.source;
}

}  // namespace cmpi::config
