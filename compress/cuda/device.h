// Device: the few operations of an accelerator runtime that the device
// codecs and the staged collectives use — device and pinned host memory,
// in-order streams, events that one stream records and another stream (or
// the host) waits for, asynchronous copies and fills. Two implementations:
// CudaDevice (cuda_device.h, built with CMPI_CUDA) and FakeDevice
// (fake_device.h), host memory standing in for device memory, which runs the
// queued work of its streams only when the host waits, in an order it picks,
// so that a missing wait between streams shows up as wrong data in the CPU
// tests.
//
// Every call that names a stream only queues work on it; nothing here blocks
// except the synchronize_* calls and query (which never blocks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "compress/codec_spec.h"

namespace cmpi::compress::cuda {

class DeviceCodec;

using StreamId = int;
using EventId = int;

class Device {
 public:
  virtual ~Device() = default;
  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // One line naming the device (model, memory), for benchmark reports.
  virtual std::string description() const = 0;

  virtual void* allocate(size_t bytes) = 0;  // device memory
  virtual void release(void* device_pointer) = 0;
  virtual void* allocate_pinned(size_t bytes) = 0;  // page-locked host memory
  virtual void release_pinned(void* host_pointer) = 0;

  // Streams and events live as long as the device.
  virtual StreamId create_stream() = 0;
  virtual EventId create_event() = 0;

  virtual void copy_to_host(void* host, const void* device, size_t bytes, StreamId stream) = 0;
  virtual void copy_to_device(void* device, const void* host, size_t bytes, StreamId stream) = 0;
  virtual void copy_on_device(void* to, const void* from, size_t bytes, StreamId stream) = 0;
  virtual void fill(void* device, uint8_t value, size_t bytes, StreamId stream) = 0;
  // acc[i] += x[i] for i < n, both device floats (reduce_steps.h).
  virtual void add(float* acc, const float* x, uint64_t n, StreamId stream) = 0;

  // The event completes when the stream reaches this point.
  virtual void record(EventId event, StreamId stream) = 0;
  // Work queued on `stream` after this call starts only once the event's
  // latest record has completed.
  virtual void wait(StreamId stream, EventId event) = 0;
  // Whether the event's latest record has completed; never blocks.
  virtual bool query(EventId event) = 0;
  virtual void synchronize_event(EventId event) = 0;
  virtual void synchronize_stream(StreamId stream) = 0;

  // A device codec for `spec` (device_codec.h lists the codecs), running on
  // this device's streams. Throws CodecError for a codec it does not run.
  virtual std::unique_ptr<DeviceCodec> make_codec(const CodecSpec& spec) = 0;
};

// Which memory an OwnedMemory holds: the device's, or pinned host memory
// (the staging buffers of the device collectives).
enum class MemoryPlace { kDevice, kPinnedHost };

// Memory of `place` from a Device, freed on scope exit; movable, not copyable.
template <MemoryPlace place>
class OwnedMemory {
 public:
  OwnedMemory() = default;
  OwnedMemory(Device& device, size_t bytes)
      : device_(&device), data_(bytes ? allocate(device, bytes) : nullptr), bytes_(bytes) {}
  ~OwnedMemory() { reset(); }
  OwnedMemory(OwnedMemory&& other) noexcept { *this = std::move(other); }
  OwnedMemory& operator=(OwnedMemory&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_, data_ = other.data_, bytes_ = other.bytes_;
      other.data_ = nullptr, other.bytes_ = 0;
    }
    return *this;
  }
  void reset() {
    if (data_) {
      if (place == MemoryPlace::kDevice)
        device_->release(data_);
      else
        device_->release_pinned(data_);
    }
    data_ = nullptr, bytes_ = 0;
  }
  template <typename T = uint8_t>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }

 private:
  static void* allocate(Device& device, size_t bytes) {
    return place == MemoryPlace::kDevice ? device.allocate(bytes) : device.allocate_pinned(bytes);
  }

  Device* device_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Device memory freed on scope exit.
using DeviceBuffer = OwnedMemory<MemoryPlace::kDevice>;
// Pinned host memory freed on scope exit.
using PinnedBuffer = OwnedMemory<MemoryPlace::kPinnedHost>;

}  // namespace cmpi::compress::cuda
