// StagingPipeline: moves device buffers between ranks through pinned host
// memory, compressed on the device or plain, with the chunks of an operation
// spread over several streams so that one chunk's encode, another's
// device-to-host copy and a third's transfer overlap (the multi-stream design
// of GPU-aware MPI libraries).
//
// How it works. Outgoing buffers are cut into chunks of at most
// chunk_floats; chunk c uses stream c % streams and that stream's pinned
// send slot. Each chunk goes through
//   waiting  -> its slot is free and it is the next chunk for that slot;
//   sized    -> encode and the copy of the size word queued, event recorded
//               (codecs whose size the host knows skip to staged);
//   staged   -> payload copied to the slot, event recorded;
//   sending  -> posted to every peer of the chunk (sends post in chunk
//               order, so peers match them in order), until all complete;
//   done     -> the slot is free for chunk c + streams.
// Incoming chunks take receive slots the same way:
//   waiting -> receiving (posted, in chunk order) -> received -> decoding
//   (host-to-device copy, decode and the status word's copy queued on the
//   slot's stream, event recorded) -> done (status checked; DecodeError if
//   refused). A relayed receive (chain broadcast) also posts the received
//   bytes, still compressed, to the relay peer when it leaves `received`,
//   in chunk order, and frees its slot only once that send has completed.
// Every pipeline stream first waits for an event recorded on the caller's
// stream (the input is ready), and finish() makes the caller's stream wait
// for every pipeline stream (the output is ready). The host never blocks on
// the device inside progress(): it only polls events.
//
// The state machine runs on the host and is tested with FakeDevice and a
// LoopbackNetwork (tests/comm/device_staging_test.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/device/transport.h"
#include "compress/cuda/device.h"
#include "compress/cuda/device_codec.h"

namespace cmpi::comm::device {

using compress::cuda::Device;
using compress::cuda::DeviceCodec;
using compress::cuda::EventId;
using compress::cuda::StreamId;

struct StagingOptions {
  // Streams (and slots) in flight; more overlap, more pinned memory.
  int streams = 4;
  // Floats per chunk: small chunks start the pipeline sooner, large chunks
  // cost fewer launches and messages. Tests use tiny chunks to reach the
  // slot-reuse paths.
  uint64_t chunk_floats = uint64_t{1} << 20;
};

class StagingPipeline {
 public:
  // codec null: plain staging (raw floats through host memory).
  StagingPipeline(Device& device, DeviceCodec* codec, StagingOptions options);
  ~StagingPipeline();

  // Queues an outgoing device buffer, encoded once per chunk and sent to
  // every rank in `peers`.
  void add_send(const std::vector<int>& peers, const float* source, uint64_t n);
  // Queues an incoming device buffer from `peer` (the peer's add_send of the
  // same n, in the same order among the buffers between the two ranks).
  // relay_to >= 0: every chunk's bytes are also sent on to that rank as they
  // arrived (its add_recv from this rank matches them).
  void add_recv(int peer, float* destination, uint64_t n, int relay_to = -1);

  void start(StreamId caller);
  // One nonblocking sweep over the chunks; true once all are done.
  bool progress(Transport& transport);
  void finish(StreamId caller);
  // start, progress until done, finish; then the pipeline is empty again.
  void run(Transport& transport, StreamId caller);

  // What the host did, in order ("encode 3", "send 3 -> 1", "recv 2 <- 0",
  // "decode 2", ...), for tests of the ordering rules.
  const std::vector<std::string>& log() const { return log_; }

 private:
  enum class State { kWaiting, kSized, kStaged, kSending, kReceiving, kReceived, kDecoding, kDone };
  struct Chunk {
    std::vector<int> peers;  // one peer for a receive
    int relay_to = -1;       // receive: where its bytes are passed on
    const float* source = nullptr;
    float* destination = nullptr;
    uint64_t n = 0;
    State state = State::kWaiting;
    uint64_t payload_bytes = 0;
    std::vector<Transport::Handle> handles;
  };
  struct Slot {
    StreamId stream;
    EventId event;
    compress::cuda::PinnedBuffer host;    // 8-byte size or status word, then the payload
    compress::cuda::DeviceBuffer device;  // the payload on the device
    compress::cuda::DeviceBuffer word;    // size (send) or status (receive) word
    int owner = -1;                       // chunk using the slot
  };

  uint64_t slot_payload_bytes() const;
  void advance_send(size_t c, Transport& transport);
  void advance_recv(size_t c, Transport& transport);

  Device& device_;
  DeviceCodec* codec_;
  StagingOptions options_;
  std::vector<Slot> send_slots_, recv_slots_;
  std::vector<Chunk> sends_, recvs_;
  size_t next_send_post_ = 0, next_recv_post_ = 0, next_relay_post_ = 0;
  EventId caller_ready_;
  std::vector<std::string> log_;
};

}  // namespace cmpi::comm::device
