// identity: the body is the floats' bytes, unchanged. The reference codec for
// the compressed collectives (same algorithm, no compression).
#pragma once

#include "compress/codec.h"

namespace cmpi::compress {

class IdentityCodec final : public Codec {
 public:
  explicit IdentityCodec(const CodecSpec& spec);
  CodecId id() const override { return CodecId::kIdentity; }
  bool lossless() const override { return true; }

 protected:
  size_t max_body_bytes(size_t n) const override { return n * sizeof(float); }
  size_t encode_body(const float* in, size_t n, uint8_t* out, size_t capacity,
                     uint16_t& flags) override;
  void decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                   uint16_t flags) const override;
};

}  // namespace cmpi::compress
