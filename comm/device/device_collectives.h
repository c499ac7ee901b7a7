// DeviceCollectives: collectives on device buffers of one MPI communicator,
// staged through pinned host memory by a StagingPipeline (staging_pipeline.h),
// compressed on the device when a codec is given (a DeviceCodec spec, e.g.
// zfp:rate=16) or plain (the staged baseline). Every buffer argument is a
// device pointer; the memory tag is the type: a Communicator takes host
// floats, a DeviceCollectives device floats. Each call makes `caller` (the
// stream that produced the input) wait for nothing on the host: the pipeline
// streams wait for the caller's stream, and the caller's stream waits for the
// result, so the host returns once the transfers are done and the last
// decodes are queued.
//
// The operations exchange directly (each payload encoded once and posted to
// every peer that needs it): all-gather and all-to-all, in the pairwise
// order that keeps rendezvous sends deadlock-free (step k: send to
// rank + k, receive from rank - k); p2p send and receive.
#pragma once

#include <memory>
#include <vector>

#include "comm/device/staging_pipeline.h"
#include "comm/device/transport.h"

namespace cmpi::comm::device {

class DeviceCollectives {
 public:
  // codec_spec empty: plain staging. The transport carries the messages
  // (MpiTransport on a communicator of its own in production).
  DeviceCollectives(Device& device, Transport& transport, const compress::CodecSpec* codec_spec,
                    StagingOptions options = {});

  int rank() const { return transport_.rank(); }
  int size() const { return transport_.size(); }

  // out[displ(r) .. + counts[r]) = rank r's in[0..counts[r]).
  void allgather(const float* in, float* out, const std::vector<uint64_t>& counts, StreamId caller);
  // Block to rank r: in[send_displ(r) .. + send_counts[r]); from rank r into
  // out[recv_displ(r) .. + recv_counts[r]).
  void alltoall(const float* in, const std::vector<uint64_t>& send_counts, float* out,
                const std::vector<uint64_t>& recv_counts, StreamId caller);
  void send(const float* data, uint64_t n, int dest, StreamId caller);
  void recv(float* data, uint64_t n, int source, StreamId caller);

  const DeviceCodec* codec() const { return codec_.get(); }

 private:
  Device& device_;
  Transport& transport_;
  std::unique_ptr<DeviceCodec> codec_;
  StagingPipeline pipeline_;
};

}  // namespace cmpi::comm::device
