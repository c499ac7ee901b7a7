// Loading, validating and writing back a run's Config.
//
//   Config c = load_config("configs/tiny.yaml", {"training.lr=0.01"});
//   Config d = load_config({"20B.yml", "local_setup.yml"});  // merged in order
//   std::ofstream(run_dir + "/config.yaml") << to_yaml(c);
//
// Several files merge in order, a later file's keys winning
// (config_layers.h); a GPT-NeoX file is read through its mapping table
// (neox_config.h).
//
// These check the keys and their relations within the config; the checks
// that need a domain (the model family, the tokenizer, the parallel layout)
// are launch::load_checked_config's (launch/checked_config.h), so that
// config/ depends on no folder above it.
//
// Every error is a ConfigError whose message starts with where the culprit was
// written ("configs/x.yaml:14" or "--set training.lr=0.01"), then the full key
// path, then what was expected and what was found.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "config/yaml_reader.h"

namespace cmpi::config {

// Config files larger than this are refused before parsing.
constexpr size_t kMaxConfigBytes = size_t(16) << 20;

// The bytes of the config file at `path` (a ConfigError naming it if it is a
// directory, missing, unreadable or larger than kMaxConfigBytes).
std::string read_config_text(const std::string& path);

// One config file's bytes and the name messages give it.
struct ConfigText {
  std::string source;
  std::string text;
};

// Reads `path`, applies the `--set` overrides ("key.path=value") in order,
// and validates the keys and how they relate to each other.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// The same for several files, merged in order before the overrides.
Config load_config(const std::vector<std::string>& paths,
                   const std::vector<std::string>& overrides = {});
// The same from files already read (what each rank of a job parses).
Config parse_configs(const std::vector<ConfigText>& files,
                     const std::vector<std::string>& overrides = {});

// The same from YAML text; `source` names it in messages. Text that holds no
// YAML value at all (empty, only comments) is an error: `{}` says "all
// defaults" on purpose.
Config parse_config(const std::string& yaml_text, const std::string& source,
                    const std::vector<std::string>& overrides = {});

// The fully resolved config, every key written (defaults included), as YAML
// that load_config reads back into an equal Config.
std::string to_yaml(const Config& config);

// Where the values came from, as YAML comment lines for --print-config: the
// files in order, how each was read (a GPT-NeoX file), and every key set by
// another place than the first file's line, or set more than once, with the
// places it replaced. Empty for one plain file and no --set.
std::string describe_sources(const Config& config);

// Throws the ConfigError "<where key was written>: <key>: <why>": how every
// domain reports a config value it refuses.
[[noreturn]] void fail_at(const Config& config, const std::string& key, const std::string& why);

// Where `key_path` was written ("configs/x.yaml:14", "--set ..."), or the
// config's file if the key was left at its default.
std::string origin_of(const Config& config, const std::string& key_path);

}  // namespace cmpi::config
