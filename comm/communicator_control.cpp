// The Communicator's control calls (control_allreduce, control_gather): the
// few bytes a run exchanges to steer itself (non-finite flags and records,
// the asynchronous checkpoint's progress, the end-of-run totals), as opposed
// to the data a step trains on. They take the plain MPI collective on the
// group's communicator and nothing else: no policy route (a codec, even a
// lossless one, would only add frames to a few bytes, and a lossy one would
// corrupt a flag), no preset auto slot, no CommStats entry (the step's
// traffic metrics and summary.json count the training's data alone; a flag
// allreduce per step would otherwise show up as world traffic). Only
// control_calls_ counts them. The watchdog sees them as it sees every
// Communicator operation: armed for the whole call, naming the group.
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "comm/communicator.h"
#include "comm/watchdog.h"

namespace cmpi::comm {
namespace {

// The MPI datatype of each element type the control allreduce takes.
template <class T>
struct ControlElement;
template <>
struct ControlElement<int32_t> {
  static MPI_Datatype type() { return MPI_INT32_T; }
};
template <>
struct ControlElement<int64_t> {
  static MPI_Datatype type() { return MPI_INT64_T; }
};
template <>
struct ControlElement<uint64_t> {
  static MPI_Datatype type() { return MPI_UINT64_T; }
};
template <>
struct ControlElement<double> {
  static MPI_Datatype type() { return MPI_DOUBLE; }
};

MPI_Op mpi_op(ControlReduce op) {
  switch (op) {
    case ControlReduce::kSum:
      return MPI_SUM;
    case ControlReduce::kMax:
      return MPI_MAX;
    case ControlReduce::kMin:
      return MPI_MIN;
    case ControlReduce::kBitOr:
      return MPI_BOR;
  }
  throw std::invalid_argument("unknown control reduction");
}

std::string call_of(GroupKind group, const char* call) {
  return std::string("group ") + to_string(group) + ": " + call;
}

}  // namespace

const char* to_string(ControlReduce op) {
  switch (op) {
    case ControlReduce::kSum:
      return "sum";
    case ControlReduce::kMax:
      return "max";
    case ControlReduce::kMin:
      return "min";
    case ControlReduce::kBitOr:
      return "bit_or";
  }
  return "?";
}

template <class T>
void Communicator::control_allreduce_of(T* data, size_t n, ControlReduce op) {
  const int count = mpi_count(n, kind_);
  if (data == nullptr && n > 0)
    throw std::invalid_argument(call_of(kind_, "control_allreduce") + " of " + std::to_string(n) +
                                " elements got a null buffer");
  // MPI defines bitwise or on integers only; on doubles it would be an MPI
  // error (an abort) rather than an exception.
  if (op == ControlReduce::kBitOr && !std::is_integral_v<T>)
    throw std::invalid_argument(call_of(kind_, "control_allreduce") +
                                " bit_or takes integers, not doubles");
  const MPI_Op reduction = mpi_op(op);
  WatchedCall watched("control_allreduce", comm_);
  ++control_calls_;
  if (n == 0) return;
  MPI_Allreduce(MPI_IN_PLACE, data, count, ControlElement<T>::type(), reduction, comm_);
}

void Communicator::control_allreduce(int32_t* data, size_t n, ControlReduce op) {
  control_allreduce_of(data, n, op);
}

void Communicator::control_allreduce(int64_t* data, size_t n, ControlReduce op) {
  control_allreduce_of(data, n, op);
}

void Communicator::control_allreduce(uint64_t* data, size_t n, ControlReduce op) {
  control_allreduce_of(data, n, op);
}

void Communicator::control_allreduce(double* data, size_t n, ControlReduce op) {
  control_allreduce_of(data, n, op);
}

std::vector<std::byte> Communicator::control_gather(const void* own, size_t bytes, int root) {
  const int count = mpi_count(bytes, kind_);
  check_peer(root, "root", "control_gather");
  if (own == nullptr && bytes > 0)
    throw std::invalid_argument(call_of(kind_, "control_gather") + " of " + std::to_string(bytes) +
                                " bytes got a null buffer");
  std::vector<std::byte> gathered(rank_ == root ? size_t(size_) * bytes : 0);
  WatchedCall watched("control_gather", comm_);
  ++control_calls_;
  if (bytes == 0) return gathered;
  MPI_Gather(own, count, MPI_BYTE, gathered.data(), count, MPI_BYTE, root, comm_);
  return gathered;
}

}  // namespace cmpi::comm
