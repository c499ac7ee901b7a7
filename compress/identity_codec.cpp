#include "compress/identity_codec.h"

#include <cstring>

namespace cmpi::compress {

IdentityCodec::IdentityCodec(const CodecSpec& spec) : Codec(spec) {
  spec.require_only({});
}

size_t IdentityCodec::encode_body(const float* in, size_t n, uint8_t* out, size_t, uint16_t&) {
  if (n) std::memcpy(out, in, n * sizeof(float));
  return n * sizeof(float);
}

void IdentityCodec::decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                                uint16_t flags) const {
  if (flags != 0) throw DecodeError("flags", "identity payload has flags set");
  if (size != n * sizeof(float))
    throw DecodeError("body", "identity body of " + std::to_string(size) + " bytes for " +
                                  std::to_string(n) + " floats");
  if (n) std::memcpy(out, in, size);
}

}  // namespace cmpi::compress
