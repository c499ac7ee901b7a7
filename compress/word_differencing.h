// The two differencing stages of MPC and their inverses, on 32-bit words with
// wrap-around (mod 2^32) arithmetic, so every bit pattern round-trips:
//
// - at a stride: d[i] = (w[i] - w[i - stride]) ^ reference, with w taken as 0
//   before the start of the span (the chunk). Stride = the data's
//   dimensionality, so that each value is predicted by the previous value of
//   the same component; stride 0 predicts nothing, for data whose neighbours
//   do not predict each other, and rotates each word left by one instead,
//   d = rotl(w, 1) ^ reference: a float's sign (noise in such data) moves
//   below the mantissa and its exponent becomes the top bits. The reference
//   word (0 in plain MPC) flips the bits that are set in most differences, so
//   that every bit plane of the next stage is mostly zero.
// - within blocks of 32 words: d[j] = t[j] - t[j - 1] for the words
//   j >= first_lagged (1..32; 32 = none), d[j] = t[j] below; applied to
//   bit-transposed blocks, where equal neighbouring bit planes (e.g. the
//   sign-extension planes of small differences) become 0. Plain MPC lags
//   every word from 1 on.
//
// Each inverse is a prefix sum (running sum at the stride, or restarting at
// every block from word first_lagged - 1).
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/simd_level.h"

namespace cmpi::compress {

// A word that may alias any object (the caller's floats are read and written
// as their bit patterns).
using AliasedWord = uint32_t __attribute__((may_alias));

// d[i - begin] = (w[i] - w[i - stride]) ^ reference for i in [begin, end), with
// w[i - stride] = 0 for i < stride; for stride 0, d[i - begin] = rotl(w[i], 1) ^
// reference. w points at the start of the span.
void difference_at_stride(const AliasedWord* w, size_t begin, size_t end, unsigned stride,
                          uint32_t reference, uint32_t* d, SimdLevel level);

// The inverse: w[i] = (d[i - begin] ^ reference) + w[i - stride] (or
// rotr(d[i - begin] ^ reference, 1) for stride 0) for i in [begin, end), in
// increasing i, so w[0..begin) must already hold the decoded words.
void undo_difference_at_stride(const uint32_t* d, size_t begin, size_t end, unsigned stride,
                               uint32_t reference, AliasedWord* w, SimdLevel level);

// Inside each of nblocks blocks of 32 words: d[j] = t[j] - t[j - 1] for
// j >= first_lagged, d[j] = t[j] for j < first_lagged (1 <= first_lagged <= 32).
// t and d must not overlap.
void difference_within_blocks(const uint32_t* t, size_t nblocks, unsigned first_lagged, uint32_t* d,
                              SimdLevel level);

// In place, the inverse of difference_within_blocks: the running sum of each
// block from word first_lagged - 1 on.
void undo_difference_within_blocks(uint32_t* words, size_t nblocks, unsigned first_lagged,
                                   SimdLevel level);

}  // namespace cmpi::compress
