// The pending operations behind Communicator::Request (internal to
// comm/communicator*.cpp): a plain MPI isend/irecv, and a compressed
// transfer, whose send is encoded when it is posted and whose receive is
// decoded chunk by chunk inside wait(). A plain receive checks that the
// message held the expected number of elements of its MPI datatype; a
// compressed receive delivers each chunk through `deliver` when set (16-bit
// words staged through a chunk-sized float buffer,
// communicator_words16.cpp), else decodes it into `data`.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "comm/algorithms/chunk_transfer.h"
#include "comm/communicator.h"

namespace cmpi::comm {

struct Communicator::Request::Pending {
  virtual ~Pending() = default;
  // Completes the transfer (receives and decodes what is still to come).
  virtual void finish() = 0;
  // Lets go of a transfer that will never be waited for, without blocking:
  // an error path must not turn into a hang.
  virtual void abandon() = 0;
  // The rank of the group the transfer waits for (named on a timeout).
  virtual int waits_for() const = 0;
  // Finishes `op`, or abandons it if finishing throws (then rethrows): what
  // wait() and a blocking 16-bit call both do with a pending transfer.
  static void complete(std::unique_ptr<Pending> op) {
    try {
      op->finish();
    } catch (...) {
      op->abandon();
      throw;
    }
  }
};

struct PlainPending final : Communicator::Request::Pending {
  MPI_Request request = MPI_REQUEST_NULL;
  bool is_recv = false;
  size_t expected = 0;
  int peer = 0, tag = 0;
  GroupKind group = GroupKind::kWorld;
  OpCounters* counters = nullptr;
  MPI_Datatype datatype = MPI_FLOAT;
  const char* elements = "floats";  // what `expected` counts, in errors

  int waits_for() const override { return peer; }
  void abandon() override {
    if (request == MPI_REQUEST_NULL) return;
    if (is_recv) MPI_Cancel(&request);
    MPI_Request_free(&request);
  }

  void finish() override {
    MPI_Status status;
    double start = MPI_Wtime();
    MPI_Wait(&request, &status);
    double elapsed = MPI_Wtime() - start;
    counters->seconds += elapsed;
    counters->wire_seconds += elapsed;
    if (!is_recv) return;
    int count = 0;
    MPI_Get_count(&status, datatype, &count);
    if (count != int(expected))
      throw std::runtime_error(std::string("group ") + to_string(group) + ": irecv from rank " +
                               std::to_string(peer) + " tag " + std::to_string(tag) + " expected " +
                               std::to_string(expected) + " " + elements + ", the message holds " +
                               (count == MPI_UNDEFINED ? std::string("a payload of another type")
                                                       : std::to_string(count) + " " + elements));
  }
};

struct CompressedSendPending final : Communicator::Request::Pending {
  CompressedContext ctx;
  std::optional<OutgoingTransfer> out;
  int dest = 0;
  int waits_for() const override { return dest; }
  // The transfer's destructor frees its pending requests and keeps its
  // buffers alive for MPI.
  void abandon() override { out.reset(); }
  void finish() override {
    double start = MPI_Wtime();
    out->wait();
    ctx.counters->seconds += MPI_Wtime() - start;
    out.reset();
  }
};

struct CompressedRecvPending final : Communicator::Request::Pending {
  CompressedContext ctx;
  std::optional<IncomingTransfer> in;
  int source = 0;
  float* data = nullptr;
  // Set: delivers chunk k of `in` instead of decoding it into data.
  std::function<void(IncomingTransfer&, size_t)> deliver;
  int waits_for() const override { return source; }
  void abandon() override { in.reset(); }  // cancels what is still posted
  void finish() override {
    double start = MPI_Wtime();
    while (!in->done()) {
      size_t k = in->wait_next();
      if (deliver)
        deliver(*in, k);
      else
        in->decode(k, data + in->shape().chunk_offset(k));
    }
    ctx.counters->seconds += MPI_Wtime() - start;
    in.reset();
  }
};

}  // namespace cmpi::comm
