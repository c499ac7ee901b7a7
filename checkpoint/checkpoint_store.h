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
  int64_t step = 0;
  double seconds = 0;
  uint64_t bytes = 0;  // all shards + metadata
};

// Name of a step's checkpoint directory: "step_00000010".
std::string checkpoint_name(int64_t step);

// Collective over `world`. `metadata.shards` is filled here; `own_state` is
// stored after this rank's entries (shard_file.h). Throws
// CheckpointError on every rank if any rank failed (the first one's message).
// It runs the three phases below in a row.
SaveResult save_checkpoint(const std::string& root, CheckpointMetadata metadata,
                           const std::vector<ShardEntry>& own_entries,
                           const std::string& resolved_config, int64_t keep_last, MPI_Comm world,
                           const RankState& own_state = {});

// The phases of a save, apart for a caller that writes the shards on a
// background thread (checkpoint.async, checkpoint_manager.h): only
// write_shard runs there, and it issues no MPI call.

// Collective over `world`: rank 0 creates the step's directory and removes the
// metadata of an older save of the same step, so that it stops counting as
// complete before any shard is replaced. Returns the directory.
std::string prepare_checkpoint_dir(const std::string& root, int64_t step, MPI_Comm world);

struct ShardDigest {
  uint64_t bytes = 0;
  uint64_t checksum = 0;  // FNV-1a 64 over the file's bytes
};

// Rank-local, no MPI: encodes this rank's shard and writes it atomically
// (durable when it returns). Throws io::FileError naming the file.
ShardDigest write_shard(const std::string& dir, int rank, const std::vector<ShardEntry>& entries,
                        const RankState& state);

// The distinct parameter names of `entries` in order, each followed by '\n'
// (what metadata.yaml lists per shard).
std::string shard_param_names(const std::vector<ShardEntry>& entries);

// Collective over `world`: the ranks agree on their shards (`shard_error`:
// this rank's failure, empty when its shard is durable; CheckpointError on
// every rank if any failed), then rank 0's `metadata.shards` receives every
// shard's size, checksum and parameter names (the other ranks': emptied).
void gather_shards(CheckpointMetadata& metadata, const ShardDigest& own,
                   const std::string& own_param_names, const std::string& shard_error,
                   MPI_Comm world);

// Rank-local, no MPI (rank 0, after gather_shards): writes config.yaml, then
// metadata.yaml (from here on the checkpoint is complete), then prunes.
// Returns the checkpoint's bytes (shards, metadata and config). Throws
// io::FileError or std::runtime_error naming the file.
uint64_t write_metadata_and_prune(const std::string& root, const std::string& dir,
                                  CheckpointMetadata metadata, const std::string& resolved_config,
                                  int64_t keep_last);

// gather_shards, then rank 0's write_metadata_and_prune; throws
// CheckpointError on every rank if any part failed on any rank.
SaveResult publish_checkpoint(const std::string& root, const std::string& dir,
                              CheckpointMetadata metadata, const ShardDigest& own,
                              const std::string& own_param_names, const std::string& shard_error,
                              const std::string& resolved_config, int64_t keep_last,
                              MPI_Comm world);

// The complete checkpoint with the highest step under `root`; throws
// std::runtime_error naming `root` when there is none.
std::string latest_checkpoint(const std::string& root);
// The same, or "" when `root` holds none (or does not exist).
std::string latest_checkpoint_if_any(const std::string& root);

// Removes complete checkpoints beyond the newest `keep_last` and incomplete
// ones older than the newest complete one (leftovers of crashed saves).
void prune_checkpoints(const std::string& root, int64_t keep_last);

}  // namespace cmpi::checkpoint
