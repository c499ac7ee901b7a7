#include "checkpoint/checkpoint_store.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <system_error>

#include "checkpoint/checksum.h"
#include "checkpoint/rank_agreement.h"
#include "io/atomic_file.h"
#include "io/directories.h"

namespace cmpi::checkpoint {
namespace fs = std::filesystem;
namespace {

std::string shard_name(int rank) {
  char name[32];
  std::snprintf(name, sizeof name, "shard_%05d.bin", rank);
  return name;
}

// step -> directory, for every "step_N" directory under root.
std::map<int64_t, fs::path> step_directories(const std::string& root) {
  std::map<int64_t, fs::path> found;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("step_", 0) != 0 || name.size() == 5) continue;
    if (name.find_first_not_of("0123456789", 5) != std::string::npos) continue;
    if (it->is_directory()) found[std::stoll(name.substr(5))] = it->path();
  }
  return found;
}

// On rank 0: per rank, the parameter names it sent (shard_param_names).
std::vector<std::vector<std::string>> gather_names(const std::string& own, MPI_Comm world) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  int length = int(own.size());
  std::vector<int> lengths(static_cast<size_t>(size)), displacements(lengths.size());
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, world);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    displacements[size_t(r)] = total;
    total += lengths[size_t(r)];
  }
  std::string all(size_t(rank == 0 ? total : 0), '\0');
  MPI_Gatherv(own.data(), length, MPI_CHAR, all.data(), lengths.data(), displacements.data(),
              MPI_CHAR, 0, world);
  std::vector<std::vector<std::string>> names(lengths.size());
  if (rank != 0) return names;
  for (int r = 0; r < size; ++r) {
    size_t at = size_t(displacements[size_t(r)]);
    const size_t end = at + size_t(lengths[size_t(r)]);
    while (at < end) {
      const size_t newline = all.find('\n', at);
      names[size_t(r)].push_back(all.substr(at, newline - at));
      at = newline + 1;
    }
  }
  return names;
}

bool is_complete(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / kMetadataFile, ec);
}

}  // namespace

std::string checkpoint_name(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step_%08lld", static_cast<long long>(step));
  return name;
}

std::string shard_param_names(const std::vector<ShardEntry>& entries) {
  std::string names;
  const std::string* last = nullptr;  // a parameter's runs are consecutive
  for (const auto& e : entries) {
    if (!last || *last != e.name) names += e.name + "\n";
    last = &e.name;
  }
  return names;
}

std::string prepare_checkpoint_dir(const std::string& root, int64_t step, MPI_Comm world) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  const std::string dir = root + "/" + checkpoint_name(step);
  agree_or_throw(world, [&] {
    if (rank != 0) return;
    io::create_directories(dir);
    std::error_code ec;
    fs::remove(fs::path(dir) / kMetadataFile, ec);
    if (ec)
      throw std::runtime_error(dir + "/" + kMetadataFile + ": cannot remove: " + ec.message());
  });
  return dir;
}

ShardDigest write_shard(const std::string& dir, int rank, const std::vector<ShardEntry>& entries,
                        const RankState& state) {
  const std::string bytes = encode_shard(entries, state);
  io::write_file_atomically(dir + "/" + shard_name(rank), bytes);
  return {bytes.size(), fnv1a64(bytes.data(), bytes.size())};
}

void gather_shards(CheckpointMetadata& metadata, const ShardDigest& own,
                   const std::string& own_param_names, const std::string& shard_error,
                   MPI_Comm world) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  agree_or_throw(world, [&] {
    if (!shard_error.empty()) throw std::runtime_error(shard_error);
  });
  const uint64_t digest[2] = {own.bytes, own.checksum};
  std::vector<uint64_t> digests(size_t(rank == 0 ? 2 * size : 0));
  MPI_Gather(digest, 2, MPI_UINT64_T, digests.data(), 2, MPI_UINT64_T, 0, world);
  const auto params_of_shard = gather_names(own_param_names, world);
  metadata.shards.clear();
  if (rank != 0) return;
  for (int r = 0; r < size; ++r)
    metadata.shards.push_back(
        {shard_name(r), digests[2 * r], digests[2 * r + 1], params_of_shard[size_t(r)]});
}

uint64_t write_metadata_and_prune(const std::string& root, const std::string& dir,
                                  CheckpointMetadata metadata, const std::string& resolved_config,
                                  int64_t keep_last) {
  metadata.config = {"config.yaml",
                     resolved_config.size(),
                     fnv1a64(resolved_config.data(), resolved_config.size()),
                     {}};
  io::write_file_atomically(dir + "/config.yaml", resolved_config);
  const std::string text = to_yaml(metadata);
  io::write_file_atomically(dir + "/" + kMetadataFile, text);
  prune_checkpoints(root, keep_last);
  uint64_t bytes = text.size() + resolved_config.size();
  for (const auto& shard : metadata.shards) bytes += shard.bytes;
  return bytes;
}

SaveResult publish_checkpoint(const std::string& root, const std::string& dir,
                              CheckpointMetadata metadata, const ShardDigest& own,
                              const std::string& own_param_names, const std::string& shard_error,
                              const std::string& resolved_config, int64_t keep_last,
                              MPI_Comm world) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  gather_shards(metadata, own, own_param_names, shard_error, world);
  SaveResult result;
  result.path = dir;
  result.step = metadata.step;
  agree_or_throw(world, [&] {
    if (rank == 0)
      result.bytes =
          write_metadata_and_prune(root, dir, std::move(metadata), resolved_config, keep_last);
  });
  return result;
}

SaveResult save_checkpoint(const std::string& root, CheckpointMetadata metadata,
                           const std::vector<ShardEntry>& own_entries,
                           const std::string& resolved_config, int64_t keep_last, MPI_Comm world,
                           const RankState& own_state) {
  const auto start = std::chrono::steady_clock::now();
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  const std::string dir = prepare_checkpoint_dir(root, metadata.step, world);
  ShardDigest own;
  std::string shard_error;
  try {
    own = write_shard(dir, rank, own_entries, own_state);
  } catch (const std::exception& e) {
    shard_error = e.what();
  }
  SaveResult result =
      publish_checkpoint(root, dir, std::move(metadata), own, shard_param_names(own_entries),
                         shard_error, resolved_config, keep_last, world);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::string latest_checkpoint_if_any(const std::string& root) {
  const auto dirs = step_directories(root);
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it)
    if (is_complete(it->second)) return it->second.string();
  return "";
}

std::string latest_checkpoint(const std::string& root) {
  std::string latest = latest_checkpoint_if_any(root);
  if (!latest.empty()) return latest;
  throw std::runtime_error(root + ": no complete checkpoint (a step_N directory with " +
                           kMetadataFile + ") to resume from");
}

void prune_checkpoints(const std::string& root, int64_t keep_last) {
  const auto dirs = step_directories(root);
  int64_t complete_seen = 0;
  bool newer_complete = false;
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    const bool complete = is_complete(it->second);
    bool remove = false;
    if (complete)
      remove = keep_last > 0 && ++complete_seen > keep_last;
    else
      remove = newer_complete;
    newer_complete = newer_complete || complete;
    if (!remove) continue;
    std::error_code ec;
    // Metadata first: an interrupted removal leaves an incomplete directory,
    // never a "complete" one with shards missing.
    fs::remove(it->second / kMetadataFile, ec);
    fs::remove_all(it->second, ec);
    if (ec)
      throw std::runtime_error(it->second.string() +
                               ": cannot remove old checkpoint: " + ec.message());
  }
}

}  // namespace cmpi::checkpoint
