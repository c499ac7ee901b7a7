// The Communicator's point-to-point calls (send, recv, their nonblocking
// forms, sendrecv, wait) in their one form (communicator.h): each fills in
// its CallSpec and goes through the dispatch (communicator_dispatch.h); the
// body then takes the transport of the buffers' memory and the carriage of
// their element type: device memory, 16-bit words through a compressing
// route (communicator_words16.cpp), floats through a compressing route, or
// the plain MPI path, which moves any element type as it is. A send is
// counted by its sender; a receive adds only its time.
#include <mpi.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "comm/algorithms/chunk_transfer.h"
#include "comm/algorithms/codec_steps.h"
#include "comm/communicator_dispatch.h"
#include "comm/communicator_pending.h"
#include "comm/communicator_words16.h"
#include "comm/device/device_collectives.h"

namespace cmpi::comm {

using compress::cuda::StreamId;
using device::DeviceCollectives;

void Communicator::send(const void* data, size_t n, BufferKind buffers, int dest, int tag,
                        Role role, uint64_t buffer_key) {
  CallSpec call = call_spec("send", "device send", Op::kSendRecv, role, buffers);
  check_peer(dest, "dest", call.operation);
  if (call.on_device()) check_device_tag(call, tag);
  check_buffers(call, /*words_ok=*/true, /*device_ok=*/true);
  call.locality = peer_locality(dest);
  call.peer = dest;
  call.policy_bytes = n * buffers.element.bytes();
  call.raw_bytes = call.policy_bytes;
  call.sample(data, n);
  dispatch(call, [&](const Route* found, CallRecord& record) {
    if (call.on_device())
      return on_device(call, found, record, tag, false, [&](DeviceCollectives& c, StreamId s) {
        c.send(static_cast<const float*>(data), n, dest, s);
      });
    if (!buffers.element.is_float32()) {
      const Words16::Path p = Words16::path(*this, found, call);
      if (p.route != nullptr) {
        Words16::isend(*this, p, record, static_cast<const uint16_t*>(data), n, dest, tag,
                       buffer_key, /*blocking=*/true);
        return;
      }
    } else if (const Route* route = compressing(found)) {
      const auto* floats = static_cast<const float*>(data);
      record.compressed();
      begin_compressed(*route, Op::kSendRecv, record.raw_bytes(), floats, n);
      CompressedContext ctx = context(*route, Op::kSendRecv, comm_, tag, buffer_key);
      return compressed_send(ctx, floats, n, dest);
    }
    record.plain();
    MPI_Send(data, mpi_count(n, kind_), buffers.element.mpi_type(), dest, tag, comm_);
  });
}

void Communicator::recv(void* data, size_t n, BufferKind buffers, int source, int tag, Role role) {
  CallSpec call = call_spec("recv", "device recv", Op::kSendRecv, role, buffers);
  check_peer(source, "source", call.operation);
  if (call.on_device()) check_device_tag(call, tag);
  check_buffers(call, /*words_ok=*/true, /*device_ok=*/true);
  call.locality = peer_locality(source);
  call.peer = source;
  call.policy_bytes = n * buffers.element.bytes();
  call.received_bytes = call.policy_bytes;  // the sender counts the call and its bytes
  dispatch(call, [&](const Route* found, CallRecord& record) {
    if (call.on_device())
      return on_device(call, found, record, tag, true, [&](DeviceCollectives& c, StreamId s) {
        c.recv(static_cast<float*>(data), n, source, s);
      });
    if (!buffers.element.is_float32()) {
      const Words16::Path p = Words16::path(*this, found, call);
      if (p.route != nullptr) {
        Words16::irecv(*this, p, static_cast<uint16_t*>(data), n, source, tag,
                       /*blocking=*/true);
        return;
      }
    } else if (const Route* route = compressing(found)) {
      record.compressed();
      CompressedContext ctx = context(*route, Op::kSendRecv, comm_, tag, 0);
      return compressed_recv(ctx, static_cast<float*>(data), n, source);
    }
    plain_recv(data, n, buffers.element, source, tag, record.counters());
  });
}

void Communicator::plain_recv(void* data, size_t n, ElementType element, int source, int tag,
                              OpCounters& counters) {
  MPI_Status status;
  double start = MPI_Wtime();
  MPI_Recv(data, mpi_count(n, kind_), element.mpi_type(), source, tag, comm_, &status);
  double elapsed = MPI_Wtime() - start;
  counters.seconds += elapsed;
  counters.wire_seconds += elapsed;
  int count = 0;
  MPI_Get_count(&status, element.mpi_type(), &count);
  if (count != int(n))
    throw std::runtime_error(std::string("group ") + to_string(kind_) + ": recv from rank " +
                             std::to_string(source) + " tag " + std::to_string(tag) + " expected " +
                             std::to_string(n) + " " + element.noun() + ", the message holds " +
                             (count == MPI_UNDEFINED
                                  ? std::string(element.is_float32() ? "a non-float payload"
                                                                     : "a payload of another type")
                                  : std::to_string(count) + " " + element.noun()));
}

void Communicator::sendrecv(const float* send_data, size_t send_n, int dest, float* recv_data,
                            size_t recv_n, int source, int tag, Role role, uint64_t buffer_key) {
  check_peer(dest, "dest", "sendrecv");
  check_peer(source, "source", "sendrecv");
  const uint64_t bytes = uint64_t(send_n) * sizeof(float);
  const Route* out_route = compressing_route(Op::kSendRecv, role, bytes, peer_locality(dest));
  const Route* in_route =
      compressing_route(Op::kSendRecv, role, recv_n * sizeof(float), peer_locality(source));
  if ((out_route || in_route) && !(dest == rank_ && source == rank_)) {
    // Either direction may be compressed on its own, as its peer decides the
    // same for the same size: start the send, receive, then finish the send,
    // each through the dispatch, under one deadline for the pair.
    WatchedCall watched("sendrecv", comm_, source);
    Request out = isend(send_data, send_n, dest, tag, role, buffer_key);
    recv(recv_data, recv_n, source, tag, role);
    wait(out);
    return;
  }
  CallSpec call = call_spec("sendrecv", "sendrecv", Op::kSendRecv, role, BufferKind{});
  call.locality = peer_locality(dest);
  call.peer = source;
  call.policy_bytes = bytes;
  call.raw_bytes = dest == rank_ ? 0 : bytes;  // a message to itself crosses no wire
  call.sample(send_data, send_n);
  call.received_bytes = dest == rank_ ? 0 : recv_n * sizeof(float);
  dispatch(call, [&](const Route*, CallRecord& record) {
    record.plain();
    MPI_Sendrecv(send_data, mpi_count(send_n, kind_), MPI_FLOAT, dest, tag, recv_data,
                 mpi_count(recv_n, kind_), MPI_FLOAT, source, tag, comm_, MPI_STATUS_IGNORE);
  });
}

Communicator::Request Communicator::isend(const void* data, size_t n, BufferKind buffers, int dest,
                                          int tag, Role role, uint64_t buffer_key) {
  CallSpec call = call_spec("isend", "isend", Op::kSendRecv, role, buffers);
  check_peer(dest, "dest", call.operation);
  check_buffers(call, /*words_ok=*/true, /*device_ok=*/false);
  call.locality = peer_locality(dest);
  call.peer = dest;
  call.policy_bytes = n * buffers.element.bytes();
  call.raw_bytes = call.policy_bytes;
  call.sample(data, n);
  call.blocking = false;
  return dispatch(call, [&](const Route* found, CallRecord& record) {
    if (!buffers.element.is_float32()) {
      const Words16::Path p = Words16::path(*this, found, call);
      if (p.route != nullptr)
        return Words16::isend(*this, p, record, static_cast<const uint16_t*>(data), n, dest, tag,
                              buffer_key, /*blocking=*/false);
    } else if (const Route* route = compressing(found)) {
      return compressed_float_isend(*route, static_cast<const float*>(data), n, dest, tag,
                                    buffer_key, record);
    }
    record.plain();
    auto pending = std::make_unique<PlainPending>();
    pending->counters = &record.counters();
    pending->peer = dest;
    MPI_Isend(data, mpi_count(n, kind_), buffers.element.mpi_type(), dest, tag, comm_,
              &pending->request);
    Request request;
    request.op_ = std::move(pending);
    return request;
  });
}

Communicator::Request Communicator::compressed_float_isend(const Route& route, const float* data,
                                                           size_t n, int dest, int tag,
                                                           uint64_t buffer_key,
                                                           CallRecord& record) {
  record.compressed();
  begin_compressed(route, Op::kSendRecv, record.raw_bytes(), data, n);
  auto pending = std::make_unique<CompressedSendPending>();
  pending->dest = dest;
  pending->ctx = context(route, Op::kSendRecv, comm_, tag, buffer_key);
  // The same transfer compressed_send makes, so that recv can take it.
  check_context(pending->ctx, Op::kSendRecv);
  if (dest == rank_)
    throw std::invalid_argument(describe_call(pending->ctx, Op::kSendRecv) + ": rank " +
                                std::to_string(rank_) + " cannot send to itself");
  OutgoingTransfer& out =
      pending->out.emplace(pending->ctx, dest, make_shape(pending->ctx, Op::kSendRecv, n, rank_));
  for (size_t k = 0; k < out.shape().chunk_count(); ++k) {
    uint64_t key = feedback_key(buffer_key, FeedbackSite::kSend, uint64_t(dest), k);
    out.send_chunk(k, data + out.shape().chunk_offset(k), &key);
  }
  Request request;
  request.op_ = std::move(pending);
  return request;
}

Communicator::Request Communicator::irecv(void* data, size_t n, BufferKind buffers, int source,
                                          int tag, Role role) {
  CallSpec call = call_spec("irecv", "irecv", Op::kSendRecv, role, buffers);
  check_peer(source, "source", call.operation);
  check_buffers(call, /*words_ok=*/true, /*device_ok=*/false);
  call.locality = peer_locality(source);
  call.peer = source;
  call.policy_bytes = n * buffers.element.bytes();
  call.blocking = false;
  return dispatch(call, [&](const Route* found, CallRecord& record) {
    if (!buffers.element.is_float32()) {
      const Words16::Path p = Words16::path(*this, found, call);
      if (p.route != nullptr)
        return Words16::irecv(*this, p, static_cast<uint16_t*>(data), n, source, tag,
                              /*blocking=*/false);
    } else if (const Route* route = compressing(found)) {
      auto pending = std::make_unique<CompressedRecvPending>();
      pending->source = source;
      pending->ctx = context(*route, Op::kSendRecv, comm_, tag, 0);
      check_context(pending->ctx, Op::kSendRecv);
      pending->in.emplace(pending->ctx, source, make_shape(pending->ctx, Op::kSendRecv, n, source));
      pending->data = static_cast<float*>(data);
      Request request;
      request.op_ = std::move(pending);
      return request;
    }
    // Received bytes are counted by the sender; only time is added here.
    OpCounters& counters = record.counters();
    auto pending = std::make_unique<PlainPending>();
    pending->is_recv = true;
    pending->expected = n;
    pending->peer = source;
    pending->tag = tag;
    pending->group = kind_;
    pending->counters = &counters;
    pending->datatype = buffers.element.mpi_type();
    pending->elements = buffers.element.noun();
    double start = MPI_Wtime();
    MPI_Irecv(data, mpi_count(n, kind_), buffers.element.mpi_type(), source, tag, comm_,
              &pending->request);
    counters.seconds += MPI_Wtime() - start;
    Request request;
    request.op_ = std::move(pending);
    return request;
  });
}

void Communicator::wait(Request& request) {
  if (!request.op_) return;
  WatchedCall watched("wait", comm_, request.op_->waits_for());
  Request::Pending::complete(std::move(request.op_));
}

}  // namespace cmpi::comm
