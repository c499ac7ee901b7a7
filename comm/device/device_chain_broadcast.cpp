// The device chain broadcast (device_collectives.h). Ranks root, root+1,
// ..., root-1 (mod N) form a chain: the root encodes its data chunk by chunk
// and sends each chunk to the next rank; every other rank receives the
// chunks from its predecessor and, as each lands in pinned host memory,
// relays its bytes, still compressed, to its successor before decoding it
// for itself (StagingPipeline::add_recv with relay_to). Nothing is
// re-encoded on the way, so every rank decodes the root's payloads, and
// chunks move down the chain while the ones behind them are still arriving,
// as in the CPU chain (comm/algorithms/chain_broadcast.cpp). With a lossy
// codec the root then replaces its data by the decoded version.
#include <stdexcept>
#include <string>

#include "comm/device/device_collectives.h"

namespace cmpi::comm::device {

void DeviceCollectives::broadcast(float* data, uint64_t n, int root, StreamId caller) {
  const int p = size(), me = rank();
  if (root < 0 || root >= p)
    throw std::invalid_argument("device broadcast: root " + std::to_string(root) +
                                " is not a rank of a group of " + std::to_string(p));
  if (p == 1) return;
  const int position = (me - root + p) % p;
  const int successor = (me + 1) % p, predecessor = (me - 1 + p) % p;
  if (position == 0) {
    pipeline_.add_send({successor}, data, n);
    pipeline_.run(transport_, caller);
    round_trip_in_place(data, n, caller);
    return;
  }
  pipeline_.add_recv(predecessor, data, n, position < p - 1 ? successor : -1);
  pipeline_.run(transport_, caller);
}

}  // namespace cmpi::comm::device
