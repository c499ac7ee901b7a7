// Lower bounds on the time of one collective, against which the benchmark
// reports how close each variant comes to what the link and the codec
// allow. Both are per rank, since every rank has one link and its own CPU:
//
//   wire bound  = bytes that must cross this rank's link / (ratio * link rate)
//     allreduce       2(N-1)/N * S   (reduce-scatter + allgather, as a ring)
//     allgather, reduce_scatter, alltoall   (N-1)/N * S
//     broadcast, p2p  S              (every receiver needs the whole buffer)
//   codec time  = encode and decode work the compressed algorithm does on
//                 one rank, scaled from enc(S) and dec(S) measured on S bytes:
//     allreduce       enc(S) + 2(N-1)/N dec(S)   (N-1 reduce-scatter hops and
//                     one allgather shard are encoded; 2(N-1) shards decoded)
//     allgather       enc(S)/N + (N-1)/N dec(S)  (own shard once, others decoded)
//     reduce_scatter, alltoall   (N-1)/N (enc(S) + dec(S))
//     broadcast, p2p  max(enc(S), dec(S))  (sender encodes, receivers decode;
//                     a pipeline overlaps the two across ranks)
// A perfectly overlapped compressed collective takes max(wire, codec).
#pragma once

#include <cstddef>

#include "comm/group_kind.h"

namespace cmpi::bench {

// Seconds; 0 when the group has one rank or link_bits_per_second is 0.
double wire_bound_seconds(comm::Op op, size_t bytes, int ranks, double ratio,
                          double link_bits_per_second);

// Seconds, from the encode and decode times of S bytes.
double codec_bound_seconds(comm::Op op, int ranks, double encode_seconds, double decode_seconds);

}  // namespace cmpi::bench
