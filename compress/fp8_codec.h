// fp8: every float sent as one OCP 8-bit float (compress/fp8_format.h) after
// a power-of-two scale shared by a block of values.
//
//   {name: fp8, format: e4m3|e5m2, block: B, nonfinite: raw|fail}
//   format     e4m3 (default: 3 mantissa bits, range 2^-9..448) or e5m2
//              (2 mantissa bits, range 2^-16..57344)
//   block      values per scale, 1..2^20 (default 1024)
//   nonfinite  raw (default): an input holding NaN or ±Inf is sent as raw
//              floats (bit-exact) and counted in nonfinite_raw_chunks(), as
//              zfp does; fail: encode throws std::invalid_argument naming
//              the index
//
// How it works: each block of B values gets the scale 2^k with k the largest
// integer for which max|x| · 2^k <= the format's largest finite value, so the
// block's largest value lands in the top binade (just under 448 or 57344)
// and the smaller ones keep as much of the format's range as they can. k is
// clamped to [-126, 126] (a block whose max is below 2^-117 for e4m3, 2^-110
// for e5m2 uses less of the range) so that 2^k and 2^-k are normal floats.
// Scaling by a power of two is exact, so the only error is the fp8 rounding
// (nearest, ties to even) of x · 2^k; decoding multiplies the fp8 value by
// 2^-k, also exact.
//
// Body: ceil(n / B) scale exponents k (int8 each), then n codes (one byte
// each): n + ceil(n / B) bytes, i.e. about half of n 16-bit words and a
// quarter of n floats (plus the 48-byte payload header). With flags bit 0
// set (non-finite input, nonfinite: raw), the body is instead n
// little-endian floats.
//
// Error bound, per value x of a block with scale 2^k (x̂ the decoded value):
//   |x̂ - x| <= max(2^-(m+1) · |x|, 2^-k · q/2)
// with m the mantissa bits and q the subnormal quantum: relative 2^-4 (e4m3)
// or 2^-3 (e5m2) for |x| >= 2^-k · 2^(1-bias) (2^-6 / 2^-14 scaled), and
// below that absolute 2^-k · 2^-10 (e4m3) or 2^-k · 2^-17 (e5m2). When k is
// not clamped, 2^-k < 2 · max|block| / max_finite, so the absolute floor is
// below max|block| · 2^-17.8 (e4m3) or · 2^-31.8 (e5m2). Saturation never
// happens: the scaled values are all <= the largest finite value. Near the
// top of the float range the bound still holds and nothing decodes to inf:
// a block max of 1.9375·2^127 or more (e4m3; 1.875·2^127 for e5m2) rounds
// to 2^top, which 2^-k would turn into 2^128 = inf, so such a block's codes
// are capped at the largest whose value stays finite (1.875·2^127 /
// 1.75·2^127): for |x| < 2^128, |x| - 1.875·2^127 < |x| / 16 (and
// |x| - 1.75·2^127 < |x| / 8), the relative bound.
#pragma once

#include <array>
#include <cstdint>

#include "compress/codec.h"
#include "compress/fp8_format.h"

namespace cmpi::compress {

class Fp8Codec final : public Codec {
 public:
  explicit Fp8Codec(const CodecSpec& spec);
  CodecId id() const override { return CodecId::kFp8; }
  bool lossless() const override { return false; }

  Fp8Format format() const { return format_; }
  size_t block() const { return block_; }
  // Body bytes of n values (no non-finite input): n + ceil(n / block).
  size_t scaled_body_bytes(size_t n) const { return n + blocks_of(n); }
  // The exponent k of the scale 2^k for a block whose largest magnitude is
  // max_abs (finite, >= 0); 0 for an all-zero block.
  static int scale_exponent(float max_abs, Fp8Format format);
  // The largest code magnitude whose value times 2^-k is a finite float:
  // the format's largest finite code except for blocks whose max is within
  // an fp8 rounding step of FLT_MAX.
  uint32_t largest_code(int k) const;

 protected:
  size_t max_body_bytes(size_t n) const override;
  std::array<uint32_t, 4> header_params() const override;
  size_t encode_body(const float* in, size_t n, uint8_t* out, size_t capacity,
                     uint16_t& flags) override;
  void decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                   uint16_t flags) const override;

 private:
  size_t blocks_of(size_t n) const { return (n + block_ - 1) / block_; }

  Fp8Format format_ = Fp8Format::kE4M3;
  size_t block_ = 1024;
  bool fail_on_nonfinite_ = false;
  std::array<float, 256> decoded_{};  // the value of every code
};

}  // namespace cmpi::compress
