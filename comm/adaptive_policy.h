// AdaptivePolicy: preset auto's measurements and decisions for one group
// (one Communicator and its PolicySlice). Works as follows:
//
//   slots     a slot is the traffic of one (op, role, locality) that one of
//             the slice's adaptive rules governs; each has the rule's
//             candidates and, in the slice, the candidate chosen now.
//   record    every call routed through a candidate adds to its slot, on
//             this rank, since the last decision: raw bytes, calls, wall
//             seconds; blocking calls that moved >= 64 KiB also add a link
//             sample for the slot's locality (bytes on the wire / seconds
//             outside codecs, or only a lower bound when codec-bound).
//   probe     the first call of a slot that sends its own data after a probe
//             is due (at the start, then every probe_every steps) encodes
//             and decodes the first 256 KiB of that data with every
//             candidate codec, on the side, twice (the faster time counts):
//             ratio, codec seconds per byte, relative error. Stochastic
//             codecs get their generator back; error feedback is not touched.
//   decide    at a step boundary, on every rank of the group, in the same
//             order as the group's other collectives: one MPI_Allreduce (MAX)
//             of a fixed-layout array of doubles -- per slot the period's
//             traffic, per candidate its measures, per locality the link
//             samples -- so every rank holds the group's worst codec, largest
//             traffic and best link figure. Then, from those numbers only,
//             comm/adaptive_model.h picks per slot and the slice is set: every
//             rank of the group reaches the same choice, whatever it measured
//             itself. A point-to-point message's two ends are in the group,
//             so they agree too. The array also carries the period's wall
//             time per step (between two decisions) and mean training loss
//             (the trainer hands each step's loss to decide), which weigh
//             convergence: the model prices a candidate by its time to the
//             loss (step time x steps multiplier from its error).
//   trial     a candidate that its error alone does not vouch for
//             (trusted_on_error false) is chosen only as a trial: when the
//             last trend_window steps ran on trusted routes only, no other
//             trial runs in the group, and it costs least. It carries
//             trend_window steps, trusted routes the next trend_window;
//             then comm/loss_trend.h compares the loss slope under it with
//             the slower of the windows before and after: a stall demotes
//             it for the rest of the run (the decision's verdict names it
//             and says why); otherwise it is trusted from then on.
//
// Not thread-safe: record/probe run inside the group's operations, decide
// between them (as the Communicator's contract already requires).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "comm/adaptive_model.h"
#include "comm/clock.h"
#include "comm/group_kind.h"
#include "comm/loss_trend.h"
#include "comm/policy.h"

namespace cmpi::comm {

// What decide takes for the loss of a step that has none (the run's first).
inline constexpr double kNoPreviousLoss = std::numeric_limits<double>::quiet_NaN();

// What one call through a candidate did on this rank.
struct AutoCallSample {
  uint64_t raw_bytes = 0;       // what this rank sent, uncompressed (CommStats' raw_bytes)
  uint64_t wire_bytes = 0;      // what it put on the wire
  uint64_t received_bytes = 0;  // a receive: the raw bytes it took in
  double seconds = 0;           // the call's wall time on this rank
  double codec_seconds = 0;     // of which inside codecs
  bool blocking = true;         // false: a nonblocking post (its time is not a transfer's)
};

// One slot's decision, as metrics.jsonl and the console report it.
struct AutoDecision {
  GroupKind group = GroupKind::kWorld;
  Op op = Op::kAllreduce;
  Role role = Role::kOther;
  Locality locality = Locality::kInter;
  std::string codec;           // the candidate chosen for the coming steps
  std::string previous_codec;  // the one that carried the last period
  std::string runner_up;       // the other eligible one of least cost ("" when none)
  std::string fastest;         // the eligible one of least time per step (penalty aside)
  bool changed = false;
  std::string reason;
  double predicted_ms = 0;            // per step, the chosen candidate
  double runner_up_ms = -1;           // -1: none
  double raw_ms = -1;                 // -1: not predictable
  double previous_predicted_ms = -1;  // what was predicted for the last period's choice
  double measured_ms = 0;             // what the last period's calls took per step (group max)
  double link_mbit_s = 0;             // the link estimate of the slot's locality
  double rel_error = 0;               // the chosen candidate's measured error (0: lossless)
  double steps_multiplier = 1;        // the chosen candidate's, from its error
  bool predicted_from_measurement = false;
  std::vector<std::string> demoted;  // the slot's candidates demoted so far
  // A trial's verdict reached at this decision ("demoted sign:bucket=512:
  // loss fell ...", "... passed its trial: ..."; "" when none): worth a line
  // in the run's output even when the route does not change.
  std::string verdict;
};

class AdaptivePolicy {
 public:
  AdaptivePolicy(PolicySlice& slice, const AutoSettings& settings);

  // Whether the slice has adaptive rules at all.
  bool active() const { return !slots_.empty(); }

  // `route` is what the slice returned for the call; calls through routes
  // that are no adaptive candidates are ignored.
  void record(const PolicySlice::Route& route, Op op, Role role, Locality locality,
              const AutoCallSample& sample);
  // Probes the slot's candidates on own[0..n) if a probe is due for it.
  void probe_if_due(const PolicySlice::Route& route, Op op, Role role, Locality locality,
                    const float* own, size_t n);

  // The step-boundary decision. Collective over `comm` (the group's
  // communicator); returns every slot that had traffic in the period, with
  // `changed` set where the route changed. `step` is the 0-based step about
  // to run, `previous_loss` the training loss of step - 1 on this rank (NaN:
  // none); decisions happen every decide_every steps, otherwise this keeps
  // the loss, returns nothing and communicates nothing.
  std::vector<AutoDecision> decide(MPI_Comm comm, int64_t step, double previous_loss);

  // The agreement alone, for tests: the local array this rank would
  // contribute, and the decision from an agreed one.
  std::vector<double> local_inputs() const;
  std::vector<AutoDecision> decide_from(const std::vector<double>& agreed, int64_t step);
  // What decide keeps before its agreement: this rank's loss of `step`
  // (non-finite ones are skipped) and the period's wall time.
  void observe_loss(int64_t step, double loss);
  void set_period_seconds(double seconds) { period_seconds_ = seconds; }

  // Checkpoints (comm/adaptive_policy_state.cpp; checkpoint/rank_state.h:
  // comm/<group>/adaptive_policy): everything decide has learnt so far --
  // the routes chosen, each slot's memory, trials and verdicts, the link
  // estimates, the loss trend -- and this rank's measurements of the period
  // in progress, as words. Restored on the same rank of the same layout, a
  // resumed run decides as the saving run would have on the same
  // measurements: the decisions were taken by timing, and a run that
  // measured afresh would take other routes (and sum in other orders).
  std::vector<uint64_t> state_words() const;
  // false: the words were saved under another policy (other slots or
  // candidates); nothing is restored and the run decides afresh. Throws
  // std::invalid_argument for words that are no whole state.
  bool restore_state_words(const std::vector<uint64_t>& words);

 private:
  struct Slot {
    size_t rule = 0;  // index in the slice's auto_rules()
    Locality locality = Locality::kInter;
    Op op = Op::kAllreduce;
    Role role = Role::kOther;
    SlotTraffic period;  // this rank's, since the last decision
    bool probe_due = true;
    std::vector<CandidateMeasure> measured;  // this rank's last probe
    SlotMemory memory;
    std::vector<bool> cleared;  // passed a trial: trusted whatever its error
  };
  // The one candidate on trial in the group (slot < 0: none), carrying its
  // slot since step `start`, until trusted routes took over again at step
  // `back` (< 0: not yet).
  struct Trial {
    int slot = -1;
    size_t candidate = 0;
    int64_t start = 0;
    int64_t back = -1;
  };
  struct LinkSamples {
    double bytes = 0, seconds = 0;              // informative samples, this rank
    double bound_bytes = 0, bound_seconds = 0;  // codec-bound calls: lower bounds only
  };

  static size_t slot_index(Locality locality, Op op, Role role) {
    return (size_t(locality) * kOpCount + size_t(op)) * kRoleCount + size_t(role);
  }
  size_t candidate_count(const Slot& slot) const;
  void probe(Slot& slot, const float* own, size_t n);
  void reset_period();
  bool trusted(const Slot& slot, size_t candidate, const CandidateMeasure& measure) const;
  // Judges the trial once its window's losses are in; returns the verdict's
  // text for the trial slot's decision ("" while it runs or when none does).
  std::string judge_trial_if_done(int64_t step);

  PolicySlice& slice_;
  AutoSettings settings_;
  std::vector<Slot> slots_;
  std::vector<int> slot_of_;                       // slot_index(...) -> index in slots_, or -1
  std::vector<std::vector<CandidateKind>> kinds_;  // per auto rule
  std::vector<std::vector<std::string>> names_;    // per auto rule
  LinkSamples samples_[kLocalityCount];
  LinkEstimate links_[kLocalityCount];
  int64_t last_decision_step_ = -1;
  int64_t last_probe_step_ = 0;
  // The period's losses on this rank, and its wall time.
  double loss_sum_ = 0;
  int64_t loss_count_ = 0;
  double period_seconds_ = 0;
  bool have_last_decide_ = false;
  Clock::time_point last_decide_{};
  // Convergence: the agreed losses, the trial, and since which step every
  // slot's route has been trusted (kNever: not now).
  static constexpr int64_t kNever = INT64_MAX;
  LossTrend trend_;
  Trial trial_;
  int64_t trusted_since_ = 0;
  std::vector<float> probe_decoded_;
  std::vector<uint8_t> probe_payload_;
  // Tests only (CMPI_TEST_FAULT=auto_timing:MBIT): > 0 replaces every
  // measured time by one computed from the bytes at this link speed.
  double fixed_link_bytes_per_second_ = 0;
};

// "raw", "mpc", "zfp:mode=rate,rate=8 + error feedback".
std::string candidate_name(const PolicySlice::Route& route);

}  // namespace cmpi::comm
