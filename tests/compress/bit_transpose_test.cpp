// The bit transpose and the other MPC stages (differencing, zero-word
// elimination): each against a plain definition, each inverse against its
// forward stage, and every SIMD variant this CPU has against the scalar one.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "compress/bit_transpose.h"
#include "compress/word_differencing.h"
#include "compress/zero_word_elimination.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

std::vector<SimdLevel> supported_levels() {
  std::vector<SimdLevel> levels;
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kSsse3, SimdLevel::kAvx2})
    if (simd_level_supported(level)) levels.push_back(level);
  return levels;
}

// Random words where about a third are zero, so that zero elimination sees
// mixed bitmaps, and the rest span every bit.
std::vector<uint32_t> random_words(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> words(n);
  for (auto& w : words) w = rng() % 3 == 0 ? 0u : static_cast<uint32_t>(rng());
  return words;
}

uint32_t naive_transposed_word(const uint32_t* block, unsigned i) {
  uint32_t word = 0;
  for (unsigned k = 0; k < 32; ++k) word |= ((block[k] >> i) & 1u) << k;
  return word;
}

TEST(BitTranspose, MatchesTheDefinitionAtEveryLevel) {
  const size_t nblocks = 37;
  auto in = random_words(32 * nblocks, cmpi::testing::test_seed());
  for (SimdLevel level : supported_levels()) {
    std::vector<uint32_t> out(in.size());
    bit_transpose_32x32(in.data(), out.data(), nblocks, level);
    for (size_t b = 0; b < nblocks; ++b)
      for (unsigned i = 0; i < 32; ++i)
        ASSERT_EQ(out[32 * b + i], naive_transposed_word(&in[32 * b], i))
            << simd_level_name(level) << " block " << b << " word " << i;
  }
}

TEST(BitTranspose, SingleBitLandsAtTheMirroredPosition) {
  for (SimdLevel level : supported_levels()) {
    for (unsigned k = 0; k < 32; ++k) {
      for (unsigned i = 0; i < 32; i += 7) {
        uint32_t block[32] = {};
        block[k] = 1u << i;
        uint32_t out[32];
        bit_transpose_32x32(block, out, 1, level);
        for (unsigned j = 0; j < 32; ++j)
          ASSERT_EQ(out[j], j == i ? 1u << k : 0u) << simd_level_name(level);
      }
    }
  }
}

TEST(BitTranspose, IsItsOwnInverseAndWorksInPlace) {
  const size_t nblocks = 9;
  auto in = random_words(32 * nblocks, cmpi::testing::test_seed() + 1);
  for (SimdLevel level : supported_levels()) {
    auto words = in;
    bit_transpose_32x32(words.data(), words.data(), nblocks, level);
    EXPECT_NE(words, in);
    bit_transpose_32x32(words.data(), words.data(), nblocks, level);
    EXPECT_EQ(words, in) << simd_level_name(level);
  }
}

TEST(WordDifferencing, AtStrideMatchesDefinitionAndInverts) {
  auto w = random_words(1000, cmpi::testing::test_seed() + 2);
  for (SimdLevel level : supported_levels()) {
    for (unsigned stride : {1u, 2u, 3u, 7u, 8u, 9u, 32u}) {
      // Two spans, as the chunk encoder cuts them, must equal one whole span.
      std::vector<uint32_t> d(w.size());
      difference_at_stride(w.data(), 0, 300, stride, d.data(), level);
      difference_at_stride(w.data(), 300, w.size(), stride, d.data() + 300, level);
      for (size_t i = 0; i < w.size(); ++i)
        ASSERT_EQ(d[i], w[i] - (i >= stride ? w[i - stride] : 0u))
            << simd_level_name(level) << " stride " << stride << " i " << i;
      std::vector<uint32_t> back(w.size(), 0xDEADBEEFu);
      undo_difference_at_stride(d.data(), 0, 517, stride, back.data(), level);
      undo_difference_at_stride(d.data() + 517, 517, w.size(), stride, back.data(), level);
      ASSERT_EQ(back, w) << simd_level_name(level) << " stride " << stride;
    }
  }
}

TEST(WordDifferencing, WithinBlocksRestartsAtEachBlockAndInverts) {
  const size_t nblocks = 11;
  auto t = random_words(32 * nblocks, cmpi::testing::test_seed() + 3);
  for (SimdLevel level : supported_levels()) {
    std::vector<uint32_t> d(t.size());
    difference_within_blocks(t.data(), nblocks, d.data(), level);
    for (size_t i = 0; i < t.size(); ++i)
      ASSERT_EQ(d[i], i % 32 == 0 ? t[i] : t[i] - t[i - 1]) << simd_level_name(level);
    undo_difference_within_blocks(d.data(), nblocks, level);
    EXPECT_EQ(d, t) << simd_level_name(level);
  }
}

TEST(ZeroWordElimination, KeepsExactlyTheNonzeroWordsInOrder) {
  const size_t nblocks = 13;
  auto in = random_words(32 * nblocks, cmpi::testing::test_seed() + 4);
  for (size_t j = 0; j < 32; ++j) in[32 * 5 + j] = 0;            // an all-zero block
  for (size_t j = 0; j < 32; ++j) in[32 * 6 + j] = 0x80000000u;  // an all-nonzero block
  std::vector<uint8_t> expected_packed;
  for (uint32_t w : in)
    if (w != 0)
      for (int byte = 0; byte < 4; ++byte) expected_packed.push_back(uint8_t(w >> (8 * byte)));

  for (SimdLevel level : supported_levels()) {
    std::vector<uint32_t> bitmaps(nblocks);
    std::vector<uint8_t> packed(4 * (in.size() + kZeroPackSlackWords));
    size_t count = pack_nonzero_words(in.data(), nblocks, bitmaps.data(), packed.data(), level);
    ASSERT_EQ(4 * count, expected_packed.size()) << simd_level_name(level);
    packed.resize(4 * count);
    EXPECT_EQ(packed, expected_packed) << simd_level_name(level);
    EXPECT_EQ(bitmaps[5], 0u);
    EXPECT_EQ(bitmaps[6], 0xFFFFFFFFu);
    for (size_t b = 0; b < nblocks; ++b)
      for (unsigned j = 0; j < 32; ++j)
        ASSERT_EQ((bitmaps[b] >> j) & 1u, in[32 * b + j] != 0 ? 1u : 0u);

    packed.resize(4 * (count + kZeroPackSlackWords), 0xAB);  // slack content must not matter
    std::vector<uint32_t> out(in.size(), 0xDEADBEEFu);
    unpack_nonzero_words(bitmaps.data(), packed.data(), nblocks, out.data(), level);
    EXPECT_EQ(out, in) << simd_level_name(level);
  }
}

}  // namespace
}  // namespace cmpi::compress
