// How the Communicator charges one call to its OpCounters (internal to
// comm/communicator*.cpp): PlainCall for the plain MPI path, CompressedCall
// around a compressed algorithm, which counts its own wire bytes.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "comm/comm_stats.h"
#include "comm/group_kind.h"

namespace cmpi::comm {

inline void add_locality_bytes(OpCounters& counters, uint64_t bytes, Locality locality) {
  (locality == Locality::kInter ? counters.inter_wire_bytes : counters.intra_wire_bytes) += bytes;
}

// Accounts one plain call: the bytes go on the wire as they are, and the
// whole call is wire time.
class PlainCall {
 public:
  PlainCall(OpCounters& counters, uint64_t bytes, Locality locality)
      : counters_(counters), start_(MPI_Wtime()) {
    counters_.calls += 1;
    counters_.raw_bytes += bytes;
    counters_.wire_bytes += bytes;
    add_locality_bytes(counters_, bytes, locality);
  }
  ~PlainCall() {
    double elapsed = MPI_Wtime() - start_;
    counters_.seconds += elapsed;
    counters_.wire_seconds += elapsed;
  }

 private:
  OpCounters& counters_;
  double start_;
};

// Adds the whole call's time to `seconds` and the wire bytes the algorithm
// counted to the call's locality; the algorithm charges the rest.
class CompressedCall {
 public:
  CompressedCall(OpCounters& counters, Locality locality)
      : counters_(counters),
        locality_(locality),
        wire_before_(counters.wire_bytes),
        start_(MPI_Wtime()) {}
  ~CompressedCall() {
    counters_.seconds += MPI_Wtime() - start_;
    add_locality_bytes(counters_, counters_.wire_bytes - wire_before_, locality_);
  }

 private:
  OpCounters& counters_;
  Locality locality_;
  uint64_t wire_before_;
  double start_;
};

}  // namespace cmpi::comm
