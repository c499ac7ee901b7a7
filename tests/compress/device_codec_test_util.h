// Runs a device codec on a FakeDevice for the CPU tests: copies host data
// in, queues encode or decode on a stream, synchronizes and copies back.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "compress/cuda/device_codec.h"
#include "compress/cuda/fake_device.h"

namespace cmpi::compress::cuda::testing {

inline std::vector<uint8_t> device_encode(Device& device, DeviceCodec& codec,
                                          const std::vector<float>& in, StreamId stream) {
  const uint64_t n = in.size();
  DeviceBuffer input(device, 4 * n + 4), payload(device, codec.max_payload_bytes(n) + 4),
      size(device, 8);
  PinnedBuffer size_host(device, 8);
  device.copy_to_device(input.as(), in.data(), 4 * n, stream);
  codec.encode(input.as<float>(), n, payload.as(), size.as<uint64_t>(), stream);
  device.copy_to_host(size_host.as(), size.as(), 8, stream);
  device.synchronize_stream(stream);
  std::vector<uint8_t> out(*size_host.as<uint64_t>());
  PinnedBuffer bytes(device, out.size() + 1);
  device.copy_to_host(bytes.as(), payload.as(), out.size(), stream);
  device.synchronize_stream(stream);
  if (!out.empty()) std::memcpy(out.data(), bytes.as(), out.size());
  return out;
}

// The decoded floats; status gets the device decoder's status word.
inline std::vector<float> device_decode(Device& device, DeviceCodec& codec,
                                        const std::vector<uint8_t>& payload, uint64_t n,
                                        uint32_t& status, StreamId stream) {
  DeviceBuffer input(device, payload.size() + 4), output(device, 4 * n + 4), word(device, 4);
  PinnedBuffer host(device, 4 * n + 4);
  device.copy_to_device(input.as(), payload.data(), payload.size(), stream);
  codec.decode(input.as(), payload.size(), output.as<float>(), n, word.as<uint32_t>(), stream);
  device.copy_to_host(host.as(), output.as(), 4 * n, stream);
  device.copy_to_host(host.as() + 4 * n, word.as(), 4, stream);
  device.synchronize_stream(stream);
  std::memcpy(&status, host.as() + 4 * n, 4);
  std::vector<float> out(n);
  if (n != 0) std::memcpy(out.data(), host.as(), 4 * n);  // data() may be null
  return out;
}

inline std::vector<uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<uint32_t> bits(v.size());
  if (!v.empty()) std::memcpy(bits.data(), v.data(), 4 * v.size());
  return bits;
}

}  // namespace cmpi::compress::cuda::testing
