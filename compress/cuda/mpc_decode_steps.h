// The device mpc decoder as per-thread CMPI_HD steps: reads any payload
// MpcCodec writes (any plan), and refuses by status what MpcCodec refuses
// by DecodeError (header, chunk table, a chunk's plan, group tops, presence
// bits, counts, padding, trailing bytes).
//
// Decode, in stream order:
//   1. check         one thread: header and chunk table, chunk offsets;
//   2. walk_chunk    thread per chunk: validates the chunk group by group
//                    (a group's size follows from its presence bits, so the
//                    walk is sequential) and records each group's offset;
//   3. decode_group  thread per group: presence, kept words and bytes, then
//                    per block the inverse of stages 3 and 2, writing the
//                    stage-1 differences to the output (raw chunks: their
//                    words);
//   4. undo_stride   thread per chunk and residue r < 32: the prefix sum of
//                    stage 1 over the chunk's words i = r (mod stride), or
//                    the rotation back for stride 0.
// A step that finds a problem writes kDecodeBadChunk to the status word;
// every later step does nothing unless the status is kDecodeOk.
#pragma once

#include <cstdint>

#include "compress/cuda/mpc_payload_steps.h"

namespace cmpi::compress::cuda {

struct MpcDecodeScratch {
  uint64_t* chunk_offsets;  // per chunk
  uint64_t* group_offsets;  // per group slot, in the payload
};

CMPI_HD inline MpcChunkPlan mpc_read_plan(const uint8_t* in) {
  MpcChunkPlan plan;
  plan.stride = in[0];
  plan.first_lagged = in[1];
  plan.first_byte_plane = in[2];
  plan.first_word_plane = in[3];
  plan.reference = hd::load_le32(in + 4);
  return plan;
}

CMPI_HD inline uint64_t mpc_chunk_bytes(const uint8_t* payload, uint64_t k) {
  return hd::load_le32(payload + kHeaderBytes + 4 * k);
}

// Step 1, one thread.
CMPI_HD inline uint32_t mpc_check_payload(const MpcPayloadShape& shape,
                                          const HeaderTemplate& header, const uint8_t* payload,
                                          uint64_t size, MpcDecodeScratch scratch) {
  if (!payload_header_matches(header, payload, size)) return kDecodeBadHeader;
  uint64_t at = kHeaderBytes + shape.table_bytes();
  if (at > size) return kDecodeBadChunkTable;
  for (uint64_t k = 0; k < shape.chunk_count(); ++k) {
    const uint64_t bytes = mpc_chunk_bytes(payload, k);
    if (bytes > 4 * shape.chunk_length(k) || bytes > size - at) return kDecodeBadChunkTable;
    scratch.chunk_offsets[k] = at;
    at += bytes;
  }
  return at == size ? kDecodeOk : kDecodeBadChunkTable;
}

// Step 2, thread per chunk: false if the chunk is inconsistent.
CMPI_HD inline bool mpc_walk_chunk(const MpcPayloadShape& shape, const uint8_t* payload,
                                   MpcDecodeScratch scratch, uint64_t k) {
  const uint64_t size = mpc_chunk_bytes(payload, k);
  if (mpc_chunk_is_raw(shape, size, k)) return true;
  if (size < kMpcPlanBytes) return false;
  const uint8_t* chunk = payload + scratch.chunk_offsets[k];
  const MpcChunkPlan plan = mpc_read_plan(chunk);
  if (!mpc_plan_is_valid(plan)) return false;
  const uint32_t whole = mpc_low_planes(plan.first_byte_plane);
  uint64_t at = kMpcPlanBytes;
  for (uint64_t q = k * shape.groups_per_chunk(); q < (k + 1) * shape.groups_per_chunk(); ++q) {
    const MpcGroupSlot slot = mpc_group_slot(shape, q);
    if (slot.blocks == 0) break;
    if (at >= size) return false;
    scratch.group_offsets[q] = scratch.chunk_offsets[k] + at;
    const unsigned top = chunk[at++];
    if (top < plan.first_word_plane || top > 32) return false;
    const unsigned word_bits = top - plan.first_word_plane;
    const unsigned m = mpc_presence_bits(plan, top);
    const uint64_t presence_bits = uint64_t(slot.blocks) * m;
    const uint64_t presence_bytes = (presence_bits + 7) / 8;
    if (presence_bytes > size - at) return false;
    const uint8_t* presence = chunk + at;
    if (presence_bits % 8 != 0 && (presence[presence_bytes - 1] >> (presence_bits % 8)) != 0)
      return false;
    uint64_t words = 0, bytes = 0;
    for (uint32_t b = 0; b < slot.blocks; ++b) {
      const uint64_t field = mpc_read_bits(presence, uint64_t(b) * m, m);
      const uint64_t word_present = word_bits ? field & ((uint64_t{1} << word_bits) - 1) : 0;
      words += uint64_t(hd::popcount32(whole | uint32_t(word_present << plan.first_word_plane)));
      bytes += uint64_t(hd::popcount64(field >> word_bits));
    }
    at += presence_bytes;
    if (4 * words + bytes > size - at) return false;
    at += 4 * words + bytes;
  }
  return at == size;
}

CMPI_HD inline void mpc_walk_chunk_step(const MpcPayloadShape& shape, const uint8_t* payload,
                                        MpcDecodeScratch scratch, uint32_t* status, uint64_t k) {
  if (*status != kDecodeOk || k >= shape.chunk_count()) return;
  if (!mpc_walk_chunk(shape, payload, scratch, k)) *status = kDecodeBadChunk;
}

// Step 3, thread per group slot.
CMPI_HD inline void mpc_decode_group_step(const MpcPayloadShape& shape, const uint8_t* payload,
                                          MpcDecodeScratch scratch, uint32_t* status, float* out,
                                          uint64_t q) {
  if (*status != kDecodeOk) return;
  const MpcGroupSlot slot = mpc_group_slot(shape, q);
  if (slot.blocks == 0) return;
  const uint64_t k = slot.chunk;
  const uint64_t words_in_chunk = shape.chunk_length(k);
  float* w = out + k * shape.chunk;
  const uint64_t first_word = kMpcBlockWords * slot.first_block;
  const uint64_t end_word =
      hd::min_of<uint64_t>(words_in_chunk, first_word + kMpcBlockWords * slot.blocks);
  if (mpc_chunk_is_raw(shape, mpc_chunk_bytes(payload, k), k)) {
    const uint8_t* chunk = payload + scratch.chunk_offsets[k];
    for (uint64_t i = first_word; i < end_word; ++i)
      w[i] = hd::float_of(hd::load_le32(chunk + 4 * i));
    return;
  }
  const MpcChunkPlan plan = mpc_read_plan(payload + scratch.chunk_offsets[k]);
  const uint8_t* group = payload + scratch.group_offsets[q];
  const unsigned top = group[0];
  const unsigned word_bits = top - plan.first_word_plane;
  const unsigned m = mpc_presence_bits(plan, top);
  const uint8_t* presence = group + 1;
  const uint32_t whole = mpc_low_planes(plan.first_byte_plane);
  // First pass: the group's kept words, where its bytes start.
  uint64_t group_words = 0;
  for (uint32_t b = 0; b < slot.blocks; ++b) {
    const uint64_t field = mpc_read_bits(presence, uint64_t(b) * m, m);
    const uint64_t word_present = word_bits ? field & ((uint64_t{1} << word_bits) - 1) : 0;
    group_words +=
        uint64_t(hd::popcount32(whole | uint32_t(word_present << plan.first_word_plane)));
  }
  const uint8_t* words = presence + (uint64_t(slot.blocks) * m + 7) / 8;
  const uint8_t* bytes = words + 4 * group_words;

  uint32_t planes[32];
  for (uint32_t b = 0; b < slot.blocks; ++b) {
    const uint64_t field = mpc_read_bits(presence, uint64_t(b) * m, m);
    const uint64_t word_present = word_bits ? field & ((uint64_t{1} << word_bits) - 1) : 0;
    const uint32_t bitmap = whole | uint32_t(word_present << plan.first_word_plane);
    const uint64_t byte_mask = field >> word_bits;
    for (unsigned p = 0; p < 32; ++p) {
      planes[p] = 0;
      if ((bitmap >> p) & 1u) {
        planes[p] = hd::load_le32(words);
        words += 4;
      }
    }
    for (unsigned p = plan.first_byte_plane; p < plan.first_word_plane; ++p)
      for (unsigned i = 0; i < 4; ++i)
        if ((byte_mask >> (4 * (p - plan.first_byte_plane) + i)) & 1u)
          planes[p] |= uint32_t(*bytes++) << (8 * i);
    mpc_unlag_block(planes, plan.first_lagged);
    mpc_transpose_block(planes);
    const uint64_t block_word = first_word + kMpcBlockWords * b;
    for (uint32_t i = 0; i < kMpcBlockWords; ++i) {
      if (block_word + i < end_word)
        w[block_word + i] = hd::float_of(planes[i]);
      else if (planes[i] != 0)
        *status = kDecodeBadChunk;  // the last block's padding must decode to zero
    }
  }
}

// Step 4, thread per chunk and residue: index k * 32 + r.
CMPI_HD inline void mpc_undo_stride_step(const MpcPayloadShape& shape, const uint8_t* payload,
                                         MpcDecodeScratch scratch, const uint32_t* status,
                                         float* out, uint64_t index) {
  if (*status != kDecodeOk) return;
  const uint64_t k = index / 32, r = index % 32;
  if (k >= shape.chunk_count() || mpc_chunk_is_raw(shape, mpc_chunk_bytes(payload, k), k)) return;
  const MpcChunkPlan plan = mpc_read_plan(payload + scratch.chunk_offsets[k]);
  const uint64_t words = shape.chunk_length(k);
  float* w = out + k * shape.chunk;
  if (plan.stride == 0) {
    for (uint64_t i = r; i < words; i += 32)
      w[i] = hd::float_of(mpc_rotate_sign_up(hd::bits_of(w[i]) ^ plan.reference));
    return;
  }
  if (r >= plan.stride) return;
  uint32_t sum = 0;
  for (uint64_t i = r; i < words; i += plan.stride) {
    sum += hd::bits_of(w[i]) ^ plan.reference;
    w[i] = hd::float_of(sum);
  }
}

}  // namespace cmpi::compress::cuda
