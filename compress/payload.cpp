#include "compress/payload.h"

#include "compress/byte_order.h"

namespace cmpi::compress {
namespace {

constexpr size_t kChecksumOffset = 40;

}  // namespace

const char* codec_id_name(CodecId id) {
  switch (id) {
    case CodecId::kIdentity:
      return "identity";
    case CodecId::kZfp:
      return "zfp";
    case CodecId::kMpc:
      return "mpc";
    case CodecId::kFp16:
      return "fp16";
    case CodecId::kBf16:
      return "bf16";
    case CodecId::kTopK:
      return "topk";
    case CodecId::kRandomK:
      return "randomk";
    case CodecId::kThreshold:
      return "threshold";
    case CodecId::kQsgd:
      return "qsgd";
    case CodecId::kNatural:
      return "natural";
    case CodecId::kSign:
      return "sign";
    case CodecId::kSidco:
      return "sidco";
    case CodecId::kBlockSparse:
      return "block_sparse";
    case CodecId::kFp8:
      return "fp8";
  }
  return "unknown";
}

uint32_t fnv1a32(const uint8_t* data, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) {
    h ^= data[i];
    h *= 16777619u;
  }
  return h;
}

void write_payload_header(const PayloadHeader& header, uint8_t* out) {
  store_le32(out + 0, kPayloadMagic);
  out[4] = kPayloadVersion;
  out[5] = static_cast<uint8_t>(header.codec);
  store_le16(out + 6, header.flags);
  for (int i = 0; i < 4; ++i) store_le32(out + 8 + 4 * i, header.params[i]);
  store_le64(out + 24, header.element_count);
  store_le64(out + 32, header.body_bytes);
  store_le32(out + kChecksumOffset, fnv1a32(out, kChecksumOffset));
  store_le32(out + 44, 0);
}

PayloadHeader read_payload_header(const uint8_t* in, size_t size) {
  if (in == nullptr && size != 0) throw DecodeError("buffer", "null pointer");
  if (size < kPayloadHeaderBytes)
    throw DecodeError("header", "payload of " + std::to_string(size) +
                                    " bytes is shorter than the " +
                                    std::to_string(kPayloadHeaderBytes) + "-byte header");
  if (load_le32(in) != kPayloadMagic) throw DecodeError("magic", "not a cmpi payload");
  if (in[4] != kPayloadVersion)
    throw DecodeError("version", "got " + std::to_string(in[4]) + ", expected " +
                                     std::to_string(kPayloadVersion));
  if (load_le32(in + kChecksumOffset) != fnv1a32(in, kChecksumOffset))
    throw DecodeError("checksum", "header checksum mismatch (corrupted header)");
  PayloadHeader header;
  header.codec = static_cast<CodecId>(in[5]);
  header.flags = load_le16(in + 6);
  for (int i = 0; i < 4; ++i) header.params[i] = load_le32(in + 8 + 4 * i);
  header.element_count = load_le64(in + 24);
  header.body_bytes = load_le64(in + 32);
  if (header.body_bytes != size - kPayloadHeaderBytes)
    throw DecodeError("body_bytes", "header says " + std::to_string(header.body_bytes) +
                                        " body bytes, buffer holds " +
                                        std::to_string(size - kPayloadHeaderBytes));
  return header;
}

}  // namespace cmpi::compress
