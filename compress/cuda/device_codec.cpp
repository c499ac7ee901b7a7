// Host-side helpers of the device codecs that need the CPU codec library
// (libzfp's word size, the payload header writer).
#include "compress/cuda/device_codec.h"

#include <zfp.h>

#include <cstring>
#include <string>

#include "compress/cuda/device_zfp_codec.h"
#include "compress/payload.h"

namespace cmpi::compress::cuda {

void check_decode_status(uint32_t status, const DeviceCodec& codec) {
  const std::string who = "device codec " + codec.spec().to_string() + ": ";
  switch (status) {
    case kDecodeOk:
      return;
    case kDecodeBadHeader:
      throw DecodeError("header", who + "not a payload of this codec for this many floats");
    case kDecodeBadChunkTable:
      throw DecodeError("body", who + "chunk table inconsistent with the body");
    case kDecodeBadChunk:
      throw DecodeError("body", who + "a chunk's contents are inconsistent");
    default:
      throw DecodeError("status", who + "unknown status " + std::to_string(status));
  }
}

void DeviceCodec::encode_with_feedback(const float*, uint64_t, float*, bool, uint8_t*, uint64_t*,
                                       StreamId) {
  throw CodecError("device codec " + spec().to_string() + " has no error feedback on the device");
}

uint32_t zfp_stream_word_bits() {
  return static_cast<uint32_t>(stream_alignment());
}

HeaderTemplate header_template(const Codec& codec, uint64_t n) {
  HeaderTemplate header;
  write_payload_header(codec.header_for(n), header.bytes);
  return header;
}

}  // namespace cmpi::compress::cuda
