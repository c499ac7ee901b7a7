// The adaptive policy's choice (comm/adaptive_model.h) from synthetic
// measurements: a slow link picks compression, a fast one raw, the error
// budget excludes lossy candidates, hysteresis holds small gains back, a
// measured time overrides the model, a link that changes flips the choice
// and flips it back; and the choice weighs convergence: a fast route whose
// error costs steps loses to a slower accurate one, the more so the longer
// the rest of the step, equal errors go to the faster, and a demoted or
// barred candidate is not chosen.
#include "comm/adaptive_model.h"

#include <gtest/gtest.h>

#include <vector>

namespace cmpi::comm {
namespace {

constexpr double kMB = 1e6;

// raw, zfp16, zfp8 + feedback, mpc, bf16: the gradient candidates' shapes.
enum Candidate : size_t { kRaw, kZfp16, kZfp8Feedback, kMpc, kBf16 };

std::vector<CandidateKind> kinds() {
  return {CandidateKind{true, true, false}, CandidateKind{false, false, false},
          CandidateKind{false, false, true}, CandidateKind{false, true, false},
          CandidateKind{false, false, false}};
}

// Codec speeds of this project's CPU codecs (docs/benchmarks.md), roughly.
std::vector<CandidateMeasure> measures() {
  return {CandidateMeasure{true, 1.0, 0.0, 0.0}, CandidateMeasure{true, 0.5, 2e-9, 2e-4},
          CandidateMeasure{true, 0.25, 3e-9, 0.05}, CandidateMeasure{true, 0.9, 4e-10, 0.0},
          CandidateMeasure{true, 0.5, 2e-10, 3e-3}};
}

SlotTraffic traffic(double bytes = 100 * kMB) {
  SlotTraffic t;
  t.raw_bytes = bytes;
  t.calls = 10;
  return t;
}

LinkModel link(double bytes_per_second) {
  LinkModel l;
  l.bytes_per_second = bytes_per_second;
  return l;
}

Choice pick(double bytes_per_second, const AutoSettings& settings = {},
            const SlotMemory& memory = SlotMemory(5),
            std::vector<CandidateMeasure> m = measures()) {
  return choose(traffic(), kinds(), m, link(bytes_per_second), 1, memory, settings);
}

TEST(AdaptiveModel, SlowLinkPicksTheStrongestCodecWithinBudget) {
  const Choice c = pick(25 * kMB);  // 200 Mbit/s
  ASSERT_TRUE(c.decided);
  EXPECT_EQ(c.chosen, kZfp8Feedback) << c.reason;
  EXPECT_TRUE(c.changed);
  EXPECT_LT(c.predicted[kZfp8Feedback], c.predicted[kRaw] / 3);
}

TEST(AdaptiveModel, FastLinkStaysRaw) {
  const Choice c = pick(20000 * kMB);  // 160 Gbit/s: any codec costs more than the wire
  ASSERT_TRUE(c.decided);
  EXPECT_EQ(c.chosen, kRaw) << c.reason;
  EXPECT_FALSE(c.changed);
}

TEST(AdaptiveModel, ErrorBudgetExcludesLossyCandidates) {
  AutoSettings strict;
  strict.max_rel_error_feedback = 0.01;  // zfp8's 5 % is out
  Choice c = pick(25 * kMB, strict);
  EXPECT_EQ(c.predicted[kZfp8Feedback], kUnpredictable);
  EXPECT_TRUE(c.chosen == kZfp16 || c.chosen == kBf16) << c.chosen;

  strict.max_rel_error = 1e-3;  // bf16's 0.3 % is out too, zfp16's 0.02 % stays
  c = pick(25 * kMB, strict);
  EXPECT_EQ(c.chosen, kZfp16);

  strict.max_rel_error = 0;  // only lossless: mpc beats raw on a slow link
  c = pick(25 * kMB, strict);
  EXPECT_EQ(c.chosen, kMpc);
}

TEST(AdaptiveModel, UnmeasuredCodecsAreNotChosen) {
  std::vector<CandidateMeasure> m = measures();
  for (size_t c = 1; c < m.size(); ++c) m[c].measured = false;
  const Choice c = pick(1 * kMB, {}, SlotMemory(5), m);
  EXPECT_EQ(c.chosen, kRaw);
}

TEST(AdaptiveModel, CurrentChoiceOverBudgetIsLeft) {
  SlotMemory memory(5);
  memory.chosen = kZfp8Feedback;
  AutoSettings strict;
  strict.max_rel_error_feedback = 0.01;
  const Choice c = pick(25 * kMB, strict, memory);
  EXPECT_TRUE(c.changed);
  EXPECT_NE(c.chosen, kZfp8Feedback);
  EXPECT_STREQ(c.reason, "current over error budget");
}

TEST(AdaptiveModel, HysteresisHoldsBackSmallGains) {
  // bf16 (wire-bound: 0.5 x bytes / link) against zfp16 at the same ratio
  // but a codec slow enough to cost 3 % more: bf16 is best; from zfp16, a
  // 3 % gain is below min_gain and the choice stays.
  std::vector<CandidateMeasure> m = measures();
  m[kZfp8Feedback].measured = false;
  const double link_bps = 25 * kMB;
  const double wire = 0.5 * traffic().raw_bytes / link_bps;
  const double bf16 = predict_seconds(traffic(), kinds()[kBf16], m[kBf16], link(link_bps));
  // zfp16's codec stays under the wire time, so only its fill adds: 3 %.
  m[kZfp16].codec_seconds_per_byte = (1.03 * bf16 - wire) / (traffic().calls * double(1 << 20));
  ASSERT_LT(m[kZfp16].codec_seconds_per_byte * traffic().raw_bytes, wire);
  SlotMemory memory(5);
  memory.chosen = kZfp16;
  AutoSettings settings;
  settings.min_gain = 0.05;
  Choice c = pick(link_bps, settings, memory, m);
  EXPECT_EQ(c.chosen, kZfp16) << c.reason;
  EXPECT_STREQ(c.reason, "kept: gain below min_gain");

  settings.min_gain = 0.01;  // now the gain counts
  c = pick(link_bps, settings, memory, m);
  EXPECT_EQ(c.chosen, kBf16) << c.reason;
  EXPECT_STREQ(c.reason, "faster");
}

TEST(AdaptiveModel, MeasuredTimeOverridesTheModel) {
  // The model likes zfp8 on a slow link; zfp8 measured 3x slower than the
  // model, most of it inside the codec (a contended core, say), loses to
  // what bf16 is predicted to take.
  SlotMemory memory(5);
  memory.chosen = kZfp8Feedback;
  const double model = pick(25 * kMB).predicted[kZfp8Feedback];
  SlotTraffic carried = traffic();
  carried.seconds = 3 * model;
  carried.codec_seconds = 0.9 * carried.seconds;
  memory.remember(carried, /*regime=*/1);
  const Choice c = choose(carried, kinds(), measures(), link(25 * kMB), 1, memory, {});
  EXPECT_TRUE(c.from_measurement[kZfp8Feedback]);
  EXPECT_DOUBLE_EQ(c.predicted[kZfp8Feedback], 3 * model);
  EXPECT_EQ(c.chosen, kBf16) << c.reason;
  // A measurement from another link regime no longer counts.
  const Choice later =
      choose(traffic(), kinds(), measures(), link(25 * kMB), 2, memory, AutoSettings{});
  EXPECT_FALSE(later.from_measurement[kZfp8Feedback]);
  EXPECT_EQ(later.chosen, kZfp8Feedback);
}

TEST(AdaptiveModel, WaitingIsPaidByEveryCandidate) {
  // Raw on a fast link, its calls 0.2 s slower than the wire (waiting for a
  // slower rank's backward). Without charging that wait to the others'
  // models, bf16's model alone would look faster than raw's measured time.
  SlotMemory memory(5);
  const double bps = 20000 * kMB;
  SlotTraffic carried = traffic();
  carried.seconds = traffic().raw_bytes / bps + 0.2;
  memory.remember(carried, 1);
  const Choice c = choose(carried, kinds(), measures(), link(bps), 1, memory, {});
  EXPECT_TRUE(c.from_measurement[kRaw]);
  EXPECT_GT(c.predicted[kBf16], 0.2);
  EXPECT_EQ(c.chosen, kRaw) << c.reason;
}

TEST(AdaptiveModel, LinkEstimateFollowsChangesAndStartsRegimes) {
  AutoSettings settings;
  settings.probe_every = 0;
  LinkEstimate estimate;
  estimate.update(100 * kMB, 0, 0, settings);
  EXPECT_DOUBLE_EQ(estimate.bytes_per_second, 100 * kMB);
  const int64_t first = estimate.regime;
  estimate.update(105 * kMB, 0, 1, settings);  // noise: same regime
  EXPECT_EQ(estimate.regime, first);
  estimate.update(10 * kMB, 0, 2, settings);  // the link drops
  EXPECT_GT(estimate.regime, first);
  EXPECT_LT(estimate.bytes_per_second, 60 * kMB);
  // A codec-bound call only says "at least": it raises, never lowers.
  const double before = estimate.bytes_per_second;
  estimate.update(0, 1 * kMB, 3, settings);
  EXPECT_DOUBLE_EQ(estimate.bytes_per_second, before);
  estimate.update(0, 500 * kMB, 4, settings);
  EXPECT_DOUBLE_EQ(estimate.bytes_per_second, 500 * kMB);
}

// The whole loop on a simulated link: each step the chosen candidate's true
// time is measured, the link sampled, and the next choice made.
TEST(AdaptiveModel, LinkChangeFlipsTheChoiceAndBack) {
  AutoSettings settings;
  settings.probe_every = 0;
  LinkEstimate estimate;
  SlotMemory memory(5);
  const auto true_seconds = [&](size_t c, double bps) {
    return predict_seconds(traffic(), kinds()[c], measures()[c], link(bps));
  };
  std::vector<size_t> chosen;
  std::vector<double> rates;
  for (int step = 0; step < 30; ++step) {
    const double bps = step < 10 ? 12.5 * kMB : step < 20 ? 20000 * kMB : 12.5 * kMB;
    rates.push_back(bps);
    SlotTraffic carried = traffic();
    carried.seconds = true_seconds(memory.chosen, bps);
    memory.remember(carried, estimate.regime);
    estimate.update(bps, 0, step, settings);
    const Choice c = choose(traffic(), kinds(), measures(), link(estimate.bytes_per_second),
                            estimate.regime, memory, settings);
    if (c.decided) memory.chosen = c.chosen;
    chosen.push_back(memory.chosen);
  }
  // Within three steps of each change, the choice is the fast link's or the
  // slow link's best, and it stays there until the next change.
  for (int step = 3; step < 10; ++step) EXPECT_EQ(chosen[size_t(step)], kZfp8Feedback) << step;
  for (int step = 13; step < 20; ++step) EXPECT_EQ(chosen[size_t(step)], kRaw) << step;
  for (int step = 23; step < 30; ++step) EXPECT_EQ(chosen[size_t(step)], kZfp8Feedback) << step;
}

TEST(AdaptiveModel, NoTrafficOrUnknownLinkDecidesNothing) {
  SlotMemory memory(5);
  memory.chosen = kBf16;
  Choice c = choose(traffic(0), kinds(), measures(), link(25 * kMB), 1, memory, {});
  EXPECT_FALSE(c.decided);
  EXPECT_EQ(c.chosen, kBf16);
  c = choose(traffic(), kinds(), measures(), link(0), 1, memory, {});
  EXPECT_FALSE(c.decided);
  EXPECT_EQ(c.chosen, kBf16);
}

TEST(AdaptiveModel, StepsMultiplierGrowsWithTheError) {
  const CandidateKind raw{true, true, false}, lossless{false, true, false};
  const CandidateKind lossy{false, false, false}, feedback{false, false, true};
  CandidateMeasure m{true, 0.1, 1e-9, 0.5};
  EXPECT_DOUBLE_EQ(steps_multiplier(raw, m), 1);
  EXPECT_DOUBLE_EQ(steps_multiplier(lossless, m), 1);
  EXPECT_DOUBLE_EQ(steps_multiplier(lossy, m), 1 / (1 - 0.25));
  EXPECT_DOUBLE_EQ(steps_multiplier(feedback, m), 1.25);
  m.rel_error = 1.0;  // everything lost: no step makes progress
  EXPECT_EQ(steps_multiplier(lossy, m), kUnpredictable);
  EXPECT_DOUBLE_EQ(steps_multiplier(feedback, m), 2);
  m.measured = false;
  EXPECT_EQ(steps_multiplier(feedback, m), kUnpredictable);
  // Trust on the error alone ends at a multiplier of 1.05.
  m = CandidateMeasure{true, 0.1, 1e-9, 0.2};
  EXPECT_TRUE(trusted_on_error(lossy, m));
  m.rel_error = 0.25;
  EXPECT_FALSE(trusted_on_error(lossy, m));
  EXPECT_FALSE(trusted_on_error(feedback, m));
  EXPECT_TRUE(trusted_on_error(raw, m));
}

// raw; a fast route that loses 70 % of every gradient (a sparsifier without
// feedback, say: 1 % on the wire); bf16.
std::vector<CandidateKind> convergence_kinds() {
  return {CandidateKind{true, true, false}, CandidateKind{false, false, false},
          CandidateKind{false, false, false}};
}
std::vector<CandidateMeasure> convergence_measures(double fast_error) {
  return {CandidateMeasure{true, 1.0, 0.0, 0.0}, CandidateMeasure{true, 0.01, 1e-10, fast_error},
          CandidateMeasure{true, 0.5, 2e-10, 3e-3}};
}

TEST(AdaptiveModel, FastRouteWithALargeErrorLosesToASlowerAccurateOne) {
  AutoSettings open_budget;  // the budget alone would let every candidate in
  open_budget.max_rel_error = 10;
  SlotTraffic t = traffic();
  t.step_seconds = 5.0;  // five seconds of compute besides this slot (4 s raw, 2 s bf16)
  const auto decide = [&](double fast_error) {
    return choose(t, convergence_kinds(), convergence_measures(fast_error), link(25 * kMB), 1,
                  SlotMemory(3), open_budget);
  };
  const Choice c = decide(0.7);
  ASSERT_TRUE(c.decided);
  // Per step the sparsifier is far faster ...
  EXPECT_LT(c.predicted[1], c.predicted[2] / 10);
  // ... but needs ~2x the steps, each paying the compute again.
  EXPECT_NEAR(c.multiplier[1], 1 / (1 - 0.49), 1e-12);
  EXPECT_EQ(c.chosen, 2u) << c.reason;
  EXPECT_LT(c.cost[2], c.cost[1]);
  // With a small error the same speed wins.
  const Choice small = decide(0.01);
  EXPECT_EQ(small.chosen, 1u) << small.reason;
}

TEST(AdaptiveModel, ThePenaltyWeighsTheWholeStep) {
  // zfp4 + feedback at 25 % error (1.0625x the steps) saves 0.5 s of wire
  // against bf16: worth it in a 0.7 s step, not in a 20 s one.
  const std::vector<CandidateKind> k = {CandidateKind{true, true, false},
                                        CandidateKind{false, false, true},
                                        CandidateKind{false, false, false}};
  const std::vector<CandidateMeasure> m = {CandidateMeasure{true, 1.0, 0.0, 0.0},
                                           CandidateMeasure{true, 0.125, 1e-11, 0.25},
                                           CandidateMeasure{true, 0.5, 1e-11, 3e-3}};
  AutoSettings settings;
  settings.max_rel_error_feedback = 0.3;
  settings.min_gain = 0.01;
  SlotMemory memory(3);
  memory.chosen = 1;                  // zfp4 carried the last period ...
  SlotTraffic t = traffic(25 * kMB);  // (1 s raw at 200 Mbit/s)
  t.seconds = 0.5;                    // ... in 0.5 s per step
  t.step_seconds = 0.7;
  Choice c = choose(t, k, m, link(25 * kMB), 1, memory, settings);
  EXPECT_EQ(c.chosen, 1u) << c.reason;
  t.step_seconds = 20;
  c = choose(t, k, m, link(25 * kMB), 1, memory, settings);
  EXPECT_EQ(c.chosen, 2u) << c.reason;
  EXPECT_GT(c.predicted[2], c.predicted[1]);
  EXPECT_STREQ(c.reason, "fewer steps");
}

TEST(AdaptiveModel, EqualErrorsPickTheFaster) {
  // Two lossy routes with the same error: the multiplier is the same, so
  // the one with less on the wire wins, whatever the step time (up to where
  // raw's time, 4 s here, is dearer than 4 % more steps).
  std::vector<CandidateMeasure> m = convergence_measures(0.2);
  m[2].rel_error = 0.2;
  AutoSettings settings;
  settings.max_rel_error = 1;
  for (double step_seconds : {0.0, 1.0, 10.0}) {
    SlotTraffic t = traffic();
    t.step_seconds = step_seconds;
    const Choice c = choose(t, convergence_kinds(), m, link(25 * kMB), 1, SlotMemory(3), settings);
    EXPECT_DOUBLE_EQ(c.multiplier[1], c.multiplier[2]);
    EXPECT_LT(c.cost[1], c.cost[2]);
    EXPECT_EQ(c.chosen, 1u) << "step " << step_seconds << " s: " << c.reason;
  }
}

TEST(AdaptiveModel, DemotedAndBarredCandidatesAreNotChosen) {
  SlotMemory memory(5);
  memory.chosen = kZfp8Feedback;
  memory.demoted[kZfp8Feedback] = true;
  Choice c = pick(25 * kMB, {}, memory);
  EXPECT_TRUE(c.changed);
  EXPECT_NE(c.chosen, kZfp8Feedback);
  EXPECT_EQ(c.cost[kZfp8Feedback], kUnpredictable);
  EXPECT_STREQ(c.reason, "current demoted");
  // Barred: not chosen now, but named as the one that would have won.
  SlotMemory barred(5);
  barred.barred[kZfp8Feedback] = true;
  c = pick(25 * kMB, {}, barred);
  EXPECT_NE(c.chosen, kZfp8Feedback);
  EXPECT_EQ(c.best_barred, size_t(kZfp8Feedback));
  // A barred candidate that would not have won is not named.
  barred.barred[kZfp8Feedback] = false;
  barred.barred[kMpc] = true;
  c = pick(25 * kMB, {}, barred);
  EXPECT_EQ(c.chosen, kZfp8Feedback);
  EXPECT_EQ(c.best_barred, SIZE_MAX);
}

}  // namespace
}  // namespace cmpi::comm
