// The loss trend preset auto judges trials by (comm/loss_trend.h): the
// least-squares slope of log-loss and its standard error, and the verdict of
// a trial window against the windows before and after it: a flat loss
// between falling ones stalls; a loss that keeps falling passes, whether the
// curve flattens (after slower than before) or speeds up (a learning rate
// still warming up); after flat references only a clear rise stalls. Noisy
// series are seeded; the seed is printed.
#include "comm/loss_trend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "tests/support/test_seed.h"

namespace cmpi::comm {
namespace {

TEST(LossTrend, SlopeOfAGeometricFallIsExact) {
  LossTrend trend(100);
  for (int64_t step = 0; step < 10; ++step)
    trend.add(step, step, 5.0 * std::exp(-0.1 * double(step)));
  const LossSlope all = trend.slope(0, 9);
  ASSERT_TRUE(all.valid());
  EXPECT_EQ(all.points, 10u);
  EXPECT_NEAR(all.per_step, -0.1, 1e-12);
  EXPECT_NEAR(all.standard_error, 0, 1e-9);
  // A window picks its samples by step; two are no line.
  EXPECT_EQ(trend.slope(3, 5).points, 3u);
  EXPECT_FALSE(trend.slope(8, 9).valid());
  EXPECT_EQ(trend.last_step(), 9);
}

TEST(LossTrend, PeriodMeansSitAtTheirMiddleStepAndOldOnesLapse) {
  LossTrend trend(10);
  // Periods of two steps: the mean of steps 2k and 2k+1 at step 2k + 0.5.
  for (int64_t first = 0; first < 40; first += 2)
    trend.add(first, first + 1, std::exp(-double(first)));
  const LossSlope recent = trend.slope(20, 40);
  ASSERT_TRUE(recent.valid());
  EXPECT_NEAR(recent.per_step, -1, 1e-12);
  EXPECT_FALSE(trend.slope(0, 20).valid()) << "samples older than 10 steps are dropped";
  trend.add(50, 50, std::numeric_limits<double>::quiet_NaN());
  trend.add(51, 51, 0.0);
  EXPECT_EQ(trend.last_step(), 39) << "a non-finite or non-positive loss is no sample";
}

TEST(LossTrend, FlatBetweenFallingStalls) {
  const LossSlope before{-0.05, 0.005, 10}, after{-0.04, 0.005, 10};
  const TrialVerdict flat = judge_trial(before, LossSlope{-0.002, 0.004, 10}, after);
  EXPECT_TRUE(flat.stalled);
  EXPECT_EQ(flat.why,
            "loss fell 0.2 %/step under it against 3.9 %/step under trusted routes after");
  EXPECT_TRUE(judge_trial(before, LossSlope{0.01, 0.004, 10}, after).stalled) << "rising";
  // Half the slower neighbour's rate is a route that works.
  const TrialVerdict kept = judge_trial(before, LossSlope{-0.02, 0.004, 10}, after);
  EXPECT_FALSE(kept.stalled) << kept.why;
}

TEST(LossTrend, TheSlowerNeighbourIsTheReference) {
  // A curve that flattens: before -10 %/step, after -1 %/step; a route that
  // falls 2 %/step in between works, though it falls at a fifth of before.
  EXPECT_FALSE(judge_trial(LossSlope{-0.1, 0.005, 10}, LossSlope{-0.02, 0.004, 10},
                           LossSlope{-0.01, 0.002, 10})
                   .stalled);
  // A learning rate warming up: before is the slower.
  const TrialVerdict warming = judge_trial(LossSlope{-0.01, 0.002, 10}, LossSlope{-0.02, 0.004, 10},
                                           LossSlope{-0.1, 0.005, 10});
  EXPECT_FALSE(warming.stalled) << warming.why;
  EXPECT_NE(warming.why.find("1 %/step under trusted routes before"), std::string::npos)
      << warming.why;
}

TEST(LossTrend, AfterFlatReferencesOnlyAClearRiseStalls) {
  // The loss held (converged, or its fall is noise): a trial cannot be asked
  // to fall, only not to rise.
  const LossSlope flat{-0.001, 0.002, 10};
  EXPECT_FALSE(judge_trial(flat, LossSlope{0.002, 0.002, 10}, flat).stalled) << "within noise";
  const TrialVerdict rising = judge_trial(flat, LossSlope{0.02, 0.002, 10}, flat);
  EXPECT_TRUE(rising.stalled);
  EXPECT_NE(rising.why.find("rose 2 %/step under it where it held"), std::string::npos)
      << rising.why;
}

TEST(LossTrend, NoisyWindowsAreJudgedByTheirTrend) {
  // A loss falling 5 %/step, then 3.5 %/step (a route that works) or not at
  // all (one that stalls), then 3 %/step, with 2 % noise per step: each
  // verdict must hold for every repeat.
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.02);
  for (int repeat = 0; repeat < 20; ++repeat) {
    for (bool stalls : {false, true}) {
      LossTrend trend(100);
      double log_loss = std::log(6.0);
      for (int64_t step = 0; step < 30; ++step) {
        trend.add(step, step, std::exp(log_loss + noise(rng)));
        log_loss -= step < 10 ? 0.05 : step < 20 ? (stalls ? 0.0 : 0.035) : 0.03;
      }
      const TrialVerdict v =
          judge_trial(trend.slope(0, 9), trend.slope(10, 19), trend.slope(20, 29));
      EXPECT_EQ(v.stalled, stalls) << v.why << " (repeat " << repeat << ", seed " << seed << ")";
    }
  }
}

}  // namespace
}  // namespace cmpi::comm
