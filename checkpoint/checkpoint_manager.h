// CheckpointManager: when a run saves, what a checkpoint holds, and how a run
// resumes from one. The training loop hands it the stateful parts of its
// rank (CheckpointParts: each optimizer with its parameters named against the
// global layout, plain tensors such as BatchNorm running statistics, the
// random generators) once; the manager owns the interval
// (checkpoint.every), the retention (keep_last), the save and the restore.
//
// Save (collective over the world): every rank writes its shard — the
// optimizer state runs it owns, its plain tensors, and its rank state
// (codec residuals and generators, PowerSGD, the generator parts) — and
// rank 0 writes metadata.yaml last (checkpoint_store.h), so a crash mid-save
// leaves the previous checkpoint the newest complete one.
//
// Asynchronous save (checkpoint.async): save() only copies this rank's shard
// entries and rank state into memory it keeps from save to save (the
// snapshot) and hands them to a BackgroundWriter, which encodes, writes and
// fsyncs the shard while the loop trains on. The writer issues no MPI call.
// The loop calls poll() at every step boundary: while a save is in flight,
// one small control allreduce on the manager's own Communicator (over a
// duplicate of the world) asks whether every rank's background part has
// ended. Once the shards all have, the loop's thread agrees on them and
// gathers their checksums, and rank 0's writer writes metadata.yaml and
// prunes (so the previous checkpoint is kept until the new one is complete);
// once that has ended too, the ranks agree on it and rank 0 reports the
// save. A save due while another is in flight, and finish() at the end of
// the run, wait for it. A failed write (a full disk) throws the same
// CheckpointError, naming the file, on every rank at the poll that sees it.
// A crash before metadata.yaml is renamed into place leaves the step's
// directory without it: never loaded.
//
// Restore (collective over the world; every rank throws the same
// CheckpointError when any fails, rank_agreement.h):
//   - the saved model shape must equal this run's (the metadata names the
//     first key that differs);
//   - weights, AdamW moments and plain tensors are reassembled from whatever
//     slices the saving layout cut them into and re-cut for this one, so any
//     dp/tp/pp/sp/ZeRO layout loads any other (resharding);
//   - under the same layout, each rank also takes back its own rank state,
//     and the run continues bit for bit; under another layout that state
//     belongs to ranks that no longer exist: it restarts (generators through
//     restart_generators) and rank 0 warns about what was dropped.
// Initialise (model.init_from): the weights alone, from global tensors of
// another format, cut for this layout the same way; the run starts at step 0.
// The data position needs nothing: every sample is a function of (seed,
// split, step, index). Torch-free.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <memory>

#include "checkpoint/background_writer.h"
#include "checkpoint/optimizer_state.h"
#include "checkpoint/rank_state.h"
#include "parallel/mesh/parallel_dims.h"

namespace cmpi::comm {
class Communicator;
}

namespace cmpi::checkpoint {

// One optimizer and the parameters it updates.
struct OptimizerPart {
  std::vector<CheckpointedParam> params;  // in the optimizer's order
  parallel::DataParallelOptimizer* optimizer = nullptr;
  // False where another rank writes an identical copy (a spatial replica, a
  // bi-directional pipeline's second replica): this rank only loads.
  bool writes = true;
  // True where this rank writes state that is replicated over dp (dp rank 0).
  bool writes_replicated = true;
};

// A tensor that is saved and resharded but not optimized.
struct TensorPart {
  CheckpointedParam param;
  float* data = nullptr;  // this rank's slice, param.slice.numel() floats
  bool writes = true;
};

struct CheckpointParts {
  // The keys a checkpoint must match to be loaded ("hidden", "depth", ...).
  std::map<std::string, int64_t> model_shape;
  // The first one's PowerSGD state and step count go into the checkpoint.
  std::vector<OptimizerPart> optimizers;
  std::vector<TensorPart> tensors;
  std::vector<GeneratorPart> generators;
  // Called instead of restoring the generators when the checkpoint comes from
  // another layout: `step` is the checkpoint's (dropout must not replay the
  // masks of step 0).
  std::function<void(int64_t step)> restart_generators;
  bool has_dropout = false;  // says, on another layout, that the masks change
};

struct CheckpointSettings {
  std::string root;   // checkpoint directories go here
  int64_t every = 0;  // save every this many steps; 0: never
  int64_t keep_last = 3;
  std::string resolved_config;  // stored beside the metadata
  bool print = true;            // rank 0 prints a line per save and resume
  // Write shards on a background thread from a snapshot (see above).
  bool async = false;
};

// Where a resumed run continues.
struct ResumePoint {
  int64_t step = 0;           // training steps completed
  int64_t skipped_steps = 0;  // of those, not applied (non-finite)
};

// The layout a checkpoint records: dp, tp, pp, zero_stage, world; sp and
// bidirectional only where used, so that checkpoints of layouts without them
// keep reading as the same layout.
std::map<std::string, int64_t> checkpoint_layout(const parallel::ParallelDims& dims,
                                                 bool bidirectional);

class CheckpointManager {
 public:
  CheckpointManager(CheckpointSettings settings, parallel::ProcessGroups& groups,
                    std::map<std::string, int64_t> layout, CheckpointParts parts);

  ~CheckpointManager();
  CheckpointManager(const CheckpointManager&) = delete;
  CheckpointManager& operator=(const CheckpointManager&) = delete;

  // Whether the loop saves after `steps_done` steps.
  bool due(int64_t steps_done) const;
  // Collective over the world. Returns the checkpoint directory: complete on
  // return, or with checkpoint.async in flight (complete once published).
  std::string save(int64_t steps_done, int64_t skipped_steps);
  // Collective over the world, at every step boundary; no MPI call unless a
  // save is in flight. Publishes it once every rank's shard is durable.
  void poll();
  // Collective over the world: waits for the save in flight, if any, and
  // publishes it (the end of the run).
  void finish();
  // Collective over the world; `path` is a complete checkpoint directory.
  ResumePoint restore(const std::string& path);
  // Collective over the world: every rank loads its slices of `weights`
  // (global tensors by parameter name) as the step-0 model, with fresh
  // optimizer state (zero moments); generators and codec state keep their
  // fresh start. `source` names the weights in messages.
  void initialise(const GlobalWeights& weights, const std::string& source);

 private:
  // A save the background writers are working on: first every rank's
  // shard, then rank 0's metadata.yaml.
  struct InFlight {
    enum class Stage { kShards, kMetadata } stage = Stage::kShards;
    CheckpointMetadata metadata;
    std::string dir;
    std::string param_names;     // shard_param_names of this rank's entries
    double blocked_seconds = 0;  // the loop's time spent on this save so far
    double shard_seconds = 0;    // this rank's shard write, on the writer thread
    uint64_t bytes = 0;          // rank 0: of the whole checkpoint
  };
  void start_shard_write(int64_t steps_done, CheckpointMetadata metadata, RankState rank_state);
  // The next stage of the save in flight, once every rank's writer ended.
  void advance_in_flight();
  void print_saved(const SaveResult& saved, double blocked_seconds, double write_seconds) const;
  CheckpointMetadata metadata_for(int64_t steps_done, int64_t skipped_steps) const;
  void restore_rank_state(const LoadedCheckpoint& loaded);
  void restore_layout_independent_state(const LoadedCheckpoint& loaded);
  void warn_other_layout(const LoadedCheckpoint& loaded) const;

  CheckpointSettings settings_;
  parallel::ProcessGroups& groups_;
  std::map<std::string, int64_t> layout_;
  CheckpointParts parts_;
  // A world Communicator on a duplicate of the world, for the asynchronous
  // save's agreement and publication, so that they never match a message of
  // the training's own; null without checkpoint.async. Its small
  // allreduces are control calls (comm/communicator.h): never compressed,
  // never counted in the world group's traffic.
  std::unique_ptr<comm::Communicator> save_comm_;
  BackgroundWriter writer_;
  std::unique_ptr<InFlight> in_flight_;
  // The snapshot of the save in flight (the writer reads it); kept after it
  // for the next snapshot to copy into.
  std::vector<ShardEntry> snapshot_entries_;
  RankState snapshot_state_;
};

}  // namespace cmpi::checkpoint
