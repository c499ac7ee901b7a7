// Works as follows: collect_rank_state asks every group's communicator for
// its codec state (residual float arrays and generator words, keyed by rule),
// every generator part for its state bytes, and the optimizer for PowerSGD's
// residuals, Q's and counters, and stores each as a named byte string.
// restore_rank_state splits the names again by prefix and hands every part
// back to whoever owns it; a generator part checks its own bytes.
#include "checkpoint/rank_state.h"

#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>

#include "comm/adaptive_policy.h"
#include "comm/block_sparse_crossovers.h"
#include "comm/codec_state.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/zero/data_parallel_optimizer.h"
#include "parallel/zero/powersgd_reducer.h"

namespace cmpi::checkpoint {
namespace {

template <typename T>
std::string to_bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

template <typename T>
std::vector<T> from_bytes(const std::string& name, const std::string& bytes) {
  if (bytes.size() % sizeof(T) != 0)
    throw std::runtime_error("rank state " + name + ": " + std::to_string(bytes.size()) +
                             " bytes, not a whole number of " + std::to_string(sizeof(T)) +
                             "-byte values");
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

std::string group_prefix(comm::GroupKind kind) {
  return std::string("comm/") + comm::to_string(kind) + "/";
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

constexpr const char* kPowerSgdResidual = "powersgd/residual/";
// Under a group's prefix: its block-sparse crossovers (measured, so a
// resumed run must not measure them again).
constexpr const char* kBlockSparseCrossovers = "block_sparse_crossovers";
// Under a group's prefix: preset auto's decisions and what it learnt
// (comm/adaptive_policy.h, state_words), taken by timing as well.
constexpr const char* kAdaptivePolicy = "adaptive_policy";
constexpr const char* kPowerSgdQ = "powersgd/q/";
constexpr const char* kPowerSgdProgress = "powersgd/progress";

void collect_powersgd(const parallel::PowerSgdReducer& reducer, RankState& out) {
  const auto state = reducer.state();
  for (size_t t = 0; t < state.residuals.size(); ++t) {
    if (!state.residuals[t].empty())
      out[kPowerSgdResidual + std::to_string(t)] = to_bytes(state.residuals[t]);
    if (!state.qs[t].empty()) out[kPowerSgdQ + std::to_string(t)] = to_bytes(state.qs[t]);
  }
  std::vector<uint64_t> progress{state.q_draws};
  for (int64_t n : state.reductions) progress.push_back(uint64_t(n));
  out[kPowerSgdProgress] = to_bytes(progress);
}

// The tensor index a powersgd/residual/ or powersgd/q/ name ends in.
size_t powersgd_tensor(const std::string& name, size_t prefix, size_t tensors) {
  const std::string digits = name.substr(prefix);
  size_t t = 0;
  bool ok = !digits.empty() && digits.size() < 10;
  for (char c : digits) ok = ok && c >= '0' && c <= '9';
  if (ok) t = size_t(std::stoul(digits));
  if (!ok || t >= tensors)
    throw std::runtime_error("rank state " + name + ": this run's PowerSGD has " +
                             std::to_string(tensors) + " tensors");
  return t;
}

// Puts the powersgd/ entries of `state` back into `reducer`; false when the
// state holds none.
bool restore_powersgd(const RankState& state, parallel::PowerSgdReducer& reducer) {
  auto saved = reducer.state();
  const size_t tensors = saved.residuals.size();
  for (auto& r : saved.residuals) r.clear();
  for (auto& q : saved.qs) q.clear();
  bool found = false;
  for (const auto& [name, bytes] : state) {
    if (starts_with(name, kPowerSgdResidual)) {
      const size_t t = powersgd_tensor(name, std::strlen(kPowerSgdResidual), tensors);
      saved.residuals[t] = from_bytes<float>(name, bytes);
    } else if (starts_with(name, kPowerSgdQ)) {
      const size_t t = powersgd_tensor(name, std::strlen(kPowerSgdQ), tensors);
      saved.qs[t] = from_bytes<float>(name, bytes);
    } else if (name == kPowerSgdProgress) {
      const auto progress = from_bytes<uint64_t>(name, bytes);
      if (progress.size() != saved.reductions.size() + 1)
        throw std::runtime_error("rank state " + name + ": " + std::to_string(progress.size()) +
                                 " values, this run's PowerSGD needs " +
                                 std::to_string(saved.reductions.size() + 1) +
                                 " (Q draws, then one per bucket)");
      saved.q_draws = progress[0];
      for (size_t b = 0; b < saved.reductions.size(); ++b)
        saved.reductions[b] = int64_t(progress[b + 1]);
      found = true;
    }
  }
  if (!found) return false;
  try {
    reducer.restore(saved);
  } catch (const std::invalid_argument& error) {
    throw std::runtime_error(std::string("rank state powersgd/: ") + error.what());
  }
  return true;
}

}  // namespace

RankState collect_rank_state(parallel::ProcessGroups& groups,
                             const std::vector<GeneratorPart>& generators,
                             parallel::DataParallelOptimizer& optimizer) {
  RankState out;
  for (auto kind : comm::kAllGroupKinds) {
    const auto codecs = groups.group(kind).codec_state();
    const std::string prefix = group_prefix(kind);
    for (const auto& [key, residual] : codecs.residuals)
      out[prefix + "residual/" + key] = to_bytes(residual);
    for (const auto& [key, words] : codecs.random_states)
      out[prefix + "random/" + key] = to_bytes(words);
    const auto crossovers = comm::crossover_words(groups.group(kind).block_sparse_calibration());
    if (!crossovers.empty()) out[prefix + kBlockSparseCrossovers] = to_bytes(crossovers);
    if (const comm::AdaptivePolicy* adaptive = groups.group(kind).adaptive())
      out[prefix + kAdaptivePolicy] = to_bytes(adaptive->state_words());
  }
  for (const auto& generator : generators) out[generator.name] = generator.save();
  if (const auto* reducer = optimizer.powersgd_reducer()) collect_powersgd(*reducer, out);
  return out;
}

RestoreReport restore_rank_state(const RankState& state, parallel::ProcessGroups& groups,
                                 const std::vector<GeneratorPart>& generators,
                                 parallel::DataParallelOptimizer& optimizer) {
  RestoreReport report;
  auto* reducer = optimizer.powersgd_reducer();
  if (reducer != nullptr) report.powersgd_restarted = !restore_powersgd(state, *reducer);
  std::map<std::string, const GeneratorPart*> generator_by_name;
  for (const auto& generator : generators) generator_by_name[generator.name] = &generator;
  std::map<std::string, comm::CodecState> codecs;  // by group prefix
  for (const auto& [name, bytes] : state) {
    const auto generator = generator_by_name.find(name);
    if (generator != generator_by_name.end()) {
      generator->second->load(bytes);
      continue;
    }
    bool taken = reducer != nullptr && starts_with(name, "powersgd/");
    for (auto kind : comm::kAllGroupKinds) {
      const std::string prefix = group_prefix(kind);
      if (starts_with(name, prefix + "residual/")) {
        codecs[prefix].residuals[name.substr(prefix.size() + 9)] = from_bytes<float>(name, bytes);
        taken = true;
      } else if (starts_with(name, prefix + "random/")) {
        codecs[prefix].random_states[name.substr(prefix.size() + 7)] =
            from_bytes<uint64_t>(name, bytes);
        taken = true;
      } else if (name == prefix + kBlockSparseCrossovers) {
        try {
          comm::restore_crossover_words(groups.group(kind).block_sparse_calibration(),
                                        from_bytes<uint64_t>(name, bytes));
        } catch (const std::invalid_argument& error) {
          throw std::runtime_error("rank state " + name + ": " + error.what());
        }
        taken = true;
      } else if (name == prefix + kAdaptivePolicy) {
        // Saved under another compression policy (or this run has no
        // adaptive rule for the group): dropped, and the run decides afresh.
        comm::AdaptivePolicy* adaptive = groups.group(kind).adaptive();
        try {
          taken = adaptive != nullptr &&
                  adaptive->restore_state_words(from_bytes<uint64_t>(name, bytes));
        } catch (const std::invalid_argument& error) {
          throw std::runtime_error("rank state " + name + ": " + error.what());
        }
      }
    }
    if (!taken) report.dropped.push_back(name);
  }
  // Every group's codecs are reset to the saved state, also those that saved
  // none (their residuals start from zero as they did in the saving run).
  for (auto kind : comm::kAllGroupKinds) {
    const std::string prefix = group_prefix(kind);
    std::vector<std::string> dropped;
    try {
      dropped = groups.group(kind).restore_codec_state(codecs[prefix]);
    } catch (const std::invalid_argument& error) {
      throw std::runtime_error("rank state " + prefix + ": " + error.what());
    }
    for (const auto& key : dropped) report.dropped.push_back(prefix + key);
  }
  return report;
}

std::vector<std::string> residual_names(const RankState& state) {
  std::vector<std::string> out;
  for (const auto& kv : state)
    for (auto kind : comm::kAllGroupKinds)
      if (starts_with(kv.first, group_prefix(kind) + "residual/")) out.push_back(kv.first);
  return out;
}

}  // namespace cmpi::checkpoint
