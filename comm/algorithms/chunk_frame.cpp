#include "comm/algorithms/chunk_frame.h"

#include <iterator>

#include "compress/byte_order.h"

namespace cmpi::comm {

using compress::load_le32;
using compress::load_le64;
using compress::store_le32;
using compress::store_le64;

namespace {

// The operation byte of the frame (the table in chunk_frame.h): fixed codes,
// independent of Op's order, so the wire format does not move with the enum.
constexpr Op kFrameCodeOps[] = {Op::kSendRecv,  Op::kAllgather, Op::kReduceScatter, Op::kAllreduce,
                                Op::kBroadcast, Op::kAlltoall,  Op::kHalo};

uint8_t frame_code(Op op) {
  for (size_t i = 0; i < std::size(kFrameCodeOps); ++i)
    if (kFrameCodeOps[i] == op) return uint8_t(i + 1);
  return 0;
}

}  // namespace

void write_chunk_frame(const ChunkFrame& frame, uint8_t* out) {
  store_le32(out + 0, kChunkFrameMagic);
  out[4] = kChunkFrameVersion;
  out[5] = frame_code(frame.op);
  out[6] = static_cast<uint8_t>(frame.codec);
  out[7] = 0;
  store_le64(out + 8, frame.total_elems);
  store_le64(out + 16, frame.chunk_elems);
  store_le32(out + 24, frame.chunk_index);
  store_le32(out + 28, frame.chunk_count);
  store_le32(out + 32, static_cast<uint32_t>(frame.origin));
  store_le32(out + 36, 0);
  store_le64(out + 40, frame.chunk_bound);
}

bool read_chunk_frame(const uint8_t* in, size_t size, ChunkFrame& frame) {
  if (in == nullptr || size < kChunkFrameBytes) return false;
  if (load_le32(in) != kChunkFrameMagic || in[4] != kChunkFrameVersion) return false;
  if (in[5] < 1 || in[5] > std::size(kFrameCodeOps)) return false;
  frame.op = kFrameCodeOps[in[5] - 1];
  frame.codec = static_cast<compress::CodecId>(in[6]);
  frame.total_elems = load_le64(in + 8);
  frame.chunk_elems = load_le64(in + 16);
  frame.chunk_index = load_le32(in + 24);
  frame.chunk_count = load_le32(in + 28);
  frame.origin = static_cast<int32_t>(load_le32(in + 32));
  frame.chunk_bound = load_le64(in + 40);
  return true;
}

}  // namespace cmpi::comm
