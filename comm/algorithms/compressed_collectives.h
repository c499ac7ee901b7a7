// Compressed collectives: the algorithms the Communicator runs when the
// policy picks a codec. Each works on float buffers with the semantics of the
// plain operation in communicator.h (counts in elements, sum for reductions)
// and sends every byte through ctx.codec, one chunk of ctx.chunk_elems floats
// per message so that encoding, transfer and decoding overlap.
//
// Every message carries a chunk frame (chunk_frame.h). A rank whose view of
// the call differs from its peer's (element count, counts per rank, chunk
// size, codec, root, operation) gets a TransferError naming the group, the
// peer rank and the field on the first chunk it receives from that peer.
// After such an error the call's messages are in an undefined state: the
// caller must abort the job (MPI_Abort), as with any MPI collective misuse.
//
// Lossy codecs: every rank ends with identical bits where the plain operation
// would give identical results (allgather, broadcast, allreduce), because the
// owner of a value also keeps the decoded version of what it sent.
//
// Error feedback (ctx.feedback non-null): this rank's own input is encoded
// through ctx.feedback with a key derived from ctx.buffer_key, so ctx.codec
// must be the codec the feedback wraps (same id and parameters). Which
// encodings get feedback is stated per algorithm in its file.
#pragma once

#include <cstddef>
#include <vector>

#include "comm/algorithms/compressed_context.h"

namespace cmpi::comm {

// Point to point (p2p.cpp). compressed_send returns once data may be reused;
// compressed_recv expects exactly n elements from `source`.
void compressed_send(CompressedContext& ctx, const float* data, size_t n, int dest);
void compressed_recv(CompressedContext& ctx, float* data, size_t n, int source);

// out = concatenation of every rank's in[0..counts[r]) (ring_allgather.cpp).
void ring_allgather(CompressedContext& ctx, const float* in, float* out,
                    const std::vector<size_t>& counts);

// out[0..counts[rank]) = sum over ranks of block `rank` of in, where in holds
// sum(counts) elements block after block (ring_reduce_scatter.cpp).
void ring_reduce_scatter(CompressedContext& ctx, const float* in, float* out,
                         const std::vector<size_t>& counts);

// data[0..n) = sum over ranks, in place (ring_allreduce.cpp).
void ring_allreduce(CompressedContext& ctx, float* data, size_t n);

// data[0..n) = root's data on every rank, root included (chain_broadcast.cpp).
void chain_broadcast(CompressedContext& ctx, float* data, size_t n, int root);

// Block j of in (send_counts[j] elements) goes to rank j; block i of out
// (recv_counts[i]) comes from rank i (alltoall.cpp).
void compressed_alltoall(CompressedContext& ctx, const float* in,
                         const std::vector<size_t>& send_counts, float* out,
                         const std::vector<size_t>& recv_counts);

// Boundary exchange of a non-periodic 1-D decomposition (halo_exchange.cpp):
// rank r sends send_lo to rank r-1 and send_hi to rank r+1, and receives
// recv_lo from rank r-1 (that rank's send_hi) and recv_hi from rank r+1 (its
// send_lo). Rank 0 has no lower and the last rank no upper neighbour: the
// buffers of a missing side are ignored and left untouched. Counts are in
// elements and must match the neighbour's (send_hi_count of r == recv_lo_count
// of r+1); a pointer may be null only when its count is zero.
//
// A grid decomposition names the peers instead (lo_peer, hi_peer): a 2-D
// tile grid exchanges along its rows and then along its columns, where the
// vertical neighbours are rank -+ columns. kNoPeer marks a side without a
// neighbour. Peers must be mutual: when rank r names s as hi_peer, s names r
// as lo_peer (and the counts across that pair must match as above).
struct HaloBuffers {
  static constexpr int kLineNeighbour = -2;  // rank-1 / rank+1, none at the ends
  static constexpr int kNoPeer = -1;
  const float* send_lo = nullptr;
  size_t send_lo_count = 0;
  const float* send_hi = nullptr;
  size_t send_hi_count = 0;
  float* recv_lo = nullptr;
  size_t recv_lo_count = 0;
  float* recv_hi = nullptr;
  size_t recv_hi_count = 0;
  int lo_peer = kLineNeighbour;
  int hi_peer = kLineNeighbour;

  // The lower / upper peer of `rank` in a group of `size` ranks, or kNoPeer.
  int lower_peer(int rank) const {
    return lo_peer == kLineNeighbour ? (rank > 0 ? rank - 1 : kNoPeer) : lo_peer;
  }
  int upper_peer(int rank, int size) const {
    return hi_peer == kLineNeighbour ? (rank < size - 1 ? rank + 1 : kNoPeer) : hi_peer;
  }
};
void halo_exchange(CompressedContext& ctx, const HaloBuffers& buffers);

}  // namespace cmpi::comm
