// OCP 8-bit floats (compress/fp8_format.h): every code decodes to the value
// the specification's formula gives; encoding is checked bit for bit against
// a brute-force reference written here — for a float, the nearest of all
// finite codes of its sign (ties to the even code), found by scanning them — on
// fresh seeded random floats across and beyond each format's range, on every
// tie between two neighbouring codes and just beside it, and on the edges:
// zero, -0, the smallest subnormal, the largest finite, overflow (saturates),
// NaN and infinities as documented.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "compress/fp8_format.h"
#include "tests/compress/codec_test_util.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

constexpr Fp8Format kFormats[] = {Fp8Format::kE4M3, Fp8Format::kE5M2};

// The specification's value of a code: exponent bits E, mantissa bits M,
// bias; E4M3's S.1111.111 is NaN, E5M2's S.11111.xx is Inf (xx = 0) or NaN.
double spec_value(uint8_t code, Fp8Format format) {
  const int exponent_bits = format == Fp8Format::kE4M3 ? 4 : 5;
  const int mantissa_bits = 7 - exponent_bits;
  const int bias = format == Fp8Format::kE4M3 ? 7 : 15;
  const double sign = (code & 0x80) ? -1.0 : 1.0;
  const int exponent = (code >> mantissa_bits) & ((1 << exponent_bits) - 1);
  const int mantissa = code & ((1 << mantissa_bits) - 1);
  const int top = (1 << exponent_bits) - 1;
  if (format == Fp8Format::kE4M3 && exponent == top && mantissa == (1 << mantissa_bits) - 1)
    return std::numeric_limits<double>::quiet_NaN();
  if (format == Fp8Format::kE5M2 && exponent == top)
    return mantissa == 0 ? sign * std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(double(mantissa), 1 - bias - mantissa_bits);
  return sign * std::ldexp(1.0 + std::ldexp(double(mantissa), -mantissa_bits), exponent - bias);
}

// The nearest finite code of x's sign (ties to the even code); NaN and
// infinities as fp8_format.h documents them. Found by scanning every finite
// code for the two values that bracket |x| (a beyond the largest has only
// the largest below it), then comparing the two distances, which are exact
// in double: |x| lies within a factor of two of both neighbours, or the
// lower one is zero.
uint8_t reference_code(float x, Fp8Format format) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x)) return sign | 0x7f;
  if (std::isinf(x)) return sign | (format == Fp8Format::kE5M2 ? 0x7c : 0x7f);
  const double magnitude = std::fabs(double(x));
  int below = -1, above = -1;  // codes of the largest value <= |x|, the smallest >= |x|
  for (int code = 0; code < 128; ++code) {
    const double value = spec_value(uint8_t(code), format);
    if (!std::isfinite(value)) continue;
    if (value <= magnitude && (below < 0 || value > spec_value(uint8_t(below), format)))
      below = code;
    if (value >= magnitude && (above < 0 || value < spec_value(uint8_t(above), format)))
      above = code;
  }
  if (above < 0) return uint8_t(sign | below);  // beyond the largest finite: saturate
  const double down = magnitude - spec_value(uint8_t(below), format);
  const double up = spec_value(uint8_t(above), format) - magnitude;
  const int nearest = down < up ? below : up < down ? above : (below % 2 == 0 ? below : above);
  return uint8_t(sign | nearest);
}

void expect_encodes_like_reference(float x, Fp8Format format) {
  const uint8_t want = reference_code(x, format);
  const uint8_t got = fp8_from_float(x, format);
  ASSERT_EQ(int(got), int(want)) << fp8_format_name(format) << " x=" << x << " (bits 0x" << std::hex
                                 << test_util::float_bits(x) << std::dec << ")"
                                 << " seed " << cmpi::testing::test_seed();
}

TEST(Fp8Format, EveryCodeDecodesToItsSpecifiedValueAndBack) {
  for (Fp8Format format : kFormats) {
    for (int code = 0; code < 256; ++code) {
      SCOPED_TRACE(std::string(fp8_format_name(format)) + " code " + std::to_string(code));
      const double want = spec_value(uint8_t(code), format);
      const float got = float_from_fp8(uint8_t(code), format);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got));
        EXPECT_EQ(std::signbit(got), (code & 0x80) != 0);
        // NaN codes come back as the canonical NaN code of their sign.
        EXPECT_EQ(int(fp8_from_float(got, format)), (code & 0x80) | 0x7f);
        continue;
      }
      EXPECT_EQ(double(got), want);
      EXPECT_EQ(std::signbit(got), (code & 0x80) != 0);  // -0 included
      EXPECT_EQ(int(fp8_from_float(got, format)), code);
    }
  }
  EXPECT_EQ(float_from_fp8(0x7e, Fp8Format::kE4M3), 448.0f);
  EXPECT_EQ(float_from_fp8(0x01, Fp8Format::kE4M3), 0x1p-9f);
  EXPECT_EQ(float_from_fp8(0x7b, Fp8Format::kE5M2), 57344.0f);
  EXPECT_EQ(float_from_fp8(0x01, Fp8Format::kE5M2), 0x1p-16f);
  EXPECT_TRUE(std::isinf(float_from_fp8(0xfc, Fp8Format::kE5M2)));
}

TEST(Fp8Format, EdgesFollowTheDocumentedRules) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (Fp8Format format : kFormats) {
    SCOPED_TRACE(fp8_format_name(format));
    const Fp8Traits t = fp8_traits(format);
    const int max_code = int(t.max_finite_code);
    EXPECT_EQ(int(fp8_from_float(0.0f, format)), 0x00);
    EXPECT_EQ(int(fp8_from_float(-0.0f, format)), 0x80);
    EXPECT_EQ(int(fp8_from_float(t.max_finite, format)), max_code);
    // Overflow saturates to the largest finite value, whatever the size.
    for (float big :
         {t.max_finite * 1.0625f, t.max_finite * 1.5f, 1e30f, std::numeric_limits<float>::max()}) {
      EXPECT_EQ(int(fp8_from_float(big, format)), max_code) << big;
      EXPECT_EQ(int(fp8_from_float(-big, format)), 0x80 | max_code) << big;
    }
    // Below half the smallest subnormal: (signed) zero; exactly half: the
    // tie goes to the even code, zero; just above: the smallest subnormal.
    const float q = t.subnormal_quantum;
    EXPECT_EQ(int(fp8_from_float(q * 0.5f, format)), 0x00);
    EXPECT_EQ(int(fp8_from_float(-q * 0.5f, format)), 0x80);
    EXPECT_EQ(int(fp8_from_float(std::nextafter(q * 0.5f, 1.0f), format)), 0x01);
    EXPECT_EQ(int(fp8_from_float(q * 1.5f, format)), 0x02);  // tie between 1 and 2: even
    EXPECT_EQ(int(fp8_from_float(test_util::float_from_bits(1), format)),
              0x00);  // a float subnormal
    EXPECT_EQ(int(fp8_from_float(nan, format)), 0x7f);
    EXPECT_EQ(int(fp8_from_float(-nan, format)), 0xff);
    EXPECT_EQ(int(fp8_from_float(inf, format)), format == Fp8Format::kE5M2 ? 0x7c : 0x7f);
    EXPECT_EQ(int(fp8_from_float(-inf, format)), format == Fp8Format::kE5M2 ? 0xfc : 0xff);
  }
  // The largest finite values round-trip; the next half-ulp ties saturate
  // (E5M2 would round them to infinity without saturation).
  EXPECT_EQ(int(fp8_from_float(480.0f, Fp8Format::kE4M3)), 0x7e);
  EXPECT_EQ(int(fp8_from_float(61440.0f, Fp8Format::kE5M2)), 0x7b);
}

// Every tie between two neighbouring finite codes, and the floats on either
// side of it: the places where a rounding bug shows.
TEST(Fp8Format, TiesAndTheirNeighboursMatchTheReference) {
  for (Fp8Format format : kFormats) {
    for (int magnitude = 0; magnitude < int(fp8_traits(format).max_finite_code); ++magnitude) {
      const double low = spec_value(uint8_t(magnitude), format);
      const double high = spec_value(uint8_t(magnitude + 1), format);
      const float tie = float((low + high) / 2);  // exact: fp8 values have few bits
      ASSERT_EQ(double(tie), (low + high) / 2);
      for (float x :
           {tie, std::nextafter(tie, 0.0f), std::nextafter(tie, 1e30f), float(low), float(high)}) {
        expect_encodes_like_reference(x, format);
        expect_encodes_like_reference(-x, format);
      }
    }
  }
}

// Fresh random floats each run (seed printed): exponents across each
// format's range and a few binades beyond on both sides, random mantissas
// and signs, plus fully random finite bit patterns.
TEST(Fp8Format, RandomFloatsMatchTheBruteForceReference) {
  std::mt19937_64 rng(cmpi::testing::test_seed());
  for (Fp8Format format : kFormats) {
    const int lowest = format == Fp8Format::kE4M3 ? -14 : -21;  // below the smallest subnormal
    const int highest = format == Fp8Format::kE4M3 ? 11 : 18;   // above the largest finite
    std::uniform_int_distribution<int> exponent(lowest, highest);
    for (int i = 0; i < 200000; ++i) {
      const uint32_t mantissa = uint32_t(rng()) & 0x7fffffu;
      const uint32_t sign = uint32_t(rng() & 1) << 31;
      const float x =
          test_util::float_from_bits(sign | (uint32_t(exponent(rng) + 127) << 23) | mantissa);
      expect_encodes_like_reference(x, format);
    }
    for (int i = 0; i < 20000; ++i) {
      const float x = test_util::float_from_bits(uint32_t(rng()));
      if (!std::isfinite(x)) continue;
      expect_encodes_like_reference(x, format);
    }
  }
}

// The stated error: relative 2^-(m+1) in the normal range, half a quantum
// below it.
TEST(Fp8Format, ErrorStaysWithinTheStatedBound) {
  std::mt19937_64 rng(cmpi::testing::test_seed() + 1);
  for (Fp8Format format : kFormats) {
    const Fp8Traits t = fp8_traits(format);
    const double min_normal = std::ldexp(1.0, 1 - t.bias);
    std::uniform_real_distribution<double> log2_magnitude(std::log2(t.subnormal_quantum) - 2,
                                                          std::log2(t.max_finite));
    for (int i = 0; i < 100000; ++i) {
      const float x = float(std::exp2(log2_magnitude(rng)));
      const double error = std::fabs(double(float_from_fp8(fp8_from_float(x, format), format)) - x);
      const double bound = x >= min_normal ? std::ldexp(double(x), -(t.mantissa_bits + 1))
                                           : t.subnormal_quantum / 2.0;
      ASSERT_LE(error, bound) << fp8_format_name(format) << " x=" << x << " seed "
                              << cmpi::testing::test_seed();
    }
  }
}

}  // namespace
}  // namespace cmpi::compress
