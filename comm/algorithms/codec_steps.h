// What every compressed algorithm shares besides its transfers: the checks
// of a CompressedContext, the error-feedback keys, the bound of a chunk
// message, and the counters that codec work (chunk_payload.h) and waits
// (progress.h) are charged to, so that all algorithms report and key alike.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "comm/algorithms/chunk_frame.h"
#include "comm/algorithms/compressed_context.h"

namespace cmpi::comm {

// Where an encoding of this rank's own data happens; part of the feedback key
// so that every encoding site of a buffer keeps its own residual.
enum class FeedbackSite : uint8_t {
  kSend = 1,
  kAllgatherShard = 2,
  kReduceScatterInput = 3,
  kAllreduceResult = 4,
  kBroadcastRoot = 5,
  kAlltoallBlock = 6,
  kHaloLo = 7,
  kHaloHi = 8,
  // A sparsifier's whole buffer before a block-sparse allreduce of its
  // output (Communicator::allreduce, comm/block_sparse_calibration.h).
  kSparsifiedInput = 9,
  // One piece of a 16-bit buffer widened to float (communicator_words16.cpp);
  // the piece's own algorithm adds its sites on top.
  kWordPiece = 10,
};

// Residual key for chunk `chunk` of part `part` (segment, peer ...) of the
// buffer ctx.buffer_key at `site`: a 64-bit mix, so distinct inputs collide
// only by chance (2^-64).
uint64_t feedback_key(uint64_t buffer_key, FeedbackSite site, uint64_t part, uint64_t chunk);

// "compressed allreduce in group dp"
std::string describe_call(const CompressedContext& ctx, Op op);

// Throws std::invalid_argument naming the call and the field if ctx cannot
// run `op`: no communicator or codec, chunk_elems 0 or too large for one MPI
// message, rank/size not those of ctx.comm, feedback over another codec.
void check_context(const CompressedContext& ctx, Op op);

// Throws std::invalid_argument unless counts has one entry per rank.
void check_counts(const CompressedContext& ctx, Op op, size_t counts_size, const char* name);

// Largest message of a chunk of `elems` floats: frame plus payload bound
// (chunk_payload.h).
size_t chunk_message_bound(const CompressedContext& ctx, size_t elems);

// Charges elapsed seconds to the call's counters (no-op without counters).
void add_encode_seconds(CompressedContext& ctx, double seconds);
void add_decode_seconds(CompressedContext& ctx, double seconds);
void add_wire_seconds(CompressedContext& ctx, double seconds);
void add_wire_bytes(CompressedContext& ctx, size_t bytes);

}  // namespace cmpi::comm
