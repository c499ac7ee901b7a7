#include "comm/algorithms/chunk_transfer.h"

#include <stdexcept>
#include <thread>

#include "comm/algorithms/chunk_payload.h"
#include "comm/algorithms/codec_steps.h"
#include "comm/algorithms/transfer_error.h"
#include "compress/payload.h"

namespace cmpi::comm {
namespace {

SharedBytes allocate(size_t bytes) {
  // Not value-initialized: every byte sent or decoded is written first.
  return SharedBytes(new uint8_t[bytes == 0 ? 1 : bytes]);
}

// Keeps buffers alive for good: MPI may still read or write them.
void leak(std::vector<SharedBytes>& buffers) {
  new std::vector<SharedBytes>(std::move(buffers));
}

const char* origin_field(Op op) {
  switch (op) {
    case Op::kBroadcast:
      return "root";
    case Op::kAllgather:
    case Op::kReduceScatter:
    case Op::kAllreduce:
      return "segment";
    default:
      return "origin";
  }
}

}  // namespace

TransferShape make_shape(const CompressedContext& ctx, Op op, size_t total, int origin) {
  TransferShape shape;
  shape.op = op;
  shape.total_elems = total;
  shape.chunk_elems = ctx.chunk_elems;
  shape.origin = origin;
  if (shape.chunk_count() > size_t(UINT32_MAX))
    throw std::invalid_argument(describe_call(ctx, op) + ": " + std::to_string(total) +
                                " elements in chunks of " + std::to_string(ctx.chunk_elems) +
                                " exceed 2^32 chunks; raise chunk_elems");
  return shape;
}

// ---------------------------------------------------------------- sending

OutgoingTransfer::OutgoingTransfer(CompressedContext& ctx, Progress& progress, int dest,
                                   const TransferShape& shape)
    : ctx_(ctx), progress_(progress), dest_(dest), shape_(shape) {}

OutgoingTransfer::OutgoingTransfer(CompressedContext& ctx, std::unique_ptr<Progress> own, int dest,
                                   const TransferShape& shape)
    : own_progress_(std::move(own)),
      ctx_(ctx),
      progress_(*own_progress_),
      dest_(dest),
      shape_(shape) {}

OutgoingTransfer::~OutgoingTransfer() {
  if (pending()) leak(in_flight_);
}

bool OutgoingTransfer::pending() const {
  for (Progress::RequestId id : requests_)
    if (!progress_.done(id)) return true;
  return false;
}

void OutgoingTransfer::send_chunk(size_t k, const float* chunk_data, const uint64_t* feedback_key) {
  size_t elems = shape_.chunk_length(k);
  size_t capacity = chunk_message_bound(ctx_, elems);
  SharedBytes buffer = allocate(capacity);
  ChunkFrame frame;
  frame.op = shape_.op;
  frame.codec = ctx_.codec->id();
  frame.total_elems = shape_.total_elems;
  frame.chunk_elems = shape_.chunk_elems;
  frame.chunk_index = uint32_t(k);
  frame.chunk_count = uint32_t(shape_.chunk_count());
  frame.origin = shape_.origin;
  frame.chunk_bound = chunk_message_bound(ctx_, shape_.chunk_elems);
  write_chunk_frame(frame, buffer.get());
  size_t payload =
      encode_chunk_payload(ctx_, progress_, chunk_data, elems, buffer.get() + kChunkFrameBytes,
                           capacity - kChunkFrameBytes, feedback_key);
  if (encoded_.size() <= k) {
    encoded_.resize(k + 1);
    payload_bytes_.resize(k + 1, 0);
  }
  encoded_[k] = buffer;
  payload_bytes_[k] = payload;
  forward(buffer, kChunkFrameBytes + payload);
}

void OutgoingTransfer::forward(const SharedBytes& message, size_t bytes) {
  in_flight_.push_back(message);
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Isend(message.get(), int(bytes), MPI_BYTE, dest_, ctx_.tag, ctx_.comm, &request);
  requests_.push_back(progress_.track(request, false));
  add_wire_bytes(ctx_, bytes);
}

void OutgoingTransfer::decode_sent(size_t k, float* out) {
  size_t elems = shape_.chunk_length(k);
  if (elems == 0) return;
  decode_chunk_payload(ctx_, progress_, encoded_[k].get() + kChunkFrameBytes, payload_bytes_[k],
                       out, elems);
}

void OutgoingTransfer::wait() {
  for (Progress::RequestId id : requests_) progress_.wait(id);
  in_flight_.clear();
}

// -------------------------------------------------------------- receiving

IncomingTransfer::IncomingTransfer(CompressedContext& ctx, Progress& progress, int source,
                                   const TransferShape& expected)
    : ctx_(ctx), progress_(progress), source_(source), shape_(expected) {
  size_t count = shape_.chunk_count();
  buffers_.resize(count);
  bytes_.assign(count, 0);
  requests_.assign(count, kNoRequest);
  progress_.listen(this);
}

IncomingTransfer::IncomingTransfer(CompressedContext& ctx, std::unique_ptr<Progress> own,
                                   int source, const TransferShape& expected)
    : IncomingTransfer(ctx, *own, source, expected) {
  own_progress_ = std::move(own);
}

IncomingTransfer::~IncomingTransfer() {
  progress_.forget(this);
  if (pending()) leak(buffers_);
}

bool IncomingTransfer::pending() const {
  for (Progress::RequestId id : requests_)
    if (id != kNoRequest && !progress_.done(id)) return true;
  return false;
}

bool IncomingTransfer::try_start() {
  if (start_ == Start::kProbing) {
    int found = 0;
    MPI_Message message = MPI_MESSAGE_NULL;
    MPI_Status status;
    MPI_Improbe(source_, ctx_.tag, ctx_.comm, &found, &message, &status);
    if (!found) return false;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    buffers_[0] = allocate(size_t(count));
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Imrecv(buffers_[0].get(), count, MPI_BYTE, &message, &request);
    requests_[0] = progress_.track(request, true);
    start_ = Start::kReceivingFirst;
  }
  if (start_ == Start::kReceivingFirst) {
    if (!progress_.test(requests_[0])) return false;
    accept(0, progress_.status(requests_[0]));
    post_remaining();
    start_ = Start::kStarted;
  }
  return true;
}

void IncomingTransfer::start_blocking() {
  double start = MPI_Wtime();
  // Transfers are consumed in the order their source sends them, so every
  // earlier one from this source has started and the probe finds our chunk.
  while (!try_start()) {
    progress_.poll();
    if (start_ == Start::kStarted) break;
    // Nothing for us yet: let ranks sharing this core run (oversubscribed jobs).
    std::this_thread::yield();
  }
  progress_.forget(this);
  add_wire_seconds(ctx_, MPI_Wtime() - start);
}

size_t IncomingTransfer::wait_next() {
  if (done())
    throw std::logic_error(describe_call(ctx_, shape_.op) + ": wait_next after the last chunk");
  size_t k = next_;
  if (k == 0) {
    if (start_ != Start::kStarted) start_blocking();
  } else {
    progress_.wait(requests_[k]);
    accept(k, progress_.status(requests_[k]));
  }
  ++next_;
  return k;
}

bool IncomingTransfer::poll_next(size_t& k) {
  k = next_;
  if (done()) return false;
  if (k == 0) {
    // The algorithm asks in its sources' sending order (one transfer per
    // source where it polls), so the probe finds this transfer's chunk.
    if (start_ != Start::kStarted && !try_start()) return false;
  } else {
    if (!progress_.test(requests_[k])) return false;
    accept(k, progress_.status(requests_[k]));
  }
  ++next_;
  return true;
}

void IncomingTransfer::accept(size_t k, const MPI_Status& status) {
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  bytes_[k] = size_t(count);
  ChunkFrame frame;
  if (!read_chunk_frame(buffers_[k].get(), bytes_[k], frame))
    fail("frame", "message of " + std::to_string(count) + " bytes on tag " +
                      std::to_string(ctx_.tag) + " is not a chunk of a compressed transfer");
  auto differs = [&](const char* field, uint64_t theirs, uint64_t ours, const char* what) {
    if (theirs != ours)
      fail(field, "sender has " + std::to_string(theirs) + " " + what + ", this rank expects " +
                      std::to_string(ours));
  };
  if (frame.op != shape_.op)
    fail("operation", std::string("sender is in ") + call_name(frame.op) + ", this rank in " +
                          call_name(shape_.op));
  if (frame.codec != ctx_.codec->id())
    fail("codec", std::string("sender encodes with ") + compress::codec_id_name(frame.codec) +
                      ", this rank decodes with " + ctx_.codec->spec().to_string());
  differs("element count", frame.total_elems, shape_.total_elems, "elements");
  differs("chunk_elems", frame.chunk_elems, shape_.chunk_elems, "elements per chunk");
  if (frame.origin != shape_.origin)
    fail(origin_field(shape_.op), "sender has " + std::to_string(frame.origin) +
                                      ", this rank expects " + std::to_string(shape_.origin));
  size_t bound = chunk_message_bound(ctx_, shape_.chunk_elems);
  if (frame.chunk_bound != bound)
    fail("codec parameters", "sender's codec bounds a chunk at " +
                                 std::to_string(frame.chunk_bound) + " bytes, this rank's (" +
                                 ctx_.codec->spec().to_string() + ") at " + std::to_string(bound));
  differs("chunk index", frame.chunk_index, k, "as chunk index");
  differs("chunk index", frame.chunk_count, shape_.chunk_count(), "chunks");
  if (bytes_[k] > chunk_message_bound(ctx_, shape_.chunk_length(k)))
    fail("payload", "chunk " + std::to_string(k) + " of " + std::to_string(bytes_[k]) +
                        " bytes exceeds its bound");
}

void IncomingTransfer::post_remaining() {
  for (size_t k = 1; k < shape_.chunk_count(); ++k) {
    size_t capacity = chunk_message_bound(ctx_, shape_.chunk_length(k));
    buffers_[k] = allocate(capacity);
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Irecv(buffers_[k].get(), int(capacity), MPI_BYTE, source_, ctx_.tag, ctx_.comm, &request);
    requests_[k] = progress_.track(request, true);
  }
}

void IncomingTransfer::decode(size_t k, float* out) {
  size_t elems = shape_.chunk_length(k);
  size_t payload = bytes_[k] - kChunkFrameBytes;
  if (elems == 0) {
    if (payload != 0)
      fail("payload",
           "empty chunk " + std::to_string(k) + " carries " + std::to_string(payload) + " bytes");
    return;
  }
  try {
    decode_chunk_payload(ctx_, progress_, buffers_[k].get() + kChunkFrameBytes, payload, out,
                         elems);
  } catch (const compress::DecodeError& e) {
    std::string field = e.field() == "params"          ? "codec parameters"
                        : e.field() == "codec"         ? "codec"
                        : e.field() == "element_count" ? "element count"
                                                       : "payload";
    fail(field, "chunk " + std::to_string(k) + ": " + e.what());
  }
}

void IncomingTransfer::fail(const std::string& field, const std::string& detail) const {
  throw TransferError(field, describe_call(ctx_, shape_.op) + ": rank " +
                                 std::to_string(ctx_.rank) + " receiving from rank " +
                                 std::to_string(source_) + ": " + field + ": " + detail);
}

}  // namespace cmpi::comm
