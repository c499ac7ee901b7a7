// RandomBlocks: the SSE2 path equals the scalar reference, seeds select
// distinct streams, and the output is uniform enough for stochastic rounding
// (mean and per-bit balance within 6 standard errors).
#include "compress/random_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

TEST(RandomBlocks, FastPathMatchesReference) {
  const uint64_t seed = cmpi::testing::test_seed();
  RandomBlocks fast(seed), reference(seed);
  for (size_t count : {1, 3, 4, 5, 1024, 77}) {
    for (unsigned bits : {1u, 23u, 24u, 32u}) {
      std::vector<uint32_t> a(count), b(count);
      fast.fill(a.data(), count, bits);
      reference.fill_reference(b.data(), count, bits);
      ASSERT_EQ(a, b) << "count " << count << " bits " << bits;
      for (uint32_t v : a) ASSERT_LT(uint64_t(v), uint64_t{1} << bits);
    }
  }
  std::vector<uint32_t> out(4);
  EXPECT_THROW(fast.fill(out.data(), 4, 0), std::invalid_argument);
  EXPECT_THROW(fast.fill(out.data(), 4, 33), std::invalid_argument);
}

TEST(RandomBlocks, SeedsGiveDifferentStreamsAndStateAdvances) {
  const uint64_t seed = cmpi::testing::test_seed();
  RandomBlocks a(seed), b(seed + 1);
  std::vector<uint32_t> x(64), y(64), z(64);
  a.fill(x.data(), 64, 32);
  b.fill(y.data(), 64, 32);
  a.fill(z.data(), 64, 32);
  EXPECT_NE(x, y);
  EXPECT_NE(x, z);
}

// For n uniform 24-bit values the mean has standard error 2^24 / sqrt(12 n)
// and each bit is set with probability 1/2 (standard error 1 / (2 sqrt(n))).
TEST(RandomBlocks, OutputIsUniform) {
  RandomBlocks random(cmpi::testing::test_seed());
  const size_t n = 1 << 20;
  std::vector<uint32_t> v(n);
  random.fill(v.data(), n, 24);
  double sum = 0;
  std::vector<double> ones(24, 0);
  for (uint32_t x : v) {
    sum += x;
    for (int b = 0; b < 24; ++b) ones[b] += (x >> b) & 1;
  }
  const double scale = double(1 << 24);
  EXPECT_NEAR(sum / n, scale / 2, 6 * scale / std::sqrt(12.0 * n));
  for (int b = 0; b < 24; ++b)
    EXPECT_NEAR(ones[b] / n, 0.5, 6 * 0.5 / std::sqrt(double(n))) << "bit " << b;
}

}  // namespace
}  // namespace cmpi::compress
