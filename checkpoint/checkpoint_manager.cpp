#include "checkpoint/checkpoint_manager.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/checkpoint_store.h"
#include "checkpoint/rank_agreement.h"
#include "comm/clock.h"
#include "comm/communicator.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/zero/data_parallel_optimizer.h"

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
  if (dims.cp > 1) layout["cp"] = dims.cp;
  if (bidirectional) layout["bidirectional"] = 1;
  return layout;
}

namespace {

// This rank's shard entries: a copy of every optimizer state run and plain
// tensor it writes, into `reuse`'s memory where it has some.
std::vector<ShardEntry> own_entries(const CheckpointParts& parts, EntryPool* reuse) {
  std::vector<ShardEntry> entries;
  for (const auto& part : parts.optimizers) {
    if (!part.writes) continue;
    auto own = shard_entries(part.params, part.optimizer->state(), part.writes_replicated, reuse);
    for (auto& e : own) entries.push_back(std::move(e));
  }
  for (const auto& tensor : parts.tensors)
    if (tensor.writes) entries.push_back(tensor_entry(tensor.param, tensor.data, reuse));
  return entries;
}

}  // namespace

CheckpointManager::CheckpointManager(CheckpointSettings settings, parallel::ProcessGroups& groups,
                                     std::map<std::string, int64_t> layout, CheckpointParts parts)
    : settings_(std::move(settings)),
      groups_(groups),
      layout_(std::move(layout)),
      parts_(std::move(parts)) {
  if (parts_.optimizers.empty() || parts_.optimizers.front().optimizer == nullptr)
    throw std::invalid_argument("checkpoint manager: no optimizer to checkpoint");
  if (!settings_.async) return;
  // Built once, here, where every rank constructs the manager: constructing
  // a Communicator is collective (it duplicates the communicator once more
  // for compressed traffic and gathers every rank's node). The node is the
  // world group's, so no node detection runs again.
  comm::Communicator& world = groups_.world();
  MPI_Comm save_world = MPI_COMM_NULL;
  MPI_Comm_dup(world.mpi(), &save_world);
  save_comm_ = std::make_unique<comm::Communicator>(save_world, comm::GroupKind::kWorld, nullptr,
                                                    world.node_of(world.rank()));
  // The snapshot's memory is taken (its pages touched) now, before
  // training, so that the first save copies into mapped memory as every
  // later one does, instead of stalling on page faults.
  if (settings_.every > 0) snapshot_entries_ = own_entries(parts_, nullptr);
}

CheckpointManager::~CheckpointManager() {
  // A save still in flight here is abandoned unpublished (the run is
  // failing); its task reads members, so it ends before they go.
  if (writer_.in_flight()) writer_.wait();
  // save_comm_ frees its duplicate itself (not once MPI is finalized).
}

bool CheckpointManager::due(int64_t steps_done) const {
  return settings_.every > 0 && steps_done > 0 && steps_done % settings_.every == 0;
}

CheckpointMetadata CheckpointManager::metadata_for(int64_t steps_done,
                                                   int64_t skipped_steps) const {
  CheckpointMetadata metadata;
  metadata.step = steps_done;
  metadata.optimizer_steps = parts_.optimizers.front().optimizer->optimizer_steps();
  metadata.skipped_steps = skipped_steps;
  metadata.layout = layout_;
  metadata.model = parts_.model_shape;
  return metadata;
}

std::string CheckpointManager::save(int64_t steps_done, int64_t skipped_steps) {
  // A save still in flight is completed first: the loop waits for it.
  finish();
  const auto start = comm::Clock::now();
  comm::Communicator& group = settings_.async ? *save_comm_ : groups_.world();
  auto& primary = *parts_.optimizers.front().optimizer;
  CheckpointMetadata metadata = metadata_for(steps_done, skipped_steps);
  RankState rank_state = collect_rank_state(groups_, parts_.generators, primary);
  int64_t residuals = int64_t(residual_names(rank_state).size());
  group.control_allreduce(&residuals, 1, comm::ControlReduce::kSum);
  metadata.residual_buffers = residuals;
  if (settings_.async) {
    start_shard_write(steps_done, std::move(metadata), std::move(rank_state));
    in_flight_->blocked_seconds = comm::seconds_since(start);
    return in_flight_->dir;
  }
  auto saved =
      save_checkpoint(settings_.root, metadata, own_entries(parts_, nullptr),
                      settings_.resolved_config, settings_.keep_last, group.mpi(), rank_state);
  saved.seconds = comm::seconds_since(start);  // copying the entries included
  print_saved(saved, saved.seconds, -1);
  return saved.path;
}

void CheckpointManager::start_shard_write(int64_t steps_done, CheckpointMetadata metadata,
                                          RankState rank_state) {
  auto flight = std::make_unique<InFlight>();
  // The collective part first, while the ranks are still in step with each
  // other after the step's collectives; the copy that follows waits for no one.
  flight->dir = prepare_checkpoint_dir(settings_.root, steps_done, save_comm_->mpi());
  EntryPool reuse(std::move(snapshot_entries_));
  snapshot_entries_ = own_entries(parts_, &reuse);
  snapshot_state_ = std::move(rank_state);
  flight->metadata = std::move(metadata);
  flight->param_names = shard_param_names(snapshot_entries_);
  // The writer reads the snapshot members; nothing touches them until the
  // next save, which first waits for this one.
  writer_.start([this, dir = flight->dir, rank = groups_.world_rank()] {
    return write_shard(dir, rank, snapshot_entries_, snapshot_state_);
  });
  in_flight_ = std::move(flight);
}

void CheckpointManager::poll() {
  if (!in_flight_) return;
  const auto start = comm::Clock::now();
  // {some rank's writer still works, some rank's failed}: a failure is
  // reported as soon as any rank sees it, not when the slowest is done.
  int32_t flags[2] = {writer_.in_flight() && !writer_.finished() ? 1 : 0, writer_.failed() ? 1 : 0};
  save_comm_->control_allreduce(flags, 2, comm::ControlReduce::kMax);
  in_flight_->blocked_seconds += comm::seconds_since(start);
  if (flags[0] == 1 && flags[1] == 0) return;
  advance_in_flight();
}

void CheckpointManager::finish() {
  while (in_flight_) advance_in_flight();
}

void CheckpointManager::advance_in_flight() {
  const auto start = comm::Clock::now();
  InFlight& flight = *in_flight_;
  const BackgroundOutcome outcome = writer_.in_flight() ? writer_.wait() : BackgroundOutcome{};
  try {
    if (flight.stage == InFlight::Stage::kShards) {
      flight.shard_seconds = outcome.seconds;
      gather_shards(flight.metadata, outcome.digest, flight.param_names, outcome.error,
                    save_comm_->mpi());
      flight.stage = InFlight::Stage::kMetadata;
      if (groups_.world_rank() == 0)
        writer_.start([this, dir = flight.dir, metadata = flight.metadata] {
          return ShardDigest{
              write_metadata_and_prune(settings_.root, dir, metadata, settings_.resolved_config,
                                       settings_.keep_last),
              0};
        });
      flight.blocked_seconds += comm::seconds_since(start);
      return;
    }
    agree_or_throw(save_comm_->mpi(), [&] {
      if (!outcome.error.empty()) throw std::runtime_error(outcome.error);
    });
  } catch (...) {
    in_flight_.reset();
    throw;
  }
  SaveResult saved;
  saved.path = flight.dir;
  saved.step = flight.metadata.step;
  saved.bytes = outcome.digest.bytes;
  print_saved(saved, flight.blocked_seconds + comm::seconds_since(start), flight.shard_seconds);
  in_flight_.reset();
}

// write_seconds < 0: a synchronous save (its time is saved.seconds).
void CheckpointManager::print_saved(const SaveResult& saved, double blocked_seconds,
                                    double write_seconds) const {
  if (groups_.world_rank() != 0 || !settings_.print) return;
  if (write_seconds < 0)
    std::printf("checkpoint: step %lld saved to %s (%.2f MB in %.3f s)\n", (long long)saved.step,
                saved.path.c_str(), double(saved.bytes) / 1e6, saved.seconds);
  else
    std::printf(
        "checkpoint: step %lld saved to %s (%.2f MB; shard written in the background in %.3f s; "
        "the loop was blocked %.4f s)\n",
        (long long)saved.step, saved.path.c_str(), double(saved.bytes) / 1e6, write_seconds,
        blocked_seconds);
  std::fflush(stdout);
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

void CheckpointManager::initialise(const GlobalWeights& weights, const std::string& source) {
  const auto start = comm::Clock::now();
  agree_or_throw(groups_.world().mpi(), [&] {
    for (const auto& part : parts_.optimizers)
      initialise_optimizer(weights, part.params, *part.optimizer);
    if (!parts_.tensors.empty())
      throw std::runtime_error(source +
                               ": this model has tensors besides its parameters, which "
                               "initial weights do not cover");
  });
  if (groups_.world_rank() == 0 && settings_.print) {
    std::printf("initialised the weights from %s (loaded in %.3f s)\n", source.c_str(),
                comm::seconds_since(start));
    std::fflush(stdout);
  }
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
    restore_layout_independent_state(loaded);
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

// State that is the same on every rank (GeneratorPart::layout_independent)
// comes from world rank 0's shard, whatever the saving layout was. A
// checkpoint without it (saved by a run that had no such part) leaves it as
// the run started it.
void CheckpointManager::restore_layout_independent_state(const LoadedCheckpoint& loaded) {
  bool wanted = false;
  for (const auto& generator : parts_.generators) wanted |= generator.layout_independent;
  if (!wanted) return;
  const RankState saved = loaded.rank_state(0);
  for (const auto& generator : parts_.generators) {
    if (!generator.layout_independent) continue;
    const auto found = saved.find(generator.name);
    if (found != saved.end()) generator.load(found->second);
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
