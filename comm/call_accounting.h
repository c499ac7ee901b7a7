// How the Communicator charges one call to its OpCounters (internal to
// comm/communicator*.cpp): PlainCall for the plain MPI path, CompressedCall
// around a compressed algorithm, which counts its own wire bytes, and
// CallRecord, the dispatch's hold on whichever of the two a call takes.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>

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

// The accounting of one call, which the dispatch opens and closes: the
// transport says which path the call took (plain or compressed) once it
// knows, or charges the counters itself (receives, device calls).
// Destroyed before the dispatch's AdaptiveCall, which then sees everything
// it charged.
class CallRecord {
 public:
  CallRecord(OpCounters& counters, Locality locality, uint64_t raw_bytes)
      : counters_(counters), locality_(locality), raw_bytes_(raw_bytes) {}
  OpCounters& counters() { return counters_; }
  Locality locality() const { return locality_; }
  uint64_t raw_bytes() const { return raw_bytes_; }
  // The plain path: `bytes` (the call's raw bytes unless given) go on the wire as they are.
  void plain() { plain(raw_bytes_); }
  void plain(uint64_t bytes) { plain_.emplace(counters_, bytes, locality_); }
  // A compressed algorithm (or the framed plain ring) runs and counts its own wire bytes.
  void compressed() { compressed_.emplace(counters_, locality_); }
  // Ends the accounting before the call does: a blocking send's wait
  // charges its own time once encoding is done.
  void close() {
    plain_.reset();
    compressed_.reset();
  }

 private:
  OpCounters& counters_;
  Locality locality_;
  uint64_t raw_bytes_;
  std::optional<PlainCall> plain_;
  std::optional<CompressedCall> compressed_;
};

}  // namespace cmpi::comm
