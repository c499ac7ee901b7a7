// Several `--config` files, merged in order as GPT-NeoX merges its YAML
// files: a later file's keys win. Each file becomes a ConfigLayer (a tree of
// this project's keys: the file's own YAML, or what the GPT-NeoX mapping
// table built from it, neox_config.h); merge_layers folds them into the one
// tree the section readers read, and tells the ReadContext which file set
// each key and what it replaced, so that errors name the right file and
// --print-config can say where every value came from.
//
//   a.yaml: {model: {layers: 2, hidden: 64}}   b.yaml: {model: {layers: 4}}
//   merged: {model: {layers: 4 (b.yaml:1, replaced a.yaml:1), hidden: 64 (a.yaml:1)}}
//
// Mappings merge key by key; any other value (a number, a word, a list)
// replaces the earlier one whole. An empty section in a later file
// (`model:` alone) adds nothing.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/yaml_reader.h"

namespace cmpi::config {

struct ConfigLayer {
  std::string source;  // the file's name, as the user gave it
  YAML::Node tree;     // this project's sections and keys
  // Key path -> where it was written, for trees built rather than parsed (a
  // GPT-NeoX file: "20B.yml:5 (num-layers)"); empty: the nodes' own lines in
  // `source`.
  std::map<std::string, std::string> written_at;
  // Said once when the job starts ("20B.yml: read as a GPT-NeoX config").
  std::vector<std::string> notes;
  // Legal but ignored settings (GPT-NeoX keys with no meaning here).
  std::vector<std::string> warnings;
};

// Throws ConfigError for a key written twice in one mapping of `tree`, or a
// key that is not a plain word: merging would otherwise keep one silently.
void check_unique_keys(const YAML::Node& tree, const std::string& source);

// The first layer's tree with every later one merged into it, in order.
// Registers with `context` (whose file is the first layer's) where each
// later key came from and the value it replaced. A later file that is not a
// mapping of sections is a ConfigError naming it.
YAML::Node merge_layers(const std::vector<ConfigLayer>& layers, ReadContext& context);

}  // namespace cmpi::config
