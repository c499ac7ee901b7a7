// Compressed alltoall. Works as follows, with N ranks:
//   1. receives from every other rank are set up first (each peer's first
//      chunk is probed for, the rest pre-posted once it checks out);
//   2. the outgoing blocks are encoded chunk by chunk, to ranks r+1, r+2, ...
//      in turn so that not every rank sends to the same peer first, each
//      chunk sent (MPI_Isend) as soon as it is encoded; between two chunks
//      the receiver decodes whatever has already arrived;
//   3. the remaining chunks are decoded in the order they arrive, whichever
//      peer they come from (arrival_order_receiver.h).
// Progress: every codec call is cut into steps (chunk_payload.h) with a test
// of all the call's requests -- the sends to every peer and the receives
// from every peer -- between steps (progress.h), and each poll also starts
// the transfers whose first chunk has arrived; so no peer's chunk above MPI's
// eager limit waits for this rank to finish a codec call.
//
// The block a rank sends itself never crosses a rank boundary and is copied
// as is. Every other block carries exactly one encoding's error; a lossless
// codec gives the plain MPI_Alltoallv's result bit for bit.
//
// Error feedback: every outgoing block is this rank's own data and goes
// through ctx.feedback, keyed per destination and chunk
// (FeedbackSite::kAlltoallBlock).
#include <cstring>
#include <stdexcept>
#include <string>

#include "comm/algorithms/arrival_order_receiver.h"
#include "comm/algorithms/codec_steps.h"
#include "comm/algorithms/compressed_collectives.h"
#include "comm/algorithms/ring_stages.h"

namespace cmpi::comm {

void compressed_alltoall(CompressedContext& ctx, const float* in,
                         const std::vector<size_t>& send_counts, float* out,
                         const std::vector<size_t>& recv_counts) {
  const Op op = Op::kAlltoall;
  check_context(ctx, op);
  check_counts(ctx, op, send_counts.size(), "send_counts");
  check_counts(ctx, op, recv_counts.size(), "recv_counts");
  const int me = ctx.rank;
  if (send_counts[me] != recv_counts[me])
    throw std::invalid_argument(describe_call(ctx, op) + ": rank " + std::to_string(me) +
                                " sends itself " + std::to_string(send_counts[me]) +
                                " elements but expects " + std::to_string(recv_counts[me]));
  const std::vector<size_t> send_offsets = block_offsets(send_counts);
  const std::vector<size_t> recv_offsets = block_offsets(recv_counts);
  if (recv_counts[me])
    std::memcpy(out + recv_offsets[me], in + send_offsets[me], recv_counts[me] * sizeof(float));
  if (ctx.size == 1) return;

  Progress progress(ctx);
  ArrivalOrderReceiver receiver(ctx, progress);
  for (int peer = 0; peer < ctx.size; ++peer) {
    if (peer == me) continue;
    receiver.add(std::make_unique<IncomingTransfer>(ctx, progress, peer,
                                                    make_shape(ctx, op, recv_counts[peer], peer)),
                 out + recv_offsets[peer]);
  }

  std::vector<std::unique_ptr<OutgoingTransfer>> outgoing;
  for (int distance = 1; distance < ctx.size; ++distance) {
    const int dest = (me + distance) % ctx.size;
    outgoing.push_back(std::make_unique<OutgoingTransfer>(
        ctx, progress, dest, make_shape(ctx, op, send_counts[dest], me)));
    OutgoingTransfer& block = *outgoing.back();
    const float* data = in + send_offsets[dest];
    for (size_t k = 0; k < block.shape().chunk_count(); ++k) {
      uint64_t key = feedback_key(ctx.buffer_key, FeedbackSite::kAlltoallBlock, dest, k);
      block.send_chunk(k, data + block.shape().chunk_offset(k), &key);
      receiver.poll();
    }
  }
  receiver.drain();
  for (auto& block : outgoing) block->wait();
}

}  // namespace cmpi::comm
