// The self-describing payload every codec writes: a fixed 48-byte header
// followed by the codec's body. The header carries what a receiver needs to
// reject bytes that are not what it expects (magic, version, codec id, the
// codec's parameters, element count, body size) and a checksum over itself,
// so a corrupted header is reported as such instead of being trusted.
//
//   offset  size  field
//   0       4     magic          'C','M','P','Z'
//   4       1     version        kPayloadVersion
//   5       1     codec          CodecId
//   6       2     flags          codec-defined bits
//   8       16    params[4]      codec parameters (u32 each), checked on decode
//   24      8     element_count  number of floats encoded
//   32      8     body_bytes     bytes after the header
//   40      4     checksum       FNV-1a of bytes 0..39
//   44      4     reserved       zero
// All integers little-endian.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace cmpi::compress {

enum class CodecId : uint8_t {
  kIdentity = 1,
  kZfp = 2,
  kMpc = 3,
  kFp16 = 4,
  kBf16 = 5,
  kTopK = 6,
  kRandomK = 7,
  kThreshold = 8,
  kQsgd = 9,
  kNatural = 10,
  kSign = 11,
  kSidco = 12,
  kBlockSparse = 13,
  kFp8 = 14,
};

const char* codec_id_name(CodecId id);

// Raised by decode on any byte string it cannot accept; `field()` names the
// header field or body part at fault ("magic", "codec", "body_bytes", "body").
class DecodeError : public std::runtime_error {
 public:
  DecodeError(std::string field, const std::string& what)
      : std::runtime_error("decode: " + field + ": " + what), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

constexpr uint32_t kPayloadMagic = 0x5a504d43u;  // "CMPZ" read little-endian
constexpr uint8_t kPayloadVersion = 1;
constexpr size_t kPayloadHeaderBytes = 48;

struct PayloadHeader {
  CodecId codec = CodecId::kIdentity;
  uint16_t flags = 0;
  std::array<uint32_t, 4> params{};
  uint64_t element_count = 0;
  uint64_t body_bytes = 0;
};

// Writes the header into out[0..48).
void write_payload_header(const PayloadHeader& header, uint8_t* out);

// Reads and validates the header of a payload of `size` bytes: magic,
// version, checksum, and that header + body fit in `size` exactly.
// Throws DecodeError naming the field at fault.
PayloadHeader read_payload_header(const uint8_t* in, size_t size);

uint32_t fnv1a32(const uint8_t* data, size_t n);

}  // namespace cmpi::compress
