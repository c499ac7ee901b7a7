// What the progress line and summary estimate from time: per-rank FLOP
// rates and utilisation (trainer/flops_meter.h), the ETA (trainer/eta.h),
// and the attempts of a restarted run (trainer/attempt_log.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "trainer/attempt_log.h"
#include "trainer/eta.h"
#include "trainer/flops_meter.h"

namespace cmpi::trainer {
namespace {

TEST(FlopsMeter, PerRankRatesOfTheModelAndTheHardware) {
  plan::TokenFlops per_token;
  per_token.forward = 1e6;
  per_token.recompute = 1e6;
  // 4 ranks share 2000 tokens a step: 3e6 x 500 = 1.5e9 model FLOPs each;
  // in 0.5 s that is 3 GFLOP/s, 30 % of a 10 GFLOP/s peak; the hardware
  // also recomputes 1e6 x 500: 4 GFLOP/s, 40 %.
  const FlopsMeter meter(per_token, 2000, 4, 10e9);
  const Utilization u = meter.over(1, 0.5);
  EXPECT_DOUBLE_EQ(u.tflops_per_rank, 3e-3);
  EXPECT_DOUBLE_EQ(u.mfu, 0.3);
  EXPECT_DOUBLE_EQ(u.hfu, 0.4);
  EXPECT_DOUBLE_EQ(meter.over(10, 5).mfu, 0.3);
  // Without a peak only the rate; without a FLOP count nothing.
  EXPECT_LT(FlopsMeter(per_token, 2000, 4, 0).over(1, 0.5).mfu, 0);
  EXPECT_LT(FlopsMeter({}, 2000, 4, 10e9).over(1, 0.5).tflops_per_rank, 0);
  EXPECT_EQ(human_flops(312e12), "312 TFLOP/s");
  EXPECT_EQ(human_flops(8.25e9), "8.25 GFLOP/s");
}

TEST(EtaClock, RecentStepsTimesStepsLeftPlusEvaluations) {
  EtaClock eta(2);
  EXPECT_LT(eta.remaining_seconds(10, 0), 0);
  eta.step_took(5);  // falls out of the window of 2
  eta.step_took(1);
  eta.step_took(3);
  EXPECT_DOUBLE_EQ(eta.remaining_seconds(10, 0), 20);
  eta.evaluation_took(4);
  EXPECT_DOUBLE_EQ(eta.remaining_seconds(10, 3), 32);
  // eval.every 10 over 25 steps: after steps 10, 20 and 25.
  EXPECT_EQ(evaluations_after(0, 25, 10), 3);
  EXPECT_EQ(evaluations_after(10, 25, 10), 2);
  EXPECT_EQ(evaluations_after(20, 20, 10), 0);
  EXPECT_EQ(evaluations_after(5, 20, 0), 0);
  EXPECT_EQ(format_duration(42.4), "42s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(7620), "2h07m");
  EXPECT_EQ(format_duration(3 * 86400 + 4 * 3600), "3d04h");
}

TEST(AttemptLog, ARestartedRunCountsEveryAttempt) {
  const std::string path = ::testing::TempDir() + "attempt_log_test.jsonl";
  {
    AttemptLog first(path, false, 0);
    first.progress(50, 10.0);
    first.progress(100, 20.0);  // killed after this checkpoint
  }
  {
    AttemptLog second(path, true, 100);
    second.progress(200, 15.0);
    const AttemptLog::Totals t = second.totals(15.0);
    second.close();
    EXPECT_EQ(t.attempts, 2);
    EXPECT_DOUBLE_EQ(t.seconds, 35.0);
    EXPECT_GE(t.wall_seconds, 0);
  }
  // A launch without --resume starts the history anew.
  AttemptLog fresh(path, false, 0);
  EXPECT_EQ(fresh.totals(1.0).attempts, 1);
  EXPECT_DOUBLE_EQ(fresh.totals(1.0).seconds, 1.0);
  fresh.close();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace cmpi::trainer
