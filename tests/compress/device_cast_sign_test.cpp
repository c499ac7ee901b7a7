// The device fp16/bf16 codecs and the device sign quantizer with error
// feedback, their CMPI_HD steps run on a FakeDevice: payloads equal to the
// CPU codecs' (Fp16Codec, Bf16Codec, SignCodec, ErrorFeedback(SignCodec))
// byte for byte, residuals equal bit for bit over several steps, decoding
// equal to the CPU decoder's.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "compress/codec_registry.h"
#include "compress/error_feedback.h"
#include "tests/compress/device_codec_test_util.h"
#include "tests/support/float_data.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress::cuda {
namespace {

using testing::bits_of;
using testing::device_decode;
using testing::device_encode;

// Every float class: normals of all magnitudes, denormals, zeros, Inf, NaN.
std::vector<float> every_kind_of_float(std::mt19937_64& rng, size_t n) {
  std::vector<float> v(n);
  for (auto& x : v) x = cmpi::testing::from_bits(uint32_t(rng()));
  if (n > 3)
    v[0] = -0.f, v[1] = std::numeric_limits<float>::infinity(), v[2] = 65520.f, v[3] = 1e-8f;
  return v;
}

TEST(DeviceCastCodec, PayloadsEqualTheCpuCastsAndDecodeEqually) {
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed);
  for (const char* name : {"fp16", "bf16"}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{4097}}) {
      SCOPED_TRACE(std::string(name) + ", n " + std::to_string(n) + ", seed " +
                   std::to_string(seed));
      const std::vector<float> in = every_kind_of_float(rng, n);
      const CodecSpec spec(name);
      auto cpu = make_codec(spec);
      FakeDevice device(seed);
      const StreamId stream = device.create_stream();
      auto codec = device.make_codec(spec);
      const std::vector<uint8_t> expected = cpu->encode(in.data(), n);
      ASSERT_EQ(device_encode(device, *codec, in, stream), expected);
      std::vector<float> want(n);
      cpu->decode(expected.data(), expected.size(), want.data(), n);
      uint32_t status = 99;
      const std::vector<float> got = device_decode(device, *codec, expected, n, status, stream);
      ASSERT_EQ(status, kDecodeOk);
      ASSERT_EQ(bits_of(got), bits_of(want));
    }
  }
}

TEST(DeviceSignCodec, FeedbackPayloadsAndResidualsEqualTheCpuOnesStepByStep) {
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed);
  for (const char* text : {"sign:bucket=512", "sign:bucket=100", "sign:bucket=0"}) {
    const size_t n = 3001;
    SCOPED_TRACE(std::string(text) + ", seed " + std::to_string(seed));
    const CodecSpec spec = CodecSpec::parse(text);
    ErrorFeedback cpu(make_codec(spec));
    FakeDevice device(seed);
    const StreamId stream = device.create_stream();
    auto codec = device.make_codec(spec);
    ASSERT_TRUE(codec->has_feedback());
    DeviceBuffer input(device, 4 * n), residual(device, 4 * n),
        payload(device, codec->max_payload_bytes(n)), size(device, 8);
    PinnedBuffer host(device, codec->max_payload_bytes(n) + 4 * n + 8);
    for (int step = 0; step < 4; ++step) {
      std::vector<float> x = cmpi::testing::gaussian(rng, n);
      x[5] = -0.f;  // the first step must keep its sign (no x + 0)
      std::vector<uint8_t> expected(cpu.codec().max_encoded_bytes(n));
      expected.resize(cpu.encode(7, x.data(), n, expected.data(), expected.size()));

      device.copy_to_device(input.as(), x.data(), 4 * n, stream);
      codec->encode_with_feedback(input.as<float>(), n, residual.as<float>(), step == 0,
                                  payload.as(), size.as<uint64_t>(), stream);
      device.copy_to_host(host.as(), size.as(), 8, stream);
      device.copy_to_host(host.as() + 8, residual.as(), 4 * n, stream);
      device.copy_to_host(host.as() + 8 + 4 * n, payload.as(), expected.size(), stream);
      device.synchronize_stream(stream);
      ASSERT_EQ(*host.as<uint64_t>(), expected.size()) << "step " << step;
      const std::vector<uint8_t> got(host.as() + 8 + 4 * n,
                                     host.as() + 8 + 4 * n + expected.size());
      ASSERT_EQ(got, expected) << "step " << step;
      std::vector<float> r(n);
      std::memcpy(r.data(), host.as() + 8, 4 * n);
      ASSERT_EQ(bits_of(r), bits_of(cpu.residuals().at(7))) << "step " << step;

      std::vector<float> want(n);
      cpu.codec().decode(expected.data(), expected.size(), want.data(), n);
      uint32_t status = 99;
      ASSERT_EQ(bits_of(device_decode(device, *codec, expected, n, status, stream)), bits_of(want));
      ASSERT_EQ(status, kDecodeOk);
    }
  }
}

TEST(DeviceSignCodec, NonFiniteInputLeavesNoPayload) {
  FakeDevice device(3);
  const StreamId stream = device.create_stream();
  auto codec = device.make_codec(CodecSpec::parse("sign:bucket=64"));
  std::vector<float> x(200, 1.f);
  x[150] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(device_encode(device, *codec, x, stream).empty());
}

TEST(DeviceSignCodec, RefusesNegativeScalesAndPaddingBits) {
  FakeDevice device(4);
  const StreamId stream = device.create_stream();
  const CodecSpec spec = CodecSpec::parse("sign:bucket=64");
  auto codec = device.make_codec(spec);
  const std::vector<float> x = cmpi::testing::gaussian(100, 1.f, 5);
  const std::vector<uint8_t> good = make_codec(spec)->encode(x.data(), x.size());
  uint32_t status = 0;
  std::vector<uint8_t> bad = good;
  bad[48 + 3] |= 0x80;  // bucket 0's scale negative (header checksum unaffected)
  device_decode(device, *codec, bad, x.size(), status, stream);
  EXPECT_EQ(status, kDecodeBadChunk);
  bad = good;
  bad[48 + 4 + 3] = 0x7f, bad[48 + 4 + 2] = 0x80;  // bucket 1's scale +Inf (checked per bucket)
  bad[48 + 4 + 1] = bad[48 + 4] = 0;
  device_decode(device, *codec, bad, x.size(), status, stream);
  EXPECT_EQ(status, kDecodeBadChunk);
  bad = good;
  bad.back() |= 0x80;  // 100 values: bits 4..7 of the last byte are padding
  device_decode(device, *codec, bad, x.size(), status, stream);
  EXPECT_EQ(status, kDecodeBadChunk);
}

}  // namespace
}  // namespace cmpi::compress::cuda
