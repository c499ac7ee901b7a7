// The fp16 and bf16 conversions of one float (cast_codecs.h describes the
// rounding), branch-free and marked CMPI_HD: the CPU cast codecs and the
// device cast kernels (compress/cuda/) run these same functions.
#pragma once

#include <cstdint>

#include "compress/host_device.h"

namespace cmpi::compress {
namespace cast_detail {

CMPI_HD inline uint32_t bits_of(float value) {
  return hd::bits_of(value);
}

CMPI_HD inline float float_of(uint32_t bits) {
  return hd::float_of(bits);
}

// condition ? a : b as mask arithmetic: both sides are always computed, so
// the compiler keeps the loop branch-free and vectorizes it.
CMPI_HD inline uint32_t select_bits(bool condition, uint32_t a, uint32_t b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(condition);
  return (a & mask) | (b & ~mask);
}

}  // namespace cast_detail

CMPI_HD inline uint16_t fp16_from_float(float value) {
  using namespace cast_detail;
  const uint32_t bits = bits_of(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  const uint32_t normal = (magnitude - 0x38000000u + 0x0fffu + ((magnitude >> 13) & 1u)) >> 13;
  const uint32_t subnormal = bits_of(float_of(magnitude) + 0.5f) - 0x3f000000u;
  const uint32_t quiet_nan = 0x7e00u | ((magnitude >> 13) & 0x3ffu);
  uint32_t result = select_bits(magnitude < 0x38800000u, subnormal, normal);  // < 2^-14
  result = select_bits(magnitude >= 0x47800000u, 0x7c00u, result);            // >= 2^16: Inf
  result = select_bits(magnitude > 0x7f800000u, quiet_nan, result);
  return static_cast<uint16_t>(result | sign);
}

CMPI_HD inline float float_from_fp16(uint16_t half) {
  using namespace cast_detail;
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t magnitude = half & 0x7fffu;
  uint32_t normal = (magnitude << 13) + 0x38000000u;  // exponent bias 15 -> 127
  normal = select_bits(magnitude >= 0x7c00u, normal + 0x38000000u, normal);  // Inf/NaN
  const float subnormal = static_cast<float>(static_cast<int32_t>(magnitude)) * 0x1p-24f;
  const uint32_t result = select_bits(magnitude < 0x0400u, bits_of(subnormal), normal);
  return float_of(result | sign);
}

CMPI_HD inline uint16_t bf16_from_float(float value) {
  using namespace cast_detail;
  const uint32_t bits = bits_of(value);
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (bits >> 16) | 0x0040u;
  const uint32_t result = select_bits((bits & 0x7fffffffu) > 0x7f800000u, quiet_nan, rounded);
  return static_cast<uint16_t>(result);
}

CMPI_HD inline float float_from_bf16(uint16_t half) {
  return cast_detail::float_of(static_cast<uint32_t>(half) << 16);
}

}  // namespace cmpi::compress
