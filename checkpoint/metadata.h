// CheckpointMetadata: metadata.yaml, the file that makes a checkpoint
// directory complete. It is written last (atomically), after every rank's
// shard is durable; a directory without it is never loaded. It names every
// shard with its size and FNV-1a 64 checksum, the training position and the
// layout and model shape the checkpoint was saved under. See
// docs/checkpoints.md for the fields.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cmpi::checkpoint {

struct FileDigest {
  std::string file;  // relative to the checkpoint directory
  uint64_t bytes = 0;
  uint64_t fnv1a64 = 0;
  // Shards: the parameters it holds entries of, so a loading rank reads only
  // the shards its parameters are in.
  std::vector<std::string> params;
};

struct CheckpointMetadata {
  int64_t step = 0;             // training steps completed
  int64_t optimizer_steps = 0;  // AdamW updates applied (skipped steps excluded)
  int64_t skipped_steps = 0;
  // Error-feedback residual buffers in the shards' rank state, over all
  // ranks (0 in files written before the field existed): what a resume under
  // another layout drops.
  int64_t residual_buffers = 0;
  std::map<std::string, int64_t> layout;  // dp, tp, pp, zero_stage, world
  std::map<std::string, int64_t> model;   // vocab_size, hidden, ...
  FileDigest config;                      // the resolved config of the saving run
  std::vector<FileDigest> shards;         // one per world rank, in rank order
};

constexpr const char* kMetadataFile = "metadata.yaml";

std::string to_yaml(const CheckpointMetadata& metadata);
// Throws std::runtime_error naming `path` for a missing, unreadable or
// malformed file.
CheckpointMetadata read_metadata(const std::string& path);
// The same from the file's text (what read_metadata parses once it has read
// the file; the fuzz target feeds it bytes directly); `path` labels errors.
CheckpointMetadata parse_metadata(const std::string& text, const std::string& path);

}  // namespace cmpi::checkpoint
