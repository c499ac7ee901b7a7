// A run's config with every domain's checks: what the launcher, the planner
// and the tools load. config::load_config checks the keys and how they relate
// within the config; check_domains then asks each domain that owns a rule:
// the model family (models/family/), the tokenizer (data/), the parallel
// layout for the smallest world the config fits and its pipeline stages.
//
//   Config c = load_checked_config("configs/tiny.yaml", {"training.lr=0.01"});
//   ParallelDims dims = validate_layout(c, world_size);
//
// Every error is a config::ConfigError in the loader's "<where>: <key>: why"
// form, naming the key the user can change.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "config/config_loader.h"
#include "parallel/mesh/parallel_dims.h"

namespace cmpi::launch {

config::Config load_checked_config(const std::string& path,
                                   const std::vector<std::string>& overrides = {});
config::Config parse_checked_config(const std::string& yaml_text, const std::string& source,
                                    const std::vector<std::string>& overrides = {});
// Several files merged in order (config/config_layers.h), then the overrides.
config::Config load_checked_config(const std::vector<std::string>& paths,
                                   const std::vector<std::string>& overrides);
config::Config parse_checked_configs(const std::vector<config::ConfigText>& files,
                                     const std::vector<std::string>& overrides = {});

// The domains' checks of a parsed config (what the two above add).
void check_domains(const config::Config& config);

// Resolves the parallel layout for `world_size` ranks (parallel.data: auto
// takes what the others leave) and checks that the global batch splits into
// micro-batches over the data-parallel ranks.
parallel::ParallelDims validate_layout(const config::Config& config, int world_size);

}  // namespace cmpi::launch
