#include "trainer/checkpoint_hooks.h"

#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "checkpoint/checkpoint_store.h"

namespace cmpi::trainer {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace

std::map<std::string, int64_t> model_shape(const ModelConfig& m) {
  return {{"vocab_size", m.vocab_size},
          {"seq_len", m.seq_len},
          {"layers", m.layers},
          {"hidden", m.hidden},
          {"heads", m.heads},
          {"mlp_ratio", m.mlp_ratio},
          {"tie_embeddings", m.tie_embeddings ? 1 : 0}};
}

std::string checkpoint_root(const Config& config) {
  if (!config.checkpoint.dir.empty()) return config.checkpoint.dir;
  return config.run.dir + "/" + config.run.name + "/checkpoints";
}

std::string resolve_resume_path(const Config& config, const std::string& requested) {
  if (requested.empty()) return checkpoint::latest_checkpoint(checkpoint_root(config));
  std::error_code ec;
  if (!std::filesystem::is_directory(requested, ec))
    throw std::runtime_error("--resume " + requested + ": not a directory");
  if (std::filesystem::exists(requested + "/" + checkpoint::kMetadataFile, ec)) return requested;
  // A root of checkpoints, or a checkpoint whose save never finished.
  for (const auto& item : std::filesystem::directory_iterator(requested, ec))
    if (item.path().filename().string().rfind("shard_", 0) == 0)
      throw std::runtime_error(requested + ": incomplete checkpoint (no " +
                               checkpoint::kMetadataFile + "; its save did not finish)");
  return checkpoint::latest_checkpoint(requested);
}

std::vector<checkpoint::ShardEntry> shard_entries(const std::vector<CheckpointedParam>& params,
                                                  const parallel::OptimizerStateView& state,
                                                  bool dp_rank_zero,
                                                  const std::set<std::string>& held_elsewhere) {
  std::vector<checkpoint::ShardEntry> entries;
  if (state.replicated_over_dp && !dp_rank_zero) return entries;
  for (const auto& run : state.runs) {
    const auto& param = params.at(run.param);
    if (held_elsewhere.count(param.name)) continue;
    checkpoint::ShardEntry e;
    e.name = param.name;
    e.slice = param.slice;
    e.offset = run.offset;
    e.values.assign(run.values, run.values + run.length);
    e.exp_avg.assign(run.exp_avg, run.exp_avg + run.length);
    e.exp_avg_sq.assign(run.exp_avg_sq, run.exp_avg_sq + run.length);
    entries.push_back(std::move(e));
  }
  return entries;
}

void restore_optimizer(const checkpoint::LoadedCheckpoint& loaded, const ModelConfig& model,
                       const std::vector<CheckpointedParam>& params,
                       parallel::DataParallelOptimizer& optimizer) {
  const auto& saved = loaded.metadata().model;
  for (const auto& [key, value] : model_shape(model)) {
    const auto found = saved.find(key);
    if (found == saved.end() || found->second != value)
      throw std::runtime_error(loaded.dir() + "/" + checkpoint::kMetadataFile +
                               ": saved from a model with model." + key + " = " +
                               (found == saved.end() ? "?" : std::to_string(found->second)) +
                               ", this config has " + std::to_string(value));
  }
  // This rank's slices of every parameter: [param][kind].
  std::vector<std::vector<std::vector<float>>> local(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const auto global = loaded.assemble(params[i].name);
    if (global.shape != params[i].slice.global_shape)
      throw std::runtime_error(loaded.dir() + ": parameter " + params[i].name + " has shape " +
                               shape_text(global.shape) + ", this model expects " +
                               shape_text(params[i].slice.global_shape));
    for (const auto* kind : {&global.values, &global.exp_avg, &global.exp_avg_sq}) {
      std::vector<float> slice(size_t(params[i].slice.numel()));
      checkpoint::gather_from_global(params[i].slice, kind->data(), slice.data());
      local[i].push_back(std::move(slice));
    }
  }
  optimizer.load_state(
      loaded.metadata().optimizer_steps,
      [&](size_t param, parallel::StateKind kind, size_t offset, size_t length, float* out) {
        const auto& from = local.at(param).at(size_t(kind));
        if (offset + length > from.size())
          throw std::logic_error("optimizer asked for state outside " + params[param].name);
        std::memcpy(out, from.data() + offset, length * sizeof(float));
      });
}

}  // namespace cmpi::trainer
