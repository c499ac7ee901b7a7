// Compressed ring allreduce = compressed ring reduce-scatter followed by
// compressed ring allgather, chained chunk by chunk. Works as follows, with
// N ranks and data cut into N near-equal segments (segment j ends on rank j):
//   1. reduce-scatter round the ring (ring_reduce_scatter.cpp): decode, add,
//      re-encode per hop; as each chunk of this rank's own segment becomes
//      final it is encoded once more and sent right at once, starting the
//      allgather while the rest of the reduction is still in flight;
//   2. allgather round the ring (ring_allgather.cpp): forward the final
//      compressed chunks without re-encoding, decode each into place.
// Both stages' hops are set up before the reduction starts, in the order the
// left neighbour sends them, so that the allgather's first hop starts (its
// receives posted) while this rank is still finishing its reduction.
// Progress: every decode and encode runs in codec steps (chunk_payload.h);
// between steps the rank tests every request of the call, in both stages
// and to both neighbours, and starts hops whose first chunk has arrived
// (progress.h), so chunks above MPI's eager limit keep moving round the ring
// while ranks are in a codec. Sends are waited for only at the end.
//
// The owner of a segment replaces its sum by the decoded version of what it
// sent, so every rank ends with the same bits whatever the codec. Lossless
// codecs give the bits of the uncompressed ring: within (N-1)·2^-24·sum|x|
// of MPI_Allreduce (whose summation order differs), and identical on every
// rank.
//
// Error growth: each element goes through N-1 encodings in the reduction and
// one more for the allgather, N in all: with per-encoding error at most e
// (zfp accuracy mode: e = tolerance) the result is within N·e of the exact
// sum, plus float rounding.
//
// Error feedback: two encodings per element go through ctx.feedback: this
// rank's own input at the first hop of the reduction
// (FeedbackSite::kReduceScatterInput) and the final sum of the segment it
// owns before the allgather (FeedbackSite::kAllreduceResult), each keyed per
// chunk, so both the workers' and the owner's compression errors are fed
// back into the next call with the same buffer_key.
#include <cstring>

#include "comm/algorithms/chunk_transfer.h"
#include "comm/algorithms/codec_steps.h"
#include "comm/algorithms/compressed_collectives.h"
#include "comm/algorithms/ring_stages.h"

namespace cmpi::comm {

void ring_allreduce(CompressedContext& ctx, float* data, size_t n) {
  check_context(ctx, Op::kAllreduce);
  if (ctx.size == 1) return;
  const Op op = Op::kAllreduce;
  const size_t n_ranks = size_t(ctx.size);
  std::vector<size_t> counts(n_ranks, n / n_ranks);
  for (size_t j = 0; j < n % n_ranks; ++j) counts[j] += 1;
  std::vector<size_t> offsets = block_offsets(counts);

  Progress progress(ctx);
  RingHops reduce_hops = ring_reduce_scatter_hops(ctx, progress, op, counts);
  RingHops gather_hops = ring_allgather_hops(ctx, progress, op, counts);
  std::vector<std::unique_ptr<OutgoingTransfer>> reduce_sends;
  const int right = (ctx.rank + 1) % ctx.size;
  OutgoingTransfer result(ctx, progress, right, make_shape(ctx, op, counts[ctx.rank], ctx.rank));
  float* own_segment = data + offsets[ctx.rank];
  const bool lossless = ctx.codec->lossless();
  ring_reduce_scatter_stage(ctx, progress, op, data, counts, offsets, reduce_hops, reduce_sends,
                            [&](size_t k, const float* sum, size_t length) {
                              uint64_t key = feedback_key(ctx.buffer_key,
                                                          FeedbackSite::kAllreduceResult, 0, k);
                              result.send_chunk(k, sum, &key);
                              float* slot = own_segment + result.shape().chunk_offset(k);
                              // The last read of this chunk of data was the addition that made
                              // `sum`. A rank owning no elements (fewer elements than ranks) has
                              // an empty chunk and may have no buffer at all: no copy.
                              if (lossless && length > 0)
                                std::memcpy(slot, sum, length * sizeof(float));
                              else if (!lossless)
                                result.decode_sent(k, slot);
                            });
  ring_allgather_forward_stage(ctx, progress, data, offsets, gather_hops);
  result.wait();
  for (auto& send : reduce_sends) send->wait();
}

}  // namespace cmpi::comm
