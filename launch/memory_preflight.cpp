#include "launch/memory_preflight.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "comm/node_grouping.h"
#include "config/config_loader.h"
#include "config/units.h"
#include "models/family/model_family.h"

namespace cmpi::launch {

using config::Config;
using config::human_bytes;
using config::origin_of;
namespace {

uint64_t read_number(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return 0;
  try {
    return std::stoull(word);
  } catch (const std::exception&) {
    return 0;
  }
}

uint64_t mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

// "model.hidden = 4096 (configs/x.yaml:7)" for each key.
std::string keys_text(const Config& c, const std::vector<std::pair<std::string, int64_t>>& keys) {
  std::string out;
  for (const auto& [key, value] : keys)
    out += (out.empty() ? "" : ", ") + key + " = " + std::to_string(value) + " (" +
           origin_of(c, key) + ")";
  return out;
}

}  // namespace

uint64_t available_memory_bytes() {
  uint64_t available = mem_available_bytes();
  // cgroup v2, then v1: a container's limit minus what it already uses.
  for (const auto& [limit_path, usage_path] :
       {std::pair<std::string, std::string>{"/sys/fs/cgroup/memory.max",
                                            "/sys/fs/cgroup/memory.current"},
        {"/sys/fs/cgroup/memory/memory.limit_in_bytes",
         "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const uint64_t limit = read_number(limit_path);
    if (limit == 0 || limit >= (uint64_t(1) << 60)) continue;
    const uint64_t used = read_number(usage_path);
    const uint64_t left = limit > used ? limit - used : 0;
    available = available == 0 ? left : std::min(available, left);
    break;
  }
  return available;
}

std::string memory_fit_error(const Config& c, const parallel::ParallelDims& dims, int ranks_on_node,
                             uint64_t available_bytes, const std::string& where) {
  if (!c.run.memory_check || available_bytes == 0) return "";
  const parallel::MemoryEstimate e = models::estimate_memory(c, dims);
  const long double needed = e.total() * (long double)ranks_on_node;
  if (needed <= (long double)available_bytes) return "";

  // Name the keys behind the largest part, with where they were written.
  const long double state = e.parameter_bytes + e.gradient_bytes + e.optimizer_bytes;
  std::string drivers;
  if (e.activation_bytes >= state)
    drivers = "activations, driven by " +
              keys_text(c, {{"training.micro_batch", c.training.micro_batch},
                            {"model.seq_len", c.model.seq_len},
                            {"model.hidden", c.model.hidden},
                            {"model.layers", c.model.layers}}) +
              "; lower training.micro_batch or raise parallel.tensor / parallel.pipeline";
  else
    drivers = "parameters, gradients and AdamW state, driven by " +
              keys_text(c, {{"model.hidden", c.model.hidden},
                            {"model.layers", c.model.layers},
                            {"model.mlp_ratio", c.model.mlp_ratio},
                            {"model.vocab_size", c.model.vocab_size}}) +
              "; raise parallel.tensor / parallel.pipeline / parallel.zero_stage or shrink "
              "the model";
  auto bytes = [](long double b) { return human_bytes(double(b)); };
  return "memory: each rank needs about " + bytes(e.total()) + " (parameters " +
         bytes(e.parameter_bytes) + ", gradients " + bytes(e.gradient_bytes) + ", optimizer " +
         bytes(e.optimizer_bytes) + ", activations " + bytes(e.activation_bytes) + ", buffers " +
         bytes(e.buffer_bytes) + ", comm scratch " + bytes(e.scratch_bytes) + ", pipeline sends " +
         bytes(e.pipeline_send_bytes) +
         (e.outer_state_bytes > 0 ? ", DiLoCo outer state " + bytes(e.outer_state_bytes)
                                  : std::string()) +
         ", runtime " + bytes(e.runtime_bytes) + " on pipeline stage " + std::to_string(e.stage) +
         ", layout " + dims.to_string() + "); " + std::to_string(ranks_on_node) + " rank(s) on " +
         where + " need " + bytes(needed) + " but only " + bytes((long double)available_bytes) +
         " is available. The largest part is " + drivers +
         ". (This is an estimate; set run.memory_check: false to start anyway.)";
}

std::string check_memory_fits(const Config& c, const parallel::ParallelDims& dims, MPI_Comm world) {
  MPI_Comm node = comm::node_communicator(world);
  int ranks_on_node = 1, node_rank = 0;
  MPI_Comm_size(node, &ranks_on_node);
  MPI_Comm_rank(node, &node_rank);
  // One reading per node, so that every rank of it judges the same number.
  unsigned long long available = node_rank == 0 ? available_memory_bytes() : 0;
  MPI_Bcast(&available, 1, MPI_UNSIGNED_LONG_LONG, 0, node);
  MPI_Comm_free(&node);
  return memory_fit_error(c, dims, ranks_on_node, available);
}

}  // namespace cmpi::launch
