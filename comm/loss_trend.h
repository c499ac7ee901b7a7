// LossTrend: one group's record of the training loss, as preset auto
// (comm/adaptive_policy.h) weighs it: whether a route that the codec's
// measured error alone cannot vouch for still lets the loss fall.
//
// Works as follows:
//   samples  at each decision the group agrees on the mean loss of the
//            steps since the last one (step x = their mean index); its
//            logarithm is kept with that x, so that a slope is a relative
//            rate (-0.05: the loss falls ~5 % per step), the same for a loss
//            of 6 or of 0.01 that falls alike.
//   slope    the least-squares line through the samples of a window of
//            steps: its slope (log-loss per step) and that slope's standard
//            error (from the residuals), so that noise is told from trend.
//   trial    a route on trial carries steps s .. s+w-1. It is judged on
//            three windows of w losses each (a loss is computed before its
//            step's update, so loss s+1 is the first the route shaped):
//              before  losses s-w+1 .. s      trusted routes only
//              trial   losses s+1 .. s+w      the route on trial
//              after   losses s+w+1 .. s+2w   trusted routes again
//   judge    the reference rate is the slower fall of before and after: a
//            loss curve that flattens makes "after" the slower, a learning
//            rate still warming up makes "before" the slower, and a route
//            that works falls at least about as fast as the slower of its
//            neighbours. If the reference fell clearly (slope + 3 standard
//            errors < 0), the trial stalls when its slope is above
//            kStallFraction (0.4) of the reference's. Otherwise the loss
//            held under trusted routes: the trial stalls only if the loss
//            clearly rose (slope - 2 standard errors > 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>

namespace cmpi::comm {

// A least-squares line of loss against step over some samples.
struct LossSlope {
  double per_step = 0;        // log-loss per step; negative: falling
  double standard_error = 0;  // of per_step, from the residuals
  size_t points = 0;          // < 3: no slope
  bool valid() const { return points >= 3; }
};

struct TrialVerdict {
  bool stalled = false;
  std::string why;  // "loss fell 0.2 %/step under it against 4.1 %/step under trusted routes"
};

// The verdict on a trial window against the windows before and after it
// (all valid; slopes of log-loss).
TrialVerdict judge_trial(const LossSlope& before, const LossSlope& trial, const LossSlope& after);

class LossTrend {
 public:
  // Keeps the samples of the last `keep_steps` steps.
  explicit LossTrend(int64_t keep_steps) : keep_steps_(keep_steps) {}

  // The group's mean loss over steps [first_step, last_step]; only a
  // positive, finite one is a sample.
  void add(int64_t first_step, int64_t last_step, double mean_loss);
  // The line through the samples whose step lies in [from_step, to_step].
  LossSlope slope(double from_step, double to_step) const;
  // The latest step a sample covers (-1: none).
  int64_t last_step() const { return last_step_; }

  // What a checkpoint keeps (comm/adaptive_policy_state.cpp): a resumed run
  // judges its trials on the saving run's losses.
  struct Sample {
    double step;
    double log_loss;
  };
  const std::deque<Sample>& samples() const { return samples_; }
  void restore(int64_t last_step, std::deque<Sample> samples) {
    last_step_ = last_step;
    samples_ = std::move(samples);
  }

 private:
  int64_t keep_steps_;
  int64_t last_step_ = -1;
  std::deque<Sample> samples_;
};

}  // namespace cmpi::comm
