#include "comm/adaptive_model.h"

#include <algorithm>
#include <cmath>

namespace cmpi::comm {
namespace {

constexpr double kLinkWeight = 0.5;     // EWMA weight of a new link sample
constexpr double kMeasureWeight = 0.5;  // EWMA weight of a new measured time
constexpr double kRegimeChange = 0.25;  // relative link move that starts a new regime
constexpr double kJump = 2;             // a sample this far off replaces the estimate

}  // namespace

double predict_seconds(const SlotTraffic& traffic, const CandidateKind& kind,
                       const CandidateMeasure& measure, const LinkModel& link) {
  if (!(link.bytes_per_second > 0)) return kUnpredictable;
  const double bytes = traffic.raw_bytes;
  if (kind.raw) return bytes / link.bytes_per_second;
  if (!measure.measured) return kUnpredictable;
  const double wire = bytes * measure.wire_fraction / link.bytes_per_second;
  const double codec_share = link.point_to_point ? 0.5 : 1.0;
  const double codec = bytes * measure.codec_seconds_per_byte * codec_share;
  const double calls = std::max(traffic.calls, 1.0);
  const double fill = calls * std::min(link.chunk_bytes, bytes / calls) *
                      measure.codec_seconds_per_byte * codec_share;
  return std::max(wire, codec) + fill;
}

bool within_error_budget(const CandidateKind& kind, const CandidateMeasure& measure,
                         const AutoSettings& settings) {
  if (kind.raw || kind.lossless) return true;
  if (!measure.measured || !std::isfinite(measure.rel_error)) return false;
  return measure.rel_error <=
         (kind.error_feedback ? settings.max_rel_error_feedback : settings.max_rel_error);
}

double steps_multiplier(const CandidateKind& kind, const CandidateMeasure& measure) {
  if (kind.raw || kind.lossless) return 1;
  if (!measure.measured || !std::isfinite(measure.rel_error)) return kUnpredictable;
  const double e2 = measure.rel_error * measure.rel_error;
  if (kind.error_feedback) return 1 + e2;
  return e2 < 1 ? 1 / (1 - e2) : kUnpredictable;
}

bool trusted_on_error(const CandidateKind& kind, const CandidateMeasure& measure) {
  return steps_multiplier(kind, measure) <= kTrustedStepsMultiplier;
}

void LinkEstimate::update(double sample, double lower_bound, int64_t step,
                          const AutoSettings& settings) {
  // Within a factor of two a sample is noise to smooth; beyond it the link
  // itself changed, and the estimate jumps so that decisions follow at once.
  const bool near = sample * kJump > bytes_per_second && sample < kJump * bytes_per_second;
  if (sample > 0)
    bytes_per_second = near ? (1 - kLinkWeight) * bytes_per_second + kLinkWeight * sample : sample;
  if (lower_bound > bytes_per_second) bytes_per_second = lower_bound;
  if (!(bytes_per_second > 0)) return;
  const bool moved = !(regime_bytes_per_second > 0) ||
                     std::fabs(bytes_per_second / regime_bytes_per_second - 1) > kRegimeChange;
  const bool stale = settings.probe_every > 0 && step - regime_step >= settings.probe_every;
  if (moved || stale) {
    regime += 1;
    regime_bytes_per_second = bytes_per_second;
    regime_step = step;
  }
}

void SlotMemory::remember(const SlotTraffic& traffic, int64_t regime) {
  if (!(traffic.raw_bytes > 0) || !(traffic.seconds > 0) || chosen >= seconds_per_byte.size())
    return;
  const double sample = traffic.seconds / traffic.raw_bytes;
  double& kept = seconds_per_byte[chosen];
  kept = regime_of[chosen] == regime && kept >= 0
             ? (1 - kMeasureWeight) * kept + kMeasureWeight * sample
             : sample;
  regime_of[chosen] = regime;
}

Choice choose(const SlotTraffic& traffic, const std::vector<CandidateKind>& kinds,
              const std::vector<CandidateMeasure>& measures, const LinkModel& link, int64_t regime,
              const SlotMemory& memory, const AutoSettings& settings) {
  Choice out;
  out.previous = out.chosen = memory.chosen;
  const size_t count = kinds.size();
  out.predicted.assign(count, kUnpredictable);
  out.multiplier.assign(count, kUnpredictable);
  out.cost.assign(count, kUnpredictable);
  out.from_measurement.assign(count, false);
  if (!(traffic.raw_bytes > 0)) {
    out.reason = "no traffic";
    return out;
  }
  if (!(link.bytes_per_second > 0)) {
    out.reason = "link unknown";
    return out;
  }
  const auto measured = [&](size_t c) {
    return c < memory.seconds_per_byte.size() && memory.regime_of[c] == regime &&
           memory.seconds_per_byte[c] >= 0;
  };
  // What the last period's calls took beyond both their wire time (model)
  // and their codec time (measured) was waiting -- for slower ranks, for
  // latency -- which any candidate would pay: it is added to the models of
  // the candidates not measured, so that they compete on equal terms. (Not
  // codec time: a codec slower than its probe, on a contended core, is its
  // own candidate's cost.)
  const size_t current_index = memory.chosen < count ? memory.chosen : 0;
  double offset = 0;
  if (traffic.seconds > 0) {
    CandidateMeasure wire_only = measures[current_index];
    wire_only.codec_seconds_per_byte = 0;
    const double wire = predict_seconds(traffic, kinds[current_index], wire_only, link);
    if (std::isfinite(wire))
      offset = std::max(0.0, traffic.seconds - std::max(wire, traffic.codec_seconds));
  }
  // The rest of the step (compute, other slots and groups) is paid again
  // on every extra step a lossy candidate costs.
  const double elsewhere = std::max(0.0, traffic.step_seconds - traffic.seconds);
  const auto flagged = [](const std::vector<bool>& flags, size_t c) {
    return c < flags.size() && flags[c];
  };
  double barred_cost = kUnpredictable;
  for (size_t c = 0; c < count; ++c) {
    if (!within_error_budget(kinds[c], measures[c], settings) || flagged(memory.demoted, c))
      continue;
    out.from_measurement[c] = measured(c);
    out.predicted[c] = measured(c) ? memory.seconds_per_byte[c] * traffic.raw_bytes
                                   : predict_seconds(traffic, kinds[c], measures[c], link) + offset;
    out.multiplier[c] = steps_multiplier(kinds[c], measures[c]);
    const double cost = out.multiplier[c] * (elsewhere + out.predicted[c]);
    if (!std::isfinite(cost)) continue;
    if (!flagged(memory.barred, c)) {
      out.cost[c] = cost;
    } else if (cost < barred_cost) {
      barred_cost = cost;
      out.best_barred = c;
    }
  }
  size_t best = 0;
  for (size_t c = 1; c < count; ++c) {
    if (out.cost[c] < out.cost[best]) best = c;
    if (std::isfinite(out.cost[c]) && out.predicted[c] < out.predicted[out.fastest])
      out.fastest = c;
  }
  if (!(barred_cost < out.cost[best])) out.best_barred = SIZE_MAX;  // it would not have won
  out.decided = true;
  const size_t current = memory.chosen < count ? memory.chosen : 0;
  if (!std::isfinite(out.cost[current])) {
    out.chosen = best;
    out.reason = flagged(memory.demoted, current)  ? "current demoted"
                 : flagged(memory.barred, current) ? "current barred"
                 : within_error_budget(kinds[current], measures[current], settings)
                     ? "current unpredictable"
                     : "current over error budget";
  } else if (out.cost[best] < out.cost[current] * (1 - settings.min_gain)) {
    out.chosen = best;
    out.reason = out.predicted[best] < out.predicted[current] ? "faster" : "fewer steps";
  } else {
    out.chosen = current;
    out.reason = best == current ? "fastest" : "kept: gain below min_gain";
  }
  out.changed = out.chosen != out.previous;
  for (size_t c = 0; c < count; ++c)
    if (c != out.chosen && std::isfinite(out.cost[c]) &&
        (out.runner_up == SIZE_MAX || out.cost[c] < out.cost[out.runner_up]))
      out.runner_up = c;
  return out;
}

}  // namespace cmpi::comm
