// The device mpc encoder as per-thread CMPI_HD steps (the layout of
// compress/mpc_chunk.cpp and mpc_codec.h): together they write the payload
// MpcCodec writes, byte for byte, for any dim and chunk.
//
// Payload: header, chunk table (u32 bytes per chunk), chunks. A chunk of
// `words` floats is raw (its 4 * words bytes) when 4 * words <= 8 or when
// its compressed form would not be smaller; compressed, it is the 8-byte
// plan and then per group of 64 blocks of 32 words: top, presence bits,
// kept words, kept bytes.
//
// Encode, in stream order (block slot g: block g % bpc of chunk g / bpc,
// bpc = chunk / 32, i.e. words [32 g, 32 g + 32) of the input; group slot q:
// group q % gpc of chunk q / gpc, gpc = ceil(bpc / 64)):
//   1. choose_plan     thread per chunk: the plan (mpc_plan_search.h);
//   2. transform       thread per block: stages 1-3 into planes[32 g ..];
//   3. size_group      thread per group: its top, the word and byte offsets
//                      of its blocks inside the group, its size;
//   4. size_chunk      thread per chunk: the groups' offsets in the chunk,
//                      the chunk's size (raw or compressed);
//   5. lay_out         one thread: chunk table, chunk offsets, header, size
//                      (left on the device);
//   6. write_group     thread per group: the plan (group 0), top, presence;
//   7. write_block     thread per block: its kept words and bytes, or its
//                      raw words in a raw chunk.
#pragma once

#include <cstdint>

#include "compress/cuda/mpc_block_steps.h"
#include "compress/cuda/mpc_plan_search.h"
#include "compress/cuda/payload_header_steps.h"
#include "compress/host_device.h"
#include "compress/mpc_chunk_plan.h"

namespace cmpi::compress::cuda {

constexpr uint32_t kMpcGroupBlocks = 64;

struct MpcPayloadShape {
  uint64_t n = 0;          // floats
  uint64_t chunk = 65536;  // floats per chunk, a multiple of 32
  unsigned dim = 1;        // 0: auto

  CMPI_HD uint64_t chunk_count() const { return n == 0 ? 0 : (n - 1) / chunk + 1; }
  CMPI_HD uint64_t chunk_length(uint64_t k) const { return hd::min_of(chunk, n - k * chunk); }
  CMPI_HD uint64_t blocks_per_chunk() const { return chunk / kMpcBlockWords; }
  CMPI_HD uint64_t groups_per_chunk() const {
    return (blocks_per_chunk() + kMpcGroupBlocks - 1) / kMpcGroupBlocks;
  }
  CMPI_HD uint64_t block_slots() const { return (n + kMpcBlockWords - 1) / kMpcBlockWords; }
  CMPI_HD uint64_t group_slots() const { return chunk_count() * groups_per_chunk(); }
  CMPI_HD uint64_t table_bytes() const { return 4 * chunk_count(); }
  CMPI_HD uint64_t max_payload_bytes() const { return kHeaderBytes + table_bytes() + 4 * n; }
  // Chunks this short are always raw (no room for the plan).
  CMPI_HD bool tiny(uint64_t k) const { return 4 * chunk_length(k) <= kMpcPlanBytes; }
};

// Where group slot q lies: chunk, first block in the chunk, blocks (0 past a
// short chunk's end).
struct MpcGroupSlot {
  uint64_t chunk;
  uint64_t group_in_chunk;
  uint64_t first_block;
  uint32_t blocks;
};

CMPI_HD inline MpcGroupSlot mpc_group_slot(const MpcPayloadShape& shape, uint64_t q) {
  MpcGroupSlot slot;
  slot.chunk = q / shape.groups_per_chunk();
  slot.group_in_chunk = q % shape.groups_per_chunk();
  slot.first_block = slot.group_in_chunk * kMpcGroupBlocks;
  const uint64_t nblocks = (shape.chunk_length(slot.chunk) + 31) / 32;
  slot.blocks = slot.first_block < nblocks
                    ? uint32_t(hd::min_of<uint64_t>(kMpcGroupBlocks, nblocks - slot.first_block))
                    : 0u;
  return slot;
}

// Per group: top plane, kept words, kept bytes, presence bytes (without
// the top byte).
struct MpcGroupInfo {
  uint32_t top, words, bytes, presence_bytes;
  CMPI_HD uint64_t size() const { return 1 + presence_bytes + 4 * uint64_t(words) + bytes; }
};

// Per block: its first kept word and byte, counted from its group's start.
struct MpcBlockOffsets {
  uint32_t word, byte;
};

struct MpcEncodeScratch {
  MpcChunkPlan* plans;             // per chunk
  uint32_t* planes;                // 32 per block slot
  MpcBlockOffsets* block_offsets;  // per block slot
  MpcGroupInfo* groups;            // per group slot
  uint64_t* group_offsets;         // per group slot, from its chunk's start
  uint64_t* chunk_sizes;           // per chunk
  uint64_t* chunk_offsets;         // per chunk, in the payload
};

CMPI_HD inline unsigned mpc_presence_bits(const MpcChunkPlan& plan, unsigned top) {
  return (top - plan.first_word_plane) + 4 * (plan.first_word_plane - plan.first_byte_plane);
}

// The presence field of one block (word bits above b, then byte bits).
CMPI_HD inline uint64_t mpc_presence_field(const uint32_t* planes, const MpcChunkPlan& plan,
                                           unsigned top) {
  const uint32_t whole = mpc_low_planes(plan.first_byte_plane);
  const uint32_t per_byte = mpc_low_planes(plan.first_word_plane) & ~whole;
  const unsigned word_bits = top - plan.first_word_plane;
  const uint64_t words =
      word_bits ? uint64_t(mpc_word_bitmap(planes, whole, per_byte) >> plan.first_word_plane) : 0;
  return words | (mpc_byte_mask(planes, plan.first_byte_plane, plan.first_word_plane) << word_bits);
}

// Step 1, thread per chunk.
CMPI_HD inline void mpc_choose_plan_step(const float* in, const MpcPayloadShape& shape,
                                         MpcEncodeScratch scratch, uint64_t k) {
  if (k >= shape.chunk_count()) return;
  scratch.plans[k] = shape.tiny(k)
                         ? MpcChunkPlan{}
                         : mpc_choose_plan(in + k * shape.chunk, shape.chunk_length(k), shape.dim);
}

// Step 2, thread per block slot.
CMPI_HD inline void mpc_transform_step(const float* in, const MpcPayloadShape& shape,
                                       MpcEncodeScratch scratch, uint64_t g) {
  const uint64_t k = g / shape.blocks_per_chunk();
  if (g >= shape.block_slots() || shape.tiny(k)) return;
  const MpcChunkPlan plan = scratch.plans[k];
  uint32_t* planes = scratch.planes + kMpcBlockWords * g;
  mpc_difference_block(in + k * shape.chunk, shape.chunk_length(k), g % shape.blocks_per_chunk(),
                       plan.stride, plan.reference, planes);
  mpc_transpose_block(planes);
  mpc_lag_block(planes, plan.first_lagged);
}

// Step 3, thread per group slot.
CMPI_HD inline void mpc_size_group_step(const MpcPayloadShape& shape, MpcEncodeScratch scratch,
                                        uint64_t q) {
  const MpcGroupSlot slot = mpc_group_slot(shape, q);
  if (slot.blocks == 0 || shape.tiny(slot.chunk)) return;
  const MpcChunkPlan plan = scratch.plans[slot.chunk];
  const uint64_t g0 = slot.chunk * shape.blocks_per_chunk() + slot.first_block;
  const uint32_t* planes = scratch.planes + kMpcBlockWords * g0;
  // One past the last word plane with a nonzero word in the group.
  uint32_t any = 0;
  for (uint64_t i = 0; i < kMpcBlockWords * slot.blocks; ++i)
    any |= uint32_t(planes[i] != 0) << (i % 32);
  unsigned top = plan.first_word_plane;
  for (unsigned j = plan.first_word_plane; j < 32; ++j)
    if ((any >> j) & 1u) top = j + 1;

  const uint32_t whole = mpc_low_planes(plan.first_byte_plane);
  const uint32_t per_byte = mpc_low_planes(plan.first_word_plane) & ~whole;
  MpcGroupInfo info{top, 0, 0, 0};
  for (uint32_t b = 0; b < slot.blocks; ++b) {
    const uint32_t* block = planes + kMpcBlockWords * b;
    scratch.block_offsets[g0 + b] = MpcBlockOffsets{info.words, info.bytes};
    info.words += uint32_t(hd::popcount32(mpc_word_bitmap(block, whole, per_byte)));
    info.bytes += uint32_t(
        hd::popcount64(mpc_byte_mask(block, plan.first_byte_plane, plan.first_word_plane)));
  }
  info.presence_bytes = (slot.blocks * mpc_presence_bits(plan, top) + 7) / 8;
  scratch.groups[q] = info;
}

// Step 4, thread per chunk.
CMPI_HD inline void mpc_size_chunk_step(const MpcPayloadShape& shape, MpcEncodeScratch scratch,
                                        uint64_t k) {
  if (k >= shape.chunk_count()) return;
  const uint64_t raw_bytes = 4 * shape.chunk_length(k);
  if (shape.tiny(k)) {
    scratch.chunk_sizes[k] = raw_bytes;
    return;
  }
  uint64_t at = kMpcPlanBytes;
  for (uint64_t q = k * shape.groups_per_chunk(); q < (k + 1) * shape.groups_per_chunk(); ++q) {
    if (mpc_group_slot(shape, q).blocks == 0) break;
    scratch.group_offsets[q] = at;
    at += scratch.groups[q].size();
  }
  scratch.chunk_sizes[k] = at < raw_bytes ? at : raw_bytes;
}

CMPI_HD inline bool mpc_chunk_is_raw(const MpcPayloadShape& shape, uint64_t chunk_bytes,
                                     uint64_t k) {
  return chunk_bytes == 4 * shape.chunk_length(k);
}

// Step 5, one thread.
CMPI_HD inline void mpc_lay_out_step(const MpcPayloadShape& shape, MpcEncodeScratch scratch,
                                     const HeaderTemplate& header, uint8_t* payload,
                                     uint64_t* size_out) {
  uint64_t at = kHeaderBytes + shape.table_bytes();
  for (uint64_t k = 0; k < shape.chunk_count(); ++k) {
    hd::store_le32(payload + kHeaderBytes + 4 * k, uint32_t(scratch.chunk_sizes[k]));
    scratch.chunk_offsets[k] = at;
    at += scratch.chunk_sizes[k];
  }
  finish_payload_header(header, at - kHeaderBytes, payload);
  *size_out = at;
}

// Step 6, thread per group slot: the plan (first group), top and presence.
CMPI_HD inline void mpc_write_group_step(const MpcPayloadShape& shape, MpcEncodeScratch scratch,
                                         uint8_t* payload, uint64_t q) {
  const MpcGroupSlot slot = mpc_group_slot(shape, q);
  if (slot.blocks == 0 || mpc_chunk_is_raw(shape, scratch.chunk_sizes[slot.chunk], slot.chunk))
    return;
  const MpcChunkPlan plan = scratch.plans[slot.chunk];
  uint8_t* chunk = payload + scratch.chunk_offsets[slot.chunk];
  if (slot.group_in_chunk == 0) {
    chunk[0] = uint8_t(plan.stride);
    chunk[1] = uint8_t(plan.first_lagged);
    chunk[2] = uint8_t(plan.first_byte_plane);
    chunk[3] = uint8_t(plan.first_word_plane);
    hd::store_le32(chunk + 4, plan.reference);
  }
  const MpcGroupInfo info = scratch.groups[q];
  uint8_t* group = chunk + scratch.group_offsets[q];
  group[0] = uint8_t(info.top);
  uint8_t* presence = group + 1;
  for (uint32_t i = 0; i < info.presence_bytes; ++i) presence[i] = 0;
  const unsigned m = mpc_presence_bits(plan, info.top);
  const uint64_t g0 = slot.chunk * shape.blocks_per_chunk() + slot.first_block;
  for (uint32_t b = 0; b < slot.blocks; ++b)
    mpc_or_bits(presence, uint64_t(b) * m,
                mpc_presence_field(scratch.planes + kMpcBlockWords * (g0 + b), plan, info.top), m);
}

// Step 7, thread per block slot: kept words and bytes, or raw words.
CMPI_HD inline void mpc_write_block_step(const float* in, const MpcPayloadShape& shape,
                                         MpcEncodeScratch scratch, uint8_t* payload, uint64_t g) {
  if (g >= shape.block_slots()) return;
  const uint64_t k = g / shape.blocks_per_chunk();
  const uint64_t j = g % shape.blocks_per_chunk();
  uint8_t* chunk = payload + scratch.chunk_offsets[k];
  if (mpc_chunk_is_raw(shape, scratch.chunk_sizes[k], k)) {
    const uint64_t end = hd::min_of<uint64_t>(kMpcBlockWords * (j + 1), shape.chunk_length(k));
    for (uint64_t i = kMpcBlockWords * j; i < end; ++i)
      hd::store_le32(chunk + 4 * i, hd::bits_of(in[k * shape.chunk + i]));
    return;
  }
  const MpcChunkPlan plan = scratch.plans[k];
  const uint64_t q = k * shape.groups_per_chunk() + j / kMpcGroupBlocks;
  const MpcGroupInfo info = scratch.groups[q];
  const MpcBlockOffsets offsets = scratch.block_offsets[g];
  uint8_t* words = chunk + scratch.group_offsets[q] + 1 + info.presence_bytes;
  uint8_t* bytes = words + 4 * uint64_t(info.words) + offsets.byte;
  words += 4 * uint64_t(offsets.word);

  const uint32_t* planes = scratch.planes + kMpcBlockWords * g;
  const uint32_t whole = mpc_low_planes(plan.first_byte_plane);
  const uint32_t per_byte = mpc_low_planes(plan.first_word_plane) & ~whole;
  const uint32_t bitmap = mpc_word_bitmap(planes, whole, per_byte);
  for (unsigned p = 0; p < 32; ++p)
    if ((bitmap >> p) & 1u) {
      hd::store_le32(words, planes[p]);
      words += 4;
    }
  for (unsigned p = plan.first_byte_plane; p < plan.first_word_plane; ++p)
    for (unsigned b = 0; b < 4; ++b) {
      const uint8_t byte = uint8_t(planes[p] >> (8 * b));
      if (byte != 0) *bytes++ = byte;
    }
}

}  // namespace cmpi::compress::cuda
