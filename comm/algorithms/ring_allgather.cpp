// Compressed ring allgather. Works as follows, with N ranks:
//   1. rank r encodes its own segment once, chunk by chunk, sending each
//      chunk to its right neighbour as soon as it is encoded;
//   2. for s = 0..N-2 it receives segment r-1-s from its left neighbour and
//      passes each compressed chunk on to the right as it lands (unless the
//      right neighbour owns that segment), then decodes it into place while
//      the next chunks are in flight.
// Progress: every encode and decode runs in codec steps (chunk_payload.h);
// between steps the rank tests every request of the call -- its own
// segment's sends, the forwards to the right, the receives from the left --
// and starts the next hop as soon as its first chunk arrives (progress.h,
// ring_stages.h), so chunks above MPI's eager limit keep moving round the
// ring while ranks decode.
// Nothing is re-encoded on the way, so every segment carries exactly one
// encoding's error, the same bits reach every rank, and the owner keeps the
// decoded copy of its own segment too (with a lossy codec its slot of out
// holds what the others received, not its input). A lossless codec gives
// out == the plain MPI_Allgatherv, bit for bit.
//
// Error feedback: the single encoding of this rank's segment goes through
// ctx.feedback, keyed per chunk (FeedbackSite::kAllgatherShard).
#include <cstring>

#include "comm/algorithms/chunk_transfer.h"
#include "comm/algorithms/codec_steps.h"
#include "comm/algorithms/compressed_collectives.h"
#include "comm/algorithms/ring_stages.h"

namespace cmpi::comm {

RingHops ring_allgather_hops(CompressedContext& ctx, Progress& progress, Op op,
                             const std::vector<size_t>& counts) {
  const int left = (ctx.rank + ctx.size - 1) % ctx.size;
  RingHops hops;
  for (int step = 0; step < ctx.size - 1; ++step) {
    const int segment = (ctx.rank - 1 - step + ctx.size) % ctx.size;
    hops.push_back(std::make_unique<IncomingTransfer>(
        ctx, progress, left, make_shape(ctx, op, counts[segment], segment)));
  }
  return hops;
}

void ring_allgather_forward_stage(CompressedContext& ctx, Progress& progress, float* out,
                                  const std::vector<size_t>& offsets, RingHops& hops) {
  const int right = (ctx.rank + 1) % ctx.size;
  // Forwards share the received chunks' buffers (reference counted).
  std::vector<std::unique_ptr<OutgoingTransfer>> forwards;
  for (auto& hop_ptr : hops) {
    IncomingTransfer& hop = *hop_ptr;
    const TransferShape& shape = hop.shape();
    const int segment = shape.origin;
    OutgoingTransfer* forward = nullptr;
    if (segment != right) {
      forwards.push_back(std::make_unique<OutgoingTransfer>(ctx, progress, right, shape));
      forward = forwards.back().get();
    }
    float* dest = out + offsets[segment];
    while (!hop.done()) {
      size_t k = hop.wait_next();
      if (forward) forward->forward(hop.message(k), hop.message_bytes(k));
      hop.decode(k, dest + shape.chunk_offset(k));
    }
  }
  for (auto& forward : forwards) forward->wait();
}

void ring_allgather(CompressedContext& ctx, const float* in, float* out,
                    const std::vector<size_t>& counts) {
  check_context(ctx, Op::kAllgather);
  check_counts(ctx, Op::kAllgather, counts.size(), "counts");
  std::vector<size_t> offsets = block_offsets(counts);
  float* own_slot = out + offsets[ctx.rank];
  const size_t own_count = counts[ctx.rank];
  if (ctx.size == 1) {
    if (own_count && own_slot != in) std::memmove(own_slot, in, own_count * sizeof(float));
    return;
  }

  const Op op = Op::kAllgather;
  const int right = (ctx.rank + 1) % ctx.size;
  Progress progress(ctx);
  RingHops hops = ring_allgather_hops(ctx, progress, op, counts);
  OutgoingTransfer own(ctx, progress, right, make_shape(ctx, op, own_count, ctx.rank));
  const bool lossless = ctx.codec->lossless();
  for (size_t k = 0; k < own.shape().chunk_count(); ++k) {
    const size_t offset = own.shape().chunk_offset(k);
    const size_t length = own.shape().chunk_length(k);
    uint64_t key = feedback_key(ctx.buffer_key, FeedbackSite::kAllgatherShard, 0, k);
    own.send_chunk(k, in + offset, &key);
    // Chunk k of in has been read; writing chunk k of the slot is safe even
    // when in aliases it.
    if (lossless) {
      if (length && own_slot != in)
        std::memmove(own_slot + offset, in + offset, length * sizeof(float));
    } else {
      own.decode_sent(k, own_slot + offset);
    }
  }
  ring_allgather_forward_stage(ctx, progress, out, offsets, hops);
  own.wait();
}

}  // namespace cmpi::comm
