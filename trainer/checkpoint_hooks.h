// What the trainer hands the checkpoint library and takes back from it: this
// rank's parameters described against the global layout (name, global shape,
// tensor-parallel slice), the optimizer's state runs turned into shard
// entries, and a loaded checkpoint cut back into this rank's slices and
// poured into the optimizer. Torch-free: parameters are named and described
// by checkpoint::SliceSpec; the optimizer moves the floats.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/loaded_checkpoint.h"
#include "checkpoint/shard_file.h"
#include "checkpoint/slice_spec.h"
#include "parallel/data_parallel_optimizer.h"
#include "trainer/config.h"

namespace cmpi::trainer {

// A parameter of this rank, in the optimizer's order.
struct CheckpointedParam {
  std::string name;
  checkpoint::SliceSpec slice;
};

// The shape keys a checkpoint must match to be loaded into a model.
std::map<std::string, int64_t> model_shape(const ModelConfig& model);

// Where a run's checkpoints go: checkpoint.dir, or <run dir>/checkpoints.
std::string checkpoint_root(const Config& config);

// `--resume` without a path: the latest complete checkpoint under the run's
// root. With a path: that checkpoint directory, or the latest complete one
// under it when it is a root. Throws std::runtime_error naming the path.
std::string resolve_resume_path(const Config& config, const std::string& requested);

// This rank's shard: every run of the optimizer state, unless the state is
// replicated over dp and this is not dp rank 0, skipping parameters named in
// `held_elsewhere` (the head stage's copy of the tied embedding).
std::vector<checkpoint::ShardEntry> shard_entries(const std::vector<CheckpointedParam>& params,
                                                  const parallel::OptimizerStateView& state,
                                                  bool dp_rank_zero,
                                                  const std::set<std::string>& held_elsewhere);

// Checks the checkpoint's model shape against `model`, reassembles every
// parameter of `params` and loads this rank's slices (weights, moments, step
// count) into the optimizer. Throws std::runtime_error naming the checkpoint.
void restore_optimizer(const checkpoint::LoadedCheckpoint& loaded, const ModelConfig& model,
                       const std::vector<CheckpointedParam>& params,
                       parallel::DataParallelOptimizer& optimizer);

}  // namespace cmpi::trainer
