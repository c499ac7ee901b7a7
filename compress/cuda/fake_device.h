// FakeDevice: a Device whose "device memory" is host memory and whose
// streams are queues of host functions. Nothing queued runs when it is
// queued: work runs only while the host waits (synchronize_*) or polls
// (query runs a few steps first), one operation at a time, taken from a
// stream chosen by a seeded generator among the streams whose next
// operation may run (an event wait may run once its event's record has
// completed). So every interleaving the stream and event rules allow can
// happen, and a missing wait or a host read before a synchronize shows up as
// wrong data in a test, replayable by its seed. A wait that can never be
// satisfied throws std::logic_error instead of hanging.
//
// Kernels run through FakeExecutor: a loop over the indices, queued as one
// operation, calling the same CMPI_HD step the CUDA kernel calls per thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "compress/cuda/device.h"

namespace cmpi::compress::cuda {

class FakeDevice final : public Device {
 public:
  explicit FakeDevice(uint64_t seed);
  ~FakeDevice() override;

  std::string description() const override { return "fake device (host memory)"; }
  void* allocate(size_t bytes) override;
  void release(void* device_pointer) override;
  void* allocate_pinned(size_t bytes) override;
  void release_pinned(void* host_pointer) override;
  StreamId create_stream() override;
  EventId create_event() override;
  void copy_to_host(void* host, const void* device, size_t bytes, StreamId stream) override;
  void copy_to_device(void* device, const void* host, size_t bytes, StreamId stream) override;
  void copy_on_device(void* to, const void* from, size_t bytes, StreamId stream) override;
  void fill(void* device, uint8_t value, size_t bytes, StreamId stream) override;
  void add(float* acc, const float* x, uint64_t n, StreamId stream) override;
  void record(EventId event, StreamId stream) override;
  void wait(StreamId stream, EventId event) override;
  bool query(EventId event) override;
  void synchronize_event(EventId event) override;
  void synchronize_stream(StreamId stream) override;
  std::unique_ptr<DeviceCodec> make_codec(const CodecSpec& spec) override;

  // Queues a host function on a stream (the FakeExecutor's kernels).
  void enqueue(StreamId stream, std::function<void()> work);
  // Operations run so far (tests check that work was deferred).
  uint64_t operations_run() const { return operations_run_; }
  // Whether p lies in memory this device allocated (device or pinned).
  bool owns(const void* p) const;

 private:
  struct Operation {
    std::function<void()> work;  // empty for an event wait
    EventId waits_for = -1;
    uint64_t generation = 0;  // the record generation a wait needs
  };
  struct Event {
    uint64_t recorded = 0;   // generation of the latest record() call
    uint64_t completed = 0;  // generation of the latest completed record
  };
  bool runnable(StreamId stream) const;
  // Runs one operation of a randomly chosen runnable stream; false if none.
  bool step();
  void run_until(const std::function<bool()>& done, const char* what);
  void check_stream(StreamId stream) const;
  void check_event(EventId event) const;

  std::mt19937_64 random_;
  std::vector<std::deque<Operation>> streams_;
  std::vector<Event> events_;
  std::set<std::pair<uintptr_t, size_t>> allocations_;
  uint64_t operations_run_ = 0;
};

// The executor of the device codecs on a FakeDevice.
class FakeExecutor {
 public:
  explicit FakeExecutor(FakeDevice& device) : device_(&device) {}
  template <class F>
  void for_each(StreamId stream, uint64_t count, const F& f) {
    device_->enqueue(stream, [f, count] {
      for (uint64_t i = 0; i < count; ++i) f(i);
    });
  }
  template <class F>
  void single(StreamId stream, const F& f) {
    device_->enqueue(stream, [f] { f(); });
  }

 private:
  FakeDevice* device_;
};

}  // namespace cmpi::compress::cuda
