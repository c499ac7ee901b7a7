// `--set key.path=value` overrides, applied to the YAML tree before it is
// read, so an overridden value gets exactly the checks a written one gets.
//
// The path is dot-separated keys with optional list indices
// (`compression.rules[0].codec.rate=12`); the value is parsed as YAML, so
// scalars, flow lists (`[tp, pp]`) and flow mappings (`{name: mpc}`) all
// work. Missing sections on the way are created (an unknown one is then
// reported by the reader as an unknown key, attributed to the --set flag).
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

#include "config/yaml_reader.h"

namespace cmpi::config {

// Applies one override to `root` (which may be null: an empty document) and
// registers it with `context`. Throws ConfigError naming `--set text`.
void apply_override(YAML::Node& root, const std::string& text, ReadContext& context);

}  // namespace cmpi::config
