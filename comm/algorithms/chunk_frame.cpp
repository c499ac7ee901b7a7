#include "comm/algorithms/chunk_frame.h"

namespace cmpi::comm {
namespace {

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

const char* transfer_op_name(TransferOp op) {
  switch (op) {
    case TransferOp::kSendRecv:
      return "send/recv";
    case TransferOp::kAllgather:
      return "allgather";
    case TransferOp::kReduceScatter:
      return "reduce_scatter";
    case TransferOp::kAllreduce:
      return "allreduce";
    case TransferOp::kBroadcast:
      return "broadcast";
    case TransferOp::kAlltoall:
      return "alltoall";
    case TransferOp::kHalo:
      return "halo_exchange";
  }
  return "unknown operation";
}

void write_chunk_frame(const ChunkFrame& frame, uint8_t* out) {
  put_u32(out + 0, kChunkFrameMagic);
  out[4] = kChunkFrameVersion;
  out[5] = static_cast<uint8_t>(frame.op);
  out[6] = static_cast<uint8_t>(frame.codec);
  out[7] = 0;
  put_u64(out + 8, frame.total_elems);
  put_u64(out + 16, frame.chunk_elems);
  put_u32(out + 24, frame.chunk_index);
  put_u32(out + 28, frame.chunk_count);
  put_u32(out + 32, static_cast<uint32_t>(frame.origin));
  put_u32(out + 36, 0);
  put_u64(out + 40, frame.chunk_bound);
}

bool read_chunk_frame(const uint8_t* in, size_t size, ChunkFrame& frame) {
  if (in == nullptr || size < kChunkFrameBytes) return false;
  if (get_u32(in) != kChunkFrameMagic || in[4] != kChunkFrameVersion) return false;
  frame.op = static_cast<TransferOp>(in[5]);
  frame.codec = static_cast<compress::CodecId>(in[6]);
  frame.total_elems = get_u64(in + 8);
  frame.chunk_elems = get_u64(in + 16);
  frame.chunk_index = get_u32(in + 24);
  frame.chunk_count = get_u32(in + 28);
  frame.origin = static_cast<int32_t>(get_u32(in + 32));
  frame.chunk_bound = get_u64(in + 40);
  return true;
}

}  // namespace cmpi::comm
