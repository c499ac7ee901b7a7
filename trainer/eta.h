// EtaClock: how long the rest of a run will take, for the progress line:
// the steps left times the mean of the most recent steps' wall time (the
// loop's whole iteration: the step, logging, checkpoint saves; evaluation
// apart), plus the evaluations still due times the last one's time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

namespace cmpi::trainer {

class EtaClock {
 public:
  explicit EtaClock(size_t window = 20) : window_(window) {}

  void step_took(double seconds);
  void evaluation_took(double seconds) { evaluation_seconds_ = seconds; }
  // Negative until a step was timed.
  double remaining_seconds(int64_t steps_left, int64_t evaluations_left) const;

 private:
  size_t window_;
  std::deque<double> recent_;
  double recent_sum_ = 0;
  double evaluation_seconds_ = 0;
};

// Evaluations (eval.every, and one after the last step) still due after
// step `done` of `total`.
int64_t evaluations_after(int64_t done, int64_t total, int64_t every);

// "42s", "3m05s", "2h07m", "3d04h".
std::string format_duration(double seconds);

}  // namespace cmpi::trainer
