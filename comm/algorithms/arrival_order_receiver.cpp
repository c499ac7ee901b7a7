#include "comm/algorithms/arrival_order_receiver.h"

#include <thread>

#include "comm/algorithms/codec_steps.h"

namespace cmpi::comm {

void ArrivalOrderReceiver::add(std::unique_ptr<IncomingTransfer> in, float* out) {
  entries_.push_back({std::move(in), out});
}

bool ArrivalOrderReceiver::poll() {
  progress_.poll();
  bool decoded = false;
  for (Entry& entry : entries_) {
    size_t k = 0;
    while (entry.transfer->poll_next(k)) {
      entry.transfer->decode(k, entry.out + entry.transfer->shape().chunk_offset(k));
      decoded = true;
    }
  }
  return decoded;
}

void ArrivalOrderReceiver::drain() {
  auto all_done = [&] {
    for (const Entry& entry : entries_)
      if (!entry.transfer->done()) return false;
    return true;
  };
  while (!all_done()) {
    double start = MPI_Wtime();
    if (!poll()) {
      // Nothing arrived: let ranks sharing this core run (oversubscribed jobs).
      std::this_thread::yield();
      add_wire_seconds(ctx_, MPI_Wtime() - start);
    }
  }
}

}  // namespace cmpi::comm
