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
// rank + k, receive from rank - k); p2p send and receive. Reduce-scatter
// runs round the ring and all-reduce is that ring followed by the
// all-gather (device_ring_collectives.cpp); broadcast runs along a chain
// whose ranks relay the compressed chunks (device_chain_broadcast.cpp).
// With a lossless codec (or plain) each equals the CPU collective
// (comm/algorithms) bit for bit; with a lossy codec every rank ends with the
// same bits, as on the CPU.
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

  // out[displ(r) .. + counts[r]) = rank r's in[0..counts[r]) (a lossy codec:
  // as decoded, on rank r too, like the CPU ring all-gather).
  void allgather(const float* in, float* out, const std::vector<uint64_t>& counts, StreamId caller);
  // Block to rank r: in[send_displ(r) .. + send_counts[r]); from rank r into
  // out[recv_displ(r) .. + recv_counts[r]).
  void alltoall(const float* in, const std::vector<uint64_t>& send_counts, float* out,
                const std::vector<uint64_t>& recv_counts, StreamId caller);
  // out[0..counts[rank]) = the sum over ranks of their in[displ(rank) ..],
  // segment j summed in the CPU ring's order x[j+1] + x[j+2] + ... + x[j].
  void reduce_scatter(const float* in, float* out, const std::vector<uint64_t>& counts,
                      StreamId caller);
  // data[0..n) = the sum over ranks, in place; the CPU ring all-reduce's
  // segments (n / size, the first n % size one longer) and summation order.
  void allreduce(float* data, uint64_t n, StreamId caller);
  // data[0..n) = root's data on every rank (a lossy codec: the root's data
  // as decoded, on the root too).
  void broadcast(float* data, uint64_t n, int root, StreamId caller);
  void send(const float* data, uint64_t n, int dest, StreamId caller);
  void recv(float* data, uint64_t n, int source, StreamId caller);

  const DeviceCodec* codec() const { return codec_.get(); }

 private:
  // With a lossy codec, replaces data[0..n) by what its peers decode from
  // it (the pipeline's chunks encoded and decoded on `caller`); blocks.
  void round_trip_in_place(float* data, uint64_t n, StreamId caller);

  // Device scratch kept across calls (work queued on `caller` may still use
  // it when a call returns); grows after `caller` has drained.
  float* workspace(size_t index, uint64_t floats, StreamId caller);

  Device& device_;
  Transport& transport_;
  compress::cuda::DeviceBuffer workspaces_[4];
  compress::cuda::PinnedBuffer round_trip_host_;  // round_trip_in_place's sizes and statuses
  std::unique_ptr<DeviceCodec> codec_;
  StagingOptions options_;
  StagingPipeline pipeline_;
};

}  // namespace cmpi::comm::device
