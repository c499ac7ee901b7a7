// One transfer of a compressed algorithm (a p2p message, a ring hop, an
// alltoall block) between two ranks, as a stream of framed chunks.
//
// The sender encodes chunk k and starts sending it at once (MPI_Isend), so
// the encoding of chunk k+1 overlaps the transfer of chunk k; it may also
// forward chunks it received without re-encoding them.
//
// The receiver takes the first chunk at whatever size it has
// (MPI_Improbe/MPI_Imrecv) and checks its frame against its own view of the
// transfer (see chunk_frame.h). Only when they agree does it post receives
// for all other chunks, sized by the codec's bound, so that they land while
// it decodes: a disagreement is reported on the first chunk instead of
// truncating a buffer or waiting for chunks the sender will never send.
// Chunks are delivered in order (MPI does not reorder messages of one source
// and tag).
//
// Every request goes through the call's Progress (progress.h), which keeps
// all of them moving while the rank encodes or decodes (codec work is cut
// into steps, chunk_payload.h) and starts a receiving transfer as soon as its
// first chunk arrives, not only when the algorithm gets round to it. All
// waits poll the whole call.
//
// Buffers are reference counted so a forwarded chunk outlives its receiver.
// If a transfer is destroyed with MPI operations pending (an exception
// unwound the algorithm), its buffers are deliberately leaked rather than
// freed under MPI's feet (the Progress cancels and frees the requests); the
// job is expected to abort after such an error.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/algorithms/chunk_frame.h"
#include "comm/algorithms/compressed_context.h"
#include "comm/algorithms/progress.h"

namespace cmpi::comm {

// What both ends of a transfer must agree on.
struct TransferShape {
  Op op = Op::kSendRecv;
  size_t total_elems = 0;
  size_t chunk_elems = 1;
  int origin = -1;  // root, segment or owner the data belongs to

  // An empty transfer still sends one (empty) chunk, so that the receiver
  // learns what the sender believed even then.
  size_t chunk_count() const {
    return total_elems == 0 ? 1 : (total_elems + chunk_elems - 1) / chunk_elems;
  }
  size_t chunk_offset(size_t k) const { return k * chunk_elems; }
  size_t chunk_length(size_t k) const {
    size_t offset = chunk_offset(k);
    return offset >= total_elems ? 0 : std::min(chunk_elems, total_elems - offset);
  }
};

TransferShape make_shape(const CompressedContext& ctx, Op op, size_t total, int origin);

using SharedBytes = std::shared_ptr<uint8_t[]>;

class OutgoingTransfer {
 public:
  OutgoingTransfer(CompressedContext& ctx, Progress& progress, int dest,
                   const TransferShape& shape);
  // A transfer on its own, outside an algorithm (the Communicator's isend):
  // it polls a Progress of its own, i.e. only its own requests.
  OutgoingTransfer(CompressedContext& ctx, int dest, const TransferShape& shape)
      : OutgoingTransfer(ctx, std::make_unique<Progress>(ctx), dest, shape) {}
  ~OutgoingTransfer();
  OutgoingTransfer(const OutgoingTransfer&) = delete;
  OutgoingTransfer& operator=(const OutgoingTransfer&) = delete;

  const TransferShape& shape() const { return shape_; }

  // Encodes chunk k (chunk_data holds its chunk_length(k) elements), polling
  // progress between codec steps, and starts sending it. feedback_key
  // non-null: encode through ctx.feedback.
  void send_chunk(size_t k, const float* chunk_data, const uint64_t* feedback_key);
  // Starts sending a framed chunk received from elsewhere, unchanged.
  void forward(const SharedBytes& message, size_t bytes);
  // Decodes what send_chunk(k) sent into out: the receiver's view of it.
  void decode_sent(size_t k, float* out);
  // Polls until every send has completed.
  void wait();

 private:
  OutgoingTransfer(CompressedContext& ctx, std::unique_ptr<Progress> own, int dest,
                   const TransferShape& shape);
  bool pending() const;

  std::unique_ptr<Progress> own_progress_;  // set by the stand-alone constructor; destroyed last
  CompressedContext& ctx_;
  Progress& progress_;
  int dest_;
  TransferShape shape_;
  std::vector<SharedBytes> encoded_;  // by chunk index, for decode_sent
  std::vector<size_t> payload_bytes_;
  std::vector<SharedBytes> in_flight_;  // one per request, alive until wait()
  std::vector<Progress::RequestId> requests_;
};

class IncomingTransfer {
 public:
  // Registers with progress, which may start the transfer from then on:
  // construct the transfers from one source in the order it sends them.
  IncomingTransfer(CompressedContext& ctx, Progress& progress, int source,
                   const TransferShape& expected);
  // A transfer on its own, outside an algorithm (the Communicator's irecv):
  // it polls a Progress of its own, i.e. only its own requests.
  IncomingTransfer(CompressedContext& ctx, int source, const TransferShape& expected)
      : IncomingTransfer(ctx, std::make_unique<Progress>(ctx), source, expected) {}
  ~IncomingTransfer();
  IncomingTransfer(const IncomingTransfer&) = delete;
  IncomingTransfer& operator=(const IncomingTransfer&) = delete;

  const TransferShape& shape() const { return shape_; }
  int source() const { return source_; }
  bool done() const { return next_ == shape_.chunk_count(); }

  // Polls until the next chunk has arrived and checked out; returns its index.
  size_t wait_next();
  // Same without blocking: false if the next chunk has not arrived yet.
  bool poll_next(size_t& k);
  // Progress::poll's part, never blocking: looks for the first chunk, and
  // once it has arrived and checked out posts receives for the others.
  // True once they are posted.
  bool try_start();

  // The framed message of a delivered chunk (for forwarding).
  const SharedBytes& message(size_t k) const { return buffers_[k]; }
  size_t message_bytes(size_t k) const { return bytes_[k]; }
  // Decodes delivered chunk k into out[0..chunk_length(k)), polling
  // progress between codec steps.
  void decode(size_t k, float* out);

 private:
  enum class Start { kProbing, kReceivingFirst, kStarted };
  static constexpr Progress::RequestId kNoRequest = ~Progress::RequestId(0);

  IncomingTransfer(CompressedContext& ctx, std::unique_ptr<Progress> own, int source,
                   const TransferShape& expected);
  void start_blocking();
  void accept(size_t k, const MPI_Status& status);
  void post_remaining();
  bool pending() const;
  [[noreturn]] void fail(const std::string& field, const std::string& detail) const;

  std::unique_ptr<Progress> own_progress_;  // set by the stand-alone constructor; destroyed last
  CompressedContext& ctx_;
  Progress& progress_;
  int source_;
  TransferShape shape_;
  size_t next_ = 0;  // next chunk to deliver
  Start start_ = Start::kProbing;
  std::vector<SharedBytes> buffers_;
  std::vector<size_t> bytes_;
  std::vector<Progress::RequestId> requests_;  // by chunk; kNoRequest until posted
};

}  // namespace cmpi::comm
