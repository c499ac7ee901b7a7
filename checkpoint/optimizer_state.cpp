#include "checkpoint/optimizer_state.h"

#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "checkpoint/checkpoint_store.h"

namespace cmpi::checkpoint {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace

std::string resolve_resume_path(const std::string& root, const std::string& requested) {
  if (requested.empty()) return latest_checkpoint(root);
  std::error_code ec;
  if (!std::filesystem::is_directory(requested, ec))
    throw std::runtime_error("--resume " + requested + ": not a directory");
  if (std::filesystem::exists(requested + "/" + kMetadataFile, ec)) return requested;
  // A root of checkpoints, or a checkpoint whose save never finished.
  for (const auto& item : std::filesystem::directory_iterator(requested, ec))
    if (item.path().filename().string().rfind("shard_", 0) == 0)
      throw std::runtime_error(requested + ": incomplete checkpoint (no " + kMetadataFile +
                               "; its save did not finish)");
  return latest_checkpoint(requested);
}

std::vector<ShardEntry> shard_entries(const std::vector<CheckpointedParam>& params,
                                      const parallel::OptimizerStateView& state,
                                      bool writes_replicated,
                                      const std::set<std::string>& held_elsewhere,
                                      EntryPool* reuse) {
  std::vector<ShardEntry> entries;
  if (state.replicated_over_dp && !writes_replicated) return entries;
  for (const auto& run : state.runs) {
    const auto& param = params.at(run.param);
    if (held_elsewhere.count(param.name)) continue;
    ShardEntry e = reuse ? reuse->take() : ShardEntry{};
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

ShardEntry tensor_entry(const CheckpointedParam& param, const float* values, EntryPool* reuse) {
  const size_t n = size_t(param.slice.numel());
  ShardEntry e = reuse ? reuse->take() : ShardEntry{};
  e.name = param.name;
  e.slice = param.slice;
  e.offset = 0;
  e.values.assign(values, values + n);
  e.exp_avg.assign(n, 0.0f);
  e.exp_avg_sq.assign(n, 0.0f);
  return e;
}

void check_model_shape(const LoadedCheckpoint& loaded,
                       const std::map<std::string, int64_t>& model_shape) {
  const auto& saved = loaded.metadata().model;
  for (const auto& [key, value] : model_shape) {
    const auto found = saved.find(key);
    if (found == saved.end() || found->second != value)
      throw std::runtime_error(loaded.dir() + "/" + kMetadataFile +
                               ": saved from a model with model." + key + " = " +
                               (found == saved.end() ? "?" : std::to_string(found->second)) +
                               ", this config has " + std::to_string(value));
  }
  // Keys recorded only when they differ from a default (the GPT's
  // architecture switches, config/model_shape.h): saved but absent here means
  // this config has the default, and the checkpoint was saved from another
  // model.
  for (const auto& [key, value] : saved)
    if (!model_shape.count(key))
      throw std::runtime_error(loaded.dir() + "/" + kMetadataFile +
                               ": saved from a model with model." + key + " = " +
                               std::to_string(value) + ", which this config does not have");
}

// The global tensors of `param`, checked against the shape this rank expects.
static GlobalParameter assemble_checked(const LoadedCheckpoint& loaded,
                                        const CheckpointedParam& param) {
  auto global = loaded.assemble(param.name);
  if (global.shape != param.slice.global_shape)
    throw std::runtime_error(loaded.dir() + ": parameter " + param.name + " has shape " +
                             shape_text(global.shape) + ", this model expects " +
                             shape_text(param.slice.global_shape));
  return global;
}

void restore_tensor(const LoadedCheckpoint& loaded, const CheckpointedParam& param, float* out) {
  const auto global = assemble_checked(loaded, param);
  gather_from_global(param.slice, global.values.data(), out);
}

void restore_optimizer(const LoadedCheckpoint& loaded, const std::vector<CheckpointedParam>& params,
                       parallel::DataParallelOptimizer& optimizer) {
  // This rank's slices of every parameter: [param][kind].
  std::vector<std::vector<std::vector<float>>> local(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const auto global = assemble_checked(loaded, params[i]);
    for (const auto* kind : {&global.values, &global.exp_avg, &global.exp_avg_sq}) {
      std::vector<float> slice(size_t(params[i].slice.numel()));
      gather_from_global(params[i].slice, kind->data(), slice.data());
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

}  // namespace cmpi::checkpoint
