// PolicySlice::codec_state / restore_codec_state: a slice rebuilt from the
// same policy and given a saved state encodes exactly as the original goes
// on encoding (error-feedback residuals and stochastic codec generators);
// keys of another policy are reported, not taken.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "comm/policy.h"
#include "tests/support/float_data.h"
#include "tests/support/test_seed.h"

namespace cmpi::comm {
namespace {

PolicyConfig feedback_policy() {
  PolicyConfig config;
  config.sparse_embedding = "off";  // routes().front() is the qsgd rule's
  PolicyRule qsgd;
  qsgd.match.groups = {GroupKind::kDp};
  qsgd.match.min_bytes = 0;
  qsgd.codec = compress::CodecSpec("qsgd", {{"levels", "8"}, {"bucket", "32"}});
  qsgd.error_feedback = true;
  PolicyRule randomk = qsgd;
  randomk.match.groups = {GroupKind::kTp};
  randomk.codec = compress::CodecSpec("randomk", {{"ratio", "0.2"}});
  randomk.error_feedback = false;
  config.rules = {qsgd, randomk};
  return config;
}

// Encodes `data` under buffer key `key` through the slice's first route
// (with error feedback when it has it).
std::vector<uint8_t> encode(PolicySlice& slice, uint64_t key, const std::vector<float>& data) {
  const PolicySlice::Route& route = slice.routes().front();
  std::vector<uint8_t> out(route.codec->max_encoded_bytes(data.size()));
  const size_t size =
      route.feedback ? route.feedback->encode(key, data.data(), data.size(), out.data(), out.size())
                     : route.codec->encode(data.data(), data.size(), out.data(), out.size());
  out.resize(size);
  return out;
}

TEST(CodecState, RestoredSliceContinuesBitExact) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const Policy policy(feedback_policy());
  for (GroupKind group : {GroupKind::kDp, GroupKind::kTp}) {
    PolicySlice original(policy, group);
    for (uint64_t key : {3u, 9u}) encode(original, key, testing::gaussian(rng, 200));
    const CodecState saved = original.codec_state();
    EXPECT_FALSE(saved.random_states.empty()) << "qsgd and randomk draw random numbers";
    if (group == GroupKind::kDp) EXPECT_EQ(saved.residuals.size(), 2u);

    PolicySlice restored(policy, group);
    EXPECT_TRUE(restored.restore_codec_state(saved).empty());
    for (int step = 0; step < 3; ++step)
      for (uint64_t key : {3u, 9u}) {
        const auto data = testing::gaussian(rng, 200);
        EXPECT_EQ(encode(original, key, data), encode(restored, key, data))
            << to_string(group) << " step " << step << " key " << key;
      }

    // A fresh slice draws other numbers: the comparison above could fail.
    PolicySlice fresh(policy, group);
    const auto data = testing::gaussian(rng, 200);
    EXPECT_NE(encode(original, 3, data), encode(fresh, 3, data)) << to_string(group);
  }
}

TEST(CodecState, KeysOfAnotherPolicyAreReportedNotTaken) {
  const Policy policy(feedback_policy());
  PolicySlice slice(policy, GroupKind::kDp);
  CodecState foreign;
  foreign.residuals["rule7:topk{ratio=0.1}/0000000000000003"] = {1.f, 2.f};
  foreign.random_states["rule5:randomk{ratio=0.5}"] = {42};
  const auto dropped = slice.restore_codec_state(foreign);
  EXPECT_EQ(dropped.size(), 2u);
  EXPECT_TRUE(slice.codec_state().residuals.empty());
}

TEST(CodecState, AGeneratorStateOfTheWrongSizeIsAnError) {
  const Policy policy(feedback_policy());
  PolicySlice slice(policy, GroupKind::kDp);
  CodecState state = slice.codec_state();
  ASSERT_EQ(state.random_states.size(), 1u);
  state.random_states.begin()->second.push_back(1);
  EXPECT_THROW(slice.restore_codec_state(state), std::invalid_argument);
}

}  // namespace
}  // namespace cmpi::comm
