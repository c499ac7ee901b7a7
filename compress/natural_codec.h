// natural: natural compression (Horvath, Ho, Horvath, Sahu, Canini,
// Richtarik, "Natural Compression for Distributed Deep Learning", 2019).
// Each value is rounded at random to one of the two powers of two around
// it, |x| = 2^e (1 + m) with m in [0, 1) -> 2^(e+1) with probability m, else
// 2^e, which is unbiased (E = 2^e (1 + m)) with relative variance at most
// 1/8. What is left is a sign and an exponent: 9 bits per value, packed.
// Spec: {name: natural, seed: 0}. Senders whose results are summed should
// use different seeds so that their rounding errors average out.
//
// Code (9 bits): sign << 8 | e8, with e8 the float's biased exponent:
//   e8 = 1..254   +-2^(e8 - 127), exactly the float with that exponent and a
//                 zero mantissa, so decode is a shift.
//   e8 = 0        zero (sign 0 only); denormals round to 0 or 2^-126 with
//                 the same rule (p = |x| / 2^-126), so they stay unbiased.
//   e8 = 255      +-infinity, sent unchanged.
//   0x100         NaN (any payload decodes to the quiet NaN 0x7fc00000).
// Stated exceptions to unbiasedness: -0.0 decodes as +0.0 (0x100 is taken
// by NaN), and |x| in (2^127, FLT_MAX] rounds down to 2^127 because 2^128 is
// not a float. The rounding draws one 23-bit uniform per value and compares
// it with the 23-bit mantissa, so the probability is exact, not approximate.
#pragma once

#include "compress/codec.h"
#include "compress/random_blocks.h"

namespace cmpi::compress {

constexpr unsigned kNaturalCodeBits = 9;

class NaturalCodec final : public Codec {
 public:
  explicit NaturalCodec(const CodecSpec& spec);
  CodecId id() const override { return CodecId::kNatural; }
  bool lossless() const override { return false; }
  std::vector<uint64_t> random_state() const override;
  void restore_random_state(const std::vector<uint64_t>& words) override;

 protected:
  size_t max_body_bytes(size_t n) const override;
  size_t encode_body(const float* in, size_t n, uint8_t* out, size_t capacity,
                     uint16_t& flags) override;
  void decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                   uint16_t flags) const override;

 private:
  RandomBlocks random_;
};

}  // namespace cmpi::compress
