// Compressed halo exchange of a non-periodic 1-D decomposition (rows split
// into slabs, rank r holding slab r; or one row or column of a tile grid,
// whose peers HaloBuffers names). Works as follows:
//   1. rank r sets up receives from its neighbours r-1 (into recv_lo) and
//      r+1 (into recv_hi) -- one of them is missing at either end;
//   2. it encodes send_lo for r-1 and send_hi for r+1 chunk by chunk, sending
//      each chunk as soon as it is encoded and decoding whatever has arrived
//      in between;
//   3. it decodes the remaining chunks in arrival order.
// Progress: encodes and decodes run in codec steps (chunk_payload.h) with a
// test of all four transfers' requests between steps (progress.h), so both
// neighbours' chunks keep moving while this rank is in a codec.
// All four transfers are nonblocking, so no ordering between neighbours is
// needed and the exchange cannot deadlock. Each received halo carries one
// encoding's error; a lossless codec delivers the neighbours' rows bit for
// bit. Counts must match across each boundary (send_hi_count of r equals
// recv_lo_count of r+1); a mismatch fails on the receiving side naming the
// element count.
//
// Error feedback: both outgoing halos are this rank's own data and go
// through ctx.feedback, keyed per side and chunk (FeedbackSite::kHaloLo,
// FeedbackSite::kHaloHi).
#include <stdexcept>
#include <string>

#include "comm/algorithms/arrival_order_receiver.h"
#include "comm/algorithms/codec_steps.h"
#include "comm/algorithms/compressed_collectives.h"

namespace cmpi::comm {
namespace {

void require_buffer(const CompressedContext& ctx, const void* data, size_t count,
                    const char* name) {
  if (data == nullptr && count != 0)
    throw std::invalid_argument(describe_call(ctx, Op::kHalo) + ": rank " +
                                std::to_string(ctx.rank) + ": " + name + " is null with " +
                                std::to_string(count) + " elements");
}

void check_peers(const CompressedContext& ctx, int lo, int hi) {
  for (int peer : {lo, hi})
    if (peer != HaloBuffers::kNoPeer && (peer < 0 || peer >= ctx.size || peer == ctx.rank))
      throw std::invalid_argument(describe_call(ctx, Op::kHalo) + ": rank " +
                                  std::to_string(ctx.rank) + ": halo peer " + std::to_string(peer) +
                                  " is not another rank of the " + std::to_string(ctx.size) +
                                  "-rank group");
  if (lo != HaloBuffers::kNoPeer && lo == hi)
    throw std::invalid_argument(describe_call(ctx, Op::kHalo) + ": rank " +
                                std::to_string(ctx.rank) + ": lower and upper halo peer are both " +
                                std::to_string(lo));
}

void send_halo(CompressedContext& ctx, OutgoingTransfer& out, const float* data, FeedbackSite site,
               ArrivalOrderReceiver& receiver) {
  for (size_t k = 0; k < out.shape().chunk_count(); ++k) {
    uint64_t key = feedback_key(ctx.buffer_key, site, 0, k);
    out.send_chunk(k, data + out.shape().chunk_offset(k), &key);
    receiver.poll();
  }
}

}  // namespace

void halo_exchange(CompressedContext& ctx, const HaloBuffers& b) {
  const Op op = Op::kHalo;
  check_context(ctx, op);
  const int lo = b.lower_peer(ctx.rank);
  const int hi = b.upper_peer(ctx.rank, ctx.size);
  check_peers(ctx, lo, hi);
  const bool has_lo = lo != HaloBuffers::kNoPeer;
  const bool has_hi = hi != HaloBuffers::kNoPeer;
  if (has_lo) {
    require_buffer(ctx, b.send_lo, b.send_lo_count, "send_lo");
    require_buffer(ctx, b.recv_lo, b.recv_lo_count, "recv_lo");
  }
  if (has_hi) {
    require_buffer(ctx, b.send_hi, b.send_hi_count, "send_hi");
    require_buffer(ctx, b.recv_hi, b.recv_hi_count, "recv_hi");
  }

  Progress progress(ctx);
  ArrivalOrderReceiver receiver(ctx, progress);
  if (has_lo)
    receiver.add(std::make_unique<IncomingTransfer>(ctx, progress, lo,
                                                    make_shape(ctx, op, b.recv_lo_count, lo)),
                 b.recv_lo);
  if (has_hi)
    receiver.add(std::make_unique<IncomingTransfer>(ctx, progress, hi,
                                                    make_shape(ctx, op, b.recv_hi_count, hi)),
                 b.recv_hi);

  std::unique_ptr<OutgoingTransfer> to_lo, to_hi;
  if (has_lo) {
    to_lo = std::make_unique<OutgoingTransfer>(ctx, progress, lo,
                                               make_shape(ctx, op, b.send_lo_count, ctx.rank));
    send_halo(ctx, *to_lo, b.send_lo, FeedbackSite::kHaloLo, receiver);
  }
  if (has_hi) {
    to_hi = std::make_unique<OutgoingTransfer>(ctx, progress, hi,
                                               make_shape(ctx, op, b.send_hi_count, ctx.rank));
    send_halo(ctx, *to_hi, b.send_hi, FeedbackSite::kHaloHi, receiver);
  }
  receiver.drain();
  if (to_lo) to_lo->wait();
  if (to_hi) to_hi->wait();
}

}  // namespace cmpi::comm
