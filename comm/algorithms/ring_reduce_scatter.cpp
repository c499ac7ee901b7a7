// Compressed ring reduce-scatter. Works as follows, with N ranks and the
// input cut into N segments (segment j = counts[j] elements, ends on rank j):
//   step 0      rank r encodes its own part of segment r-1 and sends it right;
//   step s>0    rank r receives segment r-1-s from its left neighbour,
//               decodes it, adds its own part, re-encodes the partial sum and
//               sends it right;
//   last step   (s = N-1) what arrives is segment r itself: decoded plus own
//               part is the full sum, written to out.
// Each hop is cut into chunks of ctx.chunk_elems: chunk k of a hop is
// decoded, summed, re-encoded and sent while chunk k+1 of the same hop is
// still in flight, so all N-1 hops pipeline rather than run back to back.
//
// Progress: the decode and the re-encode of a chunk run in codec steps
// (chunk_payload.h); between steps the rank tests every request of the call
// -- the receives of the current hop, the sends of all earlier hops to the
// right -- and starts the next hop from the left as soon as its first chunk
// arrives (progress.h, ring_stages.h). Chunks above MPI's eager limit
// therefore keep moving in both directions while the rank is in a codec.
//
// Summation order: segment j is summed x[j+1] + x[j+2] + ... + x[j] in ring
// order, each addition done on decoded values. A lossless codec therefore
// gives the same bits as the uncompressed ring (and within float rounding,
// (N-1)·2^-24·sum|x|, of any other order such as MPI_Reduce_scatter's).
//
// Error growth: every partial sum is re-encoded at every hop, so each element
// of the result passes through N-1 encodings. With a codec whose encoding
// error is at most e per value (zfp accuracy mode: e = tolerance), the result
// differs from the exact sum by at most (N-1)·e plus float rounding; the
// error grows linearly with the number of ranks.
//
// Error feedback: only the first encoding of this rank's own data (step 0,
// segment r-1) goes through ctx.feedback, keyed per chunk
// (FeedbackSite::kReduceScatterInput); the re-encodings of partial sums on
// later hops do not, since no rank owns them and they change every call.
#include <cstring>

#include "comm/algorithms/chunk_transfer.h"
#include "comm/algorithms/codec_steps.h"
#include "comm/algorithms/compressed_collectives.h"
#include "comm/algorithms/ring_stages.h"

namespace cmpi::comm {

std::vector<size_t> block_offsets(const std::vector<size_t>& counts) {
  std::vector<size_t> offsets(counts.size(), 0);
  for (size_t j = 1; j < counts.size(); ++j) offsets[j] = offsets[j - 1] + counts[j - 1];
  return offsets;
}

namespace {

// Segment rank r sends at step s, and receives at step s+1.
int segment_sent_at(const CompressedContext& ctx, int step) {
  return (ctx.rank - 1 - step + 2 * ctx.size) % ctx.size;
}

}  // namespace

RingHops ring_reduce_scatter_hops(CompressedContext& ctx, Progress& progress, Op op,
                                  const std::vector<size_t>& counts) {
  const int left = (ctx.rank + ctx.size - 1) % ctx.size;
  RingHops hops;
  for (int step = 1; step < ctx.size; ++step) {
    const int segment = segment_sent_at(ctx, step);
    hops.push_back(std::make_unique<IncomingTransfer>(
        ctx, progress, left, make_shape(ctx, op, counts[segment], segment)));
  }
  return hops;
}

void ring_reduce_scatter_stage(CompressedContext& ctx, Progress& progress, Op op, const float* in,
                               const std::vector<size_t>& counts,
                               const std::vector<size_t>& offsets, RingHops& hops,
                               std::vector<std::unique_ptr<OutgoingTransfer>>& sends,
                               const ReducedChunkSink& sink) {
  const int n_ranks = ctx.size;
  const int right = (ctx.rank + 1) % n_ranks;

  // Step 0: own data of segment r-1, the only encoding with feedback.
  const int first = segment_sent_at(ctx, 0);
  sends.push_back(std::make_unique<OutgoingTransfer>(ctx, progress, right,
                                                     make_shape(ctx, op, counts[first], first)));
  {
    OutgoingTransfer& out = *sends.back();
    for (size_t k = 0; k < out.shape().chunk_count(); ++k) {
      uint64_t key = feedback_key(ctx.buffer_key, FeedbackSite::kReduceScatterInput, first, k);
      out.send_chunk(k, in + offsets[first] + out.shape().chunk_offset(k), &key);
    }
  }

  std::vector<float> partial(ctx.chunk_elems);
  for (int step = 1; step < n_ranks; ++step) {
    // Arriving now: what the left neighbour sent at step-1, i.e. segment r-1-step.
    const int segment = segment_sent_at(ctx, step);
    const bool last = step == n_ranks - 1;
    IncomingTransfer& hop = *hops[size_t(step - 1)];
    OutgoingTransfer* next = nullptr;
    if (!last) {
      sends.push_back(std::make_unique<OutgoingTransfer>(
          ctx, progress, right, make_shape(ctx, op, counts[segment], segment)));
      next = sends.back().get();
    }
    const float* own = in + offsets[segment];
    while (!hop.done()) {
      size_t k = hop.wait_next();
      size_t length = hop.shape().chunk_length(k);
      size_t offset = hop.shape().chunk_offset(k);
      hop.decode(k, partial.data());
      for (size_t i = 0; i < length; ++i) partial[i] += own[offset + i];
      if (next)
        next->send_chunk(k, partial.data(), nullptr);
      else
        sink(k, partial.data(), length);
    }
    // Every chunk has been received: its buffers can go.
    hops[size_t(step - 1)].reset();
  }
}

void ring_reduce_scatter(CompressedContext& ctx, const float* in, float* out,
                         const std::vector<size_t>& counts) {
  check_context(ctx, Op::kReduceScatter);
  check_counts(ctx, Op::kReduceScatter, counts.size(), "counts");
  std::vector<size_t> offsets = block_offsets(counts);
  if (ctx.size == 1) {
    if (counts[0] && out != in) std::memmove(out, in, counts[0] * sizeof(float));
    return;
  }
  const Op op = Op::kReduceScatter;
  const size_t chunk = ctx.chunk_elems;
  Progress progress(ctx);
  RingHops hops = ring_reduce_scatter_hops(ctx, progress, op, counts);
  std::vector<std::unique_ptr<OutgoingTransfer>> sends;
  ring_reduce_scatter_stage(ctx, progress, op, in, counts, offsets, hops, sends,
                            [&](size_t k, const float* sum, size_t length) {
                              // An empty segment may come with no output buffer at all.
                              if (length > 0)
                                std::memcpy(out + k * chunk, sum, length * sizeof(float));
                            });
  for (auto& send : sends) send->wait();
}

}  // namespace cmpi::comm
