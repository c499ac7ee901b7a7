#include "launch/job_config.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "config/config_loader.h"
#include "config/yaml_reader.h"
#include "launch/checked_config.h"

namespace cmpi::launch {

using config::Config;
using config::ConfigError;
namespace {

// Rank 0's file bytes, or its read error, on every rank: a status, a length,
// then the bytes (the config or the error message).
std::string broadcast_file(const std::string& path, MPI_Comm world, int rank) {
  int ok = 1;
  std::string bytes;
  if (rank == 0) {
    try {
      bytes = config::read_config_text(path);
    } catch (const ConfigError& e) {
      ok = 0;
      bytes = e.what();
    }
  }
  int64_t header[2] = {ok, int64_t(bytes.size())};
  MPI_Bcast(header, 2, MPI_INT64_T, 0, world);
  bytes.resize(size_t(header[1]));
  // read_config_text caps the size far below INT_MAX.
  if (header[1] > 0) MPI_Bcast(bytes.data(), int(header[1]), MPI_CHAR, 0, world);
  if (header[0] == 0) throw ConfigError(bytes);
  return bytes;
}

}  // namespace

uint64_t config_digest(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

Config load_job_config(const std::vector<std::string>& paths,
                       const std::vector<std::string>& overrides, MPI_Comm world) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  std::vector<config::ConfigText> files;
  std::string path;  // the files, for messages
  for (const std::string& file : paths) {
    files.push_back({file, broadcast_file(file, world, rank)});
    path += (path.empty() ? "" : " + ") + file;
  }

  // Parse errors are the same on every rank unless the overrides differ; the
  // digest below catches that case too, so parse first and agree afterwards.
  std::string error;
  Config config;
  try {
    config = parse_checked_configs(files, overrides);
  } catch (const ConfigError& e) {
    error = e.what();
  }
  const uint64_t digest =
      error.empty() ? config_digest(config::to_yaml(config)) : config_digest(error);
  std::vector<uint64_t> digests(size_t(size), 0);
  MPI_Allgather(&digest, 1, MPI_UINT64_T, digests.data(), 1, MPI_UINT64_T, world);
  for (int r = 1; r < size; ++r) {
    if (digests[size_t(r)] == digests[0]) continue;
    throw ConfigError(
        "rank " + std::to_string(r) + " of " + std::to_string(size) +
        " resolved a different config from " + path +
        " than rank 0 (ranks were started with "
        "different arguments, e.g. different --set overrides); every rank must run the same "
        "config. Compare the ranks' `cmpi-train --print-config` output.");
  }
  if (!error.empty()) throw ConfigError(error);
  return config;
}

}  // namespace cmpi::launch
