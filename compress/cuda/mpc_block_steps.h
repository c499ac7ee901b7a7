// The per-block stages of the mpc codec (compress/mpc_chunk.cpp describes
// the format) as CMPI_HD functions on one block of 32 words, the unit a
// device thread works on. They compute what the CPU's word_differencing,
// bit_transpose and zero_word/zero_byte_elimination compute, scalar and
// without SIMD; the CPU tests check them against those functions.
//
//   stage 1  mpc_difference_block: d[i] = (w[i] - w[i - s]) ^ R over the
//            chunk's words (w = 0 before the chunk), or rotl(w[i], 1) ^ R for
//            s = 0; the block's lanes past the chunk's end are 0 (not R).
//   stage 2  mpc_transpose_block: plane j collects bit j of the 32 words.
//            Five rounds of swapping off-diagonal sub-blocks (16x16, 8x8,
//            ..., 1x1 bits), each a shift, XOR and mask per word pair.
//   stage 3  mpc_lag_block: d[j] -= d[j - 1] for the planes j >= c, from the
//            top down so that each plane is taken minus the original plane
//            below; mpc_unlag_block is the running sum from plane c - 1 on.
//   stage 4  the presence of a block: a bitmap bit per kept word (planes
//            stored whole, plus the nonzero planes >= b) and 4 mask bits per
//            byte plane in [a, b) (bit 4 * (j - a) + k: byte k of plane j is
//            nonzero).
#pragma once

#include <cstdint>

#include "compress/host_device.h"

namespace cmpi::compress::cuda {

constexpr uint32_t kMpcBlockWords = 32;

CMPI_HD inline uint32_t mpc_low_planes(unsigned count) {
  return count >= 32 ? ~0u : (1u << count) - 1;
}

CMPI_HD inline uint32_t mpc_rotate_sign_down(uint32_t x) {
  return (x << 1) | (x >> 31);
}

CMPI_HD inline uint32_t mpc_rotate_sign_up(uint32_t x) {
  return (x >> 1) | (x << 31);
}

// Stage 1 for block `block` of a chunk of `words` floats at w (their bit
// patterns): d[0..32), lanes at or past the chunk's end zero. Returns the
// lanes that hold values as a mask (bit i: word 32 * block + i exists).
CMPI_HD inline uint32_t mpc_difference_block(const float* w, uint64_t words, uint64_t block,
                                             unsigned stride, uint32_t reference, uint32_t* d) {
  const uint64_t begin = kMpcBlockWords * block;
  uint32_t valid = 0;
  for (uint32_t i = 0; i < kMpcBlockWords; ++i) {
    const uint64_t at = begin + i;
    if (at >= words) {
      d[i] = 0;
      continue;
    }
    valid |= 1u << i;
    if (stride == 0) {
      d[i] = mpc_rotate_sign_down(hd::bits_of(w[at])) ^ reference;
    } else {
      const uint32_t before = at >= stride ? hd::bits_of(w[at - stride]) : 0u;
      d[i] = (hd::bits_of(w[at]) - before) ^ reference;
    }
  }
  return valid;
}

// Stage 2 in place (its own inverse): a[j] bit k becomes a[k] bit j.
CMPI_HD inline void mpc_transpose_block(uint32_t* a) {
  const uint32_t masks[5] = {0x0000FFFFu, 0x00FF00FFu, 0x0F0F0F0Fu, 0x33333333u, 0x55555555u};
  unsigned round = 0;
  for (unsigned j = 16; j != 0; j >>= 1, ++round) {
    const uint32_t m = masks[round];
    for (unsigned k = 0; k < 32; k = ((k | j) + 1) & ~j) {
      // Swap the high j-bit halves of row k with the low halves of row k + j.
      const uint32_t t = ((a[k] >> j) ^ a[k | j]) & m;
      a[k | j] ^= t;
      a[k] ^= t << j;
    }
  }
}

// Stage 3 in place, first_lagged in 1..32.
CMPI_HD inline void mpc_lag_block(uint32_t* planes, unsigned first_lagged) {
  for (unsigned j = 31; j >= first_lagged; --j) planes[j] -= planes[j - 1];
}

CMPI_HD inline void mpc_unlag_block(uint32_t* planes, unsigned first_lagged) {
  for (unsigned j = first_lagged; j < 32; ++j) planes[j] += planes[j - 1];
}

// Stage 4: the block's bitmap of kept words, ((nonzero) | whole) & ~per_byte.
CMPI_HD inline uint32_t mpc_word_bitmap(const uint32_t* planes, uint32_t whole, uint32_t per_byte) {
  uint32_t nonzero = 0;
  for (uint32_t j = 0; j < 32; ++j) nonzero |= uint32_t(planes[j] != 0) << j;
  return (nonzero | whole) & ~per_byte;
}

// Stage 4: the byte mask of planes [first, last) (last - first <= 16).
CMPI_HD inline uint64_t mpc_byte_mask(const uint32_t* planes, unsigned first, unsigned last) {
  uint64_t mask = 0;
  for (unsigned j = first; j < last; ++j)
    for (unsigned k = 0; k < 4; ++k)
      mask |= uint64_t(((planes[j] >> (8 * k)) & 0xFFu) != 0) << (4 * (j - first) + k);
  return mask;
}

// count (<= 62) bits at bit position `bit` of an LSB-first bit string,
// reading only the bytes that hold them.
CMPI_HD inline uint64_t mpc_read_bits(const uint8_t* p, uint64_t bit, unsigned count) {
  if (count == 0) return 0;
  const uint8_t* at = p + bit / 8;
  const unsigned shift = unsigned(bit % 8);
  const unsigned nbytes = (shift + count + 7) / 8;
  uint64_t v = at[0] >> shift;
  for (unsigned i = 1; i < nbytes; ++i) v |= uint64_t(at[i]) << (8 * i - shift);
  return count >= 64 ? v : v & ((uint64_t{1} << count) - 1);
}

// ORs count (<= 62) bits of v in at bit position `bit` (the bytes were zeroed).
CMPI_HD inline void mpc_or_bits(uint8_t* p, uint64_t bit, uint64_t v, unsigned count) {
  if (count == 0) return;
  uint8_t* at = p + bit / 8;
  const unsigned shift = unsigned(bit % 8);
  const unsigned nbytes = (shift + count + 7) / 8;
  at[0] |= uint8_t(v << shift);
  for (unsigned i = 1; i < nbytes; ++i) at[i] |= uint8_t(v >> (8 * i - shift));
}

}  // namespace cmpi::compress::cuda
