// Transport: the host-to-host message layer under the staged device
// collectives (staging_pipeline.h): nonblocking byte sends and receives
// between ranks, completed by polling. MpiTransport posts MPI_Isend/Irecv on
// one communicator and tag (the tag may change between operations, once
// every message of the last one has completed) and counts the bytes it sent,
// which the Communicator charges as wire bytes; LoopbackTransport (tests)
// joins endpoints in one process.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

namespace cmpi::comm::device {

class Transport {
 public:
  using Handle = int;
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Messages between two ranks are received in the order they were posted.
  // `data` must stay untouched until test() reports the send complete.
  virtual Handle post_send(int peer, const void* data, size_t bytes) = 0;
  virtual Handle post_recv(int peer, void* data, size_t capacity) = 0;
  // Whether the operation completed (then its handle is spent); for a
  // receive, *bytes is the size received. Never blocks.
  virtual bool test(Handle handle, size_t* bytes) = 0;
};

class MpiTransport final : public Transport {
 public:
  MpiTransport(MPI_Comm comm, int tag);
  ~MpiTransport() override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Handle post_send(int peer, const void* data, size_t bytes) override;
  Handle post_recv(int peer, void* data, size_t capacity) override;
  bool test(Handle handle, size_t* bytes) override;

  // The tag of the messages posted from now on.
  void set_tag(int tag) { tag_ = tag; }
  // Bytes of every send posted so far (relays included).
  uint64_t bytes_sent() const { return bytes_sent_; }

 private:
  MPI_Comm comm_;
  int tag_, rank_ = 0, size_ = 1;
  uint64_t bytes_sent_ = 0;
  std::map<Handle, MPI_Request> requests_;
  Handle next_ = 0;
};

// In-process ranks for tests: a send completes only when the receiver's
// matching receive has copied it (as a rendezvous MPI send does), so a
// buffer reused too early is caught.
class LoopbackNetwork {
 public:
  explicit LoopbackNetwork(int ranks) : ranks_(ranks) {}
  std::unique_ptr<Transport> endpoint(int rank);

 private:
  friend class LoopbackTransport;
  struct Message {
    const void* data;
    size_t bytes;
    bool delivered = false;
  };
  int ranks_;
  // Pending messages per (from, to), in posting order.
  std::map<std::pair<int, int>, std::deque<std::shared_ptr<Message>>> queues_;
};

}  // namespace cmpi::comm::device
