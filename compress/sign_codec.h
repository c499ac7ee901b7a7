// sign: one bit per value plus one scale per bucket, as in signSGD with
// scaling and EF-signSGD (Karimireddy, Rebjock, Stich, Jaggi 2019): a bucket
// x decodes to mean(|x|) * sign(x), the closest vector of that form to x in
// the l2 sense among common scales. Biased by design: use it through
// ErrorFeedback for gradients.
// Spec: {name: sign, bucket: 512} (bucket 0 = one scale for the whole array).
// Body: bucket_count float32 scales, then ceil(n/8) bytes of sign bits (bit
// i % 8 of byte i / 8 set iff the float's sign bit is set, so -0.0 decodes
// to -scale and +0.0 to +scale; a bucket of zeros has scale 0 and decodes to
// zeros). 1 + 32/bucket bits per value. The header echoes the bucket.
// Non-finite input is refused (std::invalid_argument naming the index).
#pragma once

#include "compress/codec.h"

namespace cmpi::compress {

class SignCodec final : public Codec {
 public:
  explicit SignCodec(const CodecSpec& spec);
  CodecId id() const override { return CodecId::kSign; }
  bool lossless() const override { return false; }
  size_t bucket() const { return bucket_; }

 protected:
  size_t max_body_bytes(size_t n) const override;
  std::array<uint32_t, 4> header_params() const override { return {uint32_t(bucket_), 0, 0, 0}; }
  size_t encode_body(const float* in, size_t n, uint8_t* out, size_t capacity,
                     uint16_t& flags) override;
  void decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                   uint16_t flags) const override;

 private:
  size_t bucket_;
};

}  // namespace cmpi::compress
