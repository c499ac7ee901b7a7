// Encode and decode run in blocks of kBlock values through the bit packer;
// the per-value work is integer only (no log2, no float arithmetic): split
// the float's bits into sign, exponent and mantissa, add one to the exponent
// if the random 23 bits fall below the mantissa, and fix up the few special
// codes with selects.
#include "compress/natural_codec.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "compress/bit_packing.h"

namespace cmpi::compress {
namespace {

constexpr size_t kBlock = 1024;
constexpr uint32_t kNanCode = 0x100;
constexpr uint32_t kQuietNan = 0x7fc00000u;

void encode_block(const float* x, size_t len, const uint32_t* u23, uint32_t* codes) {
  for (size_t j = 0; j < len; ++j) {
    uint32_t bits;
    std::memcpy(&bits, x + j, 4);
    const uint32_t sign = bits >> 31;
    const uint32_t exponent = (bits >> 23) & 0xff;
    const uint32_t mantissa = bits & 0x7fffff;
    // Round up with probability mantissa / 2^23; never past 2^127 (254), and
    // infinities/NaN (255) keep their exponent.
    const uint32_t up = uint32_t(u23[j] < mantissa) & uint32_t(exponent < 254);
    const uint32_t e8 = exponent + up;
    uint32_t code = e8 == 0 ? 0 : (sign << 8) | e8;
    code = (exponent == 255 && mantissa != 0) ? kNanCode : code;
    codes[j] = code;
  }
}

void decode_block(const uint32_t* codes, size_t len, float* out) {
  for (size_t j = 0; j < len; ++j) {
    const uint32_t c = codes[j];
    uint32_t bits = ((c & 0x100) << 23) | ((c & 0xff) << 23);
    bits = c == kNanCode ? kQuietNan : bits;
    std::memcpy(out + j, &bits, 4);
  }
}

}  // namespace

NaturalCodec::NaturalCodec(const CodecSpec& spec)
    : Codec(spec), random_(uint64_t(spec.get_int("seed", 0))) {
  spec.require_only({"seed"});
}

size_t NaturalCodec::max_body_bytes(size_t n) const {
  return packed_bytes(n, kNaturalCodeBits);
}

size_t NaturalCodec::encode_body(const float* in, size_t n, uint8_t* out, size_t, uint16_t&) {
  uint32_t u23[kBlock];
  uint32_t codes[kBlock];
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t len = std::min(kBlock, n - start);
    for (size_t j = 0; j < len; j += 2) {
      const uint64_t r = random_.next();
      u23[j] = uint32_t(r) & 0x7fffffu;
      u23[j + 1] = uint32_t(r >> 32) & 0x7fffffu;  // kBlock is even
    }
    encode_block(in + start, len, u23, codes);
    pack_bits(codes, len, kNaturalCodeBits, out + packed_bytes(start, kNaturalCodeBits));
  }
  return packed_bytes(n, kNaturalCodeBits);
}

void NaturalCodec::decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                               uint16_t flags) const {
  if (flags != 0) throw DecodeError("flags", "natural payload has flags set");
  if (n > std::numeric_limits<size_t>::max() / 16 || size != packed_bytes(n, kNaturalCodeBits))
    throw DecodeError("body", "natural body of " + std::to_string(size) + " bytes for " +
                                  std::to_string(n) + " values (expected " +
                                  std::to_string(packed_bytes(n, kNaturalCodeBits)) + ")");
  if (!packed_padding_is_zero(in, n, kNaturalCodeBits))
    throw DecodeError("body", "natural code stream has nonzero padding bits");
  uint32_t codes[kBlock];
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t len = std::min(kBlock, n - start);
    unpack_bits(in + packed_bytes(start, kNaturalCodeBits), len, kNaturalCodeBits, codes);
    decode_block(codes, len, out + start);
  }
}

}  // namespace cmpi::compress
