// LoadedCheckpoint: a complete checkpoint read back and verified. read()
// loads metadata.yaml (its absence means the save never finished), then
// checks the config file and every shard listed against their recorded size
// and FNV-1a 64 checksum before decoding anything, and keeps the entries of
// the parameters asked for. assemble() rebuilds a parameter's GLOBAL tensors
// (weights and both AdamW moments) from whatever slices and runs the saving
// layout cut it into, so any layout can take its own cut of them
// (resharding). Every error names the file at fault. Torch-free.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "checkpoint/metadata.h"
#include "checkpoint/shard_file.h"

namespace cmpi::checkpoint {

struct GlobalParameter {
  std::vector<int64_t> shape;
  std::vector<float> values, exp_avg, exp_avg_sq;
};

class LoadedCheckpoint {
 public:
  // `wanted`: parameter names to keep (nullptr: all). Throws
  // std::runtime_error naming the file for anything missing or corrupt.
  static LoadedCheckpoint read(const std::string& dir, const std::set<std::string>* wanted);

  const std::string& dir() const { return dir_; }
  const CheckpointMetadata& metadata() const { return metadata_; }
  const std::string& config_text() const { return config_text_; }
  // Every parameter name kept, sorted.
  std::vector<std::string> names() const;
  // The state world rank `rank` saved after its entries (shard_file.h),
  // read and checksummed on demand; throws std::runtime_error naming the
  // file, or the rank when the checkpoint has no shard for it.
  RankState rank_state(int rank) const;
  // Throws std::runtime_error when `name` is absent, its entries disagree on
  // the global shape, or they do not cover every element.
  GlobalParameter assemble(const std::string& name) const;

 private:
  std::string dir_;
  CheckpointMetadata metadata_;
  std::string config_text_;
  std::map<std::string, std::vector<ShardEntry>> entries_;  // by name
  std::map<std::string, std::string> file_of_;              // name -> a shard holding it
};

// Throws std::runtime_error naming the checkpoint's metadata when the model
// it was saved from differs from `model_shape` in any key.
void check_model_shape(const LoadedCheckpoint& loaded,
                       const std::map<std::string, int64_t>& model_shape);

}  // namespace cmpi::checkpoint
