// fp8 codec: one pass over the input, block by block (a block of 1024 floats
// stays in L1 between finding its largest magnitude and encoding it). A
// non-finite value turns the whole body into raw floats; the blocks already
// encoded are overwritten.
#include "compress/fp8_codec.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "compress/byte_order.h"
#include "compress/nonfinite.h"

namespace cmpi::compress {
namespace {

constexpr uint16_t kRawFloatsFlag = 1;
constexpr int kMaxScaleExponent = 126;  // 2^k and 2^-k stay normal floats
constexpr int64_t kMaxBlock = int64_t(1) << 20;

// Header parameter 0: the format (0 would be an unset field).
constexpr uint32_t format_param(Fp8Format format) {
  return format == Fp8Format::kE4M3 ? 1u : 2u;
}

// 2^k as a float, k in [-126, 127].
float power_of_two(int k) {
  return cast_detail::float_of(uint32_t(k + 127) << 23);
}

[[noreturn]] void bad_param(const std::string& key, const std::string& why) {
  throw CodecError("codec 'fp8': parameter '" + key + "' " + why);
}

}  // namespace

Fp8Codec::Fp8Codec(const CodecSpec& spec) : Codec(spec) {
  spec.require_only({"format", "block", "nonfinite"});
  const std::string format = spec.get_string("format", "e4m3");
  const std::optional<Fp8Format> parsed = parse_fp8_format(format);
  if (!parsed) bad_param("format", "must be e4m3 or e5m2, got '" + format + "'");
  format_ = *parsed;
  const int64_t block = spec.get_int("block", 1024);
  if (block < 1 || block > kMaxBlock)
    bad_param("block", "must be in 1.." + std::to_string(kMaxBlock) + " values per scale, got " +
                           std::to_string(block));
  block_ = size_t(block);
  const std::string nonfinite = spec.get_string("nonfinite", "raw");
  if (nonfinite != "raw" && nonfinite != "fail")
    bad_param("nonfinite", "must be raw or fail, got '" + nonfinite + "'");
  fail_on_nonfinite_ = nonfinite == "fail";
  for (size_t code = 0; code < decoded_.size(); ++code)
    decoded_[code] = float_from_fp8(uint8_t(code), format_);
}

uint32_t Fp8Codec::largest_code(int k) const {
  // Scaling is exact, so only a product past the float range is lost: walk
  // down from the format's largest finite code (at most a few steps, and
  // only for blocks in the top binade of the float range).
  const float unscale = power_of_two(-k);
  uint32_t code = fp8_traits(format_).max_finite_code;
  while (code > 0 && !std::isfinite(decoded_[code] * unscale)) --code;
  return code;
}

int Fp8Codec::scale_exponent(float max_abs, Fp8Format format) {
  const uint32_t bits = cast_detail::bits_of(max_abs) & 0x7fffffffu;
  if (bits == 0) return 0;
  // max_abs = 1.f · 2^e; the largest finite value is 1.75 · 2^top.
  const int top = format == Fp8Format::kE4M3 ? 8 : 15;
  const int e = int(bits >> 23) - 127;
  if (e < -126) return kMaxScaleExponent;                 // a float subnormal: far below any clamp
  const bool fits_top = (bits & 0x7fffffu) <= 0x600000u;  // 1.f <= 1.75
  const int k = (fits_top ? top : top - 1) - e;
  return std::clamp(k, -kMaxScaleExponent, kMaxScaleExponent);
}

size_t Fp8Codec::max_body_bytes(size_t n) const {
  return std::max(scaled_body_bytes(n), n * sizeof(float));
}

std::array<uint32_t, 4> Fp8Codec::header_params() const {
  return {format_param(format_), uint32_t(block_), 0, 0};
}

size_t Fp8Codec::encode_body(const float* in, size_t n, uint8_t* out, size_t, uint16_t& flags) {
  const size_t blocks = blocks_of(n);
  uint8_t* scales = out;
  uint8_t* codes = out + blocks;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t start = b * block_, length = std::min(block_, n - start);
    const float* x = in + start;
    uint32_t max_bits = 0;
#pragma omp simd reduction(max : max_bits)
    for (size_t i = 0; i < length; ++i)
      max_bits = std::max(max_bits, cast_detail::bits_of(x[i]) & 0x7fffffffu);
    if (max_bits >= 0x7f800000u) {
      if (fail_on_nonfinite_) require_finite(spec(), in, n);
      for (size_t i = 0; i < n; ++i) store_le32(out + 4 * i, cast_detail::bits_of(in[i]));
      count_nonfinite_raw_chunks(1);
      flags = kRawFloatsFlag;
      return n * sizeof(float);
    }
    const int k = scale_exponent(cast_detail::float_of(max_bits), format_);
    scales[b] = uint8_t(int8_t(k));
    const float scale = power_of_two(k);
    uint8_t* y = codes + start;
    const uint32_t cap = largest_code(k);
    if (cap != fp8_traits(format_).max_finite_code) {
      // A block max within an fp8 rounding step of FLT_MAX: its nearest fp8
      // value times 2^-k would be 2^128 = inf. The nearest value that stays
      // finite is the cap's, still within the relative bound (fp8_codec.h).
      for (size_t i = 0; i < length; ++i) {
        const uint32_t code = fp8_from_float(x[i] * scale, format_);
        y[i] = uint8_t((code & 0x80u) | std::min(code & 0x7fu, cap));
      }
    } else if (format_ == Fp8Format::kE4M3) {
#pragma omp simd
      for (size_t i = 0; i < length; ++i) y[i] = fp8_from_float<Fp8Format::kE4M3>(x[i] * scale);
    } else {
#pragma omp simd
      for (size_t i = 0; i < length; ++i) y[i] = fp8_from_float<Fp8Format::kE5M2>(x[i] * scale);
    }
  }
  return scaled_body_bytes(n);
}

void Fp8Codec::decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                           uint16_t flags) const {
  if (flags == kRawFloatsFlag) {
    if (size != n * sizeof(float))
      throw DecodeError("body", "fp8 raw body of " + std::to_string(size) + " bytes for " +
                                    std::to_string(n) + " floats (expected " +
                                    std::to_string(n * sizeof(float)) + ")");
    for (size_t i = 0; i < n; ++i) out[i] = cast_detail::float_of(load_le32(in + 4 * i));
    return;
  }
  if (flags != 0)
    throw DecodeError("flags", "fp8 payload has flags " + std::to_string(flags) +
                                   ", expected 0 or " + std::to_string(kRawFloatsFlag));
  if (size != scaled_body_bytes(n))
    throw DecodeError("body", "fp8 body of " + std::to_string(size) + " bytes for " +
                                  std::to_string(n) + " values in blocks of " +
                                  std::to_string(block_) + " (expected " +
                                  std::to_string(scaled_body_bytes(n)) + ")");
  const size_t blocks = blocks_of(n);
  const uint8_t* codes = in + blocks;
  for (size_t b = 0; b < blocks; ++b) {
    const int k = int8_t(in[b]);
    if (k < -kMaxScaleExponent || k > kMaxScaleExponent)
      throw DecodeError("body", "fp8 block " + std::to_string(b) + " has scale exponent " +
                                    std::to_string(k) + " outside [-126, 126]");
    const float unscale = power_of_two(-k);
    const size_t start = b * block_, length = std::min(block_, n - start);
    for (size_t i = 0; i < length; ++i) out[start + i] = decoded_[codes[start + i]] * unscale;
  }
}

}  // namespace cmpi::compress
