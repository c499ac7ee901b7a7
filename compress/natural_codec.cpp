// Encode and decode run in blocks of kBlock values: draw the block's random
// numbers, map values to codes (quantize_kernels: integer only, no log2 and
// no float arithmetic: split the float's bits into sign, exponent and
// mantissa, add one to the exponent if the random 23 bits fall below the
// mantissa, fix up the special codes with selects), then bit-pack them.
#include "compress/natural_codec.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "compress/bit_packing.h"
#include "compress/quantize_kernels.h"

namespace cmpi::compress {
namespace {

constexpr size_t kBlock = 1024;
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
    random_.fill(u23, len, 23);
    kernels::natural_encode(in + start, len, u23, codes);
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
    kernels::natural_decode(codes, len, out + start);
  }
}

std::vector<uint64_t> NaturalCodec::random_state() const {
  return random_.state();
}

void NaturalCodec::restore_random_state(const std::vector<uint64_t>& words) {
  random_.set_state(words, "codec " + spec().to_string());
}

}  // namespace cmpi::compress
