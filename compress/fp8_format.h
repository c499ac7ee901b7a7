// The two OCP 8-bit floating-point formats (OFP8) and the conversion of one
// float to and from them, written from the published OCP 8-bit floating point
// specification:
//
//   format  sign  exponent  mantissa  bias  largest finite   special values
//   E4M3    1     4         3         7     448 = 1.75·2^8   NaN = S.1111.111; no infinities
//   E5M2    1     5         2         15    57344 = 1.75·2^15 IEEE-like: S.11111.00 = ±Inf,
//                                                             S.11111.{01,10,11} = NaN
//
// Both have subnormals (exponent field 0: mantissa · 2^(1 - bias - mantissa
// bits), i.e. multiples of 2^-9 for E4M3 and 2^-16 for E5M2) and a signed zero.
//
// float -> fp8 rounds to nearest, ties to even (the even code: mantissa LSB
// 0), branch-free so span loops vectorize:
//   - normal results (|x| >= 2^(1-bias)): round away the 23 - m low float
//     mantissa bits by adding half an ulp minus one plus the lowest kept bit
//     (a carry bumps the exponent, as rounding should), then rebias.
//   - subnormal results: |x| + 2^(23 + 1 - bias - m) makes the FPU round |x|
//     to a multiple of the fp8 subnormal quantum (the ulp of that constant),
//     so the sum's low bits are the fp8 code (a result that rounds up to the
//     smallest normal comes out as its code). Needs the default rounding mode.
//   - finite values beyond the largest finite saturate to it (±448, ±57344):
//     the "saturating" conversion of the specification. That is also the
//     nearest finite value, so the conversion is "nearest finite code".
//   - NaN -> the NaN code S.1111.111 / S.11111.11 with the input's sign;
//     ±Inf -> ±Inf in E5M2 and NaN in E4M3, which has no infinity (saturating
//     an infinity would hide an overflow).
//   - error for a result in the normal range: relative <= 2^-(m+1) (2^-4 for
//     E4M3, 2^-3 for E5M2); in the subnormal range absolute <= half the
//     quantum (2^-10 for E4M3, 2^-17 for E5M2).
// fp8 -> float is exact (every fp8 value is a float).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "compress/half_float.h"

namespace cmpi::compress {

enum class Fp8Format : uint8_t { kE4M3, kE5M2 };

// The constants of one format, with its codes' magnitudes (sign bit clear).
struct Fp8Traits {
  int mantissa_bits;
  int bias;
  uint32_t max_finite_code;  // 0x7e (448) / 0x7b (57344)
  uint32_t nan_code;         // 0x7f in both
  uint32_t infinity_code;    // 0x7c for E5M2; E4M3 has none (NaN instead)
  float max_finite;
  // 2^(1 - bias - mantissa_bits): the subnormal quantum.
  float subnormal_quantum;
};

constexpr Fp8Traits fp8_traits(Fp8Format format) {
  return format == Fp8Format::kE4M3 ? Fp8Traits{3, 7, 0x7eu, 0x7fu, 0x7fu, 448.0f, 0x1p-9f}
                                    : Fp8Traits{2, 15, 0x7bu, 0x7fu, 0x7cu, 57344.0f, 0x1p-16f};
}

const char* fp8_format_name(Fp8Format format);  // "e4m3", "e5m2"
std::optional<Fp8Format> parse_fp8_format(const std::string& name);

template <Fp8Format F>
inline uint8_t fp8_from_float(float value) {
  using namespace cast_detail;
  constexpr Fp8Traits t = fp8_traits(F);
  constexpr int shift = 23 - t.mantissa_bits;
  // float bits of 2^(1 - bias): the smallest normal fp8 magnitude.
  constexpr uint32_t min_normal_bits = uint32_t(127 + 1 - t.bias) << 23;
  // 2^(23 + 1 - bias - m): its ulp is the fp8 subnormal quantum.
  constexpr float subnormal_magic = t.subnormal_quantum * 0x1p23f;
  const uint32_t bits = bits_of(value);
  const uint32_t sign = (bits >> 24) & 0x80u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  // Clamped first so that the rounding below cannot overflow 32 bits.
  const uint32_t finite = magnitude < 0x7f000000u ? magnitude : 0x7f000000u;
  const uint32_t rounded = finite + ((1u << (shift - 1)) - 1u) + ((finite >> shift) & 1u);
  const uint32_t normal = (rounded >> shift) - (uint32_t(127 - t.bias) << t.mantissa_bits);
  const uint32_t subnormal = bits_of(float_of(finite) + subnormal_magic) - bits_of(subnormal_magic);
  uint32_t code = select_bits(finite < min_normal_bits, subnormal, normal);
  code = select_bits(code > t.max_finite_code, t.max_finite_code, code);
  code = select_bits(magnitude == 0x7f800000u, t.infinity_code, code);
  code = select_bits(magnitude > 0x7f800000u, t.nan_code, code);
  return static_cast<uint8_t>(code | sign);
}

template <Fp8Format F>
inline float float_from_fp8(uint8_t code) {
  using namespace cast_detail;
  constexpr Fp8Traits t = fp8_traits(F);
  const uint32_t sign = static_cast<uint32_t>(code & 0x80u) << 24;
  const uint32_t magnitude = code & 0x7fu;
  const uint32_t exponent = magnitude >> t.mantissa_bits;
  const uint32_t mantissa = magnitude & ((1u << t.mantissa_bits) - 1u);
  const uint32_t normal =
      ((exponent + 127u - uint32_t(t.bias)) << 23) | (mantissa << (23 - t.mantissa_bits));
  const uint32_t subnormal = bits_of(float(mantissa) * t.subnormal_quantum);
  uint32_t result = select_bits(exponent == 0, subnormal, normal);
  const bool has_infinity = t.infinity_code != t.nan_code;
  if (has_infinity) result = select_bits(magnitude == t.infinity_code, 0x7f800000u, result);
  result = select_bits(magnitude > t.max_finite_code && magnitude != t.infinity_code, 0x7fc00000u,
                       result);
  if (!has_infinity) result = select_bits(magnitude == t.nan_code, 0x7fc00000u, result);
  return float_of(result | sign);
}

// The same for a format chosen at run time.
inline uint8_t fp8_from_float(float value, Fp8Format format) {
  return format == Fp8Format::kE4M3 ? fp8_from_float<Fp8Format::kE4M3>(value)
                                    : fp8_from_float<Fp8Format::kE5M2>(value);
}

inline float float_from_fp8(uint8_t code, Fp8Format format) {
  return format == Fp8Format::kE4M3 ? float_from_fp8<Fp8Format::kE4M3>(code)
                                    : float_from_fp8<Fp8Format::kE5M2>(code);
}

}  // namespace cmpi::compress
