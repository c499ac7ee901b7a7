// The adaptive policy's arithmetic (preset auto): how long one slot's
// traffic -- what one group sends per step for one (op, role, locality) --
// would take through each candidate, and which candidate to pick. Pure
// functions of numbers every rank of the group agreed on (see
// comm/adaptive_policy.h for the agreement), so every rank picks alike.
//
// Works as follows:
//   link     achieved bytes per second of the group's calls of one
//            locality: an EWMA (weight 1/2) of the samples that tell the
//            link's speed, except that a sample off by more than 2x replaces
//            the estimate (the link changed: decisions follow at once)
//            (samples: raw calls, and
//            compressed calls whose codec time was under half their wall
//            time); a compressed call that was codec-bound only says the
//            link is at least that fast. A move of more than 25 % from the
//            speed at which the current regime began, or probe_every steps,
//            starts a new regime (older measurements of candidates lapse).
//   predict  raw: bytes / link. A codec pipelines chunks through encode,
//            wire and decode (comm/algorithms/), so:
//              max(bytes x wire_fraction / link, bytes x codec_s_per_byte)
//              + calls x min(chunk, bytes per call) x codec_s_per_byte
//            (one chunk fills the pipeline). Point-to-point halves the
//            codec term: sender encodes while receiver decodes.
//   measure  once a candidate has run in the current regime, its measured
//            seconds per byte (EWMA) replace the model: it then competes
//            with what it really cost, skew and all. What the last period's
//            calls took beyond their wire time (model) and codec time
//            (measured) was waiting, which every candidate would pay: it is
//            added to the models of the candidates not measured.
//   weigh    a lossy codec costs steps as well as time: to reach the same
//            loss the run needs m times the steps, m from the measured
//            relative error e (steps_multiplier):
//              without error feedback  m = 1 / (1 - e^2)  (infinite for e >= 1)
//              with error feedback     m = 1 + e^2
//            (the decoded gradient is a contraction of the true one by
//            1 - e^2, and descent per step shrinks by that factor; what
//            error feedback holds back arrives a step late instead, whose
//            cost is the residual's noise, once). The cost of a candidate
//            is its time to the loss per step of the raw route:
//              m x (step time outside this slot + the slot's predicted time)
//            with the step time the group's measured wall time per step.
//   choose   among candidates within the error budget (raw and lossless
//            always; lossy ones once measured, below max_rel_error, or
//            max_rel_error_feedback when they run with error feedback), not
//            demoted and not barred for now (comm/adaptive_policy.h: trials),
//            the lowest cost; ties go to the lower index. The choice changes
//            only when the best costs less than the current one by more
//            than min_gain, or when the current one left the error budget
//            or was demoted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "comm/policy_config.h"

namespace cmpi::comm {

// What a candidate is, as far as the model cares.
struct CandidateKind {
  bool raw = false;
  bool lossless = false;
  bool error_feedback = false;
};

// What a candidate did on this run's data (the group's worst rank).
struct CandidateMeasure {
  bool measured = false;
  double wire_fraction = 1;           // encoded bytes / raw bytes
  double codec_seconds_per_byte = 0;  // encode + decode (+ feedback's decode), per raw byte
  double rel_error = 0;               // ||D(C(x)) - x|| / ||x|| of one encoding
};

// One slot's traffic per step over the last decision period (the group's
// largest), and what its calls took.
struct SlotTraffic {
  double raw_bytes = 0;
  double calls = 0;
  double seconds = 0;        // wall time
  double codec_seconds = 0;  // of which inside codecs
  double step_seconds = 0;   // the whole step's wall time, slot included (0: unknown)
};

struct LinkModel {
  double bytes_per_second = 0;  // 0: unknown
  double chunk_bytes = 1 << 20;
  bool point_to_point = false;
};

constexpr double kUnpredictable = std::numeric_limits<double>::infinity();

// Seconds per step of `traffic` through a candidate; kUnpredictable when
// the link is unknown or a codec candidate is unmeasured.
double predict_seconds(const SlotTraffic& traffic, const CandidateKind& kind,
                       const CandidateMeasure& measure, const LinkModel& link);

// Whether a candidate may be chosen under the error budget.
bool within_error_budget(const CandidateKind& kind, const CandidateMeasure& measure,
                         const AutoSettings& settings);

// How many times the steps of the raw route a candidate needs to reach the
// same loss, from its measured error (1: raw and lossless; infinite: an
// unmeasured lossy candidate, or an error of 100 % or more without
// feedback).
double steps_multiplier(const CandidateKind& kind, const CandidateMeasure& measure);

// The step multiplier up to which a candidate is trusted on its measured
// error alone; above it, it must show on the loss that it works (a trial,
// comm/adaptive_policy.h). 1.05: errors up to ~22 %.
constexpr double kTrustedStepsMultiplier = 1.05;
bool trusted_on_error(const CandidateKind& kind, const CandidateMeasure& measure);

// A group's view of one locality's link, the same on every rank.
struct LinkEstimate {
  double bytes_per_second = 0;  // 0: unknown
  int64_t regime = 0;           // bumped when the link moves (or probe_every steps pass)
  double regime_bytes_per_second = 0;
  int64_t regime_step = 0;
  // `sample`: agreed informative bytes/s of the period (0: none);
  // `lower_bound`: agreed bytes/s the link at least reached (0: none).
  void update(double sample, double lower_bound, int64_t step, const AutoSettings& settings);
};

// A slot's decision memory, the same on every rank.
struct SlotMemory {
  size_t chosen = 0;
  std::vector<double> seconds_per_byte;  // measured while chosen; < 0: not in this regime
  std::vector<int64_t> regime_of;        // the regime each measurement belongs to
  double predicted_seconds = 0;          // what was predicted for `chosen` when chosen
  std::vector<bool> demoted;             // for the rest of the run (a stalled trial)
  std::vector<bool> barred;              // for this decision only (a trial cannot start now)
  explicit SlotMemory(size_t candidates = 0)
      : seconds_per_byte(candidates, -1),
        regime_of(candidates, -1),
        demoted(candidates, false),
        barred(candidates, false) {}
  // Charges the last period's traffic to the candidate that carried it.
  void remember(const SlotTraffic& traffic, int64_t regime);
};

struct Choice {
  size_t chosen = 0;
  size_t previous = 0;
  size_t runner_up = SIZE_MAX;  // the fastest other eligible candidate
  bool changed = false;
  bool decided = false;            // false: no traffic or no link estimate; nothing changed
  std::vector<double> predicted;   // seconds per step; kUnpredictable: not eligible
  std::vector<double> multiplier;  // steps_multiplier of each candidate
  std::vector<double> cost;        // multiplier x step time; kUnpredictable: not eligible
  std::vector<bool> from_measurement;
  size_t best_barred = SIZE_MAX;  // a barred candidate that would have cost least
  size_t fastest = 0;             // the eligible candidate of least time per step
  const char* reason = "";
};

Choice choose(const SlotTraffic& traffic, const std::vector<CandidateKind>& kinds,
              const std::vector<CandidateMeasure>& measures, const LinkModel& link, int64_t regime,
              const SlotMemory& memory, const AutoSettings& settings);

}  // namespace cmpi::comm
