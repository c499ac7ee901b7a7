// block_sparse codec: bit-exact round trips (including -0.0, NaN and a short
// last block), that only non-zero blocks take value bytes, that a decoder
// with another block size refuses, and parameter errors.
#include "compress/block_sparse_codec.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "compress/codec_registry.h"
#include "tests/compress/codec_test_util.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

TEST(BlockSparse, RoundTripsBitExactAndSendsOnlyNonZeroBlocks) {
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed);
  for (size_t n : {0, 1, 5, 16, 1000, 4099}) {
    auto codec = make_codec(CodecSpec("block_sparse", {{"block", "16"}}));
    std::vector<float> x(n, 0.f);
    size_t nonzero_blocks = 0, value_floats = 0;
    for (size_t b = 0; b * 16 < n; ++b) {
      if (rng() % 4 != 0) continue;
      const size_t start = b * 16, len = std::min<size_t>(16, n - start);
      x[start + rng() % len] =
          rng() % 3 == 0 ? -0.f : float(int(rng() % 100) + 1) * (rng() % 2 ? 0.37f : -0.37f);
      if (rng() % 7 == 0) x[start] = std::numeric_limits<float>::quiet_NaN();
      ++nonzero_blocks;
      value_floats += len;
    }
    const auto payload = codec->encode(x.data(), n);
    const auto out = test_util::decode_all(*codec, payload, n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(test_util::float_bits(out[i]), test_util::float_bits(x[i]))
          << "seed " << seed << " n " << n << " i " << i;
    // Header, fixed body part, at most a bitmap of block numbers, the values.
    EXPECT_LE(payload.size(), kPayloadHeaderBytes + 17 + (n / 16 + 8) / 8 + 4 * value_floats)
        << "seed " << seed << " n " << n << " blocks " << nonzero_blocks;
    EXPECT_GE(payload.size(), kPayloadHeaderBytes + 17 + 4 * value_floats);
  }
}

TEST(BlockSparse, OtherBlockSizeIsRefusedAndParametersAreNamed) {
  auto enc = make_codec(CodecSpec("block_sparse", {{"block", "8"}}));
  auto dec = make_codec(CodecSpec("block_sparse", {{"block", "16"}}));
  std::vector<float> x(100, 1.f);
  EXPECT_THROW(test_util::decode_all(*dec, enc->encode(x.data(), x.size()), x.size()), DecodeError);
  EXPECT_THROW(make_codec(CodecSpec("block_sparse", {{"block", "0"}})), CodecError);
  EXPECT_THROW(make_codec(CodecSpec("block_sparse", {{"select", "sometimes"}})), CodecError);
  auto always = make_codec(CodecSpec("block_sparse", {{"select", "always"}}));
  EXPECT_EQ(static_cast<BlockSparseCodec&>(*always).select(), BlockSparseCodec::Select::kAlways);
  EXPECT_TRUE(always->lossless());
}

}  // namespace
}  // namespace cmpi::compress
