// CommStats: what one communicator group moved, per operation.
//
// raw_bytes is what this rank would have sent uncompressed with the
// bandwidth-optimal algorithm of the operation -- the ring or chain the
// compressed path runs: allreduce ~2(N-1)/N of the buffer, reduce-scatter and
// allgather every block but one, alltoall every block but its own, broadcast
// the buffer (nothing on the chain's last rank), send the message, halo the
// rows sent to existing neighbours. wire_bytes is what it actually sent: the
// same on the plain path (where MPI picks its own algorithm), frames and codec
// payloads on the compressed path, so ratio() is the compression achieved.
// Received bytes are counted by their sender; receives add time only.
// wire_bytes is split into intra_wire_bytes and inter_wire_bytes by the
// message's locality as the policy saw it (a collective over a group that
// spans nodes counts wholly inter-node, though a ring's hops inside one node
// are in fact intra-node).
// Seconds are wall time on this rank: `seconds` the whole call, encode/decode
// inside codecs, wire waiting on transfers (the whole call on the plain path).
// Sampled error is the relative L2 error ||decoded - x|| / ||x|| of the first
// chunk of this rank's own contribution, measured on every k-th lossy call
// of an op (k = 1 / error_sample_rate); 0 when lossless or never sampled.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "comm/group_kind.h"

namespace cmpi::comm {

struct OpCounters {
  uint64_t calls = 0;
  uint64_t raw_bytes = 0;
  uint64_t wire_bytes = 0;
  uint64_t intra_wire_bytes = 0;  // of wire_bytes: messages inside one node
  uint64_t inter_wire_bytes = 0;  // of wire_bytes: messages across nodes
  uint64_t compressed_calls = 0;
  double seconds = 0;         // whole call
  double encode_seconds = 0;  // inside codecs
  double decode_seconds = 0;
  double wire_seconds = 0;  // waiting on transfers
  double error_sum = 0;     // sum of sampled relative errors
  uint64_t error_samples = 0;
  // Chunks a lossy codec sent raw because they held NaN or infinity (zfp's
  // nonfinite: raw): the compression silently stopped working for them.
  uint64_t nonfinite_raw_chunks = 0;
  // Block-sparse `select: auto` decisions: how many, the sum of their
  // measured densities (the mean fraction of non-zero blocks per rank, the
  // group's D / N), and how many found it too dense and took the fallback.
  uint64_t block_decisions = 0;
  double block_density_sum = 0;
  uint64_t block_fallbacks = 0;

  OpCounters& operator+=(const OpCounters& other);
  double ratio() const { return wire_bytes ? double(raw_bytes) / double(wire_bytes) : 1.0; }
  double mean_error() const { return error_samples ? error_sum / double(error_samples) : 0.0; }
  double mean_block_density() const {
    return block_decisions ? block_density_sum / double(block_decisions) : 0.0;
  }
};

class CommStats {
 public:
  OpCounters& at(Op op) { return per_op_[static_cast<int>(op)]; }
  const OpCounters& at(Op op) const { return per_op_[static_cast<int>(op)]; }
  OpCounters total() const;
  void reset() { per_op_ = {}; }
  // {"calls":..,"raw_bytes":..,"wire_bytes":..,"ratio":..,"seconds":..,...,
  //  "ops":{"allreduce":{...},...}} (ops with zero calls omitted)
  std::string to_json() const;

 private:
  std::array<OpCounters, kOpCount> per_op_{};
};

std::string counters_json(const OpCounters& c);

}  // namespace cmpi::comm
