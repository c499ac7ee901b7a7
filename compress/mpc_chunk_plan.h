// The plan of one mpc chunk: the choices that MPC's four stages leave open,
// made per chunk by the encoder from a sample of the chunk and stored in the
// chunk's first bytes, so that the decoder needs nothing else.
//
//   stage 1 (differencing): the stride (0 = none: the words are rotated
//           left by one instead) and a reference word XORed into every
//           difference;
//   stage 3 (lag-1 difference of bit planes): the first plane differenced;
//   stage 4 (zero elimination): which planes are stored whole, which
//           zero-eliminated per byte and which per word.
//
// Plain MPC at stride dim is {dim, 0, 1, 0, 0}.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "compress/simd_level.h"

namespace cmpi::compress {

struct MpcChunkPlan {
  unsigned stride = 1;        // 0 (no differencing, sign rotated to bit 0) .. 32
  uint32_t reference = 0;     // XORed into every stage-1 output word
  unsigned first_lagged = 1;  // planes [first_lagged, 32) minus the plane below; 1..32
  // Planes [0, first_byte_plane) are stored whole (no bitmap bit), planes
  // [first_byte_plane, first_word_plane) are zero-eliminated per byte, planes
  // [first_word_plane, 32) per word.
  unsigned first_byte_plane = 0;
  unsigned first_word_plane = 0;

  bool operator==(const MpcChunkPlan& o) const {
    return stride == o.stride && reference == o.reference && first_lagged == o.first_lagged &&
           first_byte_plane == o.first_byte_plane && first_word_plane == o.first_word_plane;
  }
};

// At most this many byte-eliminated planes: a block's presence bits (below)
// are then at most 62, read as two fields of at most 32 and 40 bits.
constexpr unsigned kMaxBytePlanes = 10;

// Bytes of a plan in the chunk: u8 stride, u8 first_lagged, u8
// first_byte_plane, u8 first_word_plane, u32 reference.
constexpr size_t kMpcPlanBytes = 8;

// Presence bits per block of 32 words: a bit per word-eliminated plane, 4 per
// byte-eliminated plane.
inline unsigned presence_bits(const MpcChunkPlan& plan) {
  return (32 - plan.first_word_plane) + 4 * (plan.first_word_plane - plan.first_byte_plane);
}

// An empty string if the plan is one the format allows, else what is wrong.
std::string mpc_plan_problem(const MpcChunkPlan& plan);

void write_mpc_plan(const MpcChunkPlan& plan, uint8_t* out);
MpcChunkPlan read_mpc_plan(const uint8_t* in);

// The plan for in[0..words) (words >= 1) with the smallest estimated size,
// among stage-1 strides {dim, 0} (dim 1..32) or {1, 2, 4, 8, 16, 32, 0}
// (dim 0: auto), each with its best stage-3 and stage-4 choices. The
// estimate counts the bytes zero elimination would keep on a sample of
// blocks spread over the chunk. Deterministic: the same at every SimdLevel.
MpcChunkPlan choose_mpc_plan(const float* in, size_t words, unsigned dim, SimdLevel level);

}  // namespace cmpi::compress
