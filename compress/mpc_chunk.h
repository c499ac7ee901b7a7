// One chunk of the mpc codec: the MPC transform of up to a few million words,
// independent of every other chunk (see mpc_chunk.cpp for the format).
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/simd_level.h"

namespace cmpi::compress {

// An encoded chunk is never larger than its raw words: chunks that would
// grow are stored raw.
inline size_t mpc_max_chunk_bytes(size_t words) {
  return 4 * words;
}

// Encodes the bit patterns of in[0..words) (words >= 1), differenced at
// stride `dim` (1..32), into out[0..mpc_max_chunk_bytes(words)); returns
// the bytes written.
size_t mpc_encode_chunk(const float* in, size_t words, unsigned dim, uint8_t* out, SimdLevel level);

// Decodes a chunk of exactly `size` bytes into out[0..words). Throws
// DecodeError("body", ...) naming `chunk_index` and the inconsistency; reads
// only in[0..size) and writes only out[0..words).
void mpc_decode_chunk(const uint8_t* in, size_t size, float* out, size_t words, unsigned dim,
                      size_t chunk_index, SimdLevel level);

}  // namespace cmpi::compress
