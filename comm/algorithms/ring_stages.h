// The two halves of the compressed ring, shared by ring_reduce_scatter.cpp,
// ring_allgather.cpp and ring_allreduce.cpp (which chains them so that the
// allgather of a chunk starts as soon as its reduction is final). Both need
// at least two ranks. Segment j is counts[j] elements at offsets[j].
//
// Every hop a rank receives comes from its left neighbour on the call's tag,
// so hops are constructed up front, in the order the neighbour sends them
// (ring_*_hops): the call's Progress then starts each hop -- probes for its
// first chunk, checks it and posts receives for the rest -- as soon as it
// arrives, even while this rank still decodes the hop before it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "comm/algorithms/chunk_frame.h"
#include "comm/algorithms/chunk_transfer.h"
#include "comm/algorithms/compressed_context.h"

namespace cmpi::comm {

// offsets[j] = counts[0] + ... + counts[j-1].
std::vector<size_t> block_offsets(const std::vector<size_t>& counts);

using RingHops = std::vector<std::unique_ptr<IncomingTransfer>>;

// The hops this rank receives in a ring reduce-scatter (steps 1..N-1:
// segments r-2, r-3, ..., r) and in a ring allgather (steps 0..N-2: segments
// r-1, r-2, ..., r+1), registered with progress in that order.
RingHops ring_reduce_scatter_hops(CompressedContext& ctx, Progress& progress, Op op,
                                  const std::vector<size_t>& counts);
RingHops ring_allgather_hops(CompressedContext& ctx, Progress& progress, Op op,
                             const std::vector<size_t>& counts);

// Receives each finished chunk k of this rank's reduced segment: `sum` holds
// the chunk's `length` elements (valid during the call only).
using ReducedChunkSink = std::function<void(size_t k, const float* sum, size_t length)>;

// Reduce-scatter round the ring (see ring_reduce_scatter.cpp) over `hops`
// from ring_reduce_scatter_hops (each released once consumed): every segment
// but this rank's leaves with the partial sums; this rank's segment ends in
// `sink`, chunk by chunk, as its last hop arrives. Its sends are appended to
// `sends`, which the caller waits on (at the end of the call, so that the
// wait does not hold up what follows).
void ring_reduce_scatter_stage(CompressedContext& ctx, Progress& progress, Op op, const float* in,
                               const std::vector<size_t>& counts,
                               const std::vector<size_t>& offsets, RingHops& hops,
                               std::vector<std::unique_ptr<OutgoingTransfer>>& sends,
                               const ReducedChunkSink& sink);

// The receiving hops of a ring allgather (see ring_allgather.cpp), `hops`
// from ring_allgather_hops: receives segment rank-1-s from the left
// neighbour at step s, forwards its compressed chunks to the right unless
// the right neighbour owns it, and decodes it into out + offsets[segment].
// The caller must already be sending its own segment to the right
// (origin = its rank). Returns once its forwards have completed.
void ring_allgather_forward_stage(CompressedContext& ctx, Progress& progress, float* out,
                                  const std::vector<size_t>& offsets, RingHops& hops);

}  // namespace cmpi::comm
