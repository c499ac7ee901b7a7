// Preset auto's state in checkpoints (AdaptivePolicy::state_words and
// restore_state_words, comm/adaptive_policy_state.cpp): a policy restored
// from the words of another at step K decides every later step as that one
// does -- also when K falls inside a trial or between a trial and its
// verdict -- where a fresh policy decides otherwise; words that are no whole
// state are refused naming what is wrong, and words of another policy are
// not taken. And the test-only fixed timing (CMPI_TEST_FAULT=auto_timing)
// replaces a call's wall time by its bytes over the given link.
//
// The run is simulated on one rank through the agreement's inputs, as in
// adaptive_trial_test.cpp: a 10 MB/s link, three candidates (raw, zfp rate 8
// with error feedback, sign without), sign on trial after a window of
// trusted steps, and a loss that stalls under sign (demoted at its verdict).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/adaptive_policy.h"
#include "tests/comm/simulated_auto.h"
#include "tests/support/test_seed.h"

namespace cmpi::comm {
namespace {

using namespace simulated_auto;
constexpr size_t kFloats = 64 << 10;
constexpr int64_t kWindow = 4;
constexpr int64_t kSteps = 36;
constexpr int kSign = kThird;

PolicyConfig config(bool with_sign) {
  std::optional<compress::CodecSpec> sign;
  if (with_sign) sign = compress::CodecSpec("sign", {{"bucket", "512"}});
  return gradient_policy(sign, kWindow);
}

// One group's policy on one rank, and the run's loss.
struct SimRun {
  explicit SimRun(bool with_sign = true)
      : policy(std::make_unique<Policy>(config(with_sign))),
        slice(std::make_unique<PolicySlice>(*policy, GroupKind::kDp)),
        adaptive(std::make_unique<AdaptivePolicy>(*slice, policy->config().auto_settings)) {}
  std::unique_ptr<Policy> policy;
  std::unique_ptr<PolicySlice> slice;
  std::unique_ptr<AdaptivePolicy> adaptive;
  double loss = 6;
  double previous_loss = kNoPreviousLoss;
};

// Step `step` of a run: decide, "send" 64 MiB through the route chosen, and
// let the loss fall (not under sign) with noise drawn from (seed, step), so
// that two runs given the same routes see the same numbers. Returns the
// candidate that carried the step and the decisions' reasons.
std::string run_step(SimRun& run, int64_t step, uint64_t seed) {
  std::mt19937_64 rng(seed * 1000003u + uint64_t(step));
  std::normal_distribution<float> gradient(0.f, 1e-3f);
  std::normal_distribution<double> noise(0, 0.005);
  run.adaptive->observe_loss(step - 1, run.previous_loss);
  const auto decisions = run.adaptive->decide_from(run.adaptive->local_inputs(), step);
  const PolicySlice::Route* route =
      run.slice->route(Op::kAllreduce, Role::kGradient, kFloats * 4, Locality::kInter);
  if (route == nullptr) throw std::logic_error("the test rule does not match");
  std::vector<float> data(kFloats);
  for (float& x : data) x = gradient(rng);
  run.adaptive->probe_if_due(*route, Op::kAllreduce, Role::kGradient, Locality::kInter, data.data(),
                             data.size());
  const double wire_fraction[] = {1.0, 0.25, 1.0 / 32};
  run.adaptive->record(*route, Op::kAllreduce, Role::kGradient, Locality::kInter,
                       simulated_call(wire_fraction[route->candidate]));
  run.previous_loss = run.loss + noise(rng);
  run.loss -= route->candidate == kSign ? 0.0 : 0.05;
  std::string out = std::to_string(route->candidate);
  for (const AutoDecision& d : decisions) out += " [" + d.codec + ": " + d.reason + "]";
  return out;
}

std::vector<std::string> steps(SimRun& run, int64_t from, int64_t to, uint64_t seed) {
  std::vector<std::string> out;
  for (int64_t step = from; step < to; ++step) out.push_back(run_step(run, step, seed));
  return out;
}

std::string joined(const std::vector<std::string>& lines, int64_t first) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i)
    out += "step " + std::to_string(first + int64_t(i)) + ": " + lines[i] + "\n";
  return out;
}

// A run resumed at `at` from the words of one run there, with the loss the
// trainer keeps beside them (training/previous_loss).
SimRun resumed_at(int64_t at, uint64_t seed) {
  SimRun saving;
  steps(saving, 0, at, seed);
  SimRun resumed;
  EXPECT_TRUE(resumed.adaptive->restore_state_words(saving.adaptive->state_words()));
  resumed.loss = saving.loss;
  resumed.previous_loss = saving.previous_loss;
  return resumed;
}

// The probes' codec times are fixed too, so that two runs' decisions differ
// only where their state does.
class AdaptiveState : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("CMPI_TEST_FAULT", "auto_timing:80", 1); }
  void TearDown() override { ::unsetenv("CMPI_TEST_FAULT"); }
};

TEST_F(AdaptiveState, AResumedPolicyDecidesEveryLaterStepAsTheUninterruptedOne) {
  const uint64_t seed = cmpi::testing::test_seed();
  SimRun whole;
  const auto uninterrupted = steps(whole, 0, kSteps, seed);
  int64_t tried = -1;  // the step sign's trial starts
  for (size_t s = 0; s < uninterrupted.size() && tried < 0; ++s)
    if (uninterrupted[s][0] == '0' + kSign) tried = int64_t(s);
  ASSERT_GE(tried, kWindow) << joined(uninterrupted, 0);
  ASSERT_LT(tried + 3 * kWindow, kSteps) << joined(uninterrupted, 0);
  // Before the trial, inside it, between it and its verdict, after it.
  for (int64_t at : {int64_t(3), tried + 1, tried + kWindow + 1, tried + 3 * kWindow}) {
    SimRun resumed = resumed_at(at, seed);
    const auto continued = steps(resumed, at, kSteps, seed);
    const std::vector<std::string> expected(uninterrupted.begin() + at, uninterrupted.end());
    EXPECT_EQ(joined(continued, at), joined(expected, at))
        << "resumed at step " << at << ", seed " << seed;
  }
  // A fresh policy at the trial's second step (what a resume without the
  // state did) decides otherwise: the test can tell.
  SimRun fresh;
  fresh.loss = 6 - 0.05 * double(tried);
  const auto afresh = steps(fresh, tried + 1, kSteps, seed);
  EXPECT_NE(joined(afresh, tried + 1),
            joined(std::vector<std::string>(uninterrupted.begin() + tried + 1, uninterrupted.end()),
                   tried + 1));
}

TEST_F(AdaptiveState, WordsThatAreNoWholeStateAreRefusedAndChangeNothing) {
  const uint64_t seed = cmpi::testing::test_seed();
  SimRun saving;
  steps(saving, 0, 12, seed);
  const std::vector<uint64_t> words = saving.adaptive->state_words();
  SimRun target;
  steps(target, 0, 2, seed);
  const std::vector<uint64_t> before = target.adaptive->state_words();
  const auto refused = [&](std::vector<uint64_t> bad, const std::string& says) {
    try {
      target.adaptive->restore_state_words(bad);
      ADD_FAILURE() << "accepted: " << says;
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find(says), std::string::npos) << error.what();
    }
  };
  refused({words.begin(), words.end() - 1}, "ends before");
  refused({}, "ends before its magic word");
  auto longer = words;
  longer.push_back(0);
  refused(longer, "1 words more than");
  auto magic = words;
  magic[0] ^= 1;
  refused(magic, "magic");
  // The first slot's chosen candidate: after the magic word and the slot
  // count, every slot's fingerprint (6 words each), the group-wide memory
  // (12), the two localities' link fields (2 x 8), the trend's last step,
  // its sample count and samples (2 words each), the slot's period (5) and
  // its probe flag.
  const size_t globals = 2 + 6 * size_t(words[1]) + 12 + 16;
  const size_t trend_count = size_t(words[globals + 1]);
  auto chosen_out_of_range = words;
  chosen_out_of_range[globals + 2 + 2 * trend_count + 6] = 3;  // of 3 candidates
  refused(chosen_out_of_range, "chosen candidate 3 is out of range");
  EXPECT_EQ(target.adaptive->state_words().size(), before.size());
  EXPECT_EQ(target.adaptive->state_words(), before) << "a refused state changed the policy";
}

TEST_F(AdaptiveState, WordsOfAnotherPolicyAreNotTaken) {
  const uint64_t seed = cmpi::testing::test_seed();
  SimRun with_sign;
  steps(with_sign, 0, 8, seed);
  SimRun without_sign(false);
  EXPECT_FALSE(without_sign.adaptive->restore_state_words(with_sign.adaptive->state_words()));
  SimRun again;
  EXPECT_TRUE(again.adaptive->restore_state_words(with_sign.adaptive->state_words()));
}

TEST(AdaptiveFixedTiming, FixedTimingReplacesACallsWallTimeByItsBytesOverTheLink) {
  ::setenv("CMPI_TEST_FAULT", "auto_timing:80", 1);  // 10 MB/s
  SimRun fixed_timing;
  ::unsetenv("CMPI_TEST_FAULT");
  SimRun measured;
  for (SimRun* run : {&fixed_timing, &measured}) {
    const PolicySlice::Route* route =
        run->slice->route(Op::kAllreduce, Role::kGradient, kFloats * 4, Locality::kInter);
    ASSERT_NE(route, nullptr);
    ASSERT_EQ(route->candidate, kRaw);
    AutoCallSample sample;
    sample.raw_bytes = sample.wire_bytes = 4 << 20;
    sample.seconds = 5;  // what the clock said
    run->adaptive->record(*route, Op::kAllreduce, Role::kGradient, Locality::kInter, sample);
  }
  // The first inputs: per locality the link sample (bytes/s) and its bound.
  const size_t inter = 2 * size_t(Locality::kInter);
  EXPECT_DOUBLE_EQ(fixed_timing.adaptive->local_inputs()[inter], 10e6);
  EXPECT_DOUBLE_EQ(measured.adaptive->local_inputs()[inter], double(4 << 20) / 5);
}

}  // namespace
}  // namespace cmpi::comm
