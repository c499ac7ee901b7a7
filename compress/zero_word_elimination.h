// Zero-word elimination, MPC's final stage: each block of 32 words becomes a
// 32-bit bitmap (bit j set = word j is kept) plus its kept words in order.
// After the differencing and bit-transposition stages most words of smooth or
// low-entropy data are zero, so this is where the bytes are saved. A word is
// kept when it is nonzero, and two masks adjust that per word position: `keep`
// forces words that are nearly always nonzero into the output (their bitmap
// bits are then known and need not be stored), `skip` leaves words out
// whatever their value (another stage stores them).
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/simd_level.h"

namespace cmpi::compress {

// SIMD variants move whole vectors: the packed stream must have this many
// words of slack past its end, writable when packing and readable when
// unpacking (the slack's contents are ignored).
constexpr size_t kZeroPackSlackWords = 8;

// For each block b, bitmaps[b] = ((nonzero words) | keep) & ~skip; writes the
// words of in[0..32*nblocks) marked there to packed (room for their count +
// kZeroPackSlackWords words). Returns the count.
size_t pack_nonzero_words(const uint32_t* in, size_t nblocks, uint32_t keep, uint32_t skip,
                          uint32_t* bitmaps, uint8_t* packed, SimdLevel level);

// Inverse: out[0..32*nblocks) from the bitmaps and packed words (unmarked
// words are 0), which must hold sum(popcount(bitmaps)) words plus
// kZeroPackSlackWords readable words.
void unpack_nonzero_words(const uint32_t* bitmaps, const uint8_t* packed, size_t nblocks,
                          uint32_t* out, SimdLevel level);

}  // namespace cmpi::compress
