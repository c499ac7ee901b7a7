#include "checkpoint/optimizer_state.h"

#include <algorithm>
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
                                      bool writes_replicated, EntryPool* reuse) {
  std::vector<ShardEntry> entries;
  if (state.replicated_over_dp && !writes_replicated) return entries;
  for (const auto& run : state.runs) {
    const auto& param = params.at(run.param);
    if (param.written_elsewhere) continue;
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

// Whether a tensor of `shape` is `param` with other padding rows: a
// vocabulary table whose dims past the first agree and that holds at least
// the rows in use.
static bool other_padding(const std::vector<int64_t>& shape, const CheckpointedParam& param) {
  const auto& want = param.slice.global_shape;
  return param.used_rows >= 0 && !shape.empty() && shape.size() == want.size() &&
         shape[0] >= param.used_rows &&
         std::equal(shape.begin() + 1, shape.end(), want.begin() + 1);
}

// Elements per row (dim 0) of a row-major shape.
static int64_t row_elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t d = 1; d < shape.size(); ++d) n *= shape[d];
  return n;
}

// The global tensors of `param`, checked against the shape this rank expects.
static GlobalParameter assemble_checked(const LoadedCheckpoint& loaded,
                                        const CheckpointedParam& param) {
  auto global = loaded.assemble(param.name);
  if (global.shape != param.slice.global_shape && other_padding(global.shape, param)) {
    const int64_t inner = row_elements(global.shape), rows = param.slice.global_shape[0];
    for (auto* kind : {&global.values, &global.exp_avg, &global.exp_avg_sq})
      *kind = resize_rows(std::move(*kind), inner, rows);
    global.shape = param.slice.global_shape;
  }
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

void initialise_optimizer(const GlobalWeights& weights,
                          const std::vector<CheckpointedParam>& params,
                          parallel::DataParallelOptimizer& optimizer) {
  std::vector<std::vector<float>> local(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    auto global = weights(params[i].name, params[i].slice.global_shape);
    // Initial weights of a vocabulary table come without this layout's padding.
    const auto& shape = params[i].slice.global_shape;
    if (params[i].used_rows >= 0 &&
        int64_t(global.size()) == params[i].used_rows * row_elements(shape))
      global = resize_rows(std::move(global), row_elements(shape), shape[0]);
    if (int64_t(global.size()) != params[i].slice.global_numel())
      throw std::runtime_error("initial weights of " + params[i].name + ": " +
                               std::to_string(global.size()) + " values for shape " +
                               shape_text(params[i].slice.global_shape));
    local[i].resize(size_t(params[i].slice.numel()));
    gather_from_global(params[i].slice, global.data(), local[i].data());
  }
  optimizer.load_state(
      0, [&](size_t param, parallel::StateKind kind, size_t offset, size_t length, float* out) {
        if (kind != parallel::StateKind::kValues) {
          std::fill(out, out + length, 0.0f);
          return;
        }
        const auto& from = local.at(param);
        if (offset + length > from.size())
          throw std::logic_error("optimizer asked for weights outside " + params[param].name);
        std::memcpy(out, from.data() + offset, length * sizeof(float));
      });
}

}  // namespace cmpi::checkpoint
