// FakeDevice (fake_device.h). Memory is plain new[]; copies and fills are
// queued memcpy/memset; a record is an operation that marks its generation
// complete; a wait is an operation that may only run once that generation
// has completed.
#include "compress/cuda/fake_device.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "compress/cuda/device_codecs.h"
#include "compress/cuda/reduce_steps.h"

namespace cmpi::compress::cuda {

FakeDevice::FakeDevice(uint64_t seed) : random_(seed) {}

FakeDevice::~FakeDevice() {
  for (const auto& [address, bytes] : allocations_) delete[] reinterpret_cast<uint8_t*>(address);
}

void* FakeDevice::allocate(size_t bytes) {
  auto* p = new uint8_t[bytes];
  std::memset(p, 0xa5, bytes);  // not zero: code must not rely on fresh memory
  allocations_.insert({reinterpret_cast<uintptr_t>(p), bytes});
  return p;
}

void FakeDevice::release(void* device_pointer) {
  auto found = allocations_.lower_bound({reinterpret_cast<uintptr_t>(device_pointer), 0});
  if (found == allocations_.end() || found->first != reinterpret_cast<uintptr_t>(device_pointer))
    throw std::logic_error("fake device: release of memory it did not allocate");
  delete[] reinterpret_cast<uint8_t*>(found->first);
  allocations_.erase(found);
}

void* FakeDevice::allocate_pinned(size_t bytes) {
  return allocate(bytes);
}
void FakeDevice::release_pinned(void* host_pointer) {
  release(host_pointer);
}

bool FakeDevice::owns(const void* p) const {
  const auto address = reinterpret_cast<uintptr_t>(p);
  auto after = allocations_.upper_bound({address, SIZE_MAX});
  if (after == allocations_.begin()) return false;
  --after;
  return address < after->first + after->second;
}

StreamId FakeDevice::create_stream() {
  streams_.emplace_back();
  return static_cast<StreamId>(streams_.size() - 1);
}

EventId FakeDevice::create_event() {
  events_.emplace_back();
  return static_cast<EventId>(events_.size() - 1);
}

void FakeDevice::check_stream(StreamId stream) const {
  if (stream < 0 || static_cast<size_t>(stream) >= streams_.size())
    throw std::logic_error("fake device: no stream " + std::to_string(stream));
}
void FakeDevice::check_event(EventId event) const {
  if (event < 0 || static_cast<size_t>(event) >= events_.size())
    throw std::logic_error("fake device: no event " + std::to_string(event));
}

void FakeDevice::enqueue(StreamId stream, std::function<void()> work) {
  check_stream(stream);
  streams_[size_t(stream)].push_back(Operation{std::move(work), -1, 0});
}

// A device accepts copies and fills of 0 bytes at any address (a null one
// included); the C library's memcpy/memset do not, so those are skipped.
void FakeDevice::copy_to_host(void* host, const void* device, size_t bytes, StreamId stream) {
  enqueue(stream, [=] {
    if (bytes) std::memcpy(host, device, bytes);
  });
}
void FakeDevice::copy_to_device(void* device, const void* host, size_t bytes, StreamId stream) {
  enqueue(stream, [=] {
    if (bytes) std::memcpy(device, host, bytes);
  });
}
void FakeDevice::copy_on_device(void* to, const void* from, size_t bytes, StreamId stream) {
  enqueue(stream, [=] {
    if (bytes) std::memmove(to, from, bytes);
  });
}
void FakeDevice::fill(void* device, uint8_t value, size_t bytes, StreamId stream) {
  enqueue(stream, [=] {
    if (bytes) std::memset(device, value, bytes);
  });
}
void FakeDevice::add(float* acc, const float* x, uint64_t n, StreamId stream) {
  FakeExecutor(*this).for_each(stream, n, AddInto{acc, x});
}

void FakeDevice::record(EventId event, StreamId stream) {
  check_event(event);
  const uint64_t generation = ++events_[size_t(event)].recorded;
  enqueue(stream, [this, event, generation] {
    Event& e = events_[size_t(event)];
    if (generation > e.completed) e.completed = generation;
  });
}

void FakeDevice::wait(StreamId stream, EventId event) {
  check_stream(stream);
  check_event(event);
  streams_[size_t(stream)].push_back(Operation{{}, event, events_[size_t(event)].recorded});
}

bool FakeDevice::runnable(StreamId stream) const {
  const auto& queue = streams_[size_t(stream)];
  if (queue.empty()) return false;
  const Operation& next = queue.front();
  return next.work || events_[size_t(next.waits_for)].completed >= next.generation;
}

bool FakeDevice::step() {
  std::vector<StreamId> ready;
  for (size_t s = 0; s < streams_.size(); ++s)
    if (runnable(StreamId(s))) ready.push_back(StreamId(s));
  if (ready.empty()) return false;
  const StreamId chosen = ready[random_() % ready.size()];
  Operation op = std::move(streams_[size_t(chosen)].front());
  streams_[size_t(chosen)].pop_front();
  if (op.work) op.work();
  ++operations_run_;
  return true;
}

void FakeDevice::run_until(const std::function<bool()>& done, const char* what) {
  while (!done()) {
    if (!step())
      throw std::logic_error(std::string("fake device: ") + what +
                             " can never complete: every queued operation waits for an event "
                             "that no queued operation records");
  }
}

bool FakeDevice::query(EventId event) {
  check_event(event);
  // The device makes some progress between two polls of the host.
  for (uint64_t k = random_() % 4; k > 0 && step(); --k) {
  }
  const Event& e = events_[size_t(event)];
  return e.completed >= e.recorded;
}

void FakeDevice::synchronize_event(EventId event) {
  check_event(event);
  run_until([&] { return events_[size_t(event)].completed >= events_[size_t(event)].recorded; },
            "synchronize_event");
}

void FakeDevice::synchronize_stream(StreamId stream) {
  check_stream(stream);
  run_until([&] { return streams_[size_t(stream)].empty(); }, "synchronize_stream");
}

std::unique_ptr<DeviceCodec> FakeDevice::make_codec(const CodecSpec& spec) {
  return make_device_codec(*this, FakeExecutor(*this), spec);
}

}  // namespace cmpi::compress::cuda
