// Receives several transfers from different peers at once and decodes their
// chunks in the order they arrive, whichever peer they come from (alltoall,
// halo exchange), so that a slow peer does not hold up decoding the others.
#pragma once

#include <memory>
#include <vector>

#include "comm/algorithms/chunk_transfer.h"

namespace cmpi::comm {

class ArrivalOrderReceiver {
 public:
  ArrivalOrderReceiver(CompressedContext& ctx, Progress& progress)
      : ctx_(ctx), progress_(progress) {}

  // Receives transfer `in` into out[0..in.shape().total_elems).
  void add(std::unique_ptr<IncomingTransfer> in, float* out);
  // Polls the call's progress, then decodes every chunk that has arrived;
  // never blocks. True if it decoded any.
  bool poll();
  // Decodes until every transfer is complete; time spent waiting counts as
  // wire seconds.
  void drain();

 private:
  struct Entry {
    std::unique_ptr<IncomingTransfer> transfer;
    float* out;
  };
  CompressedContext& ctx_;
  Progress& progress_;
  std::vector<Entry> entries_;
};

}  // namespace cmpi::comm
