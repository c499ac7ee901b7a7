#include "checkpoint/checkpoint_manager.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/rank_agreement.h"
#include "comm/clock.h"
#include "parallel/data_parallel_optimizer.h"
#include "parallel/process_groups.h"

namespace cmpi::checkpoint {
namespace {

std::string layout_text(const std::map<std::string, int64_t>& layout) {
  std::string out;
  for (const auto& [key, value] : layout)
    out += (out.empty() ? "" : " ") + key + "=" + std::to_string(value);
  return out;
}

}  // namespace

std::map<std::string, int64_t> checkpoint_layout(const parallel::ParallelDims& dims,
                                                 bool bidirectional) {
  std::map<std::string, int64_t> layout{{"dp", dims.dp},
                                        {"tp", dims.tp},
                                        {"pp", dims.pp},
                                        {"zero_stage", dims.zero_stage},
                                        {"world", dims.world_size()}};
  if (dims.sp > 1) layout["sp"] = dims.sp;
  if (bidirectional) layout["bidirectional"] = 1;
  return layout;
}

CheckpointManager::CheckpointManager(CheckpointSettings settings, parallel::ProcessGroups& groups,
                                     std::map<std::string, int64_t> layout, CheckpointParts parts)
    : settings_(std::move(settings)),
      groups_(groups),
      layout_(std::move(layout)),
      parts_(std::move(parts)) {
  if (parts_.optimizers.empty() || parts_.optimizers.front().optimizer == nullptr)
    throw std::invalid_argument("checkpoint manager: no optimizer to checkpoint");
}

bool CheckpointManager::due(int64_t steps_done) const {
  return settings_.every > 0 && steps_done > 0 && steps_done % settings_.every == 0;
}

std::string CheckpointManager::save(int64_t steps_done, int64_t skipped_steps) {
  auto& primary = *parts_.optimizers.front().optimizer;
  CheckpointMetadata metadata;
  metadata.step = steps_done;
  metadata.optimizer_steps = primary.state().steps;
  metadata.skipped_steps = skipped_steps;
  metadata.layout = layout_;
  metadata.model = parts_.model_shape;
  const auto rank_state = collect_rank_state(groups_, parts_.generators, primary);
  int64_t residuals = int64_t(residual_names(rank_state).size());
  MPI_Allreduce(MPI_IN_PLACE, &residuals, 1, MPI_INT64_T, MPI_SUM, groups_.world().mpi());
  metadata.residual_buffers = residuals;
  std::vector<ShardEntry> entries;
  for (const auto& part : parts_.optimizers) {
    if (!part.writes) continue;
    auto own = shard_entries(part.params, part.optimizer->state(), part.writes_replicated,
                             part.held_elsewhere);
    for (auto& e : own) entries.push_back(std::move(e));
  }
  for (const auto& tensor : parts_.tensors)
    if (tensor.writes) entries.push_back(tensor_entry(tensor.param, tensor.data));
  const auto saved = save_checkpoint(settings_.root, metadata, entries, settings_.resolved_config,
                                     settings_.keep_last, groups_.world().mpi(), rank_state);
  if (groups_.world_rank() == 0 && settings_.print) {
    std::printf("checkpoint: step %lld saved to %s (%.2f MB in %.3f s)\n", (long long)steps_done,
                saved.path.c_str(), double(saved.bytes) / 1e6, saved.seconds);
    std::fflush(stdout);
  }
  return saved.path;
}

// Every rank reads what its parameters need; all agree before any step runs.
ResumePoint CheckpointManager::restore(const std::string& path) {
  const auto start = comm::Clock::now();
  uint64_t shard_bytes = 0;
  ResumePoint resume;
  agree_or_throw(groups_.world().mpi(), [&] {
    std::set<std::string> wanted;
    for (const auto& part : parts_.optimizers)
      for (const auto& p : part.params) wanted.insert(p.name);
    for (const auto& tensor : parts_.tensors) wanted.insert(tensor.param.name);
    const auto loaded = LoadedCheckpoint::read(path, &wanted);
    check_model_shape(loaded, parts_.model_shape);
    for (const auto& part : parts_.optimizers)
      restore_optimizer(loaded, part.params, *part.optimizer);
    for (const auto& tensor : parts_.tensors) restore_tensor(loaded, tensor.param, tensor.data);
    restore_rank_state(loaded);
    resume.step = loaded.metadata().step;
    resume.skipped_steps = loaded.metadata().skipped_steps;
    for (const auto& shard : loaded.metadata().shards) shard_bytes += shard.bytes;
  });
  if (groups_.world_rank() == 0 && settings_.print) {
    std::printf("checkpoint: resumed at step %lld from %s (%.2f MB of shards, loaded in %.3f s)\n",
                (long long)resume.step, path.c_str(), double(shard_bytes) / 1e6,
                comm::seconds_since(start));
    std::fflush(stdout);
  }
  return resume;
}

// Residual buffer keys and sizes, and which generator draws for which
// dropout, belong to one rank of one layout: a resume under another layout
// starts them afresh (and says so) rather than refusing, since the weights
// and optimizer state, the bulk of the run, do carry over.
void CheckpointManager::restore_rank_state(const LoadedCheckpoint& loaded) {
  const bool is_root = groups_.world_rank() == 0;
  const auto& saved = loaded.metadata();
  if (saved.layout != layout_) {
    if (parts_.restart_generators) parts_.restart_generators(saved.step);
    if (is_root && settings_.print) warn_other_layout(loaded);
    return;
  }
  const auto report =
      checkpoint::restore_rank_state(loaded.rank_state(groups_.world_rank()), groups_,
                                     parts_.generators, *parts_.optimizers.front().optimizer);
  if (!is_root || !settings_.print) return;
  if (report.powersgd_restarted) {
    std::fprintf(stderr,
                 "warning: checkpoint %s holds no PowerSGD state (saved by a run without a "
                 "powersgd rule): PowerSGD restarts its Q's and residuals, so the run does not "
                 "continue as an uninterrupted one would\n",
                 loaded.dir().c_str());
    std::fflush(stderr);
  }
  if (!report.dropped.empty()) {
    std::string names;
    for (size_t i = 0; i < report.dropped.size() && i < 4; ++i)
      names += (i ? ", " : "") + report.dropped[i];
    std::fprintf(stderr,
                 "warning: rank %d: %zu saved codec or generator states have no place in this "
                 "run's compression policy or model and are dropped (%s%s)\n",
                 groups_.world_rank(), report.dropped.size(), names.c_str(),
                 report.dropped.size() > 4 ? ", ..." : "");
    std::fflush(stderr);
  }
}

void CheckpointManager::warn_other_layout(const LoadedCheckpoint& loaded) const {
  const auto& saved = loaded.metadata();
  if (saved.residual_buffers > 0)
    std::fprintf(stderr,
                 "warning: checkpoint %s was saved under another layout (%s; this run: %s): its "
                 "%lld error-feedback residual buffers belong to the old ranks' buffers and are "
                 "dropped; error feedback restarts from zero residuals\n",
                 loaded.dir().c_str(), layout_text(saved.layout).c_str(),
                 layout_text(layout_).c_str(), (long long)saved.residual_buffers);
  if (parts_.optimizers.front().optimizer->powersgd_reducer() != nullptr)
    std::fprintf(stderr,
                 "warning: checkpoint %s was saved under another layout: PowerSGD's Q's and "
                 "residuals belong to the old ranks' buckets; they restart\n",
                 loaded.dir().c_str());
  if (parts_.has_dropout)
    std::fprintf(stderr,
                 "warning: checkpoint %s was saved under another layout: dropout generators "
                 "restart from the run seed mixed with the step, so the masks differ from those "
                 "an uninterrupted run would draw\n",
                 loaded.dir().c_str());
  std::fflush(stderr);
}

}  // namespace cmpi::checkpoint
