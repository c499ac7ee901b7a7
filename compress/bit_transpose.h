// 32x32 bit-matrix transposition of blocks of 32 words, the stage of MPC that
// gathers bit i of 32 consecutive values into one word, so that bit planes
// that are constant across the block (sign, exponent, leading zeros of small
// differences) become all-zero or all-one words.
//
// For each block: out[i] bit k = in[k] bit i (bit 0 = least significant).
// The transposition is its own inverse.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/simd_level.h"

namespace cmpi::compress {

constexpr size_t kTransposeBlockWords = 32;

// Transposes nblocks consecutive blocks of 32 words from in to out; in may
// equal out (each block is read whole before it is written). `level` must be
// supported by this CPU (simd_level_supported).
void bit_transpose_32x32(const uint32_t* in, uint32_t* out, size_t nblocks, SimdLevel level);

}  // namespace cmpi::compress
