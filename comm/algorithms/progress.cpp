#include "comm/algorithms/progress.h"

#include <algorithm>
#include <thread>

#include "comm/algorithms/chunk_transfer.h"
#include "comm/algorithms/codec_steps.h"

namespace cmpi::comm {

Progress::~Progress() {
  // Only reached with requests pending when an exception unwound the call.
  for (size_t i = first_pending_; i < requests_.size(); ++i) {
    if (requests_[i] == MPI_REQUEST_NULL) continue;
    if (is_receive_[i]) MPI_Cancel(&requests_[i]);
    MPI_Request_free(&requests_[i]);
  }
}

Progress::RequestId Progress::track(MPI_Request request, bool is_receive) {
  requests_.push_back(request);
  statuses_.emplace_back();
  is_receive_.push_back(is_receive ? 1 : 0);
  return requests_.size() - 1;
}

bool Progress::test(RequestId id) {
  if (done(id)) return true;
  int flag = 0;
  MPI_Test(&requests_[id], &flag, &statuses_[id]);
  return flag != 0;
}

void Progress::wait(RequestId id) {
  if (done(id)) return;
  double start = MPI_Wtime();
  for (;;) {
    poll();
    if (done(id)) break;
    // Nothing for us yet: let ranks sharing this core run (oversubscribed jobs).
    std::this_thread::yield();
  }
  add_wire_seconds(ctx_, MPI_Wtime() - start);
}

void Progress::listen(IncomingTransfer* transfer) {
  waiting_first_.push_back(transfer);
}

void Progress::forget(IncomingTransfer* transfer) {
  waiting_first_.erase(std::remove(waiting_first_.begin(), waiting_first_.end(), transfer),
                       waiting_first_.end());
}

void Progress::poll() {
  last_poll_ = MPI_Wtime();
  while (first_pending_ < requests_.size() && requests_[first_pending_] == MPI_REQUEST_NULL)
    ++first_pending_;
  const int count = int(requests_.size() - first_pending_);
  if (count > 0) {
    completed_indices_.resize(size_t(count));
    completed_statuses_.resize(size_t(count));
    int completed = 0;
    MPI_Testsome(count, requests_.data() + first_pending_, &completed, completed_indices_.data(),
                 completed_statuses_.data());
    if (completed != MPI_UNDEFINED)
      for (int i = 0; i < completed; ++i)
        statuses_[first_pending_ + size_t(completed_indices_[size_t(i)])] =
            completed_statuses_[size_t(i)];
  }

  // A transfer may look for its first chunk only once every earlier transfer
  // from the same source has posted all its receives: until then the next
  // message from that source may still be one of theirs.
  std::vector<int> blocked_sources;
  for (size_t i = 0; i < waiting_first_.size();) {
    IncomingTransfer* transfer = waiting_first_[i];
    const int source = transfer->source();
    if (std::find(blocked_sources.begin(), blocked_sources.end(), source) !=
        blocked_sources.end()) {
      ++i;
    } else if (transfer->try_start()) {
      waiting_first_.erase(waiting_first_.begin() + std::ptrdiff_t(i));
    } else {
      blocked_sources.push_back(source);
      ++i;
    }
  }
}

void Progress::poll_if_due() {
  if (MPI_Wtime() - last_poll_ >= kPollIntervalSeconds) poll();
}

}  // namespace cmpi::comm
