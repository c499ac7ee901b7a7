#include "comm/adaptive_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "comm/clock.h"
#include "comm/test_faults.h"

namespace cmpi::comm {
namespace {

constexpr size_t kProbeFloats = size_t(64) << 10;  // 256 KiB of the message
constexpr double kLinkSampleBytes = 64 << 10;      // smaller calls are latency-bound
constexpr double kCodecBoundShare = 0.5;  // codec time share beyond which a call is codec-bound
constexpr size_t kLinkFields = 2;         // per locality: sample, lower bound
constexpr size_t kGroupFields = 2;        // the period's wall seconds, mean loss
constexpr size_t kSlotFields = 4;         // raw bytes, calls, seconds, codec seconds (per step)
constexpr size_t kCandidateFields = 3;    // wire fraction, codec s/byte, error
// A rank without a loss this period: below any loss under MAX.
constexpr double kNoLoss = -std::numeric_limits<double>::infinity();
// Tests only (CMPI_TEST_FAULT=auto_timing:MBIT, comm/test_faults.h): the
// times that stand in for measured ones, a function of the bytes alone.
constexpr double kFixedCodecSecondsPerByte = 1e-9;
constexpr double kFixedComputeSecondsPerStep = 0.01;

bool has(uint32_t mask, int bit) {
  return (mask >> bit) & 1u;
}

}  // namespace

std::string candidate_name(const PolicySlice::Route& route) {
  if (route.codec == nullptr) return "raw";
  const auto& spec = route.codec->spec();
  std::string out = spec.name();
  char separator = ':';
  for (const auto& [key, value] : spec.params()) {
    out += separator + key + "=" + value;
    separator = ',';
  }
  if (route.feedback != nullptr) out += " + error feedback";
  return out;
}

AdaptivePolicy::AdaptivePolicy(PolicySlice& slice, const AutoSettings& settings)
    : slice_(slice),
      settings_(settings),
      // A trial needs its reference window and its own: keep a few more.
      trend_(4 * (std::max<int64_t>(settings.trend_window, 1) + settings.decide_every)),
      fixed_link_bytes_per_second_(double(TestFaults::from_environment().auto_timing_mbit) * 1e6 /
                                   8) {
  if (settings_.decide_every < 1)
    throw std::invalid_argument("compression.auto.decide_every must be >= 1, got " +
                                std::to_string(settings_.decide_every));
  if (settings_.trend_window < 0)
    throw std::invalid_argument("compression.auto.trend_window must be >= 0, got " +
                                std::to_string(settings_.trend_window));
  slot_of_.assign(size_t(kLocalityCount) * kOpCount * kRoleCount, -1);
  const auto& rules = slice_.auto_rules();
  for (size_t r = 0; r < rules.size(); ++r) {
    std::vector<CandidateKind> kinds;
    std::vector<std::string> names;
    for (const auto& route : rules[r].candidates) {
      CandidateKind kind;
      kind.raw = route.codec == nullptr;
      kind.lossless = kind.raw || route.codec->lossless();
      kind.error_feedback = route.feedback != nullptr;
      kinds.push_back(kind);
      names.push_back(candidate_name(route));
    }
    kinds_.push_back(std::move(kinds));
    names_.push_back(std::move(names));
  }
  // Slots in a fixed order (locality, op, role): the agreed array's layout,
  // the same on every rank of the group since every rank has the same slice.
  for (int locality = 0; locality < kLocalityCount; ++locality)
    for (int op = 0; op < kOpCount; ++op)
      for (int role = 0; role < kRoleCount; ++role)
        for (size_t r = 0; r < rules.size(); ++r) {
          const auto& rule = rules[r];
          if (!has(rule.ops, op) || !has(rule.roles, role) || !has(rule.localities, locality))
            continue;
          Slot slot;
          slot.rule = r;
          slot.locality = Locality(locality);
          slot.op = Op(op);
          slot.role = Role(role);
          slot.measured.assign(rule.candidates.size(), CandidateMeasure{});
          slot.memory = SlotMemory(rule.candidates.size());
          slot.cleared.assign(rule.candidates.size(), false);
          slot_of_[slot_index(slot.locality, slot.op, slot.role)] = int(slots_.size());
          slots_.push_back(std::move(slot));
          break;
        }
}

size_t AdaptivePolicy::candidate_count(const Slot& slot) const {
  return kinds_[slot.rule].size();
}

void AdaptivePolicy::record(const PolicySlice::Route& route, Op op, Role role, Locality locality,
                            const AutoCallSample& measured) {
  if (route.auto_rule < 0) return;
  const int index = slot_of_[slot_index(locality, op, role)];
  if (index < 0) return;
  Slot& slot = slots_[size_t(index)];
  AutoCallSample sample = measured;
  if (fixed_link_bytes_per_second_ > 0) {
    // The call's bytes through the fixed link and codec speeds instead of
    // its wall time. What a receive took in on the wire is the raw size
    // times the candidate's probed ratio, as below.
    const CandidateMeasure& m = slot.measured[size_t(route.candidate)];
    const double fraction = route.codec == nullptr ? 1.0 : (m.measured ? m.wire_fraction : 1.0);
    const double wire =
        std::max(double(sample.wire_bytes), double(sample.received_bytes) * fraction);
    sample.codec_seconds =
        route.codec == nullptr ? 0.0 : double(sample.raw_bytes) * kFixedCodecSecondsPerByte;
    sample.seconds = sample.codec_seconds + wire / fixed_link_bytes_per_second_;
  }
  slot.period.raw_bytes += double(sample.raw_bytes);
  if (sample.raw_bytes > 0) slot.period.calls += 1;
  slot.period.seconds += sample.seconds;
  slot.period.codec_seconds += sample.codec_seconds;
  if (!sample.blocking || !(sample.seconds > 0)) return;
  double bytes = double(sample.wire_bytes);
  if (bytes == 0 && sample.received_bytes > 0) {
    // Receives are counted by their senders; what came in on the wire is
    // the raw size times the candidate's measured ratio.
    const CandidateMeasure& m = slot.measured[size_t(route.candidate)];
    if (route.codec != nullptr && !m.measured) return;
    bytes = double(sample.received_bytes) * (route.codec != nullptr ? m.wire_fraction : 1.0);
  }
  if (bytes < kLinkSampleBytes) return;
  LinkSamples& samples = samples_[int(locality)];
  if (sample.codec_seconds > kCodecBoundShare * sample.seconds) {
    samples.bound_bytes += bytes;
    samples.bound_seconds += sample.seconds;
  } else {
    samples.bytes += bytes;
    samples.seconds += sample.seconds;
  }
}

void AdaptivePolicy::probe_if_due(const PolicySlice::Route& route, Op op, Role role,
                                  Locality locality, const float* own, size_t n) {
  if (route.auto_rule < 0 || own == nullptr || n == 0) return;
  const int index = slot_of_[slot_index(locality, op, role)];
  if (index < 0 || !slots_[size_t(index)].probe_due) return;
  probe(slots_[size_t(index)], own, n);
}

void AdaptivePolicy::probe(Slot& slot, const float* own, size_t n) {
  const size_t m = std::min(n, kProbeFloats);
  double norm = 0;
  for (size_t i = 0; i < m; ++i) norm += double(own[i]) * double(own[i]);
  if (!std::isfinite(norm)) return;  // stays due: a later, finite message is measured
  const double bytes = double(m * sizeof(float));
  const auto& candidates = slice_.auto_rules()[slot.rule].candidates;
  probe_decoded_.resize(m);
  for (size_t c = 0; c < candidates.size(); ++c) {
    CandidateMeasure& out = slot.measured[c];
    compress::Codec* codec = candidates[c].codec;
    if (codec == nullptr) {
      out = CandidateMeasure{true, 1.0, 0.0, 0.0};
      continue;
    }
    // On the side: the generator goes back after each encode, so measuring
    // changes none of the real traffic.
    const std::vector<uint64_t> random_state = codec->random_state();
    probe_payload_.resize(codec->max_encoded_bytes(m));
    double encode_s = kUnpredictable, decode_s = kUnpredictable;
    size_t size = 0;
    for (int rep = 0; rep < 2; ++rep) {
      auto start = Clock::now();
      size = codec->encode(own, m, probe_payload_.data(), probe_payload_.size());
      encode_s = std::min(encode_s, seconds_since(start));
      if (!random_state.empty()) codec->restore_random_state(random_state);
      start = Clock::now();
      codec->decode(probe_payload_.data(), size, probe_decoded_.data(), m);
      decode_s = std::min(decode_s, seconds_since(start));
    }
    double diff = 0;
    for (size_t i = 0; i < m; ++i) {
      const double d = double(probe_decoded_[i]) - double(own[i]);
      diff += d * d;
    }
    if (fixed_link_bytes_per_second_ > 0)
      encode_s = decode_s = 0.5 * bytes * kFixedCodecSecondsPerByte;  // tests: no timing
    out.measured = true;
    out.wire_fraction = double(size) / bytes;
    // Error feedback decodes what it sent once more to keep the residual.
    const double feedback_s = candidates[c].feedback != nullptr ? decode_s : 0.0;
    out.codec_seconds_per_byte = (encode_s + decode_s + feedback_s) / bytes;
    out.rel_error = norm > 0 ? std::sqrt(diff / norm) : (diff > 0 ? kUnpredictable : 0.0);
  }
  slot.probe_due = false;
}

std::vector<double> AdaptivePolicy::local_inputs() const {
  // MAX over the group: a missing value is below any real one.
  std::vector<double> out;
  for (int locality = 0; locality < kLocalityCount; ++locality) {
    const LinkSamples& s = samples_[locality];
    out.push_back(s.seconds > 0 ? s.bytes / s.seconds : 0.0);
    out.push_back(s.bound_seconds > 0 ? s.bound_bytes / s.bound_seconds : 0.0);
  }
  out.push_back(period_seconds_);
  out.push_back(loss_count_ > 0 ? loss_sum_ / double(loss_count_) : kNoLoss);
  for (const Slot& slot : slots_) {
    out.push_back(slot.period.raw_bytes);
    out.push_back(slot.period.calls);
    out.push_back(slot.period.seconds);
    out.push_back(slot.period.codec_seconds);
    for (const CandidateMeasure& m : slot.measured) {
      out.push_back(m.measured ? m.wire_fraction : -1.0);
      out.push_back(m.measured ? m.codec_seconds_per_byte : -1.0);
      out.push_back(m.measured ? m.rel_error : -1.0);
    }
  }
  return out;
}

void AdaptivePolicy::observe_loss(int64_t step, double loss) {
  if (step < 0 || !std::isfinite(loss)) return;
  loss_sum_ += loss;
  loss_count_ += 1;
}

std::vector<AutoDecision> AdaptivePolicy::decide(MPI_Comm comm, int64_t step,
                                                 double previous_loss) {
  observe_loss(step - 1, previous_loss);
  if (slots_.empty() || step % settings_.decide_every != 0) return {};
  const Clock::time_point now = Clock::now();
  period_seconds_ =
      have_last_decide_ ? std::chrono::duration<double>(now - last_decide_).count() : 0.0;
  if (fixed_link_bytes_per_second_ > 0 && have_last_decide_) {
    // Tests: the period's computation at a fixed rate plus its calls.
    period_seconds_ = double(step - last_decision_step_) * kFixedComputeSecondsPerStep;
    for (const Slot& slot : slots_) period_seconds_ += slot.period.seconds;
  }
  last_decide_ = now;
  have_last_decide_ = true;
  std::vector<double> local = local_inputs();
  std::vector<double> agreed(local.size());
  MPI_Allreduce(local.data(), agreed.data(), int(local.size()), MPI_DOUBLE, MPI_MAX, comm);
  return decide_from(agreed, step);
}

std::vector<AutoDecision> AdaptivePolicy::decide_from(const std::vector<double>& agreed,
                                                      int64_t step) {
  size_t expected = kLinkFields * kLocalityCount + kGroupFields;
  for (const Slot& slot : slots_)
    expected += kSlotFields + kCandidateFields * candidate_count(slot);
  if (agreed.size() != expected)
    throw std::invalid_argument(std::string("group ") + to_string(slice_.group()) +
                                ": adaptive policy inputs hold " + std::to_string(agreed.size()) +
                                " values, expected " + std::to_string(expected));
  const double period_steps = double(std::max<int64_t>(1, step - last_decision_step_));
  const double* next = agreed.data();
  double link_sample[kLocalityCount], link_bound[kLocalityCount];
  for (int locality = 0; locality < kLocalityCount; ++locality) {
    link_sample[locality] = *next++;
    link_bound[locality] = *next++;
  }
  const double step_seconds = *next++ / period_steps;
  const double period_loss = *next++;
  if (std::isfinite(period_loss))
    trend_.add(std::max<int64_t>(last_decision_step_, 0), step - 1, period_loss);

  std::vector<AutoDecision> decisions;
  std::vector<SlotTraffic> traffic(slots_.size());
  std::vector<std::vector<CandidateMeasure>> measures(slots_.size());
  for (size_t s = 0; s < slots_.size(); ++s) {
    Slot& slot = slots_[s];
    traffic[s].raw_bytes = *next++ / period_steps;
    traffic[s].calls = *next++ / period_steps;
    traffic[s].seconds = *next++ / period_steps;
    traffic[s].codec_seconds = *next++ / period_steps;
    traffic[s].step_seconds = step_seconds;
    for (size_t c = 0; c < candidate_count(slot); ++c) {
      CandidateMeasure m;
      m.measured = next[0] >= 0;
      m.wire_fraction = next[0];
      m.codec_seconds_per_byte = next[1];
      m.rel_error = next[2];
      next += kCandidateFields;
      measures[s].push_back(m);
    }
    // The period's time belongs to the candidate that carried it, in the
    // link regime it ran in.
    slot.memory.remember(traffic[s], links_[int(slot.locality)].regime);
  }
  for (int locality = 0; locality < kLocalityCount; ++locality)
    links_[locality].update(link_sample[locality], link_bound[locality], step, settings_);

  // A trial whose window has run is judged first: a demoted candidate
  // must not be chosen again in this very decision.
  const int judged_slot = trial_.slot;
  const std::string verdict = judge_trial_if_done(step);
  const int64_t window = settings_.trend_window;
  const auto& rules = slice_.auto_rules();
  for (size_t s = 0; s < slots_.size(); ++s) {
    Slot& slot = slots_[s];
    const LinkEstimate& link_estimate = links_[int(slot.locality)];
    LinkModel link;
    link.bytes_per_second = link_estimate.bytes_per_second;
    link.chunk_bytes = double(rules[slot.rule].candidates[0].chunk_elems * sizeof(float));
    link.point_to_point = slot.op == Op::kSendRecv || slot.op == Op::kHalo;
    // A trial may start now only with a reference behind it: the last
    // `window` steps on trusted routes, their losses known, and no other
    // trial running in the group (so that the trend is this one's alone).
    const bool trial_may_start =
        window > 0 && trial_.slot < 0 && trusted_since_ != kNever &&
        step - trusted_since_ >= window &&
        trend_.slope(double(step - window + 1), double(step - 1)).points >= 2;
    // The route on trial carries its window; then trusted routes carry the
    // window after it until the verdict.
    const bool trial_here = trial_.slot == int(s);
    const bool trial_carries = trial_here && trial_.back < 0 && step < trial_.start + window;
    for (size_t c = 0; c < candidate_count(slot); ++c) {
      const bool carrying = trial_carries && trial_.candidate == c;
      slot.memory.barred[c] =
          window > 0 && !trusted(slot, c, measures[s][c]) && !carrying && !trial_may_start;
    }
    const Choice choice = choose(traffic[s], kinds_[slot.rule], measures[s], link,
                                 link_estimate.regime, slot.memory, settings_);
    std::string reason = choice.reason;
    const std::string& tried = names_[slot.rule][trial_here ? trial_.candidate : 0];
    if (choice.decided && window > 0 && !trusted(slot, choice.chosen, measures[s][choice.chosen])) {
      if (!trial_here) {
        trial_ = Trial{int(s), choice.chosen, step, -1};
        reason += ", on trial for " + std::to_string(window) + " steps";
      } else {
        reason += ", on trial since step " + std::to_string(trial_.start + 1);
      }
    } else if (choice.decided && trial_carries) {
      reason += "; " + tried + "'s trial ended unjudged";
      trial_ = Trial{};
    } else if (choice.decided && trial_here && trial_.back < 0) {
      trial_.back = step;
      reason = choice.changed ? "trial window over" : reason;
      reason += "; " + std::to_string(window) + " steps on trusted routes follow before " + tried +
                "'s verdict";
    }
    if (int(s) == judged_slot && !verdict.empty())
      reason = choice.changed && slot.memory.demoted[choice.previous] ? verdict
                                                                      : reason + "; " + verdict;
    if (choice.best_barred != SIZE_MAX)
      reason += "; " + names_[slot.rule][choice.best_barred] + " waits for " +
                std::to_string(window) + " steps on trusted routes to be tried against";
    if (!(traffic[s].raw_bytes > 0)) continue;
    AutoDecision d;
    d.group = slice_.group();
    d.op = slot.op;
    d.role = slot.role;
    d.locality = slot.locality;
    d.previous_codec = names_[slot.rule][choice.previous];
    d.codec = names_[slot.rule][choice.chosen];
    d.changed = choice.changed;
    d.reason = reason;
    if (int(s) == judged_slot) d.verdict = verdict;
    d.previous_predicted_ms =
        slot.memory.predicted_seconds > 0 ? slot.memory.predicted_seconds * 1e3 : -1;
    d.measured_ms = traffic[s].seconds * 1e3;
    d.link_mbit_s = link.bytes_per_second * 8e-6;
    auto ms = [&](size_t c) {
      return c < choice.predicted.size() && std::isfinite(choice.predicted[c])
                 ? choice.predicted[c] * 1e3
                 : -1.0;
    };
    d.predicted_ms = ms(choice.chosen);
    d.predicted_from_measurement =
        choice.chosen < choice.from_measurement.size() && choice.from_measurement[choice.chosen];
    d.raw_ms = ms(0);
    d.fastest = names_[slot.rule][choice.fastest];
    if (choice.runner_up != SIZE_MAX) {
      d.runner_up = names_[slot.rule][choice.runner_up];
      d.runner_up_ms = ms(choice.runner_up);
    }
    const CandidateMeasure& chosen_measure = measures[s][choice.chosen];
    d.rel_error = chosen_measure.measured ? chosen_measure.rel_error : 0.0;
    d.steps_multiplier = steps_multiplier(kinds_[slot.rule][choice.chosen], chosen_measure);
    for (size_t c = 0; c < candidate_count(slot); ++c)
      if (slot.memory.demoted[c]) d.demoted.push_back(names_[slot.rule][c]);
    if (choice.decided) {
      if (choice.changed)
        slice_.choose(slot.rule, slot.locality, slot.op, slot.role, choice.chosen);
      slot.memory.chosen = choice.chosen;
      slot.memory.predicted_seconds =
          std::isfinite(choice.predicted[choice.chosen]) ? choice.predicted[choice.chosen] : 0.0;
    }
    decisions.push_back(std::move(d));
  }
  // The routes of the coming steps: all trusted, or the reference window
  // restarts once they are again.
  bool all_trusted = true;
  for (size_t s = 0; s < slots_.size(); ++s)
    all_trusted = all_trusted &&
                  trusted(slots_[s], slots_[s].memory.chosen, measures[s][slots_[s].memory.chosen]);
  if (!all_trusted)
    trusted_since_ = kNever;
  else if (trusted_since_ == kNever)
    trusted_since_ = step;

  reset_period();
  if (settings_.probe_every > 0 && step - last_probe_step_ >= settings_.probe_every) {
    for (Slot& slot : slots_) slot.probe_due = true;
    last_probe_step_ = step;
  }
  last_decision_step_ = step;
  return decisions;
}

void AdaptivePolicy::reset_period() {
  for (Slot& slot : slots_) slot.period = SlotTraffic{};
  for (auto& samples : samples_) samples = LinkSamples{};
  loss_sum_ = 0;
  loss_count_ = 0;
  period_seconds_ = 0;
}

bool AdaptivePolicy::trusted(const Slot& slot, size_t candidate,
                             const CandidateMeasure& measure) const {
  return slot.cleared[candidate] || trusted_on_error(kinds_[slot.rule][candidate], measure);
}

std::string AdaptivePolicy::judge_trial_if_done(int64_t step) {
  const int64_t window = settings_.trend_window;
  if (trial_.slot < 0 || window <= 0) return "";
  // Losses (0-based steps) of the windows before, during and after.
  if (trial_.back < 0) return "";
  const int64_t start = trial_.start, end = trial_.back;
  if (step - 1 < end + window) return "";  // the last loss after it is not in yet
  Slot& slot = slots_[size_t(trial_.slot)];
  const size_t candidate = trial_.candidate;
  trial_ = Trial{};
  const std::string& name = names_[slot.rule][candidate];
  const LossSlope before = trend_.slope(double(start - window + 1), double(start));
  const LossSlope tried = trend_.slope(double(start + 1), double(end));
  const LossSlope after = trend_.slope(double(end + 1), double(end + window));
  if (!before.valid() || !tried.valid() || !after.valid())
    return name + "'s trial ended unjudged: too few losses";
  const TrialVerdict verdict = judge_trial(before, tried, after);
  // As the run prints steps: from 1, a loss at the step that computed it.
  const auto range = [](int64_t first, int64_t last) {
    return std::to_string(first + 1) + "-" + std::to_string(last + 1);
  };
  const std::string steps = " (steps " + range(start + 1, end) + "; before " +
                            range(start - window + 1, start) + ", after " +
                            range(end + 1, end + window) + ")";
  if (verdict.stalled) {
    slot.memory.demoted[candidate] = true;
    return "demoted " + name + ": " + verdict.why + steps;
  }
  slot.cleared[candidate] = true;
  return name + " passed its trial: " + verdict.why + steps;
}

}  // namespace cmpi::comm
