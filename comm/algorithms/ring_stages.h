// The two halves of the compressed ring, shared by ring_reduce_scatter.cpp,
// ring_allgather.cpp and ring_allreduce.cpp (which chains them so that the
// allgather of a chunk starts as soon as its reduction is final). Both need
// at least two ranks. Segment j is counts[j] elements at offsets[j].
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "comm/algorithms/chunk_frame.h"
#include "comm/algorithms/compressed_context.h"

namespace cmpi::comm {

// offsets[j] = counts[0] + ... + counts[j-1].
std::vector<size_t> block_offsets(const std::vector<size_t>& counts);

// Receives each finished chunk k of this rank's reduced segment: `sum` holds
// the chunk's `length` elements (valid during the call only).
using ReducedChunkSink = std::function<void(size_t k, const float* sum, size_t length)>;

// Reduce-scatter round the ring (see ring_reduce_scatter.cpp): every segment
// but this rank's leaves with the partial sums; this rank's segment ends in
// `sink`, chunk by chunk, as its last hop arrives. Returns once all its sends
// have completed.
void ring_reduce_scatter_stage(CompressedContext& ctx, TransferOp op, const float* in,
                               const std::vector<size_t>& counts,
                               const std::vector<size_t>& offsets, const ReducedChunkSink& sink);

// The receiving hops of a ring allgather (see ring_allgather.cpp): for
// s = 0..N-2 receives segment rank-1-s from the left neighbour, forwards its
// compressed chunks to the right unless the right neighbour owns it, and
// decodes it into out + offsets[segment]. The caller must already be sending
// its own segment to the right (origin = its rank).
void ring_allgather_forward_stage(CompressedContext& ctx, TransferOp op, float* out,
                                  const std::vector<size_t>& counts,
                                  const std::vector<size_t>& offsets);

}  // namespace cmpi::comm
