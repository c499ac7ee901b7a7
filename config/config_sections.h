// The readers and writers of the config's sections (config_sections.cpp),
// one pair per section; the compression section's pair is in
// compression_config.h. config_loader.cpp composes them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>

#include "config/config.h"
#include "config/yaml_reader.h"

namespace cmpi::config {

// Upper bound for each parallel dimension and for the ranks they multiply to,
// so that layout arithmetic stays far inside int.
constexpr int64_t kMaxRanks = int64_t(1) << 24;

void read_run(MapReader r, RunConfig& run);
void write_run(YAML::Emitter& out, const RunConfig& run);
void read_model(MapReader r, ModelConfig& model);
void write_model(YAML::Emitter& out, const ModelConfig& model);
void read_parallel(MapReader r, ParallelConfig& parallel);
void write_parallel(YAML::Emitter& out, const ParallelConfig& parallel);
void read_training(MapReader r, TrainingConfig& training);
void write_training(YAML::Emitter& out, const TrainingConfig& training);
void read_data(MapReader r, DataConfig& data);
void write_data(YAML::Emitter& out, const DataConfig& data);
void read_eval(MapReader r, EvalConfig& eval);
void write_eval(YAML::Emitter& out, const EvalConfig& eval);
void read_checkpoint(MapReader r, CheckpointConfig& checkpoint);
void write_checkpoint(YAML::Emitter& out, const CheckpointConfig& checkpoint);
void read_log(MapReader r, LogConfig& log);
void write_log(YAML::Emitter& out, const LogConfig& log);

}  // namespace cmpi::config
