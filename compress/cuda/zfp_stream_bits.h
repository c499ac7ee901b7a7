// Placing one block's bits (zfp_block_coder.h) at bit b * maxbits of a
// fixed-rate stream, and reading them back. Streams are LSB first: bit i of
// the stream is bit i % 8 of byte i / 8, so on a little-endian machine it is
// bit i % 32 of the aligned 32-bit word holding that byte.
//
// Two ways to store, because neighbouring blocks may share a word:
//   - zfp_or_block: any maxbits and any byte address. The block's bits are
//     ORed into the aligned 32-bit words they overlap; on the device with
//     atomicOr, since the block before or after may be ORing into the same
//     word at the same time. The stream must be zeroed first, and words that
//     would receive only zero bits are left untouched.
//   - zfp_store_block_words: maxbits a multiple of 32 and a 4-byte aligned
//     block start: the block owns whole words, written with plain stores and
//     no zeroing (the common rates 8, 16, 24, 32).
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/cuda/zfp_block_coder.h"
#include "compress/host_device.h"

namespace cmpi::compress::cuda {

// Bits [first, first + count) of the block, count <= 32, first + count <= 128.
CMPI_HD inline uint32_t zfp_block_bit_field(const ZfpBlockBits& bits, uint32_t first,
                                            uint32_t count) {
  return static_cast<uint32_t>(zfp_bits_at(bits, first, count));
}

// word |= value for the 4-byte aligned word at p.
CMPI_HD inline void zfp_or_word(uint8_t* p, uint32_t value) {
#if defined(__CUDA_ARCH__)
  atomicOr(reinterpret_cast<unsigned int*>(p), value);
#else
  uint32_t word;
  std::memcpy(&word, p, 4);
  word |= value;
  std::memcpy(p, &word, 4);
#endif
}

// ORs the first maxbits bits of `bits` into stream bits [bit, bit + maxbits).
CMPI_HD inline void zfp_or_block(uint8_t* stream, size_t bit, const ZfpBlockBits& bits,
                                 uint32_t maxbits) {
  // Work in the aligned words around the block's first byte.
  uint8_t* const first_byte = stream + bit / 8;
  const uintptr_t misalignment = reinterpret_cast<uintptr_t>(first_byte) & 3u;
  uint8_t* word = first_byte - misalignment;
  uint32_t offset = static_cast<uint32_t>(misalignment * 8 + bit % 8);  // block bit 0 in `word`
  uint32_t done = 0;
  while (done < maxbits) {
    const uint32_t take = hd::min_of(32u - offset, maxbits - done);
    const uint32_t field = zfp_block_bit_field(bits, done, take);
    if (field != 0) zfp_or_word(word, field << offset);
    done += take;
    offset = 0;
    word += 4;
  }
}

// Stores the block as maxbits / 32 whole little-endian words at the 4-byte
// aligned address of stream bit `bit` (bit % 32 == 0, maxbits % 32 == 0).
CMPI_HD inline void zfp_store_block_words(uint8_t* stream, size_t bit, const ZfpBlockBits& bits,
                                          uint32_t maxbits) {
  uint8_t* out = stream + bit / 8;
  for (uint32_t done = 0; done < maxbits; done += 32, out += 4) {
    const uint32_t field = zfp_block_bit_field(bits, done, 32);
#if defined(__CUDA_ARCH__)
    *reinterpret_cast<uint32_t*>(out) = field;
#else
    std::memcpy(out, &field, 4);
#endif
  }
}

// Stream bits [bit, bit + maxbits) as a block; reads only the bytes holding
// them. Where the block owns whole aligned words (maxbits and bit multiples
// of 32, the word's address 4-byte aligned) it reads them as words.
CMPI_HD inline ZfpBlockBits zfp_load_block(const uint8_t* stream, size_t bit, uint32_t maxbits) {
  ZfpBlockBits bits;
  const uint8_t* first = stream + bit / 8;
  if (maxbits % 32 == 0 && bit % 32 == 0 && (reinterpret_cast<uintptr_t>(first) & 3u) == 0) {
    for (uint32_t done = 0; done < maxbits; done += 32) {
#if defined(__CUDA_ARCH__)
      const uint32_t word = *reinterpret_cast<const uint32_t*>(first + done / 8);
#else
      uint32_t word;
      std::memcpy(&word, first + done / 8, 4);  // the stream is little-endian, as the host
#endif
      zfp_or_bits_at(bits, done, word, 32);
    }
    return bits;
  }
  // Byte i holds block bits [8 * i - shift, 8 * i - shift + 8).
  const uint32_t shift = static_cast<uint32_t>(bit % 8);
  const size_t bytes = (shift + maxbits + 7) / 8;
  zfp_or_bits_at(bits, 0, uint64_t{first[0]} >> shift, 8 - shift);
  for (size_t i = 1; i < bytes; ++i)
    zfp_or_bits_at(bits, static_cast<uint32_t>(8 * i - shift), first[i], 8);
  // Clear what the last byte held past the block.
  if (maxbits < 64) {
    bits.word[0] &= (uint64_t{1} << maxbits) - 1, bits.word[1] = 0;
  } else if (maxbits < 128) {
    bits.word[1] &= (uint64_t{1} << (maxbits - 64)) - 1;
  }
  return bits;
}

}  // namespace cmpi::compress::cuda
