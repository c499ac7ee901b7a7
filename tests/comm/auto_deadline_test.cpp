// run.timeout: auto's rule (comm/auto_deadline.h): the long allowance until
// one ordinary step is measured, around long work and after training; else
// max(floor, 10 x the slowest wait of the last 50 ordinary steps).
#include "comm/auto_deadline.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace cmpi::comm {
namespace {

constexpr int64_t kSecond = 1000000000;
constexpr int64_t kLong = int64_t(AutoDeadline::kLongAllowanceSeconds) * kSecond;

// One step whose calls waited `waits_ns` (the step before it rolls over).
void run_step(AutoDeadline& deadline, std::initializer_list<int64_t> waits_ns) {
  deadline.step_started();
  for (int64_t wait : waits_ns) deadline.call_finished(wait);
}

TEST(AutoDeadline, LongAllowanceUntilOneOrdinaryStepIsMeasured) {
  AutoDeadline deadline(20.0);
  EXPECT_EQ(deadline.deadline_ns(), kLong) << "start-up";
  deadline.call_finished(100 * kSecond);  // the start-up's waits are not measured
  run_step(deadline, {kSecond / 10});
  EXPECT_EQ(deadline.deadline_ns(), kLong) << "the first step";
  run_step(deadline, {kSecond / 100});
  EXPECT_EQ(deadline.deadline_ns(), kLong) << "the second step, nothing complete yet";
  run_step(deadline, {});
  EXPECT_EQ(deadline.deadline_ns(), 20 * kSecond) << "the floor: 10 x 0.01 s is less";
  EXPECT_EQ(deadline.explain(),
            "auto: 20 s = run.timeout_floor; the slowest wait of the last 50 steps: 0.010 s");
}

TEST(AutoDeadline, TenTimesTheSlowestRecentWaitAboveTheFloor) {
  AutoDeadline deadline(2.0);
  run_step(deadline, {});  // the first step
  run_step(deadline, {kSecond / 2, 3 * kSecond, kSecond});
  run_step(deadline, {kSecond / 2});
  EXPECT_EQ(deadline.deadline_ns(), 30 * kSecond);
  EXPECT_EQ(deadline.explain(), "auto: 30 s = 10 x the slowest wait of the last 50 steps, 3 s");
  // A wait of the step in progress counts at once.
  deadline.call_finished(4 * kSecond);
  EXPECT_EQ(deadline.deadline_ns(), 40 * kSecond);
}

TEST(AutoDeadline, OldWaitsLeaveTheWindowAfterFiftySteps) {
  AutoDeadline deadline(1.0);
  run_step(deadline, {});
  run_step(deadline, {5 * kSecond});
  for (int i = 0; i < AutoDeadline::kWindowSteps; ++i) run_step(deadline, {kSecond / 5});
  EXPECT_EQ(deadline.deadline_ns(), 50 * kSecond) << "the 5 s step is the oldest of the 50";
  run_step(deadline, {kSecond / 5});
  EXPECT_EQ(deadline.deadline_ns(), 2 * kSecond) << "and now gone";
}

TEST(AutoDeadline, LongWorkCoversItsStepAndTheNextAndStaysOutOfTheWindow) {
  AutoDeadline deadline(1.0);
  run_step(deadline, {});
  run_step(deadline, {kSecond / 10});
  run_step(deadline, {kSecond / 10});
  EXPECT_EQ(deadline.deadline_ns(), 1 * kSecond);
  deadline.expect_long_work();  // a checkpoint save at the end of this step
  EXPECT_EQ(deadline.deadline_ns(), kLong);
  deadline.call_finished(60 * kSecond);  // waiting for the slowest writer
  run_step(deadline, {30 * kSecond});    // the next step: a rank still saving
  EXPECT_EQ(deadline.deadline_ns(), kLong);
  run_step(deadline, {kSecond / 10});
  EXPECT_EQ(deadline.deadline_ns(), 1 * kSecond) << "the save's waits are not the run's";
}

TEST(AutoDeadline, TrainingEndedKeepsTheLongAllowance) {
  AutoDeadline deadline(1.0);
  run_step(deadline, {});
  run_step(deadline, {});
  run_step(deadline, {});
  EXPECT_EQ(deadline.deadline_ns(), 1 * kSecond);
  deadline.training_ended();
  EXPECT_EQ(deadline.deadline_ns(), kLong);
  EXPECT_NE(deadline.explain().find("the long allowance"), std::string::npos);
}

}  // namespace
}  // namespace cmpi::comm
