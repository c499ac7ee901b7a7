// Preset auto's trials (comm/adaptive_policy.h), on one rank through the
// agreement's inputs: a candidate that its measured error does not vouch
// for (sign without error feedback, ~60 % error) is tried only after a
// window of steps on trusted routes, for one window, followed by another
// window on trusted routes; if the loss stalled under it, it is demoted for
// the rest of the run and the decision says which and why; if the loss kept
// falling it passes and is chosen again; without a loss to judge by, it is
// never tried. The link is simulated (10 MB/s), so that sign, with
// 1/32 of the bytes, is the cheapest route even after its step penalty;
// so are the codecs' speeds (below).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "comm/adaptive_policy.h"
#include "tests/comm/simulated_auto.h"
#include "tests/support/test_seed.h"

namespace cmpi::comm {
namespace {

using namespace simulated_auto;
constexpr size_t kFloats = 64 << 10;
constexpr int64_t kWindow = 5;
constexpr int kSign = kThird;

PolicyConfig trial_config() {
  return gradient_policy(compress::CodecSpec("sign", {{"bucket", "512"}}), kWindow);
}

struct Step {
  int carrier = kRaw;  // the candidate that carried the step
  std::vector<AutoDecision> decisions;
};

// `steps` steps of a simulated run: each step the route the slice gives
// "sends" 64 MiB (what the link would take for its wire bytes), and the
// loss falls by `fall(carrier)` plus seeded noise; the policy gets the
// previous step's loss (or none when `with_loss` is false).
template <typename Fall>
std::vector<Step> simulate(int64_t steps, Fall fall, bool with_loss, uint64_t seed) {
  const Policy policy(trial_config());
  PolicySlice slice(policy, GroupKind::kDp);
  AdaptivePolicy adaptive(slice, policy.config().auto_settings);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> gradient(0.f, 1e-3f);
  std::normal_distribution<double> loss_noise(0, 0.005);
  std::vector<float> data(kFloats);
  const double wire_fraction[] = {1.0, 0.25, 1.0 / 32};

  std::vector<Step> out;
  double loss = 6, previous_loss = kNoPreviousLoss;
  for (int64_t step = 0; step < steps; ++step) {
    adaptive.observe_loss(step - 1, with_loss ? previous_loss : kNoPreviousLoss);
    Step s;
    s.decisions = adaptive.decide_from(adaptive.local_inputs(), step);
    const PolicySlice::Route* route =
        slice.route(Op::kAllreduce, Role::kGradient, kFloats * 4, Locality::kInter);
    if (route == nullptr) throw std::logic_error("the test rule does not match");
    s.carrier = route->candidate;
    for (float& x : data) x = gradient(rng);
    adaptive.probe_if_due(*route, Op::kAllreduce, Role::kGradient, Locality::kInter, data.data(),
                          data.size());
    adaptive.record(*route, Op::kAllreduce, Role::kGradient, Locality::kInter,
                    simulated_call(wire_fraction[s.carrier]));
    previous_loss = loss + loss_noise(rng);
    loss -= fall(s.carrier);
    out.push_back(std::move(s));
  }
  return out;
}

std::string trace(const std::vector<Step>& run) {
  std::string out;
  for (size_t step = 0; step < run.size(); ++step) {
    out += "step " + std::to_string(step) + ": " + std::to_string(run[step].carrier);
    for (const AutoDecision& d : run[step].decisions) out += " [" + d.codec + ": " + d.reason + "]";
    out += "\n";
  }
  return out;
}

// The probes' codec times come from the bytes (CMPI_TEST_FAULT=auto_timing,
// a 10 MB/s link as simulated here, codecs at 1 ns per byte), not the clock:
// under a sanitizer, or on a loaded machine, zfp's measured speed could
// otherwise make raw the cheapest route and the trial never come.
class AdaptiveTrial : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("CMPI_TEST_FAULT", "auto_timing:80", 1); }
  void TearDown() override { ::unsetenv("CMPI_TEST_FAULT"); }
};

TEST_F(AdaptiveTrial, StalledRouteIsDemotedAndNamed) {
  const uint64_t seed = cmpi::testing::test_seed();
  // Under sign the loss stalls; under the others it falls 0.05 per step.
  const auto run = simulate(
      40, [](int c) { return c == kSign ? 0.0 : 0.05; }, true, seed);
  const std::string context = trace(run) + "seed " + std::to_string(seed);
  // No trial before a window of trusted steps with losses.
  for (int64_t step = 0; step < kWindow; ++step)
    EXPECT_NE(run[size_t(step)].carrier, kSign) << context;
  // Then sign (the cheapest) is tried, for one window ...
  int64_t tried = -1;
  for (size_t step = 0; step < run.size() && tried < 0; ++step)
    if (run[step].carrier == kSign) tried = int64_t(step);
  ASSERT_GE(tried, kWindow) << context;
  const AutoDecision& start = run[size_t(tried)].decisions.at(0);
  EXPECT_NE(start.reason.find("on trial for 5 steps"), std::string::npos) << context;
  EXPECT_GT(start.steps_multiplier, 1.2) << "sign's ~60 % error";
  for (int64_t step = tried; step < tried + kWindow; ++step)
    EXPECT_EQ(run[size_t(step)].carrier, kSign) << context;
  // ... then a window on trusted routes, after which the verdict comes:
  // demoted, and the decision names it and says why.
  const AutoDecision& over = run[size_t(tried + kWindow)].decisions.at(0);
  EXPECT_TRUE(over.changed);
  EXPECT_EQ(over.reason.rfind("trial window over; 5 steps on trusted routes follow", 0), 0u)
      << over.reason;
  const size_t judged = size_t(tried + 2 * kWindow + 1);
  ASSERT_LT(judged, run.size());
  for (size_t step = size_t(tried + kWindow); step < judged; ++step)
    EXPECT_TRUE(run[step].decisions.at(0).verdict.empty()) << context;
  const AutoDecision& verdict = run[judged].decisions.at(0);
  EXPECT_EQ(verdict.verdict.rfind("demoted sign:bucket=512: loss ", 0), 0u) << context;
  EXPECT_NE(verdict.verdict.find("under trusted routes"), std::string::npos) << verdict.verdict;
  EXPECT_NE(verdict.reason.find(verdict.verdict), std::string::npos) << verdict.reason;
  EXPECT_EQ(verdict.demoted, std::vector<std::string>{"sign:bucket=512"});
  // Never chosen again.
  for (size_t step = size_t(tried + kWindow); step < run.size(); ++step)
    EXPECT_NE(run[step].carrier, kSign) << "step " << step << "\n" << context;
  EXPECT_EQ(run.back().carrier, kZfp8Feedback) << context;
}

TEST_F(AdaptiveTrial, RouteThatKeepsTheLossFallingPassesAndStays) {
  const uint64_t seed = cmpi::testing::test_seed();
  const auto run = simulate(
      40, [](int c) { return c == kSign ? 0.04 : 0.05; }, true, seed);
  const std::string context = trace(run) + "seed " + std::to_string(seed);
  int64_t tried = -1;
  for (size_t step = 0; step < run.size() && tried < 0; ++step)
    if (run[step].carrier == kSign) tried = int64_t(step);
  ASSERT_GE(tried, kWindow) << context;
  const size_t judged = size_t(tried + 2 * kWindow + 1);
  ASSERT_LT(judged, run.size());
  const AutoDecision& verdict = run[judged].decisions.at(0);
  EXPECT_EQ(verdict.verdict.rfind("sign:bucket=512 passed its trial", 0), 0u) << context;
  EXPECT_TRUE(verdict.changed) << "chosen again";
  for (size_t step = judged; step < run.size(); ++step)
    EXPECT_EQ(run[step].carrier, kSign) << "step " << step << "\n" << context;
}

TEST_F(AdaptiveTrial, WithoutALossNoTrialStarts) {
  const uint64_t seed = cmpi::testing::test_seed();
  const auto run = simulate(
      30, [](int) { return 0.05; }, false, seed);
  const std::string context = trace(run) + "seed " + std::to_string(seed);
  for (const Step& s : run) EXPECT_NE(s.carrier, kSign) << context;
  EXPECT_EQ(run.back().carrier, kZfp8Feedback) << context;
  EXPECT_NE(run.back().decisions.at(0).reason.find("sign:bucket=512 waits for 5 steps"),
            std::string::npos)
      << context;
}

}  // namespace
}  // namespace cmpi::comm
