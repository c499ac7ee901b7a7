#include "comm/communicator.h"

#include <climits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace cmpi::comm {
namespace {

// Times one call and adds it to the counters for its op.
class CallTimer {
 public:
  CallTimer(OpCounters& counters, uint64_t bytes) : counters_(counters), start_(MPI_Wtime()) {
    counters_.calls += 1;
    counters_.raw_bytes += bytes;
    counters_.wire_bytes += bytes;
  }
  ~CallTimer() {
    double elapsed = MPI_Wtime() - start_;
    counters_.seconds += elapsed;
    counters_.wire_seconds += elapsed;
  }

 private:
  OpCounters& counters_;
  double start_;
};

std::vector<int> to_counts(const std::vector<size_t>& counts, GroupKind group) {
  std::vector<int> out(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) out[i] = mpi_count(counts[i], group);
  return out;
}

std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> displs(counts.size(), 0);
  long long offset = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (offset > INT_MAX) throw std::length_error("collective spans more than INT_MAX elements");
    displs[i] = int(offset);
    offset += counts[i];
  }
  return displs;
}

}  // namespace

int mpi_count(size_t n, GroupKind group) {
  if (n > size_t(INT_MAX))
    throw std::length_error(std::string("group ") + to_string(group) + ": buffer of " +
                            std::to_string(n) + " elements exceeds INT_MAX");
  return int(n);
}

Communicator::Communicator(MPI_Comm comm, GroupKind kind) : comm_(comm), kind_(kind) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Communicator::~Communicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void Communicator::check_counts(const std::vector<size_t>& counts, const char* op) const {
  if (counts.size() != size_t(size_))
    throw std::invalid_argument(std::string("group ") + to_string(kind_) + ": " + op + " got " +
                                std::to_string(counts.size()) + " counts for " +
                                std::to_string(size_) + " ranks");
}

void Communicator::allreduce(float* data, size_t n, Role) {
  CallTimer timer(stats_.at(Op::kAllreduce), n * sizeof(float));
  MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(n, kind_), MPI_FLOAT, MPI_SUM, comm_);
}

void Communicator::reduce_scatter(const float* in, float* out, const std::vector<size_t>& counts,
                                  Role) {
  check_counts(counts, "reduce_scatter");
  size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
  CallTimer timer(stats_.at(Op::kReduceScatter), total * sizeof(float));
  auto c = to_counts(counts, kind_);
  MPI_Reduce_scatter(in, out, c.data(), MPI_FLOAT, MPI_SUM, comm_);
}

void Communicator::allgather(const float* in, float* out, const std::vector<size_t>& counts,
                             Role) {
  check_counts(counts, "allgather");
  size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
  CallTimer timer(stats_.at(Op::kAllgather), total * sizeof(float));
  auto c = to_counts(counts, kind_);
  auto displs = displacements(c);
  MPI_Allgatherv(in, c[rank_], MPI_FLOAT, out, c.data(), displs.data(), MPI_FLOAT, comm_);
}

void Communicator::broadcast(float* data, size_t n, int root, Role) {
  CallTimer timer(stats_.at(Op::kBroadcast), n * sizeof(float));
  MPI_Bcast(data, mpi_count(n, kind_), MPI_FLOAT, root, comm_);
}

void Communicator::alltoall(const float* in, const std::vector<size_t>& send_counts, float* out,
                            const std::vector<size_t>& recv_counts, Role) {
  check_counts(send_counts, "alltoall");
  check_counts(recv_counts, "alltoall");
  size_t total = std::accumulate(send_counts.begin(), send_counts.end(), size_t(0));
  CallTimer timer(stats_.at(Op::kAlltoall), total * sizeof(float));
  auto sc = to_counts(send_counts, kind_);
  auto rc = to_counts(recv_counts, kind_);
  auto sd = displacements(sc);
  auto rd = displacements(rc);
  MPI_Alltoallv(in, sc.data(), sd.data(), MPI_FLOAT, out, rc.data(), rd.data(), MPI_FLOAT, comm_);
}

void Communicator::send(const float* data, size_t n, int dest, int tag, Role) {
  CallTimer timer(stats_.at(Op::kSendRecv), n * sizeof(float));
  MPI_Send(data, mpi_count(n, kind_), MPI_FLOAT, dest, tag, comm_);
}

void Communicator::recv(float* data, size_t n, int source, int tag, Role) {
  // Received bytes are counted by the sender; only time is added here.
  OpCounters& counters = stats_.at(Op::kSendRecv);
  double start = MPI_Wtime();
  MPI_Recv(data, mpi_count(n, kind_), MPI_FLOAT, source, tag, comm_, MPI_STATUS_IGNORE);
  counters.seconds += MPI_Wtime() - start;
  counters.wire_seconds += MPI_Wtime() - start;
}

void Communicator::sendrecv(const float* send_data, size_t send_n, int dest, float* recv_data,
                            size_t recv_n, int source, int tag, Role) {
  CallTimer timer(stats_.at(Op::kSendRecv), send_n * sizeof(float));
  MPI_Sendrecv(send_data, mpi_count(send_n, kind_), MPI_FLOAT, dest, tag, recv_data,
               mpi_count(recv_n, kind_), MPI_FLOAT, source, tag, comm_, MPI_STATUS_IGNORE);
}

void Communicator::barrier() { MPI_Barrier(comm_); }

}  // namespace cmpi::comm
