#include "comm/loss_trend.h"

#include <cmath>
#include <cstdio>

namespace cmpi::comm {
namespace {

// A trial whose loss falls at less than this fraction of the reference's
// rate stalls: a route that works falls about as fast as the slower of its
// neighbouring windows, one that stalls keeps next to none of that rate.
constexpr double kStallFraction = 0.4;
constexpr double kClearFall = 3;  // standard errors: the reference fell clearly
constexpr double kClearRise = 2;  // standard errors: the trial's loss clearly rose

// A log-loss slope as the share the loss moves per step: "4.1 %/step".
std::string percent_per_step(double slope) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2g %%/step", 100 * std::fabs(std::expm1(slope)));
  return buf;
}

std::string moved(double slope) {
  return slope < 0 ? "fell " : "rose ";
}

}  // namespace

TrialVerdict judge_trial(const LossSlope& before, const LossSlope& trial, const LossSlope& after) {
  TrialVerdict out;
  const LossSlope& reference = after.per_step > before.per_step ? after : before;
  const std::string which = &reference == &after ? "after" : "before";
  if (reference.per_step + kClearFall * reference.standard_error < 0) {
    out.stalled = trial.per_step > kStallFraction * reference.per_step;
    out.why = "loss " + moved(trial.per_step) + percent_per_step(trial.per_step) +
              " under it against " + percent_per_step(reference.per_step) +
              " under trusted routes " + which;
    return out;
  }
  out.stalled = trial.per_step - kClearRise * trial.standard_error > 0;
  out.why = "loss " + moved(trial.per_step) + percent_per_step(trial.per_step) +
            " under it where it held under trusted routes (" + moved(reference.per_step) +
            percent_per_step(reference.per_step) + " " + which + ")";
  return out;
}

void LossTrend::add(int64_t first_step, int64_t last_step, double mean_loss) {
  if (!std::isfinite(mean_loss) || !(mean_loss > 0) || last_step < first_step) return;
  samples_.push_back(Sample{0.5 * double(first_step + last_step), std::log(mean_loss)});
  last_step_ = last_step;
  while (!samples_.empty() && samples_.front().step < double(last_step - keep_steps_))
    samples_.pop_front();
}

LossSlope LossTrend::slope(double from_step, double to_step) const {
  LossSlope out;
  double sx = 0, sy = 0;
  for (const Sample& s : samples_)
    if (s.step >= from_step && s.step <= to_step) {
      sx += s.step;
      sy += s.log_loss;
      out.points += 1;
    }
  if (!out.valid()) return out;
  const double n = double(out.points);
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0;
  for (const Sample& s : samples_)
    if (s.step >= from_step && s.step <= to_step) {
      sxx += (s.step - mx) * (s.step - mx);
      sxy += (s.step - mx) * (s.log_loss - my);
    }
  if (!(sxx > 0)) {
    out.points = 0;
    return out;
  }
  out.per_step = sxy / sxx;
  double residuals = 0;
  for (const Sample& s : samples_)
    if (s.step >= from_step && s.step <= to_step) {
      const double r = s.log_loss - (my + out.per_step * (s.step - mx));
      residuals += r * r;
    }
  out.standard_error = std::sqrt(residuals / (n - 2) / sxx);
  return out;
}

}  // namespace cmpi::comm
