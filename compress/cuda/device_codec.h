// DeviceCodec: a codec whose input, payload and output live in device
// memory and whose work is queued on a caller's stream. Payloads are the
// CPU codec's format byte for byte (a device rank's payload decodes on a CPU
// rank and back), so the spec is the CPU codec's too: each device codec
// builds its CPU twin from the spec, which validates it and supplies the
// header parameters.
//
// Codecs that run on a device (Device::make_codec):
//   zfp   mode rate (impl native's bytes), nonfinite: raw;
//   mpc   any dim and chunk; each chunk's plan is chosen as the CPU
//         chooses it, so the payload equals MpcCodec's (threads and simd,
//         which change only the CPU's speed, are ignored);
//   fp16, bf16;
//   sign  with error feedback through DeviceSignFeedback (device_sign_feedback.h).
//
// Nothing is read back to the host: the payload size is written to a device
// word, and decoding writes a DeviceDecodeStatus word instead of throwing
// (the caller copies it back with the data and calls check_decode_status).
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "compress/codec.h"
#include "compress/cuda/device.h"
#include "compress/cuda/payload_header_steps.h"

namespace cmpi::compress::cuda {

class DeviceCodec {
 public:
  virtual ~DeviceCodec() = default;

  virtual const Codec& cpu_twin() const = 0;
  const CodecSpec& spec() const { return cpu_twin().spec(); }
  bool lossless() const { return cpu_twin().lossless(); }

  // Upper bound on the payload for n floats (the device encoder may need
  // more room than the CPU codec's max_encoded_bytes: it lays chunks out raw
  // before it knows their sizes).
  virtual uint64_t max_payload_bytes(uint64_t n) const = 0;

  // Queues on `stream`: encodes device in[0..n) into device out (room for
  // max_payload_bytes(n)) and writes the payload's size to the device word
  // *size_out.
  virtual void encode(const float* in, uint64_t n, uint8_t* out, uint64_t* size_out,
                      StreamId stream) = 0;

  // Queues on `stream`: decodes the device payload in[0..size) into device
  // out[0..n) and writes a DeviceDecodeStatus to the device word *status_out
  // (out is left unspecified unless it is kDecodeOk).
  virtual void decode(const uint8_t* in, uint64_t size, float* out, uint64_t n,
                      uint32_t* status_out, StreamId stream) = 0;

  // Error feedback on the device (ErrorFeedback's rule, error_feedback.h):
  // encodes in + residual (in alone when `first`, the key's first use) and
  // leaves in the device buffer residual[0..n) what the payload lost. Only
  // codecs with has_feedback(); a failed encode writes size 0.
  virtual bool has_feedback() const { return false; }
  virtual void encode_with_feedback(const float* in, uint64_t n, float* residual, bool first,
                                    uint8_t* out, uint64_t* size_out, StreamId stream);
};

// Throws DecodeError naming the codec and what the device decoder refused,
// for a status word copied back to the host.
void check_decode_status(uint32_t status, const DeviceCodec& codec);

// The header template (payload_header_steps.h) of the CPU codec for n floats.
HeaderTemplate header_template(const Codec& codec, uint64_t n);

// Per-stream device scratch of a codec: work queued on one stream is ordered,
// so each stream gets its own buffer; a buffer grows only after its stream
// has drained (the work queued before may still be using the old one).
class StreamScratch {
 public:
  explicit StreamScratch(Device& device) : device_(device) {}
  uint8_t* get(StreamId stream, size_t bytes) {
    DeviceBuffer& buffer = buffers_[stream];
    if (buffer.bytes() < bytes) {
      device_.synchronize_stream(stream);
      buffer = DeviceBuffer(device_, bytes);
    }
    return buffer.as<uint8_t>();
  }

 private:
  Device& device_;
  std::map<StreamId, DeviceBuffer> buffers_;
};

}  // namespace cmpi::compress::cuda
