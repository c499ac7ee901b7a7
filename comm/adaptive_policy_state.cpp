// AdaptivePolicy's state for checkpoints (state_words, restore_state_words).
// Works as follows: one array of 64-bit words (integers as they are, doubles
// as their bits, so that a restored value is the saved one exactly):
//
//   magic, slot count, per slot its fingerprint (rule index, locality, op,
//   role, candidate count, FNV-1a of the candidates' names)
//   the group-wide memory: last decision and probe steps, the period's loss
//   sum and count, the period's seconds, whether a decision happened and
//   the seconds since it, since when every route is trusted, the trial
//   (slot, candidate, start, back), per locality the link estimate and this
//   rank's link samples, the loss trend (last step, samples)
//   per slot: this rank's period traffic, whether a probe is due, the chosen
//   candidate and what was predicted for it, per candidate this rank's probe
//   (measured, wire fraction, codec seconds per byte, error), the measured
//   seconds per byte and their regime, demoted, cleared
//
// The fingerprint tells a state saved under another policy (restore returns
// false and the run decides afresh); any other mismatch (a truncated array,
// a count or index out of range) is an error. Nothing is changed unless the
// whole state reads back.
#include <chrono>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>

#include "comm/adaptive_policy.h"

namespace cmpi::comm {
namespace {

constexpr uint64_t kMagic = 0x31'74'75'61'69'70'6d'63ull;  // "cmpiaut1"

uint64_t double_word(double value) {
  uint64_t word;
  std::memcpy(&word, &value, sizeof word);
  return word;
}

double word_double(uint64_t word) {
  double value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

uint64_t names_hash(const std::vector<std::string>& names) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const std::string& name : names) {
    for (unsigned char c : name + '\n') {
      hash ^= c;
      hash *= 0x100000001b3ull;
    }
  }
  return hash;
}

class WordWriter {
 public:
  void u(uint64_t value) { words_.push_back(value); }
  void i(int64_t value) { words_.push_back(uint64_t(value)); }
  void d(double value) { words_.push_back(double_word(value)); }
  void b(bool value) { words_.push_back(value ? 1 : 0); }
  std::vector<uint64_t> take() { return std::move(words_); }

 private:
  std::vector<uint64_t> words_;
};

// Reads in order; every read names what it reads, so that a short array is
// an error saying where it ended.
class WordReader {
 public:
  explicit WordReader(const std::vector<uint64_t>& words) : words_(words) {}
  uint64_t u(const char* what) {
    if (next_ >= words_.size())
      throw std::invalid_argument("adaptive policy state of " + std::to_string(words_.size()) +
                                  " words ends before " + what);
    return words_[next_++];
  }
  int64_t i(const char* what) { return int64_t(u(what)); }
  double d(const char* what) { return word_double(u(what)); }
  bool b(const char* what) {
    const uint64_t word = u(what);
    if (word > 1)
      throw std::invalid_argument(std::string("adaptive policy state: ") + what + " is " +
                                  std::to_string(word) + ", not 0 or 1");
    return word == 1;
  }
  // An index or count read from the state, below `limit`.
  size_t below(uint64_t limit, const char* what) {
    const uint64_t word = u(what);
    if (word >= limit)
      throw std::invalid_argument(std::string("adaptive policy state: ") + what + " " +
                                  std::to_string(word) + " is out of range (below " +
                                  std::to_string(limit) + ")");
    return size_t(word);
  }
  size_t left() const { return words_.size() - next_; }

 private:
  const std::vector<uint64_t>& words_;
  size_t next_ = 0;
};

}  // namespace

std::vector<uint64_t> AdaptivePolicy::state_words() const {
  WordWriter out;
  out.u(kMagic);
  out.u(slots_.size());
  for (const Slot& slot : slots_) {
    out.u(slot.rule);
    out.u(uint64_t(slot.locality));
    out.u(uint64_t(slot.op));
    out.u(uint64_t(slot.role));
    out.u(candidate_count(slot));
    out.u(names_hash(names_[slot.rule]));
  }
  out.i(last_decision_step_);
  out.i(last_probe_step_);
  out.d(loss_sum_);
  out.i(loss_count_);
  out.d(period_seconds_);
  out.b(have_last_decide_);
  // A clock reading; none under the tests' fixed timing, whose periods
  // count steps (and whose checkpoints are then compared byte for byte).
  out.d(have_last_decide_ && !(fixed_link_bytes_per_second_ > 0) ? seconds_since(last_decide_)
                                                                 : 0.0);
  out.i(trusted_since_);
  out.i(trial_.slot);
  out.u(trial_.candidate);
  out.i(trial_.start);
  out.i(trial_.back);
  for (int locality = 0; locality < kLocalityCount; ++locality) {
    const LinkEstimate& link = links_[locality];
    out.d(link.bytes_per_second);
    out.i(link.regime);
    out.d(link.regime_bytes_per_second);
    out.i(link.regime_step);
    const LinkSamples& samples = samples_[locality];
    out.d(samples.bytes);
    out.d(samples.seconds);
    out.d(samples.bound_bytes);
    out.d(samples.bound_seconds);
  }
  out.i(trend_.last_step());
  out.u(trend_.samples().size());
  for (const LossTrend::Sample& sample : trend_.samples()) {
    out.d(sample.step);
    out.d(sample.log_loss);
  }
  for (const Slot& slot : slots_) {
    out.d(slot.period.raw_bytes);
    out.d(slot.period.calls);
    out.d(slot.period.seconds);
    out.d(slot.period.codec_seconds);
    out.d(slot.period.step_seconds);
    out.b(slot.probe_due);
    out.u(slot.memory.chosen);
    out.d(slot.memory.predicted_seconds);
    for (size_t c = 0; c < candidate_count(slot); ++c) {
      const CandidateMeasure& m = slot.measured[c];
      out.b(m.measured);
      out.d(m.wire_fraction);
      out.d(m.codec_seconds_per_byte);
      out.d(m.rel_error);
      out.d(slot.memory.seconds_per_byte[c]);
      out.i(slot.memory.regime_of[c]);
      out.b(slot.memory.demoted[c]);
      out.b(slot.cleared[c]);
    }
  }
  return out.take();
}

bool AdaptivePolicy::restore_state_words(const std::vector<uint64_t>& words) {
  WordReader in(words);
  if (in.u("its magic word") != kMagic)
    throw std::invalid_argument("adaptive policy state: the first word is not its magic word");
  if (in.u("the slot count") != slots_.size()) return false;
  for (const Slot& slot : slots_) {
    const bool same = in.u("a slot's rule") == slot.rule &&
                      in.u("a slot's locality") == uint64_t(slot.locality) &&
                      in.u("a slot's op") == uint64_t(slot.op) &&
                      in.u("a slot's role") == uint64_t(slot.role) &&
                      in.u("a slot's candidate count") == candidate_count(slot) &&
                      in.u("a slot's candidate names") == names_hash(names_[slot.rule]);
    if (!same) return false;
  }
  // Read into copies; the policy changes only once all of it read back.
  const int64_t last_decision_step = in.i("the last decision's step");
  const int64_t last_probe_step = in.i("the last probe's step");
  const double loss_sum = in.d("the period's loss sum");
  const int64_t loss_count = in.i("the period's loss count");
  const double period_seconds = in.d("the period's seconds");
  const bool have_last_decide = in.b("whether a decision happened");
  const double since_last_decide = in.d("the seconds since the last decision");
  if (!(since_last_decide >= 0 && since_last_decide < 1e9))
    throw std::invalid_argument("adaptive policy state: the seconds since the last decision (" +
                                std::to_string(since_last_decide) + ") are no duration");
  const int64_t trusted_since = in.i("since when the routes are trusted");
  Trial trial;
  trial.slot = int(in.i("the trial's slot"));
  trial.candidate = size_t(in.u("the trial's candidate"));
  trial.start = in.i("the trial's start");
  trial.back = in.i("the trial's end");
  if (trial.slot < -1 || trial.slot >= int(slots_.size()) ||
      (trial.slot >= 0 && trial.candidate >= candidate_count(slots_[size_t(trial.slot)])))
    throw std::invalid_argument("adaptive policy state: the trial's slot " +
                                std::to_string(trial.slot) + " or candidate " +
                                std::to_string(trial.candidate) + " is out of range");
  LinkEstimate links[kLocalityCount];
  LinkSamples samples[kLocalityCount];
  for (int locality = 0; locality < kLocalityCount; ++locality) {
    links[locality].bytes_per_second = in.d("a link estimate");
    links[locality].regime = in.i("a link's regime");
    links[locality].regime_bytes_per_second = in.d("a link regime's speed");
    links[locality].regime_step = in.i("a link regime's step");
    samples[locality].bytes = in.d("a link sample's bytes");
    samples[locality].seconds = in.d("a link sample's seconds");
    samples[locality].bound_bytes = in.d("a link bound's bytes");
    samples[locality].bound_seconds = in.d("a link bound's seconds");
  }
  const int64_t trend_last_step = in.i("the loss trend's last step");
  const size_t trend_count = in.below(in.left() / 2 + 1, "the loss trend's sample count");
  std::deque<LossTrend::Sample> trend;
  for (size_t k = 0; k < trend_count; ++k) {
    const double step = in.d("a loss sample's step");
    trend.push_back(LossTrend::Sample{step, in.d("a loss sample's value")});
  }
  std::vector<Slot> slots = slots_;
  for (Slot& slot : slots) {
    slot.period.raw_bytes = in.d("a slot's period bytes");
    slot.period.calls = in.d("a slot's period calls");
    slot.period.seconds = in.d("a slot's period seconds");
    slot.period.codec_seconds = in.d("a slot's period codec seconds");
    slot.period.step_seconds = in.d("a slot's period step seconds");
    slot.probe_due = in.b("whether a slot's probe is due");
    slot.memory.chosen = in.below(candidate_count(slot), "a slot's chosen candidate");
    slot.memory.predicted_seconds = in.d("a slot's predicted seconds");
    for (size_t c = 0; c < candidate_count(slot); ++c) {
      CandidateMeasure& m = slot.measured[c];
      m.measured = in.b("whether a candidate was probed");
      m.wire_fraction = in.d("a candidate's wire fraction");
      m.codec_seconds_per_byte = in.d("a candidate's codec seconds");
      m.rel_error = in.d("a candidate's error");
      slot.memory.seconds_per_byte[c] = in.d("a candidate's measured seconds");
      slot.memory.regime_of[c] = in.i("a candidate's regime");
      slot.memory.demoted[c] = in.b("whether a candidate is demoted");
      slot.cleared[c] = in.b("whether a candidate passed its trial");
    }
  }
  if (in.left() != 0)
    throw std::invalid_argument("adaptive policy state: " + std::to_string(in.left()) +
                                " words more than a state of this policy holds");

  last_decision_step_ = last_decision_step;
  last_probe_step_ = last_probe_step;
  loss_sum_ = loss_sum;
  loss_count_ = loss_count;
  period_seconds_ = period_seconds;
  have_last_decide_ = have_last_decide;
  // The time since the last decision goes on from where the saving run
  // was; the time between the save and this restore is not part of it.
  last_decide_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(since_last_decide));
  trusted_since_ = trusted_since;
  trial_ = trial;
  for (int locality = 0; locality < kLocalityCount; ++locality) {
    links_[locality] = links[locality];
    samples_[locality] = samples[locality];
  }
  trend_.restore(trend_last_step, std::move(trend));
  slots_ = std::move(slots);
  for (const Slot& slot : slots_)
    slice_.choose(slot.rule, slot.locality, slot.op, slot.role, slot.memory.chosen);
  return true;
}

}  // namespace cmpi::comm
