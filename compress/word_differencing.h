// The two differencing stages of MPC and their inverses, on 32-bit words with
// wrap-around (mod 2^32) arithmetic, so every bit pattern round-trips:
//
// - at a stride: d[i] = w[i] - w[i - stride], with w taken as 0 before the
//   start of the span (the chunk). Stride = the data's dimensionality, so that
//   each value is predicted by the previous value of the same component.
// - within blocks of 32 words: d[j] = t[j] - t[j - 1] for j = 1..31 and
//   d[0] = t[0]; applied to bit-transposed blocks, where equal neighbouring
//   bit planes (e.g. the sign-extension planes of small differences) become 0.
//
// Each inverse is a prefix sum (running sum at the stride, or restarting at
// every block).
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/simd_level.h"

namespace cmpi::compress {

// A word that may alias any object (the caller's floats are read and written
// as their bit patterns).
using AliasedWord = uint32_t __attribute__((may_alias));

// d[i - begin] = w[i] - (i >= stride ? w[i - stride] : 0) for i in [begin, end),
// where w points at the start of the span. stride >= 1.
void difference_at_stride(const AliasedWord* w, size_t begin, size_t end, unsigned stride,
                          uint32_t* d, SimdLevel level);

// w[i] = d[i - begin] + (i >= stride ? w[i - stride] : 0) for i in [begin, end),
// in increasing i, so w[0..begin) must already hold the decoded words.
void undo_difference_at_stride(const uint32_t* d, size_t begin, size_t end, unsigned stride,
                               AliasedWord* w, SimdLevel level);

// d = the lag-1 difference of t inside each of nblocks blocks of 32 words.
// t and d must not overlap.
void difference_within_blocks(const uint32_t* t, size_t nblocks, uint32_t* d, SimdLevel level);

// In place: the running sum of each block of 32 words (the inverse of
// difference_within_blocks).
void undo_difference_within_blocks(uint32_t* words, size_t nblocks, SimdLevel level);

}  // namespace cmpi::compress
