// The device mpc codec's CMPI_HD steps run on the CPU: the per-block stages
// (compress/cuda/mpc_block_steps.h) against the CPU's word_differencing,
// bit_transpose and zero elimination; the plan search against
// choose_mpc_plan; and the whole device codec on a FakeDevice against
// MpcCodec: the same payload bytes, payloads that decode both ways (chunks
// of any plan included), damaged payloads refused exactly when MpcCodec
// refuses them.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compress/bit_transpose.h"
#include "compress/codec_registry.h"
#include "compress/cuda/mpc_block_steps.h"
#include "compress/cuda/mpc_plan_search.h"
#include "compress/mpc_chunk.h"
#include "compress/mpc_chunk_plan.h"
#include "compress/word_differencing.h"
#include "compress/zero_byte_elimination.h"
#include "compress/zero_word_elimination.h"
#include "tests/compress/device_codec_test_util.h"
#include "tests/support/float_data.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress::cuda {
namespace {

using cmpi::testing::from_bits;
using testing::bits_of;
using testing::device_decode;
using testing::device_encode;

// Smooth, noise-like, interleaved (period 3), random bits, special values.
std::vector<std::vector<float>> test_data(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> random_bits(n), specials(n), interleaved(n);
  const uint32_t special[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x7F800000u,
                              0xFF800000u, 0x7FC12345u, 0xFFFFFFFFu, 0x7F800001u};
  const std::vector<float> smooth = cmpi::testing::smooth(n, seed);
  for (size_t i = 0; i < n; ++i) {
    random_bits[i] = from_bits(uint32_t(rng()));
    specials[i] = rng() % 3 ? from_bits(special[rng() % 8]) : random_bits[i];
    interleaved[i] = smooth[i / 3] * float(1 + i % 3) + float(100 * (i % 3));
  }
  return {smooth, cmpi::testing::gaussian(n, 1e-3f, seed), interleaved, random_bits, specials};
}

MpcChunkPlan random_plan(std::mt19937_64& rng) {
  MpcChunkPlan plan;
  plan.stride = unsigned(rng() % 33);
  plan.reference = rng() % 3 ? uint32_t(rng()) : 0u;
  plan.first_lagged = 1 + unsigned(rng() % 32);
  plan.first_word_plane = unsigned(rng() % 33);
  const unsigned byte_planes =
      unsigned(rng() % (std::min(kMaxBytePlanes, plan.first_word_plane) + 1));
  plan.first_byte_plane = plan.first_word_plane - byte_planes;
  return plan;
}

TEST(DeviceMpcBlockSteps, StagesEqualTheCpuStages) {
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed);
  const size_t words = 32 * 9 + 13;  // a short last block
  const size_t nblocks = (words + 31) / 32;
  for (const auto& data : test_data(words, seed)) {
    const auto* w = reinterpret_cast<const AliasedWord*>(data.data());
    for (unsigned stride = 0; stride <= 32; ++stride) {
      const MpcChunkPlan plan = random_plan(rng);
      SCOPED_TRACE("seed " + std::to_string(seed) + ", stride " + std::to_string(stride));
      std::vector<uint32_t> d(32 * nblocks, 0), t(32 * nblocks), lagged(32 * nblocks);
      difference_at_stride(w, 0, words, stride, plan.reference, d.data(), SimdLevel::kScalar);
      bit_transpose_32x32(d.data(), t.data(), nblocks, SimdLevel::kScalar);
      difference_within_blocks(t.data(), nblocks, plan.first_lagged, lagged.data(),
                               SimdLevel::kScalar);
      const uint32_t whole = mpc_low_planes(plan.first_byte_plane);
      const uint32_t per_byte = mpc_low_planes(plan.first_word_plane) & ~whole;
      std::vector<uint32_t> bitmaps(nblocks);
      std::vector<uint64_t> masks(nblocks);
      std::vector<uint8_t> packed(4 * (32 * nblocks + kZeroPackSlackWords) + kZeroByteSlack);
      pack_nonzero_words(lagged.data(), nblocks, whole, per_byte, bitmaps.data(), packed.data(),
                         SimdLevel::kScalar);
      if (plan.first_word_plane > plan.first_byte_plane)
        pack_nonzero_bytes(lagged.data(), nblocks, plan.first_byte_plane, plan.first_word_plane,
                           masks.data(), packed.data(), SimdLevel::kScalar);

      for (size_t b = 0; b < nblocks; ++b) {
        uint32_t block[32];
        mpc_difference_block(data.data(), words, b, stride, plan.reference, block);
        ASSERT_EQ(std::vector<uint32_t>(block, block + 32),
                  std::vector<uint32_t>(d.begin() + 32 * b, d.begin() + 32 * b + 32));
        mpc_transpose_block(block);
        ASSERT_EQ(std::vector<uint32_t>(block, block + 32),
                  std::vector<uint32_t>(t.begin() + 32 * b, t.begin() + 32 * b + 32));
        mpc_lag_block(block, plan.first_lagged);
        ASSERT_EQ(std::vector<uint32_t>(block, block + 32),
                  std::vector<uint32_t>(lagged.begin() + 32 * b, lagged.begin() + 32 * b + 32));
        ASSERT_EQ(mpc_word_bitmap(block, whole, per_byte), bitmaps[b]);
        if (plan.first_word_plane > plan.first_byte_plane)
          ASSERT_EQ(mpc_byte_mask(block, plan.first_byte_plane, plan.first_word_plane), masks[b]);
        mpc_unlag_block(block, plan.first_lagged);
        ASSERT_EQ(std::vector<uint32_t>(block, block + 32),
                  std::vector<uint32_t>(t.begin() + 32 * b, t.begin() + 32 * b + 32));
      }
    }
  }
}

TEST(DeviceMpcBlockSteps, BitStringsRoundTripAtEveryOffsetAndWidth) {
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed);
  for (unsigned width = 1; width <= 62; ++width) {
    std::vector<uint8_t> bits(64 * 8 + 8, 0);
    std::vector<uint64_t> fields(64);
    for (size_t i = 0; i < fields.size(); ++i) {
      fields[i] = rng() & ((uint64_t{1} << width) - 1);
      mpc_or_bits(bits.data(), i * width, fields[i], width);
    }
    for (size_t i = 0; i < fields.size(); ++i)
      ASSERT_EQ(mpc_read_bits(bits.data(), i * width, width), fields[i])
          << "seed " << seed << ", width " << width << ", field " << i;
  }
}

TEST(DeviceMpcPlanSearch, ChoosesTheCpuPlan) {
  const uint64_t seed = cmpi::testing::test_seed();
  for (size_t words : {3u, 31u, 33u, 100u, 2048u, 2049u, 5000u, 65536u}) {
    for (const auto& data : test_data(words, seed + words)) {
      for (unsigned dim : {0u, 1u, 2u, 3u, 7u, 32u}) {
        const MpcChunkPlan want = choose_mpc_plan(data.data(), words, dim, SimdLevel::kScalar);
        const MpcChunkPlan got = mpc_choose_plan(data.data(), words, dim);
        ASSERT_TRUE(got == want) << "seed " << seed << ", words " << words << ", dim " << dim
                                 << ": stride " << got.stride << " vs " << want.stride
                                 << ", planes " << got.first_byte_plane << "/"
                                 << got.first_word_plane << " vs " << want.first_byte_plane << "/"
                                 << want.first_word_plane;
      }
    }
  }
}

struct MpcCase {
  size_t n;
  const char* spec;
};

class DeviceMpcCodecTest : public ::testing::TestWithParam<MpcCase> {};

TEST_P(DeviceMpcCodecTest, PayloadEqualsTheCpuCodecAndDecodesBothWays) {
  const MpcCase c = GetParam();
  const uint64_t seed = cmpi::testing::test_seed();
  const CodecSpec spec = CodecSpec::parse(c.spec);
  auto cpu = make_codec(spec);
  FakeDevice device(seed);
  const StreamId stream = device.create_stream();
  auto codec = device.make_codec(spec);
  int kind = 0;
  for (const auto& in : test_data(c.n, seed + c.n)) {
    SCOPED_TRACE("seed " + std::to_string(seed) + ", n " + std::to_string(c.n) + ", " + c.spec +
                 ", data kind " + std::to_string(kind++));
    const std::vector<uint8_t> expected = cpu->encode(in.data(), in.size());
    const std::vector<uint8_t> got = device_encode(device, *codec, in, stream);
    ASSERT_EQ(got, expected);

    uint32_t status = 99;
    const std::vector<float> decoded = device_decode(device, *codec, got, c.n, status, stream);
    ASSERT_EQ(status, kDecodeOk);
    ASSERT_EQ(bits_of(decoded), bits_of(in));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DeviceMpcCodecTest,
                         ::testing::Values(MpcCase{1, "mpc"}, MpcCase{2, "mpc:dim=auto"},
                                           MpcCase{3, "mpc"}, MpcCase{33, "mpc:chunk=32"},
                                           MpcCase{1000, "mpc:dim=3,chunk=96"},
                                           MpcCase{5000, "mpc:dim=auto,chunk=1024"},
                                           MpcCase{4097, "mpc:chunk=2048,threads=2"},
                                           MpcCase{9000, "mpc:dim=32,chunk=4096"},
                                           MpcCase{70000, "mpc"}));

// One chunk of any plan in a payload of the codec's header: the device
// decodes what MpcCodec would, whatever plan the chunk carries.
TEST(DeviceMpcCodec, DecodesChunksOfAnyPlan) {
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed);
  const size_t n = 32 * 70 + 5;  // two groups, a short last block
  const CodecSpec spec = CodecSpec::parse("mpc:chunk=4096");
  auto cpu = make_codec(spec);
  FakeDevice device(seed);
  const StreamId stream = device.create_stream();
  auto codec = device.make_codec(spec);
  for (const auto& in : test_data(n, seed)) {
    for (int trial = 0; trial < 12; ++trial) {
      const MpcChunkPlan plan = random_plan(rng);
      std::vector<uint8_t> payload(kHeaderBytes + 4 + mpc_max_chunk_bytes(n));
      const size_t bytes =
          mpc_encode_chunk_with_plan(in.data(), n, plan, payload.data() + 52, SimdLevel::kScalar);
      payload.resize(52 + bytes);
      hd::store_le32(payload.data() + kHeaderBytes, uint32_t(bytes));
      finish_payload_header(header_template(*cpu, n), 4 + bytes, payload.data());
      std::vector<float> want(n);
      cpu->decode(payload.data(), payload.size(), want.data(), n);
      uint32_t status = 99;
      const std::vector<float> got = device_decode(device, *codec, payload, n, status, stream);
      ASSERT_EQ(status, kDecodeOk) << "seed " << seed << ", trial " << trial;
      ASSERT_EQ(bits_of(got), bits_of(want)) << "seed " << seed << ", trial " << trial;
    }
  }
}

// Every single-byte change of a payload: refused by status exactly when
// MpcCodec throws, and otherwise decoded to the same floats.
TEST(DeviceMpcCodec, RefusesDamagedPayloadsWhenTheCpuCodecDoes) {
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed);
  const size_t n = 300;
  const CodecSpec spec = CodecSpec::parse("mpc:dim=auto,chunk=128");
  auto cpu = make_codec(spec);
  FakeDevice device(seed);
  const StreamId stream = device.create_stream();
  auto codec = device.make_codec(spec);
  const std::vector<float> in = test_data(n, seed)[1];
  const std::vector<uint8_t> good = cpu->encode(in.data(), n);
  size_t refused = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<uint8_t> bad = good;
    bad[i] ^= uint8_t(1u << (rng() % 8));
    if (i < kHeaderChecksumOffset + 4)  // keep the header's checksum consistent
      finish_payload_header(*reinterpret_cast<const HeaderTemplate*>(bad.data()),
                            bad.size() - kHeaderBytes, bad.data());
    bool cpu_refuses = false;
    std::vector<float> want(n);
    try {
      cpu->decode(bad.data(), bad.size(), want.data(), n);
    } catch (const DecodeError&) {
      cpu_refuses = true;
    }
    uint32_t status = 99;
    const std::vector<float> got = device_decode(device, *codec, bad, n, status, stream);
    ASSERT_EQ(status != kDecodeOk, cpu_refuses) << "seed " << seed << ", byte " << i;
    if (!cpu_refuses) ASSERT_EQ(bits_of(got), bits_of(want)) << "seed " << seed << ", byte " << i;
    refused += cpu_refuses;
  }
  EXPECT_GT(refused, 20u);  // the damage does reach the checks
  std::vector<uint8_t> cut = good;
  cut.pop_back();
  uint32_t status = 99;
  device_decode(device, *codec, cut, n, status, stream);
  EXPECT_NE(status, kDecodeOk);
}

}  // namespace
}  // namespace cmpi::compress::cuda
