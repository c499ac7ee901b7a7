// fp16 and bf16: every float is rounded to the nearest 16-bit float, ties to
// even, and sent as two little-endian bytes; decoding widens exactly.
//
// The conversions are branch-free bit manipulation so that the span loops
// vectorize (each lane computes every candidate result and selects one):
//
// fp16 (IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits; max 65504)
//   - normal results: rebias the exponent (127 -> 15) and round away the 13
//     low mantissa bits by adding 0x0fff plus the lowest kept bit; a carry
//     out of the mantissa bumps the exponent, as rounding should.
//   - subnormal results (|x| < 2^-14): x + 0.5f makes the FPU round |x| to a
//     multiple of 2^-24 (the ulp of 0.5f is the fp16 subnormal quantum), so
//     the sum's low bits are the fp16 subnormal mantissa. Needs the default
//     floating-point environment (round to nearest; flush-to-zero only
//     affects float denormals, which round to zero in fp16 anyway).
//   - overflow: finite |x| >= 65520 (halfway between 65504 and 2^16) rounds
//     to +-Inf, as IEEE round-to-nearest-even prescribes.
//   - +-Inf stays +-Inf; NaN stays NaN with its sign, made quiet (the top
//     mantissa bit set) keeping the top 9 payload bits; -0.0 stays -0.0.
//   - error: relative <= 2^-11 for 2^-14 <= |x| <= 65504, absolute <= 2^-25
//     below 2^-14.
//
// bf16 (the top half of a float: 1 sign, 8 exponent, 7 mantissa bits)
//   - add 0x7fff plus the lowest kept bit and drop the low 16 bits; relative
//     error <= 2^-8 for normal floats.
//   - overflow: finite |x| >= 0x7f7f8000 (~3.3961e38) rounds to +-Inf.
//   - float denormals keep their top bits, rounded the same way (the
//     smallest may round up into the smallest normal); -0.0, +-Inf kept;
//     NaN stays NaN with its sign, made quiet.
#pragma once

#include <cstdint>

#include "compress/codec.h"
#include "compress/half_float.h"

namespace cmpi::compress {

// Span conversions (vectorized loops). The uint16_t arrays are in host order.
void floats_to_fp16(const float* in, size_t n, uint16_t* out);
void fp16_to_floats(const uint16_t* in, size_t n, float* out);
void floats_to_bf16(const float* in, size_t n, uint16_t* out);
void bf16_to_floats(const uint16_t* in, size_t n, float* out);

// Shared body of the two cast codecs: two little-endian bytes per float.
class HalfCastCodec : public Codec {
 public:
  explicit HalfCastCodec(const CodecSpec& spec);
  bool lossless() const override { return false; }

 protected:
  size_t max_body_bytes(size_t n) const override { return 2 * n; }
  size_t encode_body(const float* in, size_t n, uint8_t* out, size_t capacity,
                     uint16_t& flags) override;
  void decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                   uint16_t flags) const override;

  virtual void narrow(const float* in, size_t n, uint16_t* out) const = 0;
  virtual void widen(const uint16_t* in, size_t n, float* out) const = 0;
};

class Fp16Codec final : public HalfCastCodec {
 public:
  explicit Fp16Codec(const CodecSpec& spec) : HalfCastCodec(spec) {}
  CodecId id() const override { return CodecId::kFp16; }

 protected:
  void narrow(const float* in, size_t n, uint16_t* out) const override {
    floats_to_fp16(in, n, out);
  }
  void widen(const uint16_t* in, size_t n, float* out) const override {
    fp16_to_floats(in, n, out);
  }
};

class Bf16Codec final : public HalfCastCodec {
 public:
  explicit Bf16Codec(const CodecSpec& spec) : HalfCastCodec(spec) {}
  CodecId id() const override { return CodecId::kBf16; }

 protected:
  void narrow(const float* in, size_t n, uint16_t* out) const override {
    floats_to_bf16(in, n, out);
  }
  void widen(const uint16_t* in, size_t n, float* out) const override {
    bf16_to_floats(in, n, out);
  }
};

}  // namespace cmpi::compress
