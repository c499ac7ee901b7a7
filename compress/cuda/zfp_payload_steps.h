// The device zfp codec (mode rate) as per-thread steps, each a CMPI_HD
// function that a kernel runs once per thread index and the CPU tests run in
// a loop (zfp_host_steps.cpp). Together they write the payload ZfpCodec
// writes with impl native, byte for byte, and read any payload it accepts.
//
// Payload: header, chunk table (u32 per chunk: bit 31 raw, bits 0..30
// bytes), chunks (zfp_codec.h). A chunk is raw when it holds NaN or Inf
// (nonfinite: raw) or when its fixed-rate stream would not be smaller.
//
// Encode, in stream order:
//   1. flag_nonfinite        thread per value: marks chunks holding NaN/Inf;
//   2. lay_out_payload       one thread: the chunk table, each chunk's byte
//                            offset, the header and the payload size (left
//                            on the device: no host round trip);
//   3. zero_stream_bits      thread per block, only when blocks share words:
//                            zeroes the bytes the block will OR into;
//   4. encode_block          thread per block of 4 values: codes it and
//                            stores its maxbits bits at offset*8 + j*maxbits;
//   5. copy_raw_block        thread per block: the values of raw chunks.
// Steps 4 and 5 are separate launches so that a raw chunk's plain byte
// stores never meet a neighbour's atomic OR on a shared word.
//
// Decode: check_payload (one thread: header, chunk table, offsets, status)
// then decode_block (thread per block; nothing if the status is an error).
//
// Blocks are numbered per chunk: global index g = k * blocks_per_chunk + j
// is block j of chunk k (chunk sizes need not be multiples of 4, so a block
// never spans two chunks); indices past a short chunk's end do nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/cuda/payload_header_steps.h"
#include "compress/cuda/zfp_block_coder.h"
#include "compress/cuda/zfp_stream_bits.h"
#include "compress/host_device.h"
#include "compress/zfp_fixed_rate.h"
#include "compress/zfp_fixed_rate_block.h"

namespace cmpi::compress::cuda {

constexpr uint32_t kZfpRawChunkBit = 0x80000000u;
constexpr uint32_t kZfpChunkSizeMask = 0x7fffffffu;

struct ZfpPayloadShape {
  uint64_t n = 0;          // floats
  uint64_t chunk = 65536;  // floats per chunk
  uint32_t maxbits = 64;   // bits per block of 4
  uint32_t word_bits = 8;  // libzfp's stream word

  CMPI_HD uint64_t chunk_count() const { return n == 0 ? 0 : (n - 1) / chunk + 1; }
  CMPI_HD uint64_t chunk_length(uint64_t k) const { return hd::min_of(chunk, n - k * chunk); }
  CMPI_HD uint64_t blocks_per_chunk() const { return (chunk + 3) / 4; }
  // Thread indices of the per-block steps.
  CMPI_HD uint64_t block_slots() const { return chunk_count() * blocks_per_chunk(); }
  CMPI_HD uint64_t table_bytes() const { return 4 * chunk_count(); }
  // Whether every block owns whole aligned words (zfp_stream_bits.h): then
  // steps 3's zeroing and the atomics are not needed. Chunk offsets are then
  // multiples of 4 (header 48, table 4 per chunk, streams of whole words,
  // raw chunks 4 bytes per float), given a 4-byte aligned payload.
  CMPI_HD bool blocks_own_words() const { return maxbits % 32 == 0 && chunk % 4 == 0; }
  CMPI_HD uint64_t stream_bytes_of(uint64_t k) const {
    return zfp_fixed_rate::stream_bytes(chunk_length(k), maxbits, word_bits);
  }
  // Upper bound of the payload: header, table, every chunk raw.
  CMPI_HD uint64_t max_payload_bytes() const { return kHeaderBytes + table_bytes() + 4 * n; }
};

CMPI_HD inline bool is_nonfinite(float value) {
  return (hd::bits_of(value) & 0x7f800000u) == 0x7f800000u;
}

// Step 1, thread i < n. chunk_flags[] zeroed before the launch.
CMPI_HD inline void zfp_flag_nonfinite(const float* in, const ZfpPayloadShape& shape,
                                       uint32_t* chunk_flags, uint64_t i) {
  if (i < shape.n && is_nonfinite(in[i])) chunk_flags[i / shape.chunk] = 1;
}

// The one-thread steps read the chunk table (or flags) kZfpTableBatch
// entries at a time before using any: the stores that follow may alias the
// loads, so a plain loop would wait a memory latency per chunk.
constexpr uint32_t kZfpTableBatch = 16;

// Raw and stream bytes of every chunk but the last, and of the last: worked
// out once, as a GPU thread spends hundreds of cycles on each 64-bit
// division of stream_bytes_of.
struct ZfpChunkBytes {
  uint64_t raw, stream, last_raw, last_stream, last;
  CMPI_HD explicit ZfpChunkBytes(const ZfpPayloadShape& shape) : last(shape.chunk_count() - 1) {
    raw = 4 * shape.chunk_length(0), stream = shape.stream_bytes_of(0);
    last_raw = 4 * shape.chunk_length(last), last_stream = shape.stream_bytes_of(last);
  }
  CMPI_HD uint64_t raw_of(uint64_t k) const { return k == last ? last_raw : raw; }
  CMPI_HD uint64_t stream_of(uint64_t k) const { return k == last ? last_stream : stream; }
};

// Step 2, one thread. offsets[k] = byte offset of chunk k in the payload.
// Writes the payload size to *size_out.
CMPI_HD inline void zfp_lay_out_payload(const ZfpPayloadShape& shape, const uint32_t* chunk_flags,
                                        const HeaderTemplate& header, uint8_t* payload,
                                        uint64_t* offsets, uint64_t* size_out) {
  const uint64_t count = shape.chunk_count();
  uint64_t at = kHeaderBytes + shape.table_bytes();
  const ZfpChunkBytes sizes(shape);  // unused when count == 0
  for (uint64_t k0 = 0; k0 < count; k0 += kZfpTableBatch) {
    uint32_t flags[kZfpTableBatch];
    CMPI_UNROLL
    for (uint32_t i = 0; i < kZfpTableBatch; ++i)
      flags[i] = k0 + i < count ? chunk_flags[k0 + i] : 0;
    CMPI_UNROLL
    for (uint32_t i = 0; i < kZfpTableBatch; ++i) {
      const uint64_t k = k0 + i;
      if (k >= count) break;
      const uint64_t raw_bytes = sizes.raw_of(k), stream = sizes.stream_of(k);
      const bool raw = flags[i] != 0 || stream >= raw_bytes;
      const uint64_t bytes = raw ? raw_bytes : stream;
      hd::store_le32(payload + kHeaderBytes + 4 * k,
                     static_cast<uint32_t>(bytes) | (raw ? kZfpRawChunkBit : 0u));
      offsets[k] = at;
      at += bytes;
    }
  }
  finish_payload_header(header, at - kHeaderBytes, payload);
  *size_out = at;
}

// Where block slot g lies: chunk k, first value, values in the block (0 for
// a slot past a short chunk's end).
struct ZfpBlockSlot {
  uint64_t chunk;
  uint64_t block_in_chunk;
  uint64_t first;
  uint32_t count;
};

CMPI_HD inline ZfpBlockSlot zfp_block_slot(const ZfpPayloadShape& shape, uint64_t g) {
  ZfpBlockSlot slot;
  slot.chunk = g / shape.blocks_per_chunk();
  slot.block_in_chunk = g % shape.blocks_per_chunk();
  slot.first = slot.chunk * shape.chunk + 4 * slot.block_in_chunk;
  slot.count = 0;
  if (slot.chunk < shape.chunk_count()) {
    const uint64_t length = shape.chunk_length(slot.chunk);
    if (4 * slot.block_in_chunk < length)
      slot.count = static_cast<uint32_t>(hd::min_of<uint64_t>(4, length - 4 * slot.block_in_chunk));
  }
  return slot;
}

CMPI_HD inline bool zfp_chunk_is_raw(const uint8_t* payload, uint64_t k) {
  return (hd::load_le32(payload + kHeaderBytes + 4 * k) & kZfpRawChunkBit) != 0;
}

// Step 3, thread per block slot (only when !blocks_own_words()): zeroes the
// bytes holding the block's bits, and for a chunk's last block the stream's
// padding up to its whole-word end.
CMPI_HD inline void zfp_zero_stream_bits(const ZfpPayloadShape& shape, uint8_t* payload,
                                         const uint64_t* offsets, uint64_t g) {
  const ZfpBlockSlot slot = zfp_block_slot(shape, g);
  if (slot.count == 0 || zfp_chunk_is_raw(payload, slot.chunk)) return;
  uint8_t* stream = payload + offsets[slot.chunk];
  const uint64_t begin = slot.block_in_chunk * shape.maxbits / 8;
  uint64_t end = ((slot.block_in_chunk + 1) * shape.maxbits + 7) / 8;
  if (slot.first + slot.count == slot.chunk * shape.chunk + shape.chunk_length(slot.chunk))
    end = shape.stream_bytes_of(slot.chunk);
  for (uint64_t b = begin; b < end; ++b) stream[b] = 0;
}

// Step 4, thread per block slot.
CMPI_HD inline void zfp_encode_block_step(const float* in, const ZfpPayloadShape& shape,
                                          uint8_t* payload, const uint64_t* offsets, uint64_t g) {
  const ZfpBlockSlot slot = zfp_block_slot(shape, g);
  if (slot.count == 0 || zfp_chunk_is_raw(payload, slot.chunk)) return;
  float f[4];
  if (slot.count == 4) {
    for (uint32_t i = 0; i < 4; ++i) f[i] = in[slot.first + i];
  } else {
    zfp_fixed_rate::block::pad_partial(in + slot.first, slot.count, f);
  }
  const ZfpBlockBits bits = zfp_encode_block(f, shape.maxbits);
  uint8_t* stream = payload + offsets[slot.chunk];
  const uint64_t bit = slot.block_in_chunk * shape.maxbits;
  if (shape.blocks_own_words())
    zfp_store_block_words(stream, bit, bits, shape.maxbits);
  else
    zfp_or_block(stream, bit, bits, shape.maxbits);
}

// Step 5, thread per block slot: raw chunks hold the floats' bit patterns,
// little-endian.
CMPI_HD inline void zfp_copy_raw_block(const float* in, const ZfpPayloadShape& shape,
                                       uint8_t* payload, const uint64_t* offsets, uint64_t g) {
  const ZfpBlockSlot slot = zfp_block_slot(shape, g);
  if (slot.count == 0 || !zfp_chunk_is_raw(payload, slot.chunk)) return;
  uint8_t* out = payload + offsets[slot.chunk] + 16 * slot.block_in_chunk;
  for (uint32_t i = 0; i < slot.count; ++i)
    hd::store_le32(out + 4 * i, hd::bits_of(in[slot.first + i]));
}

// Decode step 1, one thread: checks the payload of `size` bytes against the
// decoder's header and the chunk table against the body, fills offsets.
CMPI_HD inline uint32_t zfp_check_payload(const ZfpPayloadShape& shape,
                                          const HeaderTemplate& header, const uint8_t* payload,
                                          uint64_t size, uint64_t* offsets) {
  if (!payload_header_matches(header, payload, size)) return kDecodeBadHeader;
  const uint64_t count = shape.chunk_count();
  uint64_t at = kHeaderBytes + shape.table_bytes();
  if (at > size) return kDecodeBadChunkTable;
  const ZfpChunkBytes sizes(shape);  // unused when count == 0
  for (uint64_t k0 = 0; k0 < count; k0 += kZfpTableBatch) {
    uint32_t entries[kZfpTableBatch];
    CMPI_UNROLL
    for (uint32_t i = 0; i < kZfpTableBatch; ++i)
      entries[i] = k0 + i < count ? hd::load_le32(payload + kHeaderBytes + 4 * (k0 + i)) : 0;
    CMPI_UNROLL
    for (uint32_t i = 0; i < kZfpTableBatch; ++i) {
      const uint64_t k = k0 + i;
      if (k >= count) break;
      const uint64_t bytes = entries[i] & kZfpChunkSizeMask;
      const uint64_t raw_bytes = sizes.raw_of(k), stream = sizes.stream_of(k);
      const bool ok = (entries[i] & kZfpRawChunkBit) ? bytes == raw_bytes
                                                     : bytes == stream && stream < raw_bytes;
      if (!ok || bytes > size - at) return kDecodeBadChunkTable;
      offsets[k] = at;
      at += bytes;
    }
  }
  return at == size ? kDecodeOk : kDecodeBadChunkTable;
}

// Decode step 2, thread per block slot.
CMPI_HD inline void zfp_decode_block_step(const uint8_t* payload, const ZfpPayloadShape& shape,
                                          const uint64_t* offsets, const uint32_t* status,
                                          float* out, uint64_t g) {
  if (*status != kDecodeOk) return;
  const ZfpBlockSlot slot = zfp_block_slot(shape, g);
  if (slot.count == 0) return;
  const uint8_t* chunk = payload + offsets[slot.chunk];
  if (zfp_chunk_is_raw(payload, slot.chunk)) {
    for (uint32_t i = 0; i < slot.count; ++i)
      out[slot.first + i] = hd::float_of(hd::load_le32(chunk + 16 * slot.block_in_chunk + 4 * i));
    return;
  }
  const ZfpBlockBits bits =
      zfp_load_block(chunk, slot.block_in_chunk * shape.maxbits, shape.maxbits);
  float f[4];
  zfp_decode_block(bits, shape.maxbits, f);
  CMPI_UNROLL
  for (uint32_t i = 0; i < 4; ++i)  // constant indices keep f in registers
    if (i < slot.count) out[slot.first + i] = f[i];
}

}  // namespace cmpi::compress::cuda
