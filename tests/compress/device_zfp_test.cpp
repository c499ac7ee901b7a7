// The device zfp codec's CMPI_HD steps run on the CPU: the one-block coder
// (compress/cuda/zfp_block_coder.h) against the reference coder, and the
// whole device codec on a FakeDevice against ZfpCodec (impl native and
// libzfp): the same payload bytes, the same decoded floats, payloads that
// decode across the two, corrupted payloads refused by status.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "compress/codec_registry.h"
#include "compress/cuda/zfp_block_coder.h"
#include "compress/cuda/zfp_stream_bits.h"
#include "compress/zfp_fixed_rate.h"
#include "tests/compress/device_codec_test_util.h"
#include "tests/support/float_data.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress::cuda {
namespace {

using testing::bits_of;
using testing::device_decode;
using testing::device_encode;

// Blocks that stress the exponent and cast: denormals, huge values, zeros, -0.0.
std::vector<float> adversarial_values(std::mt19937_64& rng, size_t n) {
  std::vector<float> v(n);
  for (auto& x : v) {
    switch (rng() % 6) {
      case 0:
        x = cmpi::testing::from_bits(uint32_t(rng()) & 0x807fffffu);  // denormal or zero
        break;
      case 1:
        x = cmpi::testing::from_bits((uint32_t(rng()) & 0x80ffffffu) | 0x7e000000u);  // huge
        break;
      case 2:
        x = rng() % 2 ? 0.f : -0.f;
        break;
      default: {
        uint32_t bits = uint32_t(rng());
        if ((bits & 0x7f800000u) == 0x7f800000u) bits &= 0xbfffffffu;  // keep it finite
        x = cmpi::testing::from_bits(bits);
      }
    }
  }
  return v;
}

TEST(DeviceZfpBlockCoder, MatchesTheReferenceStreamAtEveryBlockSize) {
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed);
  const size_t n = 4 * 300;
  std::vector<float> in = adversarial_values(rng, n / 2);
  const std::vector<float> normal = cmpi::testing::gaussian(rng, n / 2);
  in.insert(in.end(), normal.begin(), normal.end());
  for (uint32_t maxbits = 9; maxbits <= 128; ++maxbits) {
    SCOPED_TRACE("seed " + std::to_string(seed) + ", maxbits " + std::to_string(maxbits));
    std::vector<uint8_t> expected(zfp_fixed_rate::stream_bytes(n, maxbits, 8));
    zfp_fixed_rate::reference::encode(in.data(), n, maxbits, 8, expected.data());
    std::vector<uint8_t> got(expected.size() + 8, 0);  // + room for whole-word ORs
    for (size_t b = 0; b < n / 4; ++b)
      zfp_or_block(got.data(), b * maxbits, zfp_encode_block(&in[4 * b], maxbits), maxbits);
    got.resize(expected.size());
    ASSERT_EQ(got, expected);

    std::vector<float> want(n), decoded(n);
    zfp_fixed_rate::reference::decode(expected.data(), n, maxbits, 8, want.data());
    for (size_t b = 0; b < n / 4; ++b)
      zfp_decode_block(zfp_load_block(expected.data(), b * maxbits, maxbits), maxbits,
                       &decoded[4 * b]);
    ASSERT_EQ(bits_of(decoded), bits_of(want));
  }
}

TEST(DeviceZfpBlockCoder, DecodesArbitraryBitsLikeTheReference) {
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed + 1);
  for (uint32_t maxbits : {9u, 17u, 32u, 64u, 100u, 128u}) {
    const size_t n = 4 * 64;
    std::vector<uint8_t> stream(zfp_fixed_rate::stream_bytes(n, maxbits, 8));
    for (auto& byte : stream) byte = uint8_t(rng());
    std::vector<float> want(n), got(n);
    zfp_fixed_rate::reference::decode(stream.data(), n, maxbits, 8, want.data());
    for (size_t b = 0; b < n / 4; ++b)
      zfp_decode_block(zfp_load_block(stream.data(), b * maxbits, maxbits), maxbits, &got[4 * b]);
    ASSERT_EQ(bits_of(got), bits_of(want)) << "seed " << seed << ", maxbits " << maxbits;
  }
}

TEST(DeviceZfpBlockCoder, LoadsTheSameBitsFromWordsAndFromBytes) {
  // zfp_load_block reads whole words where the block owns aligned words and
  // bytes elsewhere: the same stream placed at each byte alignment gives the
  // same blocks (the same bits as the first placement's).
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed + 3);
  for (uint32_t maxbits : {32u, 64u, 96u, 128u}) {
    std::vector<uint8_t> stream(20 * maxbits / 8);
    for (auto& byte : stream) byte = uint8_t(rng());
    std::vector<uint32_t> words(stream.size() / 4 + 2);  // 4-byte aligned storage
    uint8_t* base = reinterpret_cast<uint8_t*>(words.data());
    std::vector<uint64_t> first;
    for (size_t misalign = 0; misalign < 4; ++misalign) {
      std::memcpy(base + misalign, stream.data(), stream.size());
      for (size_t b = 0; b < 20; ++b) {
        const ZfpBlockBits bits = zfp_load_block(base + misalign, b * maxbits, maxbits);
        if (misalign == 0) {
          first.push_back(bits.word[0]), first.push_back(bits.word[1]);
        } else {
          ASSERT_EQ(bits.word[0], first[2 * b]) << "seed " << seed << ", maxbits " << maxbits;
          ASSERT_EQ(bits.word[1], first[2 * b + 1]) << "seed " << seed << ", maxbits " << maxbits;
        }
      }
    }
  }
}

TEST(DeviceZfpBlockCoder, WholeWordStoresEqualTheOrPath) {
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed + 2);
  const std::vector<float> in = cmpi::testing::gaussian(rng, 4 * 50);
  for (uint32_t maxbits : {32u, 64u, 96u, 128u}) {
    std::vector<uint8_t> ored(50 * maxbits / 8, 0), stored(50 * maxbits / 8, 0xff);
    for (size_t b = 0; b < 50; ++b) {
      const ZfpBlockBits bits = zfp_encode_block(&in[4 * b], maxbits);
      zfp_or_block(ored.data(), b * maxbits, bits, maxbits);
      zfp_store_block_words(stored.data(), b * maxbits, bits, maxbits);
    }
    ASSERT_EQ(stored, ored) << "seed " << seed << ", maxbits " << maxbits;
  }
}

struct ZfpCase {
  size_t n;
  const char* spec;
};

class DeviceZfpCodecTest : public ::testing::TestWithParam<ZfpCase> {};

TEST_P(DeviceZfpCodecTest, PayloadEqualsTheCpuCodecAndDecodesBothWays) {
  const ZfpCase c = GetParam();
  const uint64_t seed = cmpi::testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + ", n " + std::to_string(c.n) + ", " + c.spec);
  std::mt19937_64 rng(seed + c.n);
  std::vector<float> in = cmpi::testing::gaussian(rng, c.n);
  const std::vector<float> odd = adversarial_values(rng, c.n / 3);
  std::copy(odd.begin(), odd.end(), in.begin());
  if (c.n > 700) in[700] = std::numeric_limits<float>::quiet_NaN();  // one chunk goes raw
  if (c.n > 20) in[c.n - 3] = std::numeric_limits<float>::infinity();

  const CodecSpec spec = CodecSpec::parse(c.spec);
  auto cpu = make_codec(spec);
  FakeDevice device(seed);
  const StreamId stream = device.create_stream();
  auto codec = device.make_codec(spec);

  const std::vector<uint8_t> expected = cpu->encode(in.data(), in.size());
  const std::vector<uint8_t> got = device_encode(device, *codec, in, stream);
  ASSERT_EQ(got, expected);

  std::vector<float> want(c.n);
  cpu->decode(expected.data(), expected.size(), want.data(), c.n);
  uint32_t status = 99;
  const std::vector<float> decoded = device_decode(device, *codec, expected, c.n, status, stream);
  ASSERT_EQ(status, kDecodeOk);
  ASSERT_EQ(bits_of(decoded), bits_of(want));
}

INSTANTIATE_TEST_SUITE_P(Shapes, DeviceZfpCodecTest,
                         ::testing::Values(ZfpCase{1, "zfp:rate=16"}, ZfpCase{3, "zfp:rate=8"},
                                           ZfpCase{4096, "zfp:rate=16,chunk=1024"},
                                           ZfpCase{5000, "zfp:rate=8,chunk=1000"},
                                           ZfpCase{5001, "zfp:rate=2.5,chunk=777"},
                                           ZfpCase{4099, "zfp:rate=7.25,chunk=1026"},
                                           ZfpCase{3000, "zfp:rate=32,chunk=512"},
                                           ZfpCase{2048, "zfp:rate=16,chunk=6,impl=libzfp"},
                                           ZfpCase{70000, "zfp:rate=16"}));

TEST(DeviceZfpCodec, RefusesCorruptedPayloadsByStatus) {
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed);
  const std::vector<float> in = cmpi::testing::gaussian(rng, 3000);
  const CodecSpec spec = CodecSpec::parse("zfp:rate=12,chunk=1000");
  auto cpu = make_codec(spec);
  FakeDevice device(seed);
  const StreamId stream = device.create_stream();
  auto codec = device.make_codec(spec);
  const std::vector<uint8_t> good = cpu->encode(in.data(), in.size());
  uint32_t status = 99;

  std::vector<uint8_t> bad = good;
  bad[10] ^= 1;  // a header parameter
  device_decode(device, *codec, bad, in.size(), status, stream);
  EXPECT_EQ(status, kDecodeBadHeader);

  device_decode(device, *codec, good, in.size() - 1, status, stream);  // element count differs
  EXPECT_EQ(status, kDecodeBadHeader);

  bad = good;
  bad[48] ^= 4;  // chunk 0's size in the table
  device_decode(device, *codec, bad, in.size(), status, stream);
  EXPECT_EQ(status, kDecodeBadChunkTable);
  EXPECT_THROW(check_decode_status(status, *codec), DecodeError);

  bad = good;
  bad.pop_back();
  device_decode(device, *codec, bad, in.size(), status, stream);
  EXPECT_NE(status, kDecodeOk);
}

TEST(DeviceZfpCodec, RefusesModesTheDeviceDoesNotRun) {
  FakeDevice device(1);
  EXPECT_THROW(device.make_codec(CodecSpec::parse("zfp:mode=reversible")), CodecError);
  EXPECT_THROW(device.make_codec(CodecSpec::parse("zfp:rate=8,nonfinite=fail")), CodecError);
}

}  // namespace
}  // namespace cmpi::compress::cuda
