// Zero-byte elimination: the finer-grained variant of MPC's zero-word
// elimination for the bit planes that are mostly, but not entirely, zero
// (e.g. an exponent bit that is set in 1 value of 20). A 32-bit plane word of
// such a plane is rarely zero as a whole, but many of its bytes (8 values
// each) are. Per block of 32 words, the words [first, last) become a mask of
// 4 bits per word (bit 4 * (j - first) + k set = byte k of word j is nonzero)
// plus their nonzero bytes in order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/simd_level.h"

namespace cmpi::compress {

// The most words per block that one 64-bit mask describes.
constexpr unsigned kMaxZeroByteWords = 16;

// Packing stores every byte at the cursor and unpacking reads one at the
// cursor whether it is used or not: the packed stream needs this many bytes
// of slack past its end (writable when packing, readable when unpacking).
constexpr size_t kZeroByteSlack = 8;

// Writes masks[0..nblocks) and the nonzero bytes of words [first, last) of
// each block of in[0..32*nblocks) to packed (room for their count +
// kZeroByteSlack bytes). last - first <= kMaxZeroByteWords. Returns the count.
size_t pack_nonzero_bytes(const uint32_t* in, size_t nblocks, unsigned first, unsigned last,
                          uint64_t* masks, uint8_t* packed, SimdLevel level);

// Inverse: words [first, last) of each block of out[0..32*nblocks) from the
// masks and packed bytes (which must hold the masks' popcount bytes plus
// kZeroByteSlack readable bytes); the other words are left as they are.
void unpack_nonzero_bytes(const uint64_t* masks, const uint8_t* packed, size_t nblocks,
                          unsigned first, unsigned last, uint32_t* out, SimdLevel level);

}  // namespace cmpi::compress
