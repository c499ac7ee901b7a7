// One chunk of the mpc codec: the MPC transform of up to a few million words,
// independent of every other chunk (see mpc_chunk.cpp for the format).
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/mpc_chunk_plan.h"
#include "compress/simd_level.h"

namespace cmpi::compress {

// An encoded chunk is never larger than its raw words: chunks that would
// grow are stored raw.
inline size_t mpc_max_chunk_bytes(size_t words) {
  return 4 * words;
}

// Encodes the bit patterns of in[0..words) (words >= 1) into
// out[0..mpc_max_chunk_bytes(words)) with the plan choose_mpc_plan picks for
// `dim` (1..32, or 0 for auto); returns the bytes written.
size_t mpc_encode_chunk(const float* in, size_t words, unsigned dim, uint8_t* out, SimdLevel level);

// The same with a given plan (one mpc_plan_problem accepts).
size_t mpc_encode_chunk_with_plan(const float* in, size_t words, const MpcChunkPlan& plan,
                                  uint8_t* out, SimdLevel level);

// Decodes a chunk of exactly `size` bytes into out[0..words). Throws
// DecodeError("body", ...) naming `chunk_index` and the inconsistency; reads
// only in[0..size) and writes only out[0..words).
void mpc_decode_chunk(const uint8_t* in, size_t size, float* out, size_t words, size_t chunk_index,
                      SimdLevel level);

}  // namespace cmpi::compress
