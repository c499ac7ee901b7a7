// Codec::random_state / restore_random_state: a stochastic codec given the
// state another instance had encodes exactly what that instance encodes next
// (what checkpoints rely on); deterministic codecs have no state and refuse
// one; a state of the wrong size is an error.
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <vector>

#include "compress/codec_registry.h"
#include "tests/support/float_data.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

TEST(CodecRandomState, RestoredGeneratorEncodesWhatTheOriginalEncodesNext) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const auto registry = CodecRegistry::with_builtin_codecs();
  for (const CodecSpec& spec : {CodecSpec("randomk", {{"ratio", "0.1"}}),
                                CodecSpec("qsgd", {{"levels", "4"}}), CodecSpec("natural")}) {
    auto original = registry.create(spec);
    original->encode(testing::gaussian(rng, 1000).data(), 1000);  // advance the generator
    const auto state = original->random_state();
    EXPECT_FALSE(state.empty()) << spec.to_string();
    auto restored = registry.create(spec);
    const auto data = testing::gaussian(rng, 1000);
    EXPECT_NE(original->random_state(), restored->random_state()) << spec.to_string();
    restored->restore_random_state(state);
    EXPECT_EQ(original->encode(data.data(), data.size()),
              restored->encode(data.data(), data.size()))
        << spec.to_string();
    auto wrong = state;
    wrong.push_back(7);
    EXPECT_THROW(restored->restore_random_state(wrong), std::invalid_argument) << spec.to_string();
  }
}

TEST(CodecRandomState, DeterministicCodecsHaveNone) {
  const auto registry = CodecRegistry::with_builtin_codecs();
  for (const CodecSpec& spec : {CodecSpec("topk", {{"ratio", "0.1"}}), CodecSpec("mpc")}) {
    auto codec = registry.create(spec);
    EXPECT_TRUE(codec->random_state().empty()) << spec.to_string();
    EXPECT_NO_THROW(codec->restore_random_state({}));
    EXPECT_THROW(codec->restore_random_state({1}), std::invalid_argument) << spec.to_string();
  }
}

}  // namespace
}  // namespace cmpi::compress
