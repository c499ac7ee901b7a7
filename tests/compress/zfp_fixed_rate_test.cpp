// Native ZFP fixed-rate coder (compress/zfp_fixed_rate.h) against libzfp as
// the oracle: the same stream bytes from encode and the same floats from
// decode, for the reference and for the fast coder at every SIMD level this
// CPU runs, over a sweep of rates 1..32 (fractional rates included), on
// seeded random data, the captured gradients and activations, adversarial
// blocks (denormals, values near FLT_MAX, tiny and huge mixed, zeros, -0.0),
// every partial last block and arbitrary byte strings fed to the decoder.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <zfp.h>

#include "compress/zfp_fixed_rate.h"
#include "io/float32_file.h"
#include "tests/support/float_data.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

namespace zfr = zfp_fixed_rate;
using testing::from_bits;

uint32_t word_bits() {
  return static_cast<uint32_t>(stream_alignment());
}

// libzfp's fixed-rate stream for in[0..n) at `rate`.
std::vector<uint8_t> libzfp_encode(const std::vector<float>& in, double rate) {
  zfp_stream* zfp = zfp_stream_open(nullptr);
  zfp_stream_set_rate(zfp, rate, zfp_type_float, 1, zfp_false);
  zfp_field* field = zfp_field_1d(const_cast<float*>(in.data()), zfp_type_float, in.size());
  std::vector<uint64_t> buffer(zfp_stream_maximum_size(zfp, field) / 8 + 4, 0);
  bitstream* bits = stream_open(buffer.data(), buffer.size() * 8);
  zfp_stream_set_bit_stream(zfp, bits);
  zfp_stream_rewind(zfp);
  const size_t bytes = zfp_compress(zfp, field);
  std::vector<uint8_t> out(bytes);
  std::memcpy(out.data(), buffer.data(), bytes);
  stream_close(bits);
  zfp_field_free(field);
  zfp_stream_close(zfp);
  return out;
}

std::vector<float> libzfp_decode(const std::vector<uint8_t>& stream, size_t n, double rate) {
  zfp_stream* zfp = zfp_stream_open(nullptr);
  zfp_stream_set_rate(zfp, rate, zfp_type_float, 1, zfp_false);
  std::vector<float> out(n);
  zfp_field* field = zfp_field_1d(out.data(), zfp_type_float, n);
  std::vector<uint64_t> buffer(stream.size() / 8 + 64, 0);  // libzfp may read ahead
  std::memcpy(buffer.data(), stream.data(), stream.size());
  bitstream* bits = stream_open(buffer.data(), buffer.size() * 8);
  zfp_stream_set_bit_stream(zfp, bits);
  zfp_stream_rewind(zfp);
  EXPECT_NE(zfp_decompress(zfp, field), 0u);
  stream_close(bits);
  zfp_field_free(field);
  zfp_stream_close(zfp);
  return out;
}

struct Impl {
  std::string name;
  std::function<void(const float*, size_t, uint32_t, uint32_t, uint8_t*)> encode;
  std::function<void(const uint8_t*, size_t, uint32_t, uint32_t, float*)> decode;
};

std::vector<Impl> impls() {
  std::vector<Impl> all{{"reference", zfr::reference::encode, zfr::reference::decode}};
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kSsse3, SimdLevel::kAvx2}) {
    if (!simd_level_supported(level)) continue;
    all.push_back({std::string("fast/") + simd_level_name(level),
                   [level](const float* in, size_t n, uint32_t b, uint32_t w, uint8_t* out) {
                     zfr::encode_at(level, in, n, b, w, out);
                   },
                   [level](const uint8_t* in, size_t n, uint32_t b, uint32_t w, float* out) {
                     zfr::decode_at(level, in, n, b, w, out);
                   }});
  }
  return all;
}

std::vector<uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<uint32_t> bits(v.size());
  std::memcpy(bits.data(), v.data(), 4 * v.size());
  return bits;
}

size_t first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

// Checks every implementation against libzfp on `in` at `rate`: encode gives
// libzfp's bytes, and decode of libzfp's stream gives libzfp's floats.
void expect_matches_libzfp(const std::vector<float>& in, double rate, const std::string& what) {
  const uint32_t maxbits = zfr::block_bits(rate);
  const auto expected = libzfp_encode(in, rate);
  ASSERT_EQ(expected.size(), zfr::stream_bytes(in.size(), maxbits, word_bits()))
      << what << " rate " << rate;
  const auto expected_floats = bits_of(libzfp_decode(expected, in.size(), rate));
  for (const Impl& impl : impls()) {
    std::vector<uint8_t> stream(expected.size() + 8, 0xcd);
    impl.encode(in.data(), in.size(), maxbits, word_bits(), stream.data());
    EXPECT_EQ(stream[expected.size()], 0xcd) << impl.name << " wrote past the stream";
    stream.resize(expected.size());
    const size_t at = first_difference(stream, expected);
    EXPECT_EQ(at, expected.size())
        << impl.name << " encode, " << what << ", rate " << rate << ", n " << in.size()
        << ": first different byte " << at << " (block " << at * 8 / maxbits << ")";
    std::vector<float> out(in.size() + 1, 7.f);
    impl.decode(expected.data(), in.size(), maxbits, word_bits(), out.data());
    EXPECT_EQ(out.back(), 7.f) << impl.name << " wrote past the output";
    out.pop_back();
    const auto got = bits_of(out);
    for (size_t i = 0; i < in.size(); ++i) {
      if (got[i] != expected_floats[i]) {
        ADD_FAILURE() << impl.name << " decode, " << what << ", rate " << rate << ", n "
                      << in.size() << ": value " << i << " is " << out[i] << ", libzfp "
                      << from_bits(expected_floats[i]);
        break;
      }
    }
  }
}

// Rates whose maxbits cover 9..128 and fractional rates between them.
std::vector<double> rate_sweep() {
  std::vector<double> rates{1, 2, 2.25, 2.5, 3, 3.75, 5.5, 7.5, 8, 9.25, 12.75, 16, 20.5, 31.75};
  for (int r = 4; r <= 32; r += 3) rates.push_back(r);
  rates.push_back(32);
  return rates;
}

std::vector<float> random_floats(size_t n, std::mt19937_64& rng) {
  std::vector<float> v = testing::gaussian(n, 1.f, rng());
  std::uniform_int_distribution<int> exponent(-40, 40);
  std::uniform_int_distribution<int> kind(0, 9);
  // Mix in scaled blocks, zero blocks and arbitrary finite bit patterns.
  for (size_t b = 0; b + 4 <= n; b += 4) {
    const int k = kind(rng);
    for (size_t i = b; i < b + 4; ++i) {
      if (k == 0) v[i] = 0.f;
      if (k == 1) v[i] = std::ldexp(v[i], exponent(rng));
      if (k == 2) {
        uint32_t bits = static_cast<uint32_t>(rng());
        if ((bits & 0x7f800000u) == 0x7f800000u) bits &= 0xbfffffffu;
        v[i] = from_bits(bits);
      }
    }
  }
  return v;
}

std::string seed_note() {
  return "CMPI_TEST_SEED=" + std::to_string(cmpi::testing::test_seed());
}

TEST(ZfpFixedRate, BlockBitsFollowLibzfpsRateRule) {
  for (double rate : {0.5, 1.0, 2.0, 2.25, 2.3, 2.375, 7.5, 7.6, 8.0, 16.0, 31.9, 32.0}) {
    zfp_stream* zfp = zfp_stream_open(nullptr);
    zfp_stream_set_rate(zfp, rate, zfp_type_float, 1, zfp_false);
    unsigned int minbits = 0, maxbits = 0;
    zfp_stream_params(zfp, &minbits, &maxbits, nullptr, nullptr);
    zfp_stream_close(zfp);
    EXPECT_EQ(zfr::block_bits(rate), maxbits) << "rate " << rate;
    EXPECT_EQ(minbits, maxbits);
  }
}

TEST(ZfpFixedRate, RandomDataMatchesLibzfpAtEveryRate) {
  std::mt19937_64 rng(cmpi::testing::test_seed() ^ 0x2f9);
  for (double rate : rate_sweep()) {
    for (size_t n : {size_t{4096}, size_t{4093}, size_t{1027}}) {
      expect_matches_libzfp(random_floats(n, rng), rate, "random, " + seed_note());
      if (HasFailure()) return;
    }
  }
}

TEST(ZfpFixedRate, SmallAndPartialArraysMatchLibzfp) {
  std::mt19937_64 rng(cmpi::testing::test_seed() ^ 0x51);
  for (double rate : rate_sweep()) {
    for (size_t n = 1; n <= 9; ++n) {
      expect_matches_libzfp(random_floats(n, rng), rate, "small, " + seed_note());
      expect_matches_libzfp(testing::gaussian(n, 3.f, rng()), rate, "gaussian, " + seed_note());
    }
    if (HasFailure()) return;
  }
}

TEST(ZfpFixedRate, AdversarialBlocksMatchLibzfp) {
  const float denorm_min = std::numeric_limits<float>::denorm_min();
  std::vector<float> v{
      0.f,
      0.f,
      0.f,
      0.f,  // zero block
      -0.f,
      -0.f,
      0.f,
      -0.f,  // signed zeros
      denorm_min,
      -denorm_min,
      0.f,
      3 * denorm_min,  // denormals
      FLT_MIN / 2,
      FLT_MIN / 3,
      -FLT_MIN / 7,
      1e-40f,  // larger denormals
      FLT_MIN,
      -FLT_MIN,
      FLT_MIN,
      0.f,  // smallest normals
      1e-30f,
      -2e-30f,
      0.f,
      5e-31f,  // emax < -97: scale overflows
      ldexpf(1.f, -97),
      1e-38f,
      -1e-45f,
      0.f,  // emax = -96 edge
      ldexpf(1.f, -98),
      ldexpf(1.f, -99),
      0.f,
      0.f,  // emax = -97 edge
      FLT_MAX,
      -FLT_MAX,
      FLT_MAX,
      -FLT_MAX,  // largest
      FLT_MAX,
      1.f,
      -1e-30f,
      denorm_min,  // mixed tiny and huge
      3e38f,
      -1e-3f,
      2.5e38f,
      1e20f,
      1.f,
      -1.f,
      1.f,
      -1.f,  // alternating
      -0.f,
      1e-45f,
      -1e-45f,
      0.f,
      65504.f,
      -65504.f,
      1e-7f,
      -1e-7f,
      1.f,
      1.f,
      1.f,
      1.f,  // constant
      -3.f,
      -3.f,
      -3.f,
      -3.f,
      ldexpf(1.f, 127),
      ldexpf(-1.f, 127),
      0.f,
      ldexpf(1.f, -126),
      0.9999999f,
      -0.9999999f,
      0.5f,
      -0.5f,
  };
  for (double rate : rate_sweep()) {
    expect_matches_libzfp(v, rate, "adversarial");
    for (size_t cut = 1; cut <= 3; ++cut)
      expect_matches_libzfp(std::vector<float>(v.begin(), v.end() - cut), rate, "adversarial");
    if (HasFailure()) return;
  }
  // Every single block of the list as its own array of 1..4 values.
  for (double rate : {2.25, 8.0, 16.0, 32.0})
    for (size_t b = 0; b < v.size(); b += 4)
      for (size_t len = 1; len <= 4; ++len)
        expect_matches_libzfp(std::vector<float>(v.begin() + b, v.begin() + b + len), rate,
                              "block " + std::to_string(b / 4));
}

TEST(ZfpFixedRate, RandomBitPatternBlocksMatchLibzfp) {
  std::mt19937_64 rng(cmpi::testing::test_seed() ^ 0xb17);
  for (double rate : {2.25, 4.0, 7.5, 8.0, 12.0, 16.0, 24.0, 32.0}) {
    std::vector<float> v(4000);
    for (auto& x : v) {
      uint32_t bits = static_cast<uint32_t>(rng());
      if ((bits & 0x7f800000u) == 0x7f800000u) bits ^= 0x40000000u;  // finite
      x = from_bits(bits);
    }
    expect_matches_libzfp(v, rate, "bit patterns, " + seed_note());
  }
}

std::vector<float> load_floats(const std::string& name) {
  return io::read_float32_file(std::string(CMPI_SOURCE_DIR) + "/bench/data/" + name);
}

TEST(ZfpFixedRate, CapturedTensorsMatchLibzfp) {
  for (const char* name : {"gradients.f32", "activations.f32"}) {
    const auto v = load_floats(name);
    ASSERT_GT(v.size(), 1000u) << name;
    for (double rate : rate_sweep()) expect_matches_libzfp(v, rate, name);
  }
}

// Any byte string is a stream: the decoder must give libzfp's floats for it.
TEST(ZfpFixedRate, ArbitraryStreamsDecodeAsLibzfpDecodes) {
  std::mt19937_64 rng(cmpi::testing::test_seed() ^ 0xdec);
  for (double rate : rate_sweep()) {
    const uint32_t maxbits = zfr::block_bits(rate);
    for (size_t n : {size_t{1}, size_t{6}, size_t{1001}}) {
      std::vector<uint8_t> stream(zfr::stream_bytes(n, maxbits, word_bits()));
      const int density = static_cast<int>(rng() % 4);
      for (auto& byte : stream) {
        byte = static_cast<uint8_t>(rng());
        if (density == 1) byte &= static_cast<uint8_t>(rng());  // sparse ones
        if (density == 2) byte |= static_cast<uint8_t>(rng());  // dense ones
      }
      const auto expected = bits_of(libzfp_decode(stream, n, rate));
      for (const Impl& impl : impls()) {
        std::vector<float> out(n);
        impl.decode(stream.data(), n, maxbits, word_bits(), out.data());
        EXPECT_EQ(bits_of(out), expected)
            << impl.name << " rate " << rate << " n " << n << ", " << seed_note();
      }
    }
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace cmpi::compress
