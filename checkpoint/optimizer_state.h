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
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/loaded_checkpoint.h"
#include "checkpoint/shard_file.h"
#include "checkpoint/slice_spec.h"
#include "parallel/zero/data_parallel_optimizer.h"

namespace cmpi::checkpoint {

// A parameter (or plain tensor) of this rank, in the optimizer's order.
struct CheckpointedParam {
  std::string name;
  SliceSpec slice;
  // Another rank writes this parameter, bit for bit the same (the head
  // stage's copy of the tied embedding: the embedding stage writes it):
  // saving skips it, loading still fills it.
  bool written_elsewhere = false;
  // >= 0: the rows of dim 0 past this many are padding (a vocabulary table,
  // models/gpt_options.h): a checkpoint or initial weights with other
  // padding fit, their rows cut or zero-padded.
  int64_t used_rows = -1;
};

// Entries of an earlier snapshot, handed out again in order, so that a
// repeated snapshot (checkpoint.async) copies into memory the process already
// holds, their capacity kept, instead of faulting in fresh pages.
class EntryPool {
 public:
  explicit EntryPool(std::vector<ShardEntry> entries = {}) : entries_(std::move(entries)) {}
  // The next earlier entry (its vectors' capacity kept), or a new one.
  ShardEntry take() {
    return next_ < entries_.size() ? std::move(entries_[next_++]) : ShardEntry{};
  }

 private:
  std::vector<ShardEntry> entries_;
  size_t next_ = 0;
};

// This rank's shard entries of one optimizer: every run of its state, unless
// the state is replicated over dp and `writes_replicated` is false (another
// replica writes it), skipping parameters written_elsewhere.
std::vector<ShardEntry> shard_entries(const std::vector<CheckpointedParam>& params,
                                      const parallel::OptimizerStateView& state,
                                      bool writes_replicated, EntryPool* reuse = nullptr);

// A plain tensor's entry: its values, zero moments (nothing optimizes it).
ShardEntry tensor_entry(const CheckpointedParam& param, const float* values,
                        EntryPool* reuse = nullptr);

// Reassembles every parameter of `params` and loads this rank's slices
// (weights, moments, step count) into the optimizer. Throws
// std::runtime_error naming the checkpoint.
void restore_optimizer(const LoadedCheckpoint& loaded, const std::vector<CheckpointedParam>& params,
                       parallel::DataParallelOptimizer& optimizer);

// A parameter's global weights, row-major, by name and global shape (pretrained
// weights from another format: hf/hf_pretrained.h).
using GlobalWeights =
    std::function<std::vector<float>(const std::string& name, const std::vector<int64_t>& shape)>;

// Loads this rank's slices of `weights` into the optimizer as a fresh start:
// zero moments, step count 0. A vocabulary table's weights may come without
// the padding (used_rows rows). Throws std::runtime_error when a tensor's
// size differs from its parameter's.
void initialise_optimizer(const GlobalWeights& weights,
                          const std::vector<CheckpointedParam>& params,
                          parallel::DataParallelOptimizer& optimizer);

// Reassembles a plain tensor and copies this rank's slice of it to `out`.
void restore_tensor(const LoadedCheckpoint& loaded, const CheckpointedParam& param, float* out);

// `--resume` without a path: the latest complete checkpoint under `root`.
// With a path: that checkpoint directory, or the latest complete one under it
// when it is a root. Throws std::runtime_error naming the path.
std::string resolve_resume_path(const std::string& root, const std::string& requested);

}  // namespace cmpi::checkpoint
