// The payload header (compress/payload.h) as the device writes and checks
// it. The host builds everything it knows before the launch (magic, version,
// codec, flags, params, element count) with write_payload_header into a
// 48-byte template; the device fills in what only it knows, the body size,
// and the checksum over both. Decoding compares a payload's header with the
// template the decoder's own settings give, so a header is accepted only if
// it is the one this decoder would have written for that body size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/host_device.h"

namespace cmpi::compress::cuda {

constexpr size_t kHeaderBytes = 48;
constexpr size_t kHeaderBodyBytesOffset = 32;
constexpr size_t kHeaderChecksumOffset = 40;

struct HeaderTemplate {
  uint8_t bytes[kHeaderBytes];
};

CMPI_HD inline uint32_t header_checksum(const uint8_t* header) {
  uint32_t h = 2166136261u;  // FNV-1a, as payload.cpp
  for (size_t i = 0; i < kHeaderChecksumOffset; ++i) {
    h ^= header[i];
    h *= 16777619u;
  }
  return h;
}

// Copies the template to out and completes it for a body of body_bytes.
CMPI_HD inline void finish_payload_header(const HeaderTemplate& header, uint64_t body_bytes,
                                          uint8_t* out) {
  for (size_t i = 0; i < kHeaderBytes; ++i) out[i] = header.bytes[i];
  hd::store_le64(out + kHeaderBodyBytesOffset, body_bytes);
  hd::store_le32(out + kHeaderChecksumOffset, header_checksum(out));
  hd::store_le32(out + 44, 0);
}

// Why a device decoder refuses a payload (0: it does not). The host wrapper
// turns a code into DecodeError naming the part.
enum DeviceDecodeStatus : uint32_t {
  kDecodeOk = 0,
  kDecodeBadHeader = 1,      // not the header this decoder writes for `size` bytes
  kDecodeBadChunkTable = 2,  // chunk sizes inconsistent with the body
  kDecodeBadChunk = 3,       // a chunk's contents inconsistent
};

// Whether in[0..size) starts with the header `expected` would give a body of
// size - 48 bytes (every field but body size and checksum compared as bytes).
CMPI_HD inline bool payload_header_matches(const HeaderTemplate& expected, const uint8_t* in,
                                           uint64_t size) {
  if (size < kHeaderBytes) return false;
  for (size_t i = 0; i < kHeaderBodyBytesOffset; ++i)
    if (in[i] != expected.bytes[i]) return false;
  return hd::load_le64(in + kHeaderBodyBytesOffset) == size - kHeaderBytes &&
         hd::load_le32(in + kHeaderChecksumOffset) == header_checksum(in);
}

}  // namespace cmpi::compress::cuda
