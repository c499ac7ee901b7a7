#include "parallel/diloco/replica_state.h"

#include <cstring>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

#include "parallel/zero/data_parallel_optimizer.h"

namespace cmpi::parallel {
namespace {

constexpr const char* kMagic = "replica1";

template <typename T>
void put(std::string& out, const T* data, size_t count) {
  out.append(reinterpret_cast<const char*>(data), count * sizeof(T));
}

}  // namespace

// Layout: magic, the step count (int64), the number of runs (uint64), then per
// run its parameter, offset and length (uint64 each) and its values, exp_avg
// and exp_avg_sq (float32).
std::string save_replica_state(const DataParallelOptimizer& optimizer) {
  const OptimizerStateView view = optimizer.state();
  std::string out = kMagic;
  put(out, &view.steps, 1);
  const uint64_t runs = view.runs.size();
  put(out, &runs, 1);
  for (const auto& run : view.runs) {
    const uint64_t header[3] = {run.param, run.offset, run.length};
    put(out, header, 3);
    put(out, run.values, run.length);
    put(out, run.exp_avg, run.length);
    put(out, run.exp_avg_sq, run.length);
  }
  return out;
}

void load_replica_state(DataParallelOptimizer& optimizer, const std::string& bytes) {
  const auto bad = [](const std::string& why) {
    return std::runtime_error("rank state diloco/replica: " + why);
  };
  const size_t magic = std::strlen(kMagic);
  if (bytes.compare(0, magic, kMagic) != 0) throw bad("not a DiLoCo replica's optimizer state");
  size_t at = magic;
  const auto take = [&](void* out, size_t n) {
    if (bytes.size() - at < n) throw bad("ends early");
    std::memcpy(out, bytes.data() + at, n);
    at += n;
  };
  int64_t steps = 0;
  uint64_t runs = 0;
  take(&steps, sizeof steps);
  take(&runs, sizeof runs);
  // (param, offset) -> the run's three kinds, each `length` floats.
  std::map<std::pair<size_t, size_t>, std::vector<std::vector<float>>> saved;
  for (uint64_t r = 0; r < runs; ++r) {
    uint64_t header[3];
    take(header, sizeof header);
    if (header[2] > (bytes.size() - at) / sizeof(float)) throw bad("ends inside a run");
    std::vector<std::vector<float>> kinds(3, std::vector<float>(header[2]));
    for (auto& kind : kinds) take(kind.data(), header[2] * sizeof(float));
    saved[{size_t(header[0]), size_t(header[1])}] = std::move(kinds);
  }
  if (at != bytes.size()) throw bad("holds bytes after its last run");
  const OptimizerStateView mine = optimizer.state();
  if (mine.runs.size() != saved.size())
    throw bad(std::to_string(saved.size()) + " runs saved, this optimizer holds " +
              std::to_string(mine.runs.size()));
  for (const auto& run : mine.runs) {
    const auto found = saved.find({run.param, run.offset});
    if (found == saved.end() || found->second[0].size() != run.length)
      throw bad("no saved run for parameter " + std::to_string(run.param) + " at offset " +
                std::to_string(run.offset) + " of " + std::to_string(run.length) + " values");
  }
  optimizer.load_state(
      steps, [&](size_t param, StateKind kind, size_t offset, size_t length, float* out) {
        // Runs are asked for whole (stage 0: one per parameter).
        const auto found = saved.find({param, offset});
        if (found == saved.end() || found->second[size_t(kind)].size() != length)
          throw bad("the optimizer asked for a run that was not saved");
        std::memcpy(out, found->second[size_t(kind)].data(), length * sizeof(float));
      });
}

}  // namespace cmpi::parallel
