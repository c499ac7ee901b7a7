#include "compress/payload.h"

#include <cstring>

namespace cmpi::compress {
namespace {

void put_u16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}
void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint16_t get_u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

constexpr size_t kChecksumOffset = 40;

}  // namespace

const char* codec_id_name(CodecId id) {
  switch (id) {
    case CodecId::kIdentity: return "identity";
    case CodecId::kZfp: return "zfp";
    case CodecId::kMpc: return "mpc";
    case CodecId::kFp16: return "fp16";
    case CodecId::kBf16: return "bf16";
    case CodecId::kTopK: return "topk";
    case CodecId::kRandomK: return "randomk";
    case CodecId::kThreshold: return "threshold";
    case CodecId::kQsgd: return "qsgd";
    case CodecId::kNatural: return "natural";
    case CodecId::kSign: return "sign";
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
  put_u32(out + 0, kPayloadMagic);
  out[4] = kPayloadVersion;
  out[5] = static_cast<uint8_t>(header.codec);
  put_u16(out + 6, header.flags);
  for (int i = 0; i < 4; ++i) put_u32(out + 8 + 4 * i, header.params[i]);
  put_u64(out + 24, header.element_count);
  put_u64(out + 32, header.body_bytes);
  put_u32(out + kChecksumOffset, fnv1a32(out, kChecksumOffset));
  put_u32(out + 44, 0);
}

PayloadHeader read_payload_header(const uint8_t* in, size_t size) {
  if (in == nullptr && size != 0) throw DecodeError("buffer", "null pointer");
  if (size < kPayloadHeaderBytes)
    throw DecodeError("header", "payload of " + std::to_string(size) +
                                    " bytes is shorter than the " +
                                    std::to_string(kPayloadHeaderBytes) + "-byte header");
  if (get_u32(in) != kPayloadMagic) throw DecodeError("magic", "not a cmpi payload");
  if (in[4] != kPayloadVersion)
    throw DecodeError("version", "got " + std::to_string(in[4]) + ", expected " +
                                     std::to_string(kPayloadVersion));
  if (get_u32(in + kChecksumOffset) != fnv1a32(in, kChecksumOffset))
    throw DecodeError("checksum", "header checksum mismatch (corrupted header)");
  PayloadHeader header;
  header.codec = static_cast<CodecId>(in[5]);
  header.flags = get_u16(in + 6);
  for (int i = 0; i < 4; ++i) header.params[i] = get_u32(in + 8 + 4 * i);
  header.element_count = get_u64(in + 24);
  header.body_bytes = get_u64(in + 32);
  if (header.body_bytes != size - kPayloadHeaderBytes)
    throw DecodeError("body_bytes", "header says " + std::to_string(header.body_bytes) +
                                        " body bytes, buffer holds " +
                                        std::to_string(size - kPayloadHeaderBytes));
  return header;
}

}  // namespace cmpi::compress
