// Loading, validating and writing back a run's Config.
//
//   Config c = load_config("configs/tiny.yaml", {"training.lr=0.01"});
//   std::ofstream(run_dir + "/config.yaml") << to_yaml(c);
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

// Reads `path`, applies the `--set` overrides ("key.path=value") in order,
// and validates the keys and how they relate to each other.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});

// The same from YAML text; `source` names it in messages. Text that holds no
// YAML value at all (empty, only comments) is an error: `{}` says "all
// defaults" on purpose.
Config parse_config(const std::string& yaml_text, const std::string& source,
                    const std::vector<std::string>& overrides = {});

// The fully resolved config, every key written (defaults included), as YAML
// that load_config reads back into an equal Config.
std::string to_yaml(const Config& config);

// Throws the ConfigError "<where key was written>: <key>: <why>": how every
// domain reports a config value it refuses.
[[noreturn]] void fail_at(const Config& config, const std::string& key, const std::string& why);

// Where `key_path` was written ("configs/x.yaml:14", "--set ..."), or the
// config's file if the key was left at its default.
std::string origin_of(const Config& config, const std::string& key_path);

}  // namespace cmpi::config
