// Compressed point-to-point transfer. Works as follows:
//   sender    cuts data into chunks of ctx.chunk_elems, encodes chunk k and
//             starts sending it (MPI_Isend) before encoding chunk k+1, so the
//             encoding of each chunk overlaps the transfer of the previous
//             one; it returns once all sends have completed.
//   receiver  takes the first chunk at whatever size it has (MPI_Mprobe) and
//             checks its frame -- the header of the transfer: operation,
//             codec, element count, chunk size and count, chunk size bound --
//             against what it expects, failing with a TransferError that
//             names the group, the sending rank and the field; then it posts
//             receives for every other chunk (sized by the codec's bound,
//             actual sizes from MPI_Get_count) and decodes each chunk as it
//             lands while the next ones are still in flight.
// The header travels in the first chunk's frame instead of a message of its
// own: one latency less per transfer, and an empty transfer is still one
// (frame-only) message, so sizes are checked even then.
//
// Progress: both sides encode or decode a chunk in codec steps
// (chunk_payload.h) and between steps test every request of the call
// (progress.h), so a chunk above MPI's eager limit keeps moving while the
// sender encodes the next one and while the receiver decodes the previous.
//
// Error feedback: the sender's data goes through ctx.feedback, keyed per
// destination and chunk (FeedbackSite::kSend).
#include "comm/algorithms/chunk_transfer.h"
#include "comm/algorithms/codec_steps.h"
#include "comm/algorithms/compressed_collectives.h"

#include <stdexcept>
#include <string>

namespace cmpi::comm {
namespace {

void check_peer(const CompressedContext& ctx, int peer, const char* name) {
  if (peer < 0 || peer >= ctx.size || peer == ctx.rank)
    throw std::invalid_argument(describe_call(ctx, Op::kSendRecv) + ": rank " +
                                std::to_string(ctx.rank) + ": " + name + " " +
                                std::to_string(peer) + " is not another rank of a group of " +
                                std::to_string(ctx.size));
}

}  // namespace

void compressed_send(CompressedContext& ctx, const float* data, size_t n, int dest) {
  check_context(ctx, Op::kSendRecv);
  check_peer(ctx, dest, "dest");
  Progress progress(ctx);
  OutgoingTransfer out(ctx, progress, dest, make_shape(ctx, Op::kSendRecv, n, ctx.rank));
  for (size_t k = 0; k < out.shape().chunk_count(); ++k) {
    uint64_t key = feedback_key(ctx.buffer_key, FeedbackSite::kSend, uint64_t(dest), k);
    out.send_chunk(k, data + out.shape().chunk_offset(k), &key);
  }
  out.wait();
}

void compressed_recv(CompressedContext& ctx, float* data, size_t n, int source) {
  check_context(ctx, Op::kSendRecv);
  check_peer(ctx, source, "source");
  Progress progress(ctx);
  IncomingTransfer in(ctx, progress, source, make_shape(ctx, Op::kSendRecv, n, source));
  while (!in.done()) {
    size_t k = in.wait_next();
    in.decode(k, data + in.shape().chunk_offset(k));
  }
}

}  // namespace cmpi::comm
