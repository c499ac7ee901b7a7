// Bit packing: unsigned integers of a fixed width (0..32 bits) stored back to
// back in a little-endian bit stream. Value j occupies stream bits
// [j*width, (j+1)*width), and stream bit b is bit (b % 8) of byte b / 8, so
// the stream is the same on every little-endian host and needs no header.
//
// The hot loops work on groups of 64 values, which fill exactly `width`
// 64-bit words; the width is a template constant there, so every shift and
// word index is known at compile time and the group unrolls to straight-line
// shifts and ors (no per-value branches). A group of 8 values always ends on
// a byte boundary, so callers may pack a long stream block by block (blocks
// of a multiple of 8 values) and concatenate the results.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cmpi::compress {

constexpr unsigned kMaxPackWidth = 32;

// Bytes needed for `count` values of `width` bits.
constexpr size_t packed_bytes(size_t count, unsigned width) {
  return (count * width + 7) / 8;
}

// Smallest width that holds `max_value` (0 for 0).
unsigned bit_width_of(uint64_t max_value);

// Packs values[0..count) into out[0..packed_bytes(count, width)). Bits of a
// value above `width` are ignored. The unused high bits of the last byte are
// written as zero. width must be <= kMaxPackWidth (std::invalid_argument).
void pack_bits(const uint32_t* values, size_t count, unsigned width, uint8_t* out);

// Inverse of pack_bits: reads exactly packed_bytes(count, width) bytes.
void unpack_bits(const uint8_t* in, size_t count, unsigned width, uint32_t* out);

// True if the bits after the last value in the final byte are all zero, as
// pack_bits writes them; decoders use it to reject corrupted streams.
bool packed_padding_is_zero(const uint8_t* in, size_t count, unsigned width);

}  // namespace cmpi::compress
