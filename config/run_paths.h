// Where a run's files go, from its run and checkpoint sections.
#pragma once

#include <string>

#include "config/config.h"

namespace cmpi::config {

// <run.dir>/<run.name>: config.yaml, metrics.jsonl, summary.json.
inline std::string run_directory(const Config& config) {
  return config.run.dir + "/" + config.run.name;
}

// Where a run's checkpoints go: checkpoint.dir, or <run dir>/checkpoints.
inline std::string checkpoint_root(const Config& config) {
  if (!config.checkpoint.dir.empty()) return config.checkpoint.dir;
  return run_directory(config) + "/checkpoints";
}

}  // namespace cmpi::config
