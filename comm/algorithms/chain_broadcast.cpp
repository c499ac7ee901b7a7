// Compressed chunked-chain broadcast. Works as follows, with ranks ordered
// root, root+1, ..., root-1 (mod N) into a chain:
//   - the root encodes chunk after chunk of data and sends each to the next
//     rank as soon as it is encoded;
//   - every other rank receives the chunks from its predecessor, passes each
//     compressed chunk on to its successor as it lands (no re-encoding), and
//     decodes it for itself while the following chunks are in flight.
// The frame of each chunk carries the element count, chunk size and root, so
// a rank that disagrees about any of them fails on the first chunk. With C
// chunks the last rank has everything after about C + N - 2 chunk times.
//
// Progress: every encode and decode runs in codec steps (chunk_payload.h)
// with a test of all the rank's requests (receives from the predecessor,
// sends and forwards to the successor) between steps (progress.h), so
// chunks above MPI's eager limit keep moving along the chain while a rank
// decodes its own copy.
//
// The root keeps the decoded version of what it sent, so with a lossy codec
// every rank, root included, ends with the same bits (one encoding's error
// from the root's input). Lossless codecs leave the root's data untouched.
//
// Error feedback: the root's encoding goes through ctx.feedback, keyed per
// chunk (FeedbackSite::kBroadcastRoot).
#include <stdexcept>
#include <string>

#include "comm/algorithms/chunk_transfer.h"
#include "comm/algorithms/codec_steps.h"
#include "comm/algorithms/compressed_collectives.h"

namespace cmpi::comm {

void chain_broadcast(CompressedContext& ctx, float* data, size_t n, int root) {
  check_context(ctx, Op::kBroadcast);
  if (root < 0 || root >= ctx.size)
    throw std::invalid_argument(describe_call(ctx, Op::kBroadcast) + ": root " +
                                std::to_string(root) + " is not a rank of a group of " +
                                std::to_string(ctx.size));
  if (ctx.size == 1) return;
  const int position = (ctx.rank - root + ctx.size) % ctx.size;
  const bool has_successor = position < ctx.size - 1;
  const int successor = (ctx.rank + 1) % ctx.size;
  const int predecessor = (ctx.rank - 1 + ctx.size) % ctx.size;
  const TransferShape shape = make_shape(ctx, Op::kBroadcast, n, root);
  Progress progress(ctx);

  if (position == 0) {
    OutgoingTransfer out(ctx, progress, successor, shape);
    const bool lossless = ctx.codec->lossless();
    for (size_t k = 0; k < shape.chunk_count(); ++k) {
      float* chunk = data + shape.chunk_offset(k);
      uint64_t key = feedback_key(ctx.buffer_key, FeedbackSite::kBroadcastRoot, 0, k);
      out.send_chunk(k, chunk, &key);
      if (!lossless) out.decode_sent(k, chunk);
    }
    out.wait();
    return;
  }

  IncomingTransfer in(ctx, progress, predecessor, shape);
  OutgoingTransfer forward(ctx, progress, successor, shape);
  while (!in.done()) {
    size_t k = in.wait_next();
    if (has_successor) forward.forward(in.message(k), in.message_bytes(k));
    in.decode(k, data + shape.chunk_offset(k));
  }
  forward.wait();
}

}  // namespace cmpi::comm
