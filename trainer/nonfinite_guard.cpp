// The per-step cost is one allreduce (bitwise or) of an int over the world.
// A step with non-finite values additionally gathers a fixed-size record per
// rank to world rank 0 (parameter names truncated to the record's field) and
// runs the same policy arithmetic on every rank, so all ranks agree on
// skipping or stopping without a further message. Both are control calls of
// the world Communicator (comm/communicator.h): exact, never compressed, and
// not counted in the step's world traffic.
#include "trainer/nonfinite_guard.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "comm/communicator.h"
#include "parallel/mesh/process_groups.h"

namespace cmpi::trainer {
namespace {

enum : int { kLossNonfinite = 1, kUpdateSkipped = 2 };

constexpr size_t kNameBytes = 120;
constexpr size_t kListedRanks = 4;  // per list in the message; the rest are counted

// RankHealth as one fixed-size record, gathered as bytes.
struct HealthRecord {
  int32_t world_rank, dp, tp, pp, sp, computed_loss, update_skipped, padding;
  double loss;
  char own_param[kNameBytes];
  char reduced_param[kNameBytes];
};

void copy_name(char (&to)[kNameBytes], const std::string& from) {
  std::snprintf(to, kNameBytes, "%s", from.c_str());
}

std::string number(double value) {
  if (std::isnan(value)) return "nan";  // not "-nan": the sign of a NaN means nothing here
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

std::string where(const RankHealth& r) {
  return "world rank " + std::to_string(r.world_rank) + " (dp " + std::to_string(r.coord.dp) +
         ", tp " + std::to_string(r.coord.tp) + ", pp " + std::to_string(r.coord.pp) + ")";
}

std::string listed(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < kListedRanks; ++i)
    out += (i == 0 ? "" : ", ") + items[i];
  if (items.size() > kListedRanks)
    out += " and " + std::to_string(items.size() - kListedRanks) + " more";
  return out;
}

// "<param> <how> <ranks>" per parameter, ranks in order, parameters in the
// order their first rank came.
std::string by_parameter(const std::vector<std::pair<std::string, std::string>>& param_and_rank,
                         const std::string& how) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const auto& [param, rank] : param_and_rank) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& group) { return group.first == param; });
    if (it == groups.end()) it = groups.insert(groups.end(), {param, {}});
    it->second.push_back(rank);
  }
  std::string out;
  for (size_t i = 0; i < groups.size(); ++i)
    out += (i == 0 ? "" : "; ") + groups[i].first + " " + how + " " + listed(groups[i].second);
  return out;
}

}  // namespace

std::string describe_nonfinite_step(int64_t step, double grad_norm,
                                    const std::vector<RankHealth>& ranks) {
  std::vector<std::string> loss_ranks;
  std::vector<std::pair<std::string, std::string>> own, reduced;  // parameter, rank
  double loss = 0;
  bool update_skipped = false;
  for (const auto& r : ranks) {
    if (r.loss_nonfinite()) {
      if (loss_ranks.empty()) loss = r.loss;
      loss_ranks.push_back(where(r));
    }
    update_skipped = update_skipped || r.update_skipped;
    if (!r.own_param.empty()) own.emplace_back(r.own_param, where(r));
    if (!r.reduced_param.empty()) reduced.emplace_back(r.reduced_param, where(r));
  }
  std::string out = "step " + std::to_string(step) + ":";
  if (!loss_ranks.empty())
    out += " the loss went non-finite (" + number(loss) + ") on " + listed(loss_ranks) + ";";
  if (update_skipped) {
    out += " the gradients went non-finite (global norm " + number(grad_norm) + "): ";
    if (!own.empty())
      out += "the first non-finite gradient is " + by_parameter(own, "from the own backward of");
    else if (!reduced.empty())
      out += "no rank's own gradient was; the first non-finite gradient is " +
             by_parameter(reduced, "after the reduction over dp, on");
    else
      out += "every gradient value is finite, their sum of squares overflowed";
    out += "; the step's update was not applied";
  } else {
    out += " every gradient was finite, so the step's update was applied";
  }
  return out;
}

NonfiniteGuard::NonfiniteGuard(const config::TrainingConfig& training,
                               parallel::ProcessGroups& groups)
    : skip_(training.on_nonfinite == "skip_step"),
      max_skipped_in_a_row_(training.max_skipped_steps),
      groups_(groups) {
  if (training.on_nonfinite != "abort" && !skip_)
    throw std::invalid_argument("training.on_nonfinite must be abort or skip_step, got " +
                                training.on_nonfinite);
  if (max_skipped_in_a_row_ < 1)
    throw std::invalid_argument("training.max_skipped_steps must be >= 1, got " +
                                std::to_string(max_skipped_in_a_row_));
}

std::vector<RankHealth> NonfiniteGuard::gather(const RankHealth& mine) const {
  HealthRecord record{};
  record.world_rank = mine.world_rank;
  record.dp = mine.coord.dp;
  record.tp = mine.coord.tp;
  record.pp = mine.coord.pp;
  record.sp = mine.coord.sp;
  record.computed_loss = mine.computed_loss;
  record.update_skipped = mine.update_skipped;
  record.loss = mine.loss;
  copy_name(record.own_param, mine.own_param);
  copy_name(record.reduced_param, mine.reduced_param);
  const std::vector<HealthRecord> records = groups_.world().control_gather(record, 0);
  std::vector<RankHealth> out;
  for (const auto& r : records) {
    RankHealth h;
    h.world_rank = r.world_rank;
    h.coord.dp = r.dp;
    h.coord.tp = r.tp;
    h.coord.pp = r.pp;
    h.coord.sp = r.sp;
    h.computed_loss = r.computed_loss != 0;
    h.update_skipped = r.update_skipped != 0;
    h.loss = r.loss;
    h.own_param = r.own_param;
    h.reduced_param = r.reduced_param;
    out.push_back(std::move(h));
  }
  return out;
}

StepVerdict NonfiniteGuard::check(int64_t step, double grad_norm, const RankHealth& mine) {
  const int my_flags =
      (mine.loss_nonfinite() ? kLossNonfinite : 0) | (mine.update_skipped ? kUpdateSkipped : 0);
  int32_t flags = my_flags;
  groups_.world().control_allreduce(&flags, 1, comm::ControlReduce::kBitOr);
  StepVerdict verdict;
  if (flags == 0) {
    skipped_in_a_row_ = 0;
    return verdict;
  }
  // fp16 loss scaling: a gradient overflow with a finite loss is skipped and
  // counted, and the scale backs off, whatever on_nonfinite says; it does not
  // count towards max_skipped_steps (the scale halves each time). The
  // optimizer's skip and the loss scale are the same on every rank.
  if (flags == kUpdateSkipped && mine.overflow_absorbed) {
    verdict.skipped = true;
    ++skipped_steps_;
    ++overflow_steps_;
    char line[160];
    std::snprintf(line, sizeof line,
                  "step %lld: fp16 gradients overflowed at loss scale %g; update skipped, the "
                  "scale backs off",
                  (long long)step, mine.loss_scale);
    verdict.note = line;
    return verdict;
  }
  verdict.nonfinite = true;
  // The optimizer's decision rests on the global norm: the same on every rank.
  verdict.skipped = (flags & kUpdateSkipped) != 0;
  const auto ranks = gather(mine);
  if (verdict.skipped) {
    ++skipped_steps_;
    ++skipped_in_a_row_;
  }
  std::string outcome;
  if (!skip_) {
    verdict.stop = true;
    outcome = ". Lower training.lr or set training.on_nonfinite: skip_step";
  } else if (!verdict.skipped) {
    verdict.stop = true;
    outcome =
        "; training.on_nonfinite: skip_step cannot take back an applied update. Lower "
        "training.lr";
  } else if (skipped_in_a_row_ > max_skipped_in_a_row_) {
    verdict.stop = true;
    outcome = "; that is " + std::to_string(skipped_in_a_row_) +
              " skipped steps in a row, more than training.max_skipped_steps (" +
              std::to_string(max_skipped_in_a_row_) + ") allows. Lower training.lr";
  } else {
    outcome = "; skipped (" + std::to_string(skipped_in_a_row_) + " in a row, at most " +
              std::to_string(max_skipped_in_a_row_) + " by training.max_skipped_steps)";
  }
  if (!ranks.empty())
    verdict.message = describe_nonfinite_step(step, grad_norm, ranks) + outcome;
  else if (verdict.stop)
    verdict.message =
        "step " + std::to_string(step) + ": stopped on non-finite values (world rank 0 says where)";
  return verdict;
}

}  // namespace cmpi::trainer
