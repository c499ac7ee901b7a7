// What a checkpoint holds of an optimizer, and how it is poured back: this
// rank's parameters described against the global layout (name, global shape,
// tensor-parallel slice), the optimizer's state runs turned into shard
// entries, and a loaded checkpoint cut back into this rank's slices and
// loaded into the optimizer (resharding when the layout changed). Also plain
// tensors that are not optimized but must survive a reshard (BatchNorm
// running statistics). Torch-free: parameters are named and described by
// SliceSpec; the optimizer moves the floats.
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

namespace cmpi::checkpoint {

// A parameter (or plain tensor) of this rank, in the optimizer's order.
struct CheckpointedParam {
  std::string name;
  SliceSpec slice;
};

// This rank's shard entries of one optimizer: every run of its state, unless
// the state is replicated over dp and `writes_replicated` is false (another
// replica writes it), skipping parameters named in `held_elsewhere` (the head
// stage's copy of the tied embedding).
std::vector<ShardEntry> shard_entries(const std::vector<CheckpointedParam>& params,
                                      const parallel::OptimizerStateView& state,
                                      bool writes_replicated,
                                      const std::set<std::string>& held_elsewhere);

// A plain tensor's entry: its values, zero moments (nothing optimizes it).
ShardEntry tensor_entry(const CheckpointedParam& param, const float* values);

// Throws std::runtime_error naming the checkpoint's metadata when the model
// it was saved from differs from `model_shape` in any key.
void check_model_shape(const LoadedCheckpoint& loaded,
                       const std::map<std::string, int64_t>& model_shape);

// Reassembles every parameter of `params` and loads this rank's slices
// (weights, moments, step count) into the optimizer. Throws
// std::runtime_error naming the checkpoint.
void restore_optimizer(const LoadedCheckpoint& loaded, const std::vector<CheckpointedParam>& params,
                       parallel::DataParallelOptimizer& optimizer);

// Reassembles a plain tensor and copies this rank's slice of it to `out`.
void restore_tensor(const LoadedCheckpoint& loaded, const CheckpointedParam& param, float* out);

// `--resume` without a path: the latest complete checkpoint under `root`.
// With a path: that checkpoint directory, or the latest complete one under it
// when it is a root. Throws std::runtime_error naming the path.
std::string resolve_resume_path(const std::string& root, const std::string& requested);

}  // namespace cmpi::checkpoint
