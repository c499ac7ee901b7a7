// The frame in front of every message of a compressed transfer. A transfer
// (one p2p message, one ring hop, one alltoall block ...) is cut into chunks
// of chunk_elems floats, one MPI message each: a 48-byte frame, then the
// codec payload of that chunk (none for the single chunk of an empty
// transfer). The frame restates what the sender believes about the whole
// transfer, so the receiver can check it against its own view on the first
// chunk, before it posts receives for the others:
//
//   offset  size  field
//   0       4     magic        'C','M','C','F'
//   4       1     version      kChunkFrameVersion
//   5       1     operation    the call's Op, as its frame code: send/recv 1,
//                              allgather 2, reduce_scatter 3, allreduce 4,
//                              broadcast 5, alltoall 6, halo_exchange 7
//   6       1     codec        compress::CodecId of the payloads
//   7       1     reserved     0
//   8       8     total_elems  elements of the whole transfer
//   16      8     chunk_elems  elements per chunk (the last may be shorter)
//   24      4     chunk_index
//   28      4     chunk_count
//   32      4     origin       root / owner of the data (int32), -1 if none
//   36      4     reserved     0
//   40      8     chunk_bound  largest message a chunk may take with the
//                              sender's codec; receivers size buffers by it
// All integers little-endian.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/group_kind.h"
#include "compress/payload.h"

namespace cmpi::comm {

constexpr size_t kChunkFrameBytes = 48;
constexpr uint32_t kChunkFrameMagic = 0x46434d43u;  // "CMCF" read little-endian
constexpr uint8_t kChunkFrameVersion = 1;

struct ChunkFrame {
  Op op = Op::kSendRecv;
  compress::CodecId codec = compress::CodecId::kIdentity;
  uint64_t total_elems = 0;
  uint64_t chunk_elems = 0;
  uint32_t chunk_index = 0;
  uint32_t chunk_count = 0;
  int32_t origin = -1;
  uint64_t chunk_bound = 0;
};

// Writes the frame into out[0..kChunkFrameBytes).
void write_chunk_frame(const ChunkFrame& frame, uint8_t* out);

// Reads a frame from a message of `size` bytes. Returns false if the message
// is too short, does not start with a frame of this version or names no
// operation.
bool read_chunk_frame(const uint8_t* in, size_t size, ChunkFrame& frame);

}  // namespace cmpi::comm
