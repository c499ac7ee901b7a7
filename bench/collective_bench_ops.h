// The operations `cmpi-bench collective` times, each in two forms over the
// same buffers: the plain MPI call (MPI_Allreduce, MPI_Allgatherv, ...) and
// the Communicator call (which the Communicator's policy may compress).
//
// Message size S is the whole buffer one rank holds: the allreduce,
// broadcast and p2p buffer, the allgather output, the reduce_scatter input,
// the alltoall send buffer. Blocks of S/N elements (the first S%N ranks one
// more) make up the per-rank pieces. p2p is one message from rank 0 to
// rank 1; other ranks only join the barriers.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "comm/communicator.h"
#include "comm/group_kind.h"

namespace cmpi::bench {

class CollectiveOpBuffers {
 public:
  // rank_data: this rank's data, at least S/4 floats (its first elements are
  // used). Throws std::invalid_argument if S is not a positive multiple of 4
  // or if p2p is asked of a single rank.
  CollectiveOpBuffers(comm::Op op, size_t bytes, int rank, int size,
                      const std::vector<float>& rank_data);

  comm::Op op() const { return op_; }
  size_t bytes() const { return bytes_; }

  // Restores the input of in-place operations; call before every timed call
  // (outside the timed region) so that each call sees the same data.
  void reset();
  void run_plain(MPI_Comm comm);
  void run_communicator(comm::Communicator& comm);

  // What this rank holds after the operation (empty where the op leaves
  // nothing on this rank: the p2p sender and bystanders).
  std::vector<float> result() const;

  // The elements this rank feeds to the codec in one call, for codec-only
  // timing: its own input.
  const std::vector<float>& input() const { return input_; }

 private:
  comm::Op op_;
  size_t bytes_;
  int rank_, size_;
  std::vector<float> input_;         // own input (in-place ops: the pristine copy)
  std::vector<float> output_;        // in-place buffer or output
  std::vector<size_t> counts_;       // block counts per rank
  std::vector<size_t> recv_counts_;  // alltoall: what each rank sends here
};

}  // namespace cmpi::bench
