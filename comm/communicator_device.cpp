// Communicator calls on device buffers (MemoryKind::kDevice,
// communicator.h). How it works:
//   1. attach_device duplicates the group's communicator for the device
//      traffic (named after the group, for the watchdog) and keeps one
//      MpiTransport on it; nothing else is allocated until a call needs it.
//   2. Each call asks the policy slice the question the host call asks (op,
//      role, bytes, locality), so both memory kinds follow the same rules
//      and presets. The route's codec spec picks the device codec of the
//      same name (Device::make_codec); the plain staged collective serves a
//      raw route, a route with error feedback (its residuals live in host
//      memory, keyed by host buffers: not on the device yet) and a codec
//      with no device implementation (block_sparse, topk, zfp accuracy
//      mode, ...).
//   3. One DeviceCollectives per (device codec or plain, chunk size), made
//      on first use and kept: its pipeline's streams and pinned slots are
//      reused by every later call of that route. Chunks are the route's
//      chunk_elems, the CPU path's chunking, so a device zfp payload is the
//      CPU's chunk for chunk and a device rank's results equal a host
//      rank's bit for bit.
//   4. Each call goes through the Communicator's one dispatch
//      (communicator_dispatch.h) as the host calls do: watched ("device
//      <op>"), routed, then run here, the device transport, and charged to
//      CommStats as the host call is:
//      calls, raw bytes by the same formula, compressed_calls when a device
//      codec ran, wire bytes as the transport counted them (payload bytes,
//      relays included), split by locality; a plain staged call's time is
//      all wire time. Not recorded for device buffers: codec seconds (they
//      run on the device's streams), the sampled error (it would read the
//      data back), and preset auto's measurements (the call runs the
//      candidate chosen so far but does not feed the model).
// Collectives use tag 0 of the device communicator; a p2p message with tag
// t uses t + 1, so the two never match each other.
#include <mpi.h>

#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "comm/call_accounting.h"
#include "comm/communicator.h"
#include "comm/device/device_collectives.h"
#include "comm/device/transport.h"
#include "comm/watchdog.h"

namespace cmpi::comm {

using compress::cuda::StreamId;
using device::DeviceCollectives;

struct Communicator::DeviceRoutes {
  DeviceRoutes(compress::cuda::Device& device, StreamId stream, MPI_Comm device_comm)
      : device(device), stream(stream), comm(device_comm), transport(device_comm, 0) {
    int* upper = nullptr;
    int found = 0;
    MPI_Comm_get_attr(device_comm, MPI_TAG_UB, &upper, &found);
    tag_upper_bound = found ? *upper : 32767;
  }
  ~DeviceRoutes() {
    // The collectives wait for their streams; the communicator goes after.
    by_key.clear();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }

  // The collectives of a route (nullptr: no rule matched); *compressing
  // says whether a device codec runs.
  DeviceCollectives& collectives_for(const PolicySlice::Route* route, bool* compressing) {
    const uint64_t chunk = route && route->chunk_elems > 0 ? route->chunk_elems
                                                           : device::StagingOptions{}.chunk_floats;
    const bool wants_codec = route && route->codec && !route->feedback;
    const std::string spec = wants_codec ? route->codec->spec().to_string() : std::string();
    if (wants_codec) {
      const std::string key = spec + "|" + std::to_string(chunk);
      auto found = by_key.find(key);
      if (found == by_key.end() && !no_device_codec.count(spec)) {
        const compress::CodecSpec parsed = route->codec->spec();
        try {
          found = by_key
                      .emplace(key, std::make_unique<DeviceCollectives>(device, transport, &parsed,
                                                                        options(chunk)))
                      .first;
        } catch (const compress::CodecError&) {
          no_device_codec.insert(spec);  // asked once per codec, not per call
        }
      }
      if (found != by_key.end()) {
        *compressing = true;
        return *found->second;
      }
    }
    *compressing = false;
    const std::string key = "plain|" + std::to_string(chunk);
    auto found = by_key.find(key);
    if (found == by_key.end())
      found = by_key
                  .emplace(key, std::make_unique<DeviceCollectives>(device, transport, nullptr,
                                                                    options(chunk)))
                  .first;
    return *found->second;
  }

  static device::StagingOptions options(uint64_t chunk) {
    device::StagingOptions options;
    options.chunk_floats = chunk;
    return options;
  }

  compress::cuda::Device& device;
  StreamId stream;
  MPI_Comm comm;
  device::MpiTransport transport;
  int tag_upper_bound = 32767;
  std::map<std::string, std::unique_ptr<DeviceCollectives>> by_key;
  std::set<std::string> no_device_codec;
};

void Communicator::DeviceRoutesDeleter::operator()(DeviceRoutes* routes) const {
  delete routes;
}

void Communicator::attach_device(compress::cuda::Device& device, StreamId stream) {
  if (device_routes_)
    throw std::logic_error(std::string("group ") + to_string(kind_) +
                           ": attach_device called twice (one device per communicator)");
  WatchedCall watched("attach_device", comm_);
  MPI_Comm device_comm;
  MPI_Comm_dup(comm_, &device_comm);
  MPI_Comm_set_name(device_comm, to_string(kind_));
  device_routes_.reset(new DeviceRoutes(device, stream, device_comm));
}

void Communicator::check_device_tag(const CallSpec& call, int tag) const {
  if (tag < 0)
    throw std::invalid_argument(std::string("group ") + to_string(kind_) + ": " + call.operation +
                                " tag " + std::to_string(tag) + " is negative");
  if (device_routes_ && tag >= device_routes_->tag_upper_bound)
    throw std::invalid_argument(std::string("group ") + to_string(kind_) + ": " + call.operation +
                                " tag " + std::to_string(tag) + " exceeds the device tags' bound " +
                                std::to_string(device_routes_->tag_upper_bound - 1));
}

void Communicator::on_device(const CallSpec& call, const Route* found, CallRecord& record,
                             int p2p_tag, bool is_receive,
                             const std::function<void(DeviceCollectives&, StreamId)>& run) {
  DeviceRoutes& routes = *device_routes_;
  routes.transport.set_tag(p2p_tag >= 0 ? p2p_tag + 1 : 0);
  bool compressing = false;
  DeviceCollectives& collectives = routes.collectives_for(found, &compressing);

  OpCounters& counters = record.counters();
  record.compressed();  // seconds, locality split
  if (!is_receive) {    // a receive adds time only: its sender counts the call
    counters.calls += 1;
    counters.raw_bytes += call.raw_bytes;
    if (compressing) counters.compressed_calls += 1;
  }
  const uint64_t sent_before = routes.transport.bytes_sent();
  const double start = MPI_Wtime();
  run(collectives, routes.stream);
  counters.wire_bytes += routes.transport.bytes_sent() - sent_before;
  if (!compressing) counters.wire_seconds += MPI_Wtime() - start;
}

}  // namespace cmpi::comm
