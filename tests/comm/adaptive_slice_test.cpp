// Preset auto's rules and routes: its candidates include every setting the
// fixed presets use for the same traffic, a slice routes through the chosen
// candidate (raw until something is chosen), and candidates with error
// feedback share their residuals.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "comm/policy.h"

namespace cmpi::comm {
namespace {

constexpr size_t kMiB = 1 << 20;

TEST(AdaptiveSlice, CandidatesCoverEveryFixedPresetSetting) {
  const std::vector<PolicyRule> adaptive = preset_rules("auto", "any");
  ASSERT_EQ(adaptive.size(), 2u);
  for (const char* preset : {"mzhybrid", "zhybrid"}) {
    for (const PolicyRule& fixed : preset_rules(preset, "any")) {
      // The one documented exception (docs/policy.md, "Adaptive"): zhybrid's
      // fp8 on 16-bit words, which auto's per-(op, role) slots, shared with
      // float32 traffic, do not offer. Only that rule may be left out.
      const bool sixteen_bit_only =
          !fixed.match.words.empty() &&
          std::find(fixed.match.words.begin(), fixed.match.words.end(),
                    compress::WordType::kFloat32) == fixed.match.words.end();
      if (sixteen_bit_only) {
        EXPECT_EQ(std::string(preset), "zhybrid") << fixed.origin;
        EXPECT_EQ(fixed.codec->name(), "fp8") << fixed.origin;
        continue;
      }
      bool covered = false;
      for (const PolicyRule& rule : adaptive) {
        if (rule.match.groups != fixed.match.groups || rule.match.roles != fixed.match.roles)
          continue;
        ASSERT_FALSE(rule.candidates.empty());
        EXPECT_FALSE(rule.candidates[0].codec.has_value()) << "raw comes first";
        for (const AutoCandidate& c : rule.candidates)
          covered |= c.codec && c.codec->to_string() == fixed.codec->to_string() &&
                     c.error_feedback == fixed.error_feedback;
      }
      EXPECT_TRUE(covered) << fixed.origin << ": " << fixed.codec->to_string()
                           << (fixed.error_feedback ? " + feedback" : "");
    }
  }
}

TEST(AdaptiveSlice, RoutesFollowTheChoice) {
  PolicyConfig config;
  config.preset = "auto";
  const Policy policy(config);
  PolicySlice slice(policy, GroupKind::kDp);
  ASSERT_EQ(slice.auto_rules().size(), 1u);
  const auto& rule = slice.auto_rules()[0];

  const auto* route = slice.route(Op::kAllreduce, Role::kGradient, kMiB, Locality::kInter);
  ASSERT_NE(route, nullptr);
  EXPECT_EQ(route->candidate, 0);
  EXPECT_EQ(route->codec, nullptr) << "raw before any decision";
  EXPECT_EQ(slice.route(Op::kAllreduce, Role::kGradient, 1024, Locality::kInter), nullptr)
      << "below min_bytes";
  EXPECT_EQ(slice.route(Op::kAllreduce, Role::kGradient, kMiB, Locality::kIntra), nullptr)
      << "preset_locality inter";
  EXPECT_EQ(slice.route(Op::kAllgather, Role::kWeight, kMiB, Locality::kInter), nullptr);

  for (size_t c = 0; c < rule.candidates.size(); ++c) {
    slice.choose(0, Locality::kInter, Op::kAllreduce, Role::kGradient, c);
    route = slice.route(Op::kAllreduce, Role::kGradient, kMiB, Locality::kInter);
    EXPECT_EQ(route, &rule.candidates[c]);
    // Another (op, role) keeps its own choice.
    EXPECT_EQ(slice.route(Op::kReduceScatter, Role::kGradient, kMiB, Locality::kInter)->candidate,
              0);
  }
  EXPECT_THROW(slice.choose(0, Locality::kInter, Op::kAllreduce, Role::kGradient, 99),
               std::out_of_range);
}

TEST(AdaptiveSlice, FeedbackCandidatesShareResidualsAndCheckpointThemOnce) {
  PolicyConfig config;
  config.preset = "auto";
  const Policy policy(config);
  PolicySlice slice(policy, GroupKind::kDp);
  const auto& rule = slice.auto_rules()[0];
  std::vector<const PolicySlice::Route*> with_feedback;
  for (const auto& route : rule.candidates)
    if (route.feedback != nullptr) with_feedback.push_back(&route);
  ASSERT_GE(with_feedback.size(), 2u);

  std::vector<float> data(4096);
  for (size_t i = 0; i < data.size(); ++i) data[i] = float(i % 97) * 1e-3f - 0.05f;
  std::vector<uint8_t> out(with_feedback[0]->codec->max_encoded_bytes(data.size()));
  with_feedback[0]->feedback->encode(5, data.data(), data.size(), out.data(), out.size());
  ASSERT_EQ(with_feedback[0]->feedback->residuals().size(), 1u);
  // The other codec sees (and would send) what the first left unsent.
  EXPECT_EQ(&with_feedback[1]->feedback->residuals(), &with_feedback[0]->feedback->residuals());

  const CodecState state = slice.codec_state();
  ASSERT_EQ(state.residuals.size(), 1u);
  EXPECT_EQ(state.residuals.begin()->first.rfind("rule0:auto/", 0), 0u)
      << state.residuals.begin()->first;
  PolicySlice restored(policy, GroupKind::kDp);
  EXPECT_TRUE(restored.restore_codec_state(state).empty());
  EXPECT_EQ(restored.auto_rules()[0].residuals->at(5), state.residuals.begin()->second);
}

}  // namespace
}  // namespace cmpi::comm
