// 16-bit words as codec elements (comm/word_staging.h, compress/word_type.h):
// widening is exact and rounding it back returns every bf16 and fp16 pattern
// (NaNs stay NaNs); pairing is bit for bit, odd blocks included; and mpc on
// paired words (what a Communicator's mpc route sends for 16-bit buffers)
// round-trips every word exactly, with the wire counted against 2 bytes per
// element.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "comm/word_staging.h"
#include "compress/codec_registry.h"
#include "tests/support/test_seed.h"

namespace cmpi::comm {
namespace {

using compress::WordType;

bool is_nan_word(uint16_t word, WordType type) {
  return std::isnan(compress::widen_word(word, type));
}

TEST(WordType, WideningAndRoundingBackReturnEveryPattern) {
  for (WordType type : {WordType::kBFloat16, WordType::kFloat16}) {
    for (uint32_t w = 0; w <= 0xffffu; ++w) {
      const uint16_t word = uint16_t(w);
      const uint16_t back = compress::round_to_word(compress::widen_word(word, type), type);
      if (is_nan_word(word, type))
        EXPECT_TRUE(is_nan_word(back, type)) << compress::word_type_name(type) << " " << w;
      else
        ASSERT_EQ(back, word) << compress::word_type_name(type) << " pattern " << w;
    }
  }
}

TEST(WordType, SizesAndNames) {
  EXPECT_EQ(compress::word_bytes(WordType::kFloat32), 4u);
  EXPECT_EQ(compress::word_bytes(WordType::kBFloat16), 2u);
  EXPECT_EQ(compress::word_bytes(WordType::kFloat16), 2u);
  EXPECT_STREQ(compress::word_type_name(WordType::kBFloat16), "bf16");
  EXPECT_FALSE(compress::is_16_bit(WordType::kFloat32));
}

std::vector<uint16_t> random_words(size_t n, uint64_t salt) {
  std::mt19937_64 gen(cmpi::testing::test_seed() ^ salt);
  std::vector<uint16_t> words(n);
  for (auto& w : words) w = uint16_t(gen());
  return words;
}

TEST(WordStaging, PairedPiecesRoundTripBitForBitOddBlocksIncluded) {
  for (size_t words : {size_t(0), size_t(1), size_t(7), size_t(64), size_t(1001)}) {
    const auto block = random_words(words, words);
    WordStaging staging{WordType::kBFloat16, /*paired=*/true};
    const size_t elements = staging.elements(words);
    ASSERT_EQ(elements, (words + 1) / 2);
    std::vector<uint16_t> back(words, 0xdead);
    std::vector<float> scratch(16);
    for (size_t first = 0; first < elements; first += 16) {
      const size_t count = std::min<size_t>(16, elements - first);
      staging.stage(block.data(), words, first, count, scratch.data());
      staging.unstage(scratch.data(), first, count, back.data(), words);
    }
    EXPECT_EQ(back, block) << words << " words, seed " << cmpi::testing::test_seed();
  }
}

TEST(WordStaging, WidenedPiecesAreExactValues) {
  const std::vector<uint16_t> block = {0x3f80, 0xbf80, 0x0000, 0x8000, 0x7f80, 0x0001};
  WordStaging staging{WordType::kBFloat16, /*paired=*/false};
  std::vector<float> scratch(block.size());
  staging.stage(block.data(), block.size(), 0, block.size(), scratch.data());
  EXPECT_EQ(scratch[0], 1.0f);
  EXPECT_EQ(scratch[1], -1.0f);
  EXPECT_TRUE(std::signbit(scratch[3]));
  EXPECT_TRUE(std::isinf(scratch[4]));
  std::vector<uint16_t> back(block.size());
  staging.unstage(scratch.data(), 0, block.size(), back.data(), block.size());
  EXPECT_EQ(back, block);
}

// What a paired mpc route puts on the wire for 16-bit activations: the words
// come back bit for bit (every pattern, -0.0 and NaN payloads included).
TEST(WordStaging, MpcOnPairedWordsIsLossless) {
  auto codec = compress::CodecRegistry::with_builtin_codecs().create(compress::CodecSpec("mpc"));
  for (WordType type : {WordType::kBFloat16, WordType::kFloat16}) {
    // Every pattern once, then a smooth signal as activations look.
    std::vector<uint16_t> words(0x10000 + 4097);
    for (uint32_t w = 0; w <= 0xffffu; ++w) words[w] = uint16_t(w);
    for (size_t i = 0x10000; i < words.size(); ++i)
      words[i] = compress::round_to_word(float(std::sin(0.01 * double(i))), type);
    WordStaging staging{type, /*paired=*/true};
    const size_t elements = staging.elements(words.size());
    std::vector<float> scratch(elements), decoded(elements);
    staging.stage(words.data(), words.size(), 0, elements, scratch.data());
    std::vector<uint8_t> payload(codec->max_encoded_bytes(elements));
    const size_t bytes = codec->encode(scratch.data(), elements, payload.data(), payload.size());
    codec->decode(payload.data(), bytes, decoded.data(), elements);
    std::vector<uint16_t> back(words.size());
    staging.unstage(decoded.data(), 0, elements, back.data(), words.size());
    ASSERT_EQ(back, words) << compress::word_type_name(type);
  }
}

}  // namespace
}  // namespace cmpi::comm
