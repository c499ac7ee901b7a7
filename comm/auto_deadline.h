// AutoDeadline: the watchdog's deadline under run.timeout: auto, derived
// from the run's own waits, so that a stopped rank ends a small job in
// seconds while long steps, saves and evaluations are left alone.
//
// The rule (docs/config.md, run.timeout):
//   deadline = max(floor, kMultiple x the slowest wait of a communication
//              call completed in the last kWindowSteps ordinary steps)
// and the long allowance (kLongAllowanceSeconds, 30 minutes, the fixed
// default it replaces) wherever the run has no such measure or knows that
// long work is under way:
//   - until this process has completed one ordinary step: start-up (the
//     job's agreement, a resume's load, pretrained weights) and the first
//     step (allocation, first use of every buffer) are not what later steps
//     wait for;
//   - in a step that saves a checkpoint or evaluates, and in the step after
//     it (a rank that left the save or evaluation first waits in the next
//     step's first call for one still finishing it); the waits of these
//     steps are not part of the window;
//   - once training has ended (the final save, the summary, MPI_Finalize);
//   - without steps at all (--plan, --export, tools): the watchdog then
//     behaves as under a fixed timeout of 30 minutes.
// A wait counts from entering a communication call to leaving it: it is the
// time a rank spent waiting for the slowest of its peers plus the transfer,
// so a job whose ranks are imbalanced by seconds per step gets a deadline of
// tens of seconds, and one whose ranks are balanced gets the floor.
//
// Thread-safety: step_started, expect_long_work and training_ended from the
// training loop's thread; call_finished from any thread (every communication
// call, so it is a few atomic operations); deadline_ns from any thread (the
// watchdog's). Times are passed in, so the rule is testable without a clock.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace cmpi::comm {

class AutoDeadline {
 public:
  static constexpr double kDefaultFloorSeconds = 20.0;
  static constexpr double kMultiple = 10.0;
  static constexpr int kWindowSteps = 50;
  static constexpr double kLongAllowanceSeconds = 1800.0;

  explicit AutoDeadline(double floor_seconds = kDefaultFloorSeconds);

  // The floor (seconds > 0); any time.
  void set_floor(double seconds);
  double floor_seconds() const;

  // A training step begins: the step before it, if ordinary, joins the window.
  void step_started();
  // Long work (a checkpoint save, an evaluation) begins in the current step:
  // this step and the next get the long allowance.
  void expect_long_work();
  // Training is over: the long allowance from now on.
  void training_ended();
  // A communication call completed after waiting `waited_ns`.
  void call_finished(int64_t waited_ns);

  // The deadline for a call waiting now.
  int64_t deadline_ns() const;
  // Why the deadline is what it is: "auto: 20 s = run.timeout_floor; the
  // slowest wait of the last 50 steps: 0.019 s", "auto: 34 s = 10 x the
  // slowest wait of the last 50 steps, 3.4 s", "auto: 1800 s, the long
  // allowance of start-up, ...".
  std::string explain() const;

 private:
  int64_t window_max_ns() const;

  std::atomic<int64_t> floor_ns_;
  // The slowest wait of the step in progress (any thread).
  std::atomic<int64_t> step_max_ns_{0};
  // The slowest wait of the window's steps, published by step_started.
  std::atomic<int64_t> window_published_ns_{0};
  // Whether the window holds at least one ordinary step.
  std::atomic<bool> measured_{false};
  // Whether the step in progress (or the start-up before the first) gets
  // the long allowance.
  std::atomic<bool> long_now_{true};
  std::atomic<bool> ended_{false};

  // The training loop's thread only.
  bool next_step_long_ = true;   // the first step is
  std::vector<int64_t> window_;  // per ordinary step: its slowest wait (a ring)
  size_t window_next_ = 0;
};

}  // namespace cmpi::comm
