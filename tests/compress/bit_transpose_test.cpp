// The bit transpose and the other MPC stages (differencing, zero-word and
// zero-byte elimination): each against a plain definition, each inverse against its
// forward stage, and every SIMD variant this CPU has against the scalar one.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compress/bit_transpose.h"
#include "compress/word_differencing.h"
#include "compress/zero_byte_elimination.h"
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
    for (unsigned stride : {0u, 1u, 2u, 3u, 7u, 8u, 9u, 32u}) {
      for (uint32_t reference : {0u, 0x3D80A5F1u}) {
        const std::string what = std::string(simd_level_name(level)) + " stride " +
                                 std::to_string(stride) + " reference " + std::to_string(reference);
        // Two spans, as the chunk encoder cuts them, must equal one whole span.
        std::vector<uint32_t> d(w.size());
        difference_at_stride(w.data(), 0, 300, stride, reference, d.data(), level);
        difference_at_stride(w.data(), 300, w.size(), stride, reference, d.data() + 300, level);
        for (size_t i = 0; i < w.size(); ++i)
          ASSERT_EQ(d[i], stride == 0 ? ((w[i] << 1) | (w[i] >> 31)) ^ reference
                                      : (w[i] - (i >= stride ? w[i - stride] : 0u)) ^ reference)
              << what << " i " << i;
        std::vector<uint32_t> back(w.size(), 0xDEADBEEFu);
        undo_difference_at_stride(d.data(), 0, 517, stride, reference, back.data(), level);
        undo_difference_at_stride(d.data() + 517, 517, w.size(), stride, reference, back.data(),
                                  level);
        ASSERT_EQ(back, w) << what;
      }
    }
  }
}

TEST(WordDifferencing, WithinBlocksFromAnyPlaneRestartsAtEachBlockAndInverts) {
  const size_t nblocks = 11;
  auto t = random_words(32 * nblocks, cmpi::testing::test_seed() + 3);
  for (SimdLevel level : supported_levels()) {
    for (unsigned first_lagged : {1u, 2u, 7u, 8u, 9u, 16u, 25u, 31u, 32u}) {
      std::vector<uint32_t> d(t.size());
      difference_within_blocks(t.data(), nblocks, first_lagged, d.data(), level);
      for (size_t i = 0; i < t.size(); ++i)
        ASSERT_EQ(d[i], i % 32 >= first_lagged ? t[i] - t[i - 1] : t[i])
            << simd_level_name(level) << " first lagged " << first_lagged << " i " << i;
      undo_difference_within_blocks(d.data(), nblocks, first_lagged, level);
      EXPECT_EQ(d, t) << simd_level_name(level) << " first lagged " << first_lagged;
    }
  }
}

TEST(ZeroWordElimination, KeepsExactlyTheMarkedWordsInOrder) {
  const size_t nblocks = 13;
  auto in = random_words(32 * nblocks, cmpi::testing::test_seed() + 4);
  for (size_t j = 0; j < 32; ++j) in[32 * 5 + j] = 0;            // an all-zero block
  for (size_t j = 0; j < 32; ++j) in[32 * 6 + j] = 0x80000000u;  // an all-nonzero block
  // keep/skip: none; the low planes kept and the middle ones skipped, as the
  // mpc plans do; masks crossing every 4- and 8-word lane group.
  for (auto [keep, skip] : std::vector<std::pair<uint32_t, uint32_t>>{
           {0u, 0u}, {0x01FFFFFFu, 0x06000000u}, {0x0F0F0F0Fu, 0x30303030u}, {~0u, 0u}}) {
    std::vector<uint8_t> expected_packed;
    for (size_t i = 0; i < in.size(); ++i) {
      const uint32_t bit = 1u << (i % 32);
      if ((in[i] != 0 || (keep & bit)) && !(skip & bit))
        for (int byte = 0; byte < 4; ++byte)
          expected_packed.push_back(uint8_t(in[i] >> (8 * byte)));
    }
    for (SimdLevel level : supported_levels()) {
      const std::string what = std::string(simd_level_name(level)) + " keep " +
                               std::to_string(keep) + " skip " + std::to_string(skip);
      std::vector<uint32_t> bitmaps(nblocks);
      std::vector<uint8_t> packed(4 * (in.size() + kZeroPackSlackWords));
      size_t count =
          pack_nonzero_words(in.data(), nblocks, keep, skip, bitmaps.data(), packed.data(), level);
      ASSERT_EQ(4 * count, expected_packed.size()) << what;
      packed.resize(4 * count);
      EXPECT_EQ(packed, expected_packed) << what;
      EXPECT_EQ(bitmaps[5], keep & ~skip) << what;
      EXPECT_EQ(bitmaps[6], ~skip) << what;
      for (size_t b = 0; b < nblocks; ++b)
        for (unsigned j = 0; j < 32; ++j)
          ASSERT_EQ((bitmaps[b] >> j) & 1u,
                    (in[32 * b + j] != 0 || ((keep >> j) & 1u)) && !((skip >> j) & 1u) ? 1u : 0u)
              << what;

      packed.resize(4 * (count + kZeroPackSlackWords), 0xAB);  // slack content must not matter
      std::vector<uint32_t> out(in.size(), 0xDEADBEEFu);
      unpack_nonzero_words(bitmaps.data(), packed.data(), nblocks, out.data(), level);
      for (size_t i = 0; i < in.size(); ++i)
        ASSERT_EQ(out[i], (bitmaps[i / 32] >> (i % 32)) & 1u ? in[i] : 0u) << what << " i " << i;
    }
  }
}

TEST(ZeroByteElimination, KeepsExactlyTheNonzeroBytesOfItsPlanesInOrder) {
  const size_t nblocks = 9;
  std::mt19937_64 rng(cmpi::testing::test_seed() + 5);
  // Words whose bytes are each zero with probability 1/2.
  std::vector<uint32_t> in(32 * nblocks);
  for (auto& w : in)
    for (int k = 0; k < 4; ++k)
      if (rng() % 2) w |= uint32_t(1 + rng() % 255) << (8 * k);
  for (auto [first, last] : std::vector<std::pair<unsigned, unsigned>>{
           {0u, 1u}, {25u, 27u}, {24u, 27u}, {3u, 3u + kMaxZeroByteWords}, {22u, 32u}}) {
    std::vector<uint8_t> expected;
    for (size_t b = 0; b < nblocks; ++b)
      for (unsigned j = first; j < last; ++j)
        for (int k = 0; k < 4; ++k)
          if (uint8_t byte = uint8_t(in[32 * b + j] >> (8 * k))) expected.push_back(byte);
    for (SimdLevel level : supported_levels()) {
      const std::string what = "planes " + std::to_string(first) + ".." + std::to_string(last) +
                               " " + simd_level_name(level);
      std::vector<uint64_t> masks(nblocks);
      std::vector<uint8_t> packed(expected.size() + kZeroByteSlack);
      const size_t count =
          pack_nonzero_bytes(in.data(), nblocks, first, last, masks.data(), packed.data(), level);
      ASSERT_EQ(count, expected.size()) << what;
      EXPECT_EQ(std::vector<uint8_t>(packed.begin(), packed.begin() + count), expected) << what;
      for (size_t b = 0; b < nblocks; ++b)
        for (unsigned j = first; j < last; ++j)
          for (unsigned k = 0; k < 4; ++k)
            ASSERT_EQ((masks[b] >> (4 * (j - first) + k)) & 1u,
                      uint8_t(in[32 * b + j] >> (8 * k)) != 0 ? 1u : 0u)
                << what;

      std::fill(packed.begin() + count, packed.end(), 0xAB);  // slack content must not matter
      std::vector<uint32_t> out(in.size(), 0xDEADBEEFu);
      unpack_nonzero_bytes(masks.data(), packed.data(), nblocks, first, last, out.data(), level);
      for (size_t i = 0; i < in.size(); ++i) {
        const bool in_planes = i % 32 >= first && i % 32 < last;
        ASSERT_EQ(out[i], in_planes ? in[i] : 0xDEADBEEFu) << what << " i " << i;
      }
    }
  }
}

}  // namespace
}  // namespace cmpi::compress
