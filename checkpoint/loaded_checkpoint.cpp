#include "checkpoint/loaded_checkpoint.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "checkpoint/checksum.h"

namespace cmpi::checkpoint {
namespace {

std::string read_verified(const std::string& dir, const FileDigest& digest) {
  const std::string path = dir + "/" + digest.file;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": missing (listed in " + kMetadataFile + ")");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() != digest.bytes)
    throw std::runtime_error(path + ": " + std::to_string(bytes.size()) + " bytes, " +
                             kMetadataFile + " records " + std::to_string(digest.bytes) +
                             " (truncated or replaced)");
  const uint64_t checksum = fnv1a64(bytes.data(), bytes.size());
  if (checksum != digest.fnv1a64)
    throw std::runtime_error(path + ": checksum " + checksum_hex(checksum) + " does not match " +
                             checksum_hex(digest.fnv1a64) + " recorded in " + kMetadataFile +
                             " (corrupted)");
  return bytes;
}

}  // namespace

LoadedCheckpoint LoadedCheckpoint::read(const std::string& dir,
                                        const std::set<std::string>* wanted) {
  LoadedCheckpoint c;
  c.dir_ = dir;
  c.metadata_ = read_metadata(dir + "/" + kMetadataFile);
  c.config_text_ = read_verified(dir, c.metadata_.config);
  for (const auto& shard : c.metadata_.shards) {
    // Every shard must be there whole; only those holding wanted parameters
    // are read (and checksummed).
    const std::string path = dir + "/" + shard.file;
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) throw std::runtime_error(path + ": missing (listed in " + kMetadataFile + ")");
    if (size != shard.bytes)
      throw std::runtime_error(path + ": " + std::to_string(size) + " bytes, " + kMetadataFile +
                               " records " + std::to_string(shard.bytes) +
                               " (truncated or replaced)");
    bool needed = wanted == nullptr;
    for (const auto& name : shard.params) needed = needed || wanted->count(name) > 0;
    if (!needed) continue;
    const std::string bytes = read_verified(dir, shard);
    for (auto& entry : decode_shard(bytes, dir + "/" + shard.file)) {
      if (wanted && wanted->count(entry.name) == 0) continue;
      c.file_of_[entry.name] = dir + "/" + shard.file;
      c.entries_[entry.name].push_back(std::move(entry));
    }
  }
  return c;
}

RankState LoadedCheckpoint::rank_state(int rank) const {
  if (rank < 0 || size_t(rank) >= metadata_.shards.size())
    throw std::runtime_error(dir_ + ": no shard of world rank " + std::to_string(rank) + " (" +
                             std::to_string(metadata_.shards.size()) + " shards)");
  const FileDigest& shard = metadata_.shards[size_t(rank)];
  RankState state;
  decode_shard(read_verified(dir_, shard), dir_ + "/" + shard.file, &state);
  return state;
}

std::vector<std::string> LoadedCheckpoint::names() const {
  std::vector<std::string> out;
  for (const auto& kv : entries_) out.push_back(kv.first);
  return out;
}

GlobalParameter LoadedCheckpoint::assemble(const std::string& name) const {
  const auto found = entries_.find(name);
  if (found == entries_.end())
    throw std::runtime_error(dir_ + ": no shard holds parameter " + name +
                             " (a checkpoint of another model?)");
  const auto& entries = found->second;
  GlobalParameter p;
  p.shape = entries.front().slice.global_shape;
  const size_t n = size_t(entries.front().slice.global_numel());
  p.values.assign(n, 0.0f);
  p.exp_avg.assign(n, 0.0f);
  p.exp_avg_sq.assign(n, 0.0f);
  std::vector<float> covered(n, 0.0f);
  for (const auto& e : entries) {
    if (e.slice.global_shape != p.shape)
      throw std::runtime_error(file_of_.at(name) + ": parameter " + name +
                               " saved with two different global shapes");
    scatter_into_global(e.slice, e.offset, e.values.size(), e.values.data(), p.values.data());
    scatter_into_global(e.slice, e.offset, e.exp_avg.size(), e.exp_avg.data(), p.exp_avg.data());
    scatter_into_global(e.slice, e.offset, e.exp_avg_sq.size(), e.exp_avg_sq.data(),
                        p.exp_avg_sq.data());
    const std::vector<float> ones(e.values.size(), 1.0f);
    scatter_into_global(e.slice, e.offset, ones.size(), ones.data(), covered.data());
  }
  for (size_t i = 0; i < n; ++i)
    if (covered[i] == 0.0f)
      throw std::runtime_error(dir_ + ": parameter " + name + " element " + std::to_string(i) +
                               " is in no shard (a shard is missing entries)");
  return p;
}

void check_model_shape(const LoadedCheckpoint& loaded,
                       const std::map<std::string, int64_t>& model_shape) {
  const auto& saved = loaded.metadata().model;
  for (const auto& [key, value] : model_shape) {
    const auto found = saved.find(key);
    if (found == saved.end() || found->second != value)
      throw std::runtime_error(loaded.dir() + "/" + kMetadataFile +
                               ": saved from a model with model." + key + " = " +
                               (found == saved.end() ? "?" : std::to_string(found->second)) +
                               ", this config has " + std::to_string(value));
  }
  // Keys recorded only when they differ from a default (the GPT's
  // architecture switches, models/family/gpt_family.cpp): saved but absent
  // here means this config has the default, and the checkpoint was saved
  // from another model.
  for (const auto& [key, value] : saved)
    if (!model_shape.count(key))
      throw std::runtime_error(loaded.dir() + "/" + kMetadataFile +
                               ": saved from a model with model." + key + " = " +
                               std::to_string(value) + ", which this config does not have");
}

}  // namespace cmpi::checkpoint
