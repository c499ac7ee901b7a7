// fp16 / bf16 casts: decoding checked against the formats' definitions for
// every 16-bit pattern; encoding checked against an independent
// round-to-nearest-even reference (double arithmetic and nearbyint) on every
// float exponent and sign with the rounding-relevant low bits at and around
// the ties, on all fp16 subnormal ties, and on random floats; the stated
// overflow, NaN, infinity, -0.0 and denormal behaviour; the codecs' payloads
// and error bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "compress/cast_codecs.h"
#include "compress/codec_registry.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

float float_of(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

// Round-to-nearest-even to a format with `mantissa_bits` explicit bits,
// smallest normal 2^min_exponent, computed in double with nearbyint (the
// default rounding mode is to nearest, ties to even). Returns the rounded
// magnitude, or +inf past `overflow_at`.
double reference_round(double magnitude, int mantissa_bits, int min_exponent, double overflow_at) {
  if (magnitude >= overflow_at) return std::numeric_limits<double>::infinity();
  int e = 0;
  std::frexp(magnitude, &e);  // 2^(e-1) <= magnitude < 2^e
  const double quantum = magnitude < std::ldexp(1.0, min_exponent)
                             ? std::ldexp(1.0, min_exponent - mantissa_bits)
                             : std::ldexp(1.0, e - 1 - mantissa_bits);
  return std::nearbyint(magnitude / quantum) * quantum;
}

uint16_t reference_fp16(float x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double r = reference_round(std::fabs(double(x)), 10, -14, 65520.0);
  if (std::isinf(r)) return sign | 0x7c00;
  if (r < 0x1p-14) return uint16_t(sign | uint16_t(r / 0x1p-24));
  int e = 0;
  const double f = std::frexp(r, &e);  // r = f * 2^e, f in [0.5, 1)
  return uint16_t(sign | uint16_t((e - 1 + 15) << 10) | uint16_t((2 * f - 1) * 1024));
}

uint16_t reference_bf16(float x) {
  const double r = reference_round(std::fabs(double(x)), 7, -126, 0x1.ffp127);
  const float rounded = float(std::signbit(x) ? -r : r);  // exact: r is a bf16 value or inf
  return uint16_t(bits_of(rounded) >> 16);
}

// Floats whose rounding is hardest: every sign/exponent/high-mantissa
// pattern (bits above `dropped`) with the dropped bits at 0, 1, just below,
// at and just above the tie, all ones, and one random value.
template <typename Check>
void for_rounding_critical_floats(int dropped, uint64_t seed, Check check) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  const uint32_t tie = 1u << (dropped - 1), all = (1u << dropped) - 1;
  const uint32_t lows[] = {0, 1, tie - 1, tie, tie + 1, all};
  for (uint32_t high = 0; high < (1u << (32 - dropped)); ++high) {
    const uint32_t base = high << dropped;
    if ((base & 0x7f800000u) == 0x7f800000u) continue;  // Inf/NaN tested apart
    for (uint32_t low : lows) check(float_of(base | low));
    check(float_of(base | (rng() & all)));
  }
}

TEST(Fp16Cast, DecodesEveryPatternByDefinition) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const int e = (h >> 10) & 31, m = h & 1023;
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    const float got = float_from_fp16(uint16_t(h));
    if (e == 31 && m != 0) {
      ASSERT_TRUE(std::isnan(got)) << h;
      ASSERT_EQ(bits_of(got) & 0x807fe000u, ((h & 0x8000u) << 16) | (uint32_t(m) << 13)) << h;
      continue;
    }
    const double expected = e == 31  ? sign * std::numeric_limits<double>::infinity()
                            : e == 0 ? sign * std::ldexp(m, -24)
                                     : sign * std::ldexp(1024 + m, e - 25);
    ASSERT_EQ(bits_of(got), bits_of(float(expected))) << "fp16 pattern " << h;
  }
}

TEST(Fp16Cast, EncodesToNearestEven) {
  const uint64_t seed = cmpi::testing::test_seed();
  for_rounding_critical_floats(13, seed, [](float x) {
    ASSERT_EQ(fp16_from_float(x), reference_fp16(x)) << "float bits " << std::hex << bits_of(x);
  });
  // fp16 subnormal range: every multiple of 2^-25 (ties at the odd ones) and
  // its float neighbours.
  for (int k = 0; k < (1 << 13); ++k) {
    const float x = std::ldexp(float(k), -25);
    for (float y : {x, std::nextafter(x, 0.f), std::nextafter(x, 1.f)}) {
      ASSERT_EQ(fp16_from_float(y), reference_fp16(y)) << "float bits " << std::hex << bits_of(y);
      ASSERT_EQ(fp16_from_float(-y), reference_fp16(-y)) << "float bits " << std::hex << bits_of(y);
    }
  }
}

TEST(Fp16Cast, RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t again = fp16_from_float(float_from_fp16(uint16_t(h)));
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
      EXPECT_EQ(again, h | 0x0200) << "NaN " << h << " comes back quiet with sign and payload";
    } else {
      ASSERT_EQ(again, h) << "fp16 pattern " << h;
    }
  }
}

TEST(Fp16Cast, SpecialValuesBehaveAsStated) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fp16_from_float(65504.f), 0x7bff);
  EXPECT_EQ(fp16_from_float(std::nextafter(65520.f, 0.f)), 0x7bff);
  EXPECT_EQ(fp16_from_float(65520.f), 0x7c00);  // tie: rounds to even = Inf
  EXPECT_EQ(fp16_from_float(-65520.f), 0xfc00);
  EXPECT_EQ(fp16_from_float(1e10f), 0x7c00);
  EXPECT_EQ(fp16_from_float(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(fp16_from_float(inf), 0x7c00);
  EXPECT_EQ(fp16_from_float(-inf), 0xfc00);
  EXPECT_EQ(fp16_from_float(-0.f), 0x8000);
  EXPECT_EQ(fp16_from_float(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(fp16_from_float(0x1p-25f), 0x0000);  // tie to even (zero)
  EXPECT_EQ(fp16_from_float(0x1.000002p-25f), 0x0001);
  EXPECT_EQ(fp16_from_float(0x3p-25f), 0x0002);             // tie to even
  EXPECT_EQ(fp16_from_float(0x1p-14f - 0x1p-25f), 0x0400);  // tie rounds up into normals
  EXPECT_EQ(fp16_from_float(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(fp16_from_float(-std::numeric_limits<float>::denorm_min()), 0x8000);
  EXPECT_EQ(fp16_from_float(float_of(0x7fc00000u)), 0x7e00);
  EXPECT_EQ(fp16_from_float(float_of(0xffc00000u)), 0xfe00);
  EXPECT_EQ(fp16_from_float(float_of(0x7f800001u)), 0x7e00);  // signalling NaN made quiet
  EXPECT_EQ(fp16_from_float(float_of(0x7fa00000u)), 0x7f00);  // top payload bits kept
  EXPECT_TRUE(std::isnan(float_from_fp16(0x7c01)));
}

TEST(Bf16Cast, DecodesByWideningAndEncodesToNearestEven) {
  for (uint32_t h = 0; h < 65536; ++h)
    ASSERT_EQ(bits_of(float_from_bf16(uint16_t(h))), h << 16) << h;
  for_rounding_critical_floats(16, cmpi::testing::test_seed(), [](float x) {
    ASSERT_EQ(bf16_from_float(x), reference_bf16(x)) << "float bits " << std::hex << bits_of(x);
  });
}

TEST(Bf16Cast, SpecialValuesBehaveAsStated) {
  EXPECT_EQ(bf16_from_float(float_of(0x7f7f7fffu)), 0x7f7f);  // largest below the tie
  EXPECT_EQ(bf16_from_float(float_of(0x7f7f8000u)), 0x7f80);  // tie to even = Inf
  EXPECT_EQ(bf16_from_float(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(bf16_from_float(-std::numeric_limits<float>::max()), 0xff80);
  EXPECT_EQ(bf16_from_float(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(bf16_from_float(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(bf16_from_float(-0.f), 0x8000);
  EXPECT_EQ(bf16_from_float(float_of(0x00010000u)), 0x0001);  // denormal: top bits kept
  EXPECT_EQ(bf16_from_float(float_of(0x00008000u)), 0x0000);  // tie to even
  EXPECT_EQ(bf16_from_float(float_of(0x00018000u)), 0x0002);  // tie to even
  EXPECT_EQ(bf16_from_float(float_of(0x007fffffu)), 0x0080);  // rounds into the normals
  EXPECT_EQ(bf16_from_float(float_of(0x7fc00000u)), 0x7fc0);
  EXPECT_EQ(bf16_from_float(float_of(0xff800001u)), 0xffc0);  // signalling NaN made quiet
  EXPECT_EQ(bf16_from_float(float_of(0x7f810000u)), 0x7fc1);  // payload kept
}

std::vector<float> test_floats(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> gauss(0.f, 1.f);
  std::uniform_real_distribution<float> log_magnitude(-30.f, 20.f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = i % 2 ? gauss(rng) : std::copysign(std::exp2(log_magnitude(rng)), gauss(rng));
  return v;
}

TEST(CastCodecs, PayloadsRoundTripWithinTheStatedBounds) {
  auto in = test_floats(100003, cmpi::testing::test_seed());
  for (const char* name : {"fp16", "bf16"}) {
    auto codec = make_codec(CodecSpec(name));
    EXPECT_FALSE(codec->lossless());
    auto bytes = codec->encode(in.data(), in.size());
    ASSERT_EQ(bytes.size(), kPayloadHeaderBytes + 2 * in.size()) << name;
    std::vector<float> out(in.size());
    codec->decode(bytes.data(), bytes.size(), out.data(), out.size());
    const bool fp16 = std::string(name) == "fp16";
    for (size_t i = 0; i < in.size(); ++i) {
      // The vectorized span loops agree with the scalar conversion.
      const float scalar =
          fp16 ? float_from_fp16(fp16_from_float(in[i])) : float_from_bf16(bf16_from_float(in[i]));
      ASSERT_EQ(bits_of(out[i]), bits_of(scalar)) << name << " index " << i;
      const double a = std::fabs(double(in[i])), err = std::fabs(double(in[i]) - out[i]);
      if (fp16 && a > 65504) continue;
      const double bound = fp16 ? (a < 0x1p-14 ? 0x1p-25 : a * 0x1p-11) : a * 0x1p-8;
      ASSERT_LE(err, bound) << name << " value " << in[i];
    }
  }
}

TEST(CastCodecs, DecodeChecksTheBodySizeAndFlags) {
  auto in = test_floats(1000, cmpi::testing::test_seed());
  for (const char* name : {"fp16", "bf16"}) {
    auto codec = make_codec(CodecSpec(name));
    auto bytes = codec->encode(in.data(), in.size());
    std::vector<float> out(in.size());
    EXPECT_THROW(codec->decode(bytes.data(), bytes.size(), out.data(), 999), DecodeError);
    PayloadHeader header;
    header.codec = codec->id();
    header.element_count = in.size();
    for (size_t body : {size_t(0), size_t(1999), size_t(2001), size_t(4000)}) {
      std::vector<uint8_t> wrong(kPayloadHeaderBytes + body, 0x5a);
      header.body_bytes = body;
      write_payload_header(header, wrong.data());
      try {
        codec->decode(wrong.data(), wrong.size(), out.data(), out.size());
        ADD_FAILURE() << name << " accepted a body of " << body << " bytes";
      } catch (const DecodeError& e) {
        EXPECT_EQ(e.field(), "body") << e.what();
      }
    }
    header.flags = 1;
    header.body_bytes = 2000;
    std::vector<uint8_t> flagged(kPayloadHeaderBytes + 2000, 0);
    write_payload_header(header, flagged.data());
    try {
      codec->decode(flagged.data(), flagged.size(), out.data(), out.size());
      ADD_FAILURE() << name << " accepted flags";
    } catch (const DecodeError& e) {
      EXPECT_EQ(e.field(), "flags") << e.what();
    }
  }
  EXPECT_THROW(make_codec(CodecSpec("fp16", {{"rate", "8"}})), CodecError);
}

}  // namespace
}  // namespace cmpi::compress
