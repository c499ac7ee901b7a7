// Bit packing: every width round-trips at group-aligned and ragged lengths,
// the stream layout is the documented LSB-first one, and blocks packed
// separately concatenate into the same stream.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "compress/bit_packing.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

std::vector<uint32_t> random_values(size_t count, unsigned width, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> v(count);
  const uint64_t mask = width == 32 ? 0xffffffffull : (uint64_t{1} << width) - 1;
  for (auto& x : v) x = uint32_t(rng() & mask);
  if (count && width) v[0] = uint32_t(mask);  // the widest value always appears
  return v;
}

TEST(BitPacking, EveryWidthRoundTripsAtRaggedLengths) {
  for (unsigned width = 0; width <= kMaxPackWidth; ++width) {
    for (size_t count : {0, 1, 7, 8, 63, 64, 65, 127, 128, 1000, 4097}) {
      auto values = random_values(count, width, cmpi::testing::test_seed() + width * 7919 + count);
      std::vector<uint8_t> packed(packed_bytes(count, width) + 1, 0xAB);  // + guard byte
      pack_bits(values.data(), count, width, packed.data());
      EXPECT_EQ(packed.back(), 0xAB) << "width " << width << " count " << count;
      EXPECT_TRUE(packed_padding_is_zero(packed.data(), count, width));
      std::vector<uint32_t> back(count, 0xdeadbeef);
      unpack_bits(packed.data(), count, width, back.data());
      ASSERT_EQ(back, values) << "width " << width << " count " << count;
    }
  }
}

TEST(BitPacking, StreamIsLeastSignificantBitFirst) {
  // 3-bit values 1, 2, 3, 7, each written low bit first.
  const uint32_t values[4] = {1, 2, 3, 7};
  uint8_t packed[2] = {};
  pack_bits(values, 4, 3, packed);
  // stream bits 0..11: 1,0,0, 0,1,0, 1,1,0, 1,1,1
  EXPECT_EQ(packed[0], 0b11010001);
  EXPECT_EQ(packed[1], 0b00001110);
}

TEST(BitPacking, HighBitsAboveTheWidthAreIgnored) {
  const uint32_t values[3] = {0xfffffff5u, 0x12345678u, 0xffffffffu};
  uint8_t packed[2] = {};
  pack_bits(values, 3, 4, packed);
  uint32_t back[3];
  unpack_bits(packed, 3, 4, back);
  EXPECT_EQ(back[0], 0x5u);
  EXPECT_EQ(back[1], 0x8u);
  EXPECT_EQ(back[2], 0xfu);
}

TEST(BitPacking, BlocksOfMultiplesOfEightConcatenate) {
  const unsigned width = 9;
  auto values = random_values(1000, width, cmpi::testing::test_seed());
  std::vector<uint8_t> whole(packed_bytes(1000, width)), pieces(whole.size());
  pack_bits(values.data(), 1000, width, whole.data());
  size_t offset = 0;
  for (size_t start = 0; start < 1000; start += 136) {  // 136 = 17 * 8
    const size_t count = std::min<size_t>(136, 1000 - start);
    pack_bits(values.data() + start, count, width, pieces.data() + offset);
    offset += packed_bytes(count, width);
  }
  EXPECT_EQ(whole, pieces);
}

TEST(BitPacking, PaddingCheckSeesStrayBits) {
  const uint32_t values[3] = {1, 1, 1};
  uint8_t packed[1] = {};
  pack_bits(values, 3, 2, packed);  // 6 bits used
  EXPECT_TRUE(packed_padding_is_zero(packed, 3, 2));
  packed[0] |= 0x40;
  EXPECT_FALSE(packed_padding_is_zero(packed, 3, 2));
}

TEST(BitPacking, WidthAboveThirtyTwoIsRejected) {
  uint32_t v = 0;
  uint8_t out[8];
  EXPECT_THROW(pack_bits(&v, 1, 33, out), std::invalid_argument);
  EXPECT_THROW(unpack_bits(out, 1, 33, &v), std::invalid_argument);
}

TEST(BitPacking, BitWidthOf) {
  EXPECT_EQ(bit_width_of(0), 0u);
  EXPECT_EQ(bit_width_of(1), 1u);
  EXPECT_EQ(bit_width_of(32), 6u);
  EXPECT_EQ(bit_width_of(33), 6u);
  EXPECT_EQ(bit_width_of(254), 8u);
  EXPECT_EQ(bit_width_of(uint64_t{1} << 40), 41u);
}

}  // namespace
}  // namespace cmpi::compress
