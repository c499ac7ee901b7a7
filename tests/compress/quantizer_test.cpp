// qsgd, natural, sign: payload size equals the stated bits per value,
// decoded values lie where the method says (adjacent levels, neighbouring
// powers of two, +-bucket scale), qsgd and natural are unbiased, special
// values behave as documented, corrupted bodies are refused.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>

#include "compress/bit_packing.h"
#include "compress/codec_registry.h"
#include "tests/compress/codec_test_util.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

using test_util::decode_all;
using test_util::float_bits;
using test_util::float_from_bits;
using test_util::gaussian;

size_t buckets_of(size_t n, size_t bucket) {
  return n == 0 ? 0 : bucket == 0 ? 1 : (n + bucket - 1) / bucket;
}

double relative_rmse(const std::vector<float>& x, const std::vector<float>& y) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
    ref += double(x[i]) * x[i];
  }
  return std::sqrt(err / ref);
}

// ---------------------------------------------------------------- qsgd

TEST(Qsgd, PayloadIsCeilLog2Of2sPlus1BitsPerValuePlusOneScalePerBucket) {
  const struct {
    int levels;
    unsigned bits;
  } cases[] = {{1, 2}, {2, 3}, {3, 3}, {4, 4}, {16, 6}, {31, 6}, {32, 7}, {127, 8}, {128, 9}};
  for (const auto& c : cases) {
    for (size_t bucket : {0, 100, 512}) {
      for (size_t n : {0, 1, 9, 1000, 65537}) {
        auto codec = make_codec(CodecSpec(
            "qsgd", {{"levels", std::to_string(c.levels)}, {"bucket", std::to_string(bucket)}}));
        auto x = gaussian(n, cmpi::testing::test_seed() + n);
        const size_t expected =
            kPayloadHeaderBytes + 4 * buckets_of(n, bucket) + (n * c.bits + 7) / 8;
        EXPECT_EQ(codec->encode(x.data(), n).size(), expected)
            << "levels " << c.levels << " bucket " << bucket << " n " << n;
        EXPECT_EQ(codec->max_encoded_bytes(n), expected);
      }
    }
  }
}

// Stochastic rounding only ever picks one of the two levels around |x| s/N,
// so every decoded value is an integer multiple of N/s within one step of x
// and of the same sign.
TEST(Qsgd, DecodedValuesAreAdjacentLevels) {
  const size_t n = 10000;
  auto x = gaussian(n, cmpi::testing::test_seed());
  for (const char* norm : {"l2", "max"}) {
    for (int levels : {1, 4, 16, 127}) {
      const size_t bucket = 256;
      auto codec = make_codec(CodecSpec(
          "qsgd", {{"levels", std::to_string(levels)}, {"bucket", "256"}, {"norm", norm}}));
      auto out = decode_all(*codec, codec->encode(x.data(), n), n);
      for (size_t b = 0; b * bucket < n; ++b) {
        double sum2 = 0, max_abs = 0;
        for (size_t i = b * bucket; i < std::min(n, (b + 1) * bucket); ++i) {
          sum2 += double(x[i]) * x[i];
          max_abs = std::max(max_abs, std::fabs(double(x[i])));
        }
        const double scale = std::string(norm) == "l2" ? std::sqrt(sum2) : max_abs;
        const double step = scale / levels;
        for (size_t i = b * bucket; i < std::min(n, (b + 1) * bucket); ++i) {
          const double level = out[i] / step;
          ASSERT_NEAR(level, std::round(level), 1e-3) << norm << " s=" << levels << " i=" << i;
          ASSERT_LE(std::fabs(out[i] - x[i]), step * (1 + 1e-5)) << norm << " i=" << i;
          ASSERT_TRUE(out[i] == 0.f || std::signbit(out[i]) == std::signbit(x[i])) << i;
          ASSERT_LE(std::fabs(level), levels + 1e-3);
        }
      }
    }
  }
}

// Per value the decoded result is step * (floor or ceil), variance at most
// step^2 / 4; the mean of T encodings is within 6 standard errors of x
// except with probability ~2e-9 per value (T = 20000 draws of a bounded
// variable). Rounding to nearest instead would be off by up to step / 2,
// about 70 standard errors.
TEST(Qsgd, MeanOfManyEncodingsIsTheInput) {
  const size_t n = 64;
  const int trials = 20000;
  auto x = gaussian(n, cmpi::testing::test_seed());
  for (const char* norm : {"l2", "max"}) {
    auto codec =
        make_codec(CodecSpec("qsgd", {{"levels", "2"},
                                      {"bucket", "16"},
                                      {"norm", norm},
                                      {"seed", std::to_string(cmpi::testing::test_seed())}}));
    std::vector<double> sum(n, 0.0);
    std::vector<float> out(n);
    for (int t = 0; t < trials; ++t) {
      auto payload = codec->encode(x.data(), n);
      codec->decode(payload.data(), payload.size(), out.data(), n);
      for (size_t i = 0; i < n; ++i) sum[i] += out[i];
    }
    for (size_t i = 0; i < n; ++i) {
      double sum2 = 0, max_abs = 0;
      for (size_t j = i / 16 * 16; j < i / 16 * 16 + 16; ++j) {
        sum2 += double(x[j]) * x[j];
        max_abs = std::max(max_abs, std::fabs(double(x[j])));
      }
      const double step = (std::string(norm) == "l2" ? std::sqrt(sum2) : max_abs) / 2;
      const double standard_error = step / 2 / std::sqrt(double(trials));
      EXPECT_NEAR(sum[i] / trials, x[i], 6 * standard_error + 1e-5 * std::fabs(x[i]))
          << norm << " element " << i;
    }
  }
}

// The paper's bound E||Q(x) - x||^2 <= min(d/s^2, sqrt(d)/s) ||x||^2 per
// bucket of d values, and the 4x setting the documentation recommends.
TEST(Qsgd, ErrorWithinThePapersBoundAndFourTimesSettingUnderFivePercent) {
  const size_t n = 1 << 16;
  auto x = gaussian(n, cmpi::testing::test_seed());
  for (int levels : {4, 16, 127}) {
    for (size_t bucket : {64, 512}) {
      auto codec = make_codec(CodecSpec(
          "qsgd", {{"levels", std::to_string(levels)}, {"bucket", std::to_string(bucket)}}));
      auto out = decode_all(*codec, codec->encode(x.data(), n), n);
      const double d = double(bucket), s = levels;
      const double bound = std::sqrt(std::min(d / (s * s), std::sqrt(d) / s));
      EXPECT_LE(relative_rmse(x, out), bound) << "s=" << levels << " bucket=" << bucket;
    }
  }
  auto l2 = make_codec(CodecSpec("qsgd", {{"levels", "127"}, {"bucket", "128"}}));
  EXPECT_LE(relative_rmse(x, decode_all(*l2, l2->encode(x.data(), n), n)), 0.05);
  auto max = make_codec(CodecSpec("qsgd", {{"levels", "127"}, {"norm", "max"}}));
  EXPECT_LE(relative_rmse(x, decode_all(*max, max->encode(x.data(), n), n)), 0.05);
}

TEST(Qsgd, ZeroTinyAndHugeBuckets) {
  std::vector<float> x(48, 0.f);
  x[16] = 1e-40f;  // denormal bucket: s / N overflows float
  x[17] = -3e-41f;
  x[32] = 1e38f;  // the l2 norm of 1e38 and 2e38 is still a float
  x[33] = -2e38f;
  auto codec = make_codec(CodecSpec("qsgd", {{"bucket", "16"}}));
  auto out = decode_all(*codec, codec->encode(x.data(), x.size()), x.size());
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(out[i], 0.f);
  for (size_t i = 16; i < 48; ++i) ASSERT_TRUE(std::isfinite(out[i])) << i;
  EXPECT_LE(std::fabs(out[16] - x[16]), 1.1e-40 / 16 + 1e-45);
  EXPECT_GE(out[16], 0.f);
  EXPECT_LE(out[17], 0.f);
  std::vector<float> overflow = {3e38f, 3e38f};
  EXPECT_THROW(codec->encode(overflow.data(), 2), std::invalid_argument);
  auto max = make_codec(CodecSpec("qsgd", {{"norm", "max"}}));
  auto kept = decode_all(*max, max->encode(overflow.data(), 2), 2);
  EXPECT_EQ(kept[0], 3e38f);
}

TEST(Qsgd, NonFiniteInputIsRefusedNamingTheIndex) {
  auto x = gaussian(2000, cmpi::testing::test_seed());
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), INFINITY, -INFINITY}) {
    for (const char* norm : {"l2", "max"}) {
      x[1234] = bad;
      auto codec = make_codec(CodecSpec("qsgd", {{"norm", norm}}));
      try {
        codec->encode(x.data(), x.size());
        FAIL() << bad << " accepted";
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("input[1234]"), std::string::npos) << e.what();
      }
    }
  }
}

TEST(Qsgd, SeedsAndParameters) {
  auto x = gaussian(1000, cmpi::testing::test_seed());
  auto a = make_codec(CodecSpec("qsgd", {{"seed", "1"}}));
  auto b = make_codec(CodecSpec("qsgd", {{"seed", "1"}}));
  auto c = make_codec(CodecSpec("qsgd", {{"seed", "2"}}));
  auto first = a->encode(x.data(), x.size());
  EXPECT_EQ(first, b->encode(x.data(), x.size()));
  EXPECT_NE(first, c->encode(x.data(), x.size()));
  EXPECT_NE(first, a->encode(x.data(), x.size()));

  auto other_levels = make_codec(CodecSpec("qsgd", {{"levels", "8"}}));
  EXPECT_EQ(test_util::decode_outcome(*other_levels, first, x.size()), "params");
  auto other_bucket = make_codec(CodecSpec("qsgd", {{"bucket", "256"}}));
  EXPECT_EQ(test_util::decode_outcome(*other_bucket, first, x.size()), "params");

  for (auto spec : {CodecSpec("qsgd", {{"levels", "0"}}), CodecSpec("qsgd", {{"levels", "70000"}}),
                    CodecSpec("qsgd", {{"norm", "l1"}}), CodecSpec("qsgd", {{"bucket", "-1"}}),
                    CodecSpec("qsgd", {{"rate", "8"}})})
    EXPECT_THROW(make_codec(spec), CodecError) << spec.to_string();
}

// ------------------------------------------------------------- natural

TEST(Natural, PayloadIsNineBitsPerValue) {
  auto codec = make_codec(CodecSpec("natural"));
  for (size_t n : {0, 1, 7, 8, 9, 1000, (1 << 20) + 3}) {
    auto x = gaussian(n, cmpi::testing::test_seed() + n);
    const size_t expected = kPayloadHeaderBytes + (9 * n + 7) / 8;
    EXPECT_EQ(codec->encode(x.data(), n).size(), expected) << n;
    EXPECT_EQ(codec->max_encoded_bytes(n), expected);
  }
}

TEST(Natural, ValuesRoundToANeighbouringPowerOfTwo) {
  const size_t n = 100000;
  auto x = gaussian(n, cmpi::testing::test_seed());
  x[0] = 0.375f;  // exact powers of two and values between are both present
  x[1] = -8.f;
  auto codec = make_codec(CodecSpec("natural"));
  auto out = decode_all(*codec, codec->encode(x.data(), n), n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t in_bits = float_bits(x[i]), out_bits = float_bits(out[i]);
    const uint32_t exponent = (in_bits >> 23) & 0xff;
    ASSERT_EQ(out_bits & 0x7fffff, 0u) << "not a power of two: " << out[i];
    ASSERT_EQ(out_bits >> 31, in_bits >> 31) << i;
    const uint32_t out_exponent = (out_bits >> 23) & 0xff;
    if ((in_bits & 0x7fffff) == 0)
      ASSERT_EQ(out_exponent, exponent) << "a power of two must stay exact: " << x[i];
    else
      ASSERT_TRUE(out_exponent == exponent || out_exponent == exponent + 1) << x[i];
  }
  EXPECT_EQ(out[1], -8.f);
}

// Rounding |x| = 2^e (1 + m) up with probability m has variance
// 4^e m (1 - m) <= 4^e / 4, so the mean of T encodings is within
// 6 * 2^e / (2 sqrt(T)) of x except with probability ~2e-9 per value.
TEST(Natural, MeanOfManyEncodingsIsTheInput) {
  const size_t n = 64;
  const int trials = 20000;
  std::mt19937_64 rng(cmpi::testing::test_seed());
  std::vector<float> x = gaussian(n, cmpi::testing::test_seed());
  for (auto& v : x) v = std::ldexp(v, int(rng() % 41) - 20);  // magnitudes 2^-20 .. 2^20
  x[0] = std::ldexp(1.3f, -130);                              // denormal
  x[1] = -std::ldexp(1.7f, -140);                             // denormal
  auto codec =
      make_codec(CodecSpec("natural", {{"seed", std::to_string(cmpi::testing::test_seed())}}));
  std::vector<double> sum(n, 0.0);
  std::vector<float> out(n);
  for (int t = 0; t < trials; ++t) {
    auto payload = codec->encode(x.data(), n);
    codec->decode(payload.data(), payload.size(), out.data(), n);
    for (size_t i = 0; i < n; ++i) sum[i] += out[i];
  }
  for (size_t i = 0; i < n; ++i) {
    const double lower = std::fpclassify(x[i]) == FP_SUBNORMAL
                             ? 0.0
                             : std::exp2(std::floor(std::log2(std::fabs(double(x[i])))));
    const double upper = lower == 0.0 ? FLT_MIN : 2 * lower;
    const double standard_error = (upper - lower) / 2 / std::sqrt(double(trials));
    EXPECT_NEAR(sum[i] / trials, x[i], 6 * standard_error) << "element " << i << " = " << x[i];
  }
}

TEST(Natural, SpecialValuesAreAsDocumented) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float denormal = std::ldexp(1.f, -130);
  std::vector<float> x = {
      0.f,      -0.f,    INFINITY, -INFINITY, nan,       -nan, FLT_MAX, -FLT_MAX,
      0x1p127f, FLT_MIN, -FLT_MIN, denormal,  -denormal, 1.f,  -1.f,    std::ldexp(1.f, -149)};
  auto codec = make_codec(CodecSpec("natural"));
  for (int round = 0; round < 50; ++round) {
    auto out = decode_all(*codec, codec->encode(x.data(), x.size()), x.size());
    EXPECT_EQ(float_bits(out[0]), 0u);
    EXPECT_EQ(float_bits(out[1]), 0u) << "-0.0 decodes as +0.0";
    EXPECT_EQ(out[2], INFINITY);
    EXPECT_EQ(out[3], -INFINITY);
    EXPECT_TRUE(std::isnan(out[4]));
    EXPECT_TRUE(std::isnan(out[5]));
    EXPECT_EQ(out[6], 0x1p127f) << "FLT_MAX rounds down to 2^127";
    EXPECT_EQ(out[7], -0x1p127f);
    EXPECT_EQ(out[8], 0x1p127f);
    EXPECT_EQ(out[9], FLT_MIN);
    EXPECT_EQ(out[10], -FLT_MIN);
    EXPECT_TRUE(out[11] == 0.f || out[11] == FLT_MIN) << out[11];
    EXPECT_TRUE(float_bits(out[12]) == 0u || out[12] == -FLT_MIN) << out[12];
    EXPECT_EQ(out[13], 1.f);
    EXPECT_EQ(out[14], -1.f);
    EXPECT_TRUE(out[15] == 0.f || out[15] == FLT_MIN);
  }
}

TEST(Natural, EveryNineBitCodeDecodes) {
  auto codec = make_codec(CodecSpec("natural"));
  std::vector<float> ones(512, 1.f);
  auto payload = codec->encode(ones.data(), ones.size());
  std::vector<uint32_t> codes(512);
  for (uint32_t c = 0; c < 512; ++c) codes[c] = c;
  std::vector<uint8_t> body(packed_bytes(512, 9));
  pack_bits(codes.data(), 512, 9, body.data());
  auto out = decode_all(*codec, test_util::with_body(payload, body), 512);
  for (uint32_t c = 0; c < 512; ++c) {
    if (c == 0x100)
      EXPECT_TRUE(std::isnan(out[c]));
    else
      EXPECT_EQ(float_bits(out[c]), ((c >> 8) << 31) | ((c & 0xff) << 23)) << c;
  }
}

TEST(Natural, SeedsAndParameters) {
  auto x = gaussian(1000, cmpi::testing::test_seed());
  auto a = make_codec(CodecSpec("natural", {{"seed", "9"}}));
  auto b = make_codec(CodecSpec("natural", {{"seed", "9"}}));
  auto first = a->encode(x.data(), x.size());
  EXPECT_EQ(first, b->encode(x.data(), x.size()));
  EXPECT_NE(first, a->encode(x.data(), x.size()));
  EXPECT_THROW(make_codec(CodecSpec("natural", {{"levels", "3"}})), CodecError);
}

// ---------------------------------------------------------------- sign

TEST(Sign, PayloadIsOneBitPerValuePlusOneScalePerBucket) {
  for (size_t bucket : {0, 1, 64, 512}) {
    auto codec = make_codec(CodecSpec("sign", {{"bucket", std::to_string(bucket)}}));
    for (size_t n : {0, 1, 9, 1000, 65537}) {
      auto x = gaussian(n, cmpi::testing::test_seed() + n);
      const size_t expected = kPayloadHeaderBytes + 4 * buckets_of(n, bucket) + (n + 7) / 8;
      EXPECT_EQ(codec->encode(x.data(), n).size(), expected) << bucket << " " << n;
      EXPECT_EQ(codec->max_encoded_bytes(n), expected);
    }
  }
}

TEST(Sign, DecodesToSignTimesBucketMeanMagnitude) {
  const size_t n = 3001;
  auto x = gaussian(n, cmpi::testing::test_seed());
  x[7] = 0.f;
  x[8] = -0.f;
  for (size_t bucket : {0, 7, 512}) {
    auto codec = make_codec(CodecSpec("sign", {{"bucket", std::to_string(bucket)}}));
    auto out = decode_all(*codec, codec->encode(x.data(), n), n);
    const size_t span = bucket ? bucket : n;
    for (size_t start = 0; start < n; start += span) {
      const size_t end = std::min(n, start + span);
      double mean = 0;
      for (size_t i = start; i < end; ++i) mean += std::fabs(x[i]);
      mean /= double(end - start);
      for (size_t i = start; i < end; ++i) {
        ASSERT_NEAR(std::fabs(out[i]), mean, 1e-5 * mean) << i;
        ASSERT_EQ(std::signbit(out[i]), std::signbit(x[i])) << i;
      }
    }
  }
  std::vector<float> zeros(100, 0.f);
  zeros[99] = 1.f;
  auto codec = make_codec(CodecSpec("sign", {{"bucket", "50"}}));
  auto out = decode_all(*codec, codec->encode(zeros.data(), 100), 100);
  EXPECT_EQ(out[0], 0.f);
  EXPECT_EQ(out[99], 1.f / 50);
}

TEST(Sign, NonFiniteInputIsRefusedAndParametersChecked) {
  auto x = gaussian(100, cmpi::testing::test_seed());
  x[99] = -INFINITY;
  auto codec = make_codec(CodecSpec("sign"));
  try {
    codec->encode(x.data(), x.size());
    FAIL() << "infinity accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("input[99]"), std::string::npos) << e.what();
  }
  x[99] = 1.f;
  auto payload = codec->encode(x.data(), x.size());
  auto other = make_codec(CodecSpec("sign", {{"bucket", "64"}}));
  EXPECT_EQ(test_util::decode_outcome(*other, payload, x.size()), "params");
  EXPECT_THROW(make_codec(CodecSpec("sign", {{"bucket", "x"}})), CodecError);
  EXPECT_THROW(make_codec(CodecSpec("sign", {{"seed", "1"}})), CodecError);
}

// ------------------------------------------------------ corrupted bodies

TEST(QuantizerBodyFuzz, CorruptedBodiesAreRefused) {
  auto x = gaussian(3, cmpi::testing::test_seed());
  auto qsgd = make_codec(CodecSpec("qsgd", {{"levels", "16"}}));  // 6-bit codes, 0..32 valid
  auto payload = qsgd->encode(x.data(), 3);
  auto body = test_util::body_of(payload);  // 4 scale bytes + 3 code bytes
  ASSERT_EQ(body.size(), 7u);
  auto outcome = [&](const Codec& codec, const std::vector<uint8_t>& p,
                     const std::vector<uint8_t>& b) {
    return test_util::decode_outcome(codec, test_util::with_body(p, b), 3);
  };
  auto big_code = body;
  big_code[4] |= 0x3f;  // first code 63 > 2s
  EXPECT_EQ(outcome(*qsgd, payload, big_code), "body");
  auto nan_scale = body;
  std::memcpy(nan_scale.data(), "\x00\x00\xc0\x7f", 4);
  EXPECT_EQ(outcome(*qsgd, payload, nan_scale), "body");
  auto negative_scale = body;
  negative_scale[3] |= 0x80;
  EXPECT_EQ(outcome(*qsgd, payload, negative_scale), "body");
  auto padding = body;
  padding[6] |= 0x80;  // 18 bits used of 24
  EXPECT_EQ(outcome(*qsgd, payload, padding), "body");
  auto longer = body;
  longer.push_back(0);
  EXPECT_EQ(outcome(*qsgd, payload, longer), "body");

  auto natural = make_codec(CodecSpec("natural"));
  auto natural_payload = natural->encode(x.data(), 3);
  auto natural_body = test_util::body_of(natural_payload);  // 27 bits in 4 bytes
  natural_body[3] |= 0x80;
  EXPECT_EQ(outcome(*natural, natural_payload, natural_body), "body");
  natural_body.pop_back();
  EXPECT_EQ(outcome(*natural, natural_payload, natural_body), "body");

  auto sign = make_codec(CodecSpec("sign"));
  auto sign_payload = sign->encode(x.data(), 3);
  auto sign_body = test_util::body_of(sign_payload);
  sign_body[4] |= 0x10;
  EXPECT_EQ(outcome(*sign, sign_payload, sign_body), "body");
  sign_body = test_util::body_of(sign_payload);
  std::memcpy(sign_body.data(), "\x00\x00\x80\x7f", 4);  // +inf scale
  EXPECT_EQ(outcome(*sign, sign_payload, sign_body), "body");
}

TEST(QuantizerBodyFuzz, MutatedBodiesDecodeOrThrowDecodeError) {
  const uint64_t seed = cmpi::testing::test_seed();
  const size_t n = 2999;
  auto x = gaussian(n, seed);
  for (const char* spec :
       {"qsgd", "qsgd:levels=1,bucket=0", "qsgd:levels=127,bucket=100", "qsgd:levels=3,norm=max",
        "natural", "sign", "sign:bucket=0", "sign:bucket=1"}) {
    auto codec = make_codec(CodecSpec::parse(spec));
    test_util::mutate_bodies(*codec, codec->encode(x.data(), n), n, seed + 3, 1500);
  }
}

}  // namespace
}  // namespace cmpi::compress
