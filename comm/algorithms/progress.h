// Progress: every nonblocking MPI operation of one compressed call, kept
// moving while the call is busy in a codec.
//
// Why: OpenMPI's TCP transport sends a message above its eager limit (64 KiB
// by default) by rendezvous. Only the first fragment leaves at once; the rest
// follows once the receiver, from inside an MPI call, has matched it and
// answered, and then only while the sender's own progress engine runs. Ranks
// call MPI from one thread (MPI_THREAD_FUNNELED) and OpenMPI's TCP transport
// has no progress thread, so a rank encoding or decoding a 1 MiB chunk for
// tens of milliseconds would stall every transfer of its neighbours. The
// algorithms therefore cut codec work into steps of a few tens of thousands
// of floats (chunk_payload.h) and call poll_if_due() between steps, and they
// wait through wait(), which polls too.
//
// poll() does two things for the whole call:
//   1. MPI_Testsome over every request the call has in flight (the sends and
//      receives of all its transfers, e.g. both ring neighbours' and every
//      hop's), which runs the progress engine and records the status of
//      each request that completes;
//   2. starts the incoming transfers that wait for their first chunk
//      (IncomingTransfer::try_start: probe for it, receive it, check its frame
//      and post receives for the other chunks), so that a transfer's chunks
//      find posted receives even when they arrive while this rank is still
//      decoding the previous transfer. Transfers from one source start in the
//      order they were registered, which must be the order that source sends
//      them in: only then is the first unmatched message from the source the
//      next transfer's first chunk.
//
// Requests are tracked by id, so transfers ask done(id)/status(id) instead of
// testing requests themselves. If the call unwinds with requests pending,
// the destructor cancels pending receives and frees every pending request
// (the transfers leak the buffers those requests use; the job is expected
// to abort after such an error). A Progress must therefore outlive the
// transfers that use it: declare it first.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "comm/algorithms/compressed_context.h"

namespace cmpi::comm {

class IncomingTransfer;

class Progress {
 public:
  using RequestId = size_t;

  // Codec steps between two polls take at least this long: polling more
  // often buys no earlier rendezvous answer, only overhead on fast codecs.
  static constexpr double kPollIntervalSeconds = 50e-6;

  explicit Progress(CompressedContext& ctx) : ctx_(ctx) {}
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Tracks a request just started (MPI_Isend, MPI_Irecv, MPI_Imrecv).
  RequestId track(MPI_Request request, bool is_receive);
  bool done(RequestId id) const { return requests_[id] == MPI_REQUEST_NULL; }
  // Status of a completed request.
  const MPI_Status& status(RequestId id) const { return statuses_[id]; }
  // MPI_Test of one request; true once it has completed.
  bool test(RequestId id);
  // Polls until the request has completed; the time counts as wire seconds.
  void wait(RequestId id);

  // Incoming transfers register on construction (in the order each source
  // sends them) and unregister on destruction.
  void listen(IncomingTransfer* transfer);
  void forget(IncomingTransfer* transfer);

  // Tests every request in flight and starts transfers whose first chunk
  // has arrived; never blocks. May throw the TransferError of a first chunk
  // that does not check out.
  void poll();
  // poll() unless the last one was less than kPollIntervalSeconds ago.
  void poll_if_due();

 private:
  CompressedContext& ctx_;
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> statuses_;
  std::vector<char> is_receive_;
  size_t first_pending_ = 0;  // requests before it have all completed
  std::vector<int> completed_indices_;
  std::vector<MPI_Status> completed_statuses_;
  std::vector<IncomingTransfer*> waiting_first_;  // registered, not started yet
  double last_poll_ = 0;
};

}  // namespace cmpi::comm
