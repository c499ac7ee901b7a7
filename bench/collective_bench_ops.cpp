#include "bench/collective_bench_ops.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

namespace cmpi::bench {
namespace {

constexpr int kP2pTag = 4711;
constexpr int kRoot = 0;

std::vector<size_t> block_counts(size_t total, int size) {
  std::vector<size_t> counts(size_t(size), total / size_t(size));
  for (size_t r = 0; r < total % size_t(size); ++r) counts[r] += 1;
  return counts;
}

std::vector<int> to_int(const std::vector<size_t>& counts) {
  std::vector<int> out;
  for (size_t c : counts) {
    if (c > size_t(INT_MAX)) throw std::length_error("block of " + std::to_string(c) + " floats");
    out.push_back(int(c));
  }
  return out;
}

std::vector<int> offsets(const std::vector<int>& counts) {
  std::vector<int> out(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) out[i] = out[i - 1] + counts[i - 1];
  return out;
}

// What the benchmark moves is gradient-like for reductions and
// activation-like otherwise; a forcing policy ignores the role anyway.
comm::Role role_of(comm::Op op) {
  return op == comm::Op::kAllreduce || op == comm::Op::kReduceScatter ? comm::Role::kGradient
                                                                      : comm::Role::kActivation;
}

}  // namespace

CollectiveOpBuffers::CollectiveOpBuffers(comm::Op op, size_t bytes, int rank, int size,
                                         const std::vector<float>& rank_data)
    : op_(op), bytes_(bytes), rank_(rank), size_(size) {
  if (bytes == 0 || bytes % sizeof(float) != 0)
    throw std::invalid_argument("message size " + std::to_string(bytes) +
                                " bytes is not a positive multiple of 4");
  if (op == comm::Op::kSendRecv && size < 2)
    throw std::invalid_argument("p2p needs at least 2 ranks");
  const size_t n = bytes / sizeof(float);
  if (rank_data.size() < n)
    throw std::invalid_argument("rank data holds " + std::to_string(rank_data.size()) +
                                " floats, the message needs " + std::to_string(n));
  counts_ = block_counts(n, size);
  size_t own = n;
  size_t out = n;
  switch (op) {
    case comm::Op::kAllgather:
      own = counts_[size_t(rank)];
      break;
    case comm::Op::kReduceScatter:
      out = counts_[size_t(rank)];
      break;
    case comm::Op::kAlltoall:
      recv_counts_.assign(size_t(size), counts_[size_t(rank)]);
      out = counts_[size_t(rank)] * size_t(size);
      break;
    default:
      break;
  }
  input_.assign(rank_data.begin(), rank_data.begin() + std::ptrdiff_t(own));
  output_.assign(out, 0.0f);
  reset();
}

void CollectiveOpBuffers::reset() {
  switch (op_) {
    case comm::Op::kAllreduce:
      std::memcpy(output_.data(), input_.data(), input_.size() * sizeof(float));
      break;
    case comm::Op::kBroadcast:
    case comm::Op::kSendRecv:
      // Receivers start from zeros so a result can only come from the sender.
      if (rank_ == kRoot)
        std::memcpy(output_.data(), input_.data(), input_.size() * sizeof(float));
      else
        std::fill(output_.begin(), output_.end(), 0.0f);
      break;
    default:
      break;  // inputs are const; outputs are overwritten
  }
}

void CollectiveOpBuffers::run_plain(MPI_Comm comm) {
  const auto counts = to_int(counts_);
  switch (op_) {
    case comm::Op::kAllreduce:
      MPI_Allreduce(MPI_IN_PLACE, output_.data(), int(output_.size()), MPI_FLOAT, MPI_SUM, comm);
      break;
    case comm::Op::kAllgather: {
      auto displs = offsets(counts);
      MPI_Allgatherv(input_.data(), counts[size_t(rank_)], MPI_FLOAT, output_.data(), counts.data(),
                     displs.data(), MPI_FLOAT, comm);
      break;
    }
    case comm::Op::kReduceScatter:
      MPI_Reduce_scatter(input_.data(), output_.data(), counts.data(), MPI_FLOAT, MPI_SUM, comm);
      break;
    case comm::Op::kAlltoall: {
      const auto recv = to_int(recv_counts_);
      auto send_displs = offsets(counts);
      auto recv_displs = offsets(recv);
      MPI_Alltoallv(input_.data(), counts.data(), send_displs.data(), MPI_FLOAT, output_.data(),
                    recv.data(), recv_displs.data(), MPI_FLOAT, comm);
      break;
    }
    case comm::Op::kBroadcast:
      MPI_Bcast(output_.data(), int(output_.size()), MPI_FLOAT, kRoot, comm);
      break;
    case comm::Op::kSendRecv:
      if (rank_ == 0)
        MPI_Send(output_.data(), int(output_.size()), MPI_FLOAT, 1, kP2pTag, comm);
      else if (rank_ == 1)
        MPI_Recv(output_.data(), int(output_.size()), MPI_FLOAT, 0, kP2pTag, comm,
                 MPI_STATUS_IGNORE);
      break;
    default:
      throw std::invalid_argument(std::string("operation ") + comm::to_string(op_) +
                                  " is not benchmarked");
  }
}

void CollectiveOpBuffers::run_communicator(comm::Communicator& comm) {
  const comm::Role role = role_of(op_);
  switch (op_) {
    case comm::Op::kAllreduce:
      comm.allreduce(output_.data(), output_.size(), role);
      break;
    case comm::Op::kAllgather:
      comm.allgather(input_.data(), output_.data(), counts_, role);
      break;
    case comm::Op::kReduceScatter:
      comm.reduce_scatter(input_.data(), output_.data(), counts_, role);
      break;
    case comm::Op::kAlltoall:
      comm.alltoall(input_.data(), counts_, output_.data(), recv_counts_, role);
      break;
    case comm::Op::kBroadcast:
      comm.broadcast(output_.data(), output_.size(), kRoot, role);
      break;
    case comm::Op::kSendRecv:
      if (rank_ == 0)
        comm.send(output_.data(), output_.size(), 1, kP2pTag, role);
      else if (rank_ == 1)
        comm.recv(output_.data(), output_.size(), 0, kP2pTag, role);
      break;
    default:
      throw std::invalid_argument(std::string("operation ") + comm::to_string(op_) +
                                  " is not benchmarked");
  }
}

std::vector<float> CollectiveOpBuffers::result() const {
  if (op_ == comm::Op::kSendRecv && rank_ != 1) return {};
  if (op_ == comm::Op::kBroadcast && rank_ == kRoot) return {};
  return output_;
}

}  // namespace cmpi::bench
