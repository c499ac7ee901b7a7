// MpiTransport and LoopbackTransport (transport.h).
#include "comm/device/transport.h"

#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>

namespace cmpi::comm::device {

MpiTransport::MpiTransport(MPI_Comm comm, int tag) : comm_(comm), tag_(tag) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
}

MpiTransport::~MpiTransport() {
  for (auto& [handle, request] : requests_) {
    MPI_Cancel(&request);
    MPI_Request_free(&request);
  }
}

namespace {
int message_count(size_t bytes) {
  if (bytes > size_t(INT_MAX))
    throw std::invalid_argument("device staging: a message of " + std::to_string(bytes) +
                                " bytes exceeds MPI's int count; use smaller chunks");
  return int(bytes);
}
}  // namespace

Transport::Handle MpiTransport::post_send(int peer, const void* data, size_t bytes) {
  MPI_Request request;
  MPI_Isend(data, message_count(bytes), MPI_BYTE, peer, tag_, comm_, &request);
  bytes_sent_ += bytes;
  requests_[next_] = request;
  return next_++;
}

Transport::Handle MpiTransport::post_recv(int peer, void* data, size_t capacity) {
  MPI_Request request;
  MPI_Irecv(data, message_count(capacity), MPI_BYTE, peer, tag_, comm_, &request);
  requests_[next_] = request;
  return next_++;
}

bool MpiTransport::test(Handle handle, size_t* bytes) {
  auto found = requests_.find(handle);
  if (found == requests_.end()) throw std::logic_error("MpiTransport: unknown handle");
  int done = 0;
  MPI_Status status;
  MPI_Test(&found->second, &done, &status);
  if (!done) return false;
  if (bytes) {
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    *bytes = size_t(count);
  }
  requests_.erase(found);
  return true;
}

class LoopbackTransport final : public Transport {
 public:
  LoopbackTransport(LoopbackNetwork& network, int rank) : network_(network), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return network_.ranks_; }
  Handle post_send(int peer, const void* data, size_t bytes) override {
    auto message =
        std::make_shared<LoopbackNetwork::Message>(LoopbackNetwork::Message{data, bytes});
    network_.queues_[{rank_, peer}].push_back(message);
    operations_[next_] = Operation{message, nullptr, 0, -1};
    return next_++;
  }
  Handle post_recv(int peer, void* data, size_t capacity) override {
    operations_[next_] = Operation{nullptr, data, capacity, peer};
    order_[peer].push_back(next_);
    return next_++;
  }
  bool test(Handle handle, size_t* bytes) override {
    auto found = operations_.find(handle);
    if (found == operations_.end()) throw std::logic_error("LoopbackTransport: unknown handle");
    Operation& op = found->second;
    if (op.sent) {
      if (!op.sent->delivered) return false;
      operations_.erase(found);
      return true;
    }
    // Receives match messages in posting order: only the oldest pending one.
    auto& mine = order_[op.peer];
    auto& queue = network_.queues_[{op.peer, rank_}];
    if (mine.front() != handle || queue.empty()) return false;
    auto message = queue.front();
    if (message->bytes > op.capacity)
      throw std::runtime_error("LoopbackTransport: message larger than the receive buffer");
    std::memcpy(op.data, message->data, message->bytes);
    message->delivered = true;
    queue.pop_front();
    mine.pop_front();
    if (bytes) *bytes = message->bytes;
    operations_.erase(found);
    return true;
  }

 private:
  struct Operation {
    std::shared_ptr<LoopbackNetwork::Message> sent;
    void* data;
    size_t capacity;
    int peer;
  };
  LoopbackNetwork& network_;
  int rank_;
  std::map<Handle, Operation> operations_;
  std::map<int, std::deque<Handle>> order_;
  Handle next_ = 0;
};

std::unique_ptr<Transport> LoopbackNetwork::endpoint(int rank) {
  return std::make_unique<LoopbackTransport>(*this, rank);
}

}  // namespace cmpi::comm::device
