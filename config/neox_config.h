// Reading a GPT-NeoX YAML config (`deepy.py train.py 20B.yml local.yml`) as
// this project's: each key goes through the mapping table (neox_keys.h) into
// a tree of this project's keys, which then merges with the other --config
// files and is checked like any config (config_layers.h).
//
//   NeoxTranslator neox;
//   for (file : files) if (looks_like_neox(tree)) layer = neox.translate(tree, file);
//   neox.finish();  // a key that waited for a partner no file gave
//
// NeoX merges its files before reading them, so keys that work together
// (`warmup` with `train-iters`, `train_batch_size` with the micro batch and
// the accumulation steps) are read with the values the earlier NeoX files
// gave: a later file that changes one of them sets the keys they make again.
// Keys a NeoX file leaves out keep this project's defaults, not NeoX's.
//
// Errors are ConfigErrors naming the file, the line and the NeoX key as
// written; a key the table does not know is one, a value with no equivalent
// here another. Keys with no meaning here give one warning per file.
#pragma once

#include <map>
#include <set>
#include <string>

#include <yaml-cpp/yaml.h>

#include "config/config_layers.h"

namespace cmpi::config {

// True if `root`'s top-level keys are GPT-NeoX's (a hyphenated key, or one
// the mapping table knows) rather than this project's sections.
bool looks_like_neox(const YAML::Node& root);

class NeoxTranslator {
 public:
  // The layer of one NeoX file (`root`, read from `source`).
  ConfigLayer translate(const YAML::Node& root, const std::string& source);
  // Throws for a key still waiting for its partner (e.g. `warmup` without
  // any `train-iters`) once every file was read.
  void finish() const;

  // A NeoX key as written in a file.
  struct Setting {
    std::string name;  // as written
    YAML::Node value;
    std::string where;  // "20B.yml:12"
  };

 private:
  std::map<std::string, Setting> merged_;       // normalized name -> latest
  std::map<std::string, std::string> waiting_;  // group -> the error if nothing completes it
};

}  // namespace cmpi::config
