// CheckpointStore: the checkpoints of one run, under one root directory:
//
//   <root>/step_00000010/shard_00000.bin ... shard_<world-1>.bin
//                        config.yaml     (the saving run's resolved config)
//                        metadata.yaml   (written last: the checkpoint is complete)
//
// save() is collective over `world`: every rank writes its shard atomically
// (temp + fsync + rename + fsync dir, io/), the ranks agree that all shards
// are durable, and only then rank 0 writes config.yaml and metadata.yaml (with
// every shard's size and checksum, gathered from the ranks) and prunes the
// complete checkpoints beyond keep_last. A crash at any point leaves the
// previous complete checkpoint loadable; a directory without metadata.yaml is
// never loaded (and is removed by a later save's pruning).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/metadata.h"
#include "checkpoint/shard_file.h"

namespace cmpi::checkpoint {

struct SaveResult {
  std::string path;  // the checkpoint directory
  double seconds = 0;
  uint64_t bytes = 0;  // all shards + metadata
};

// Name of a step's checkpoint directory: "step_00000010".
std::string checkpoint_name(int64_t step);

// Collective over `world`. `metadata.shards` is filled here; `own_state` is
// stored after this rank's entries (shard_file.h). Throws
// CheckpointError on every rank if any rank failed (the first one's message).
SaveResult save_checkpoint(const std::string& root, CheckpointMetadata metadata,
                           const std::vector<ShardEntry>& own_entries,
                           const std::string& resolved_config, int64_t keep_last, MPI_Comm world,
                           const RankState& own_state = {});

// The complete checkpoint with the highest step under `root`; throws
// std::runtime_error naming `root` when there is none.
std::string latest_checkpoint(const std::string& root);

// Removes complete checkpoints beyond the newest `keep_last` and incomplete
// ones older than the newest complete one (leftovers of crashed saves).
void prune_checkpoints(const std::string& root, int64_t keep_last);

}  // namespace cmpi::checkpoint
