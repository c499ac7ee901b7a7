// Communicator: one MPI communicator of the process grid (dp, tp, pp, sp,
// zero or world) with the statistics of everything it moved. Operations work
// on float buffers and name the Role of what they move, so that the policy
// engine can decide per group, operation and role how to send it. Counts are
// in elements; buffers larger than INT_MAX elements are rejected.
//
// Every rank of the group must call the same collective with matching sizes;
// a mismatch is detected by MPI (truncation) and aborts the job with MPI's
// message instead of hanging.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "comm/comm_stats.h"
#include "comm/group_kind.h"

namespace cmpi::comm {

class Communicator {
 public:
  // Takes ownership of `comm` (freed on destruction) unless it is MPI_COMM_WORLD.
  Communicator(MPI_Comm comm, GroupKind kind);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  GroupKind kind() const { return kind_; }
  MPI_Comm mpi() const { return comm_; }

  // data[0..n) = sum over ranks, in place.
  void allreduce(float* data, size_t n, Role role);
  // out[0..counts[rank]) = sum over ranks of in's block `rank`; in holds
  // sum(counts) elements laid out block after block.
  void reduce_scatter(const float* in, float* out, const std::vector<size_t>& counts, Role role);
  // out = concatenation of every rank's in[0..counts[r]); counts may differ per rank.
  void allgather(const float* in, float* out, const std::vector<size_t>& counts, Role role);
  // data[0..n) on every rank = root's data.
  void broadcast(float* data, size_t n, int root, Role role);
  // Block j of in (send_counts[j] elements) goes to rank j; block i of out
  // (recv_counts[i]) comes from rank i.
  void alltoall(const float* in, const std::vector<size_t>& send_counts, float* out,
                const std::vector<size_t>& recv_counts, Role role);
  void send(const float* data, size_t n, int dest, int tag, Role role);
  void recv(float* data, size_t n, int source, int tag, Role role);
  // Sends to `dest` while receiving from `source` (no deadlock on rings).
  void sendrecv(const float* send_data, size_t send_n, int dest, float* recv_data,
                size_t recv_n, int source, int tag, Role role);
  void barrier();

  CommStats& stats() { return stats_; }
  const CommStats& stats() const { return stats_; }

 private:
  void check_counts(const std::vector<size_t>& counts, const char* op) const;

  CommStats stats_;
  MPI_Comm comm_;
  GroupKind kind_;
  int rank_ = 0;
  int size_ = 1;
};

// Checks n fits an MPI count; throws std::length_error naming the group otherwise.
int mpi_count(size_t n, GroupKind group);

}  // namespace cmpi::comm
