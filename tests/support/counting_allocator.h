// CountingAllocator: counts every LibTorch CPU allocation while installed
// (live and peak bytes), so tests can measure memory claims instead of
// estimating them. CountedAllocations installs one for a scope; it must
// outlive every tensor allocated while it was installed (their release
// reports to it), so create it before them.
#pragma once

#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <cstdint>

namespace cmpi::testing {

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) {}
  c10::DataPtr allocate(size_t n) const override {
    auto* context = new Context{base_->allocate(n), n, this};
    const int64_t now = live_ += int64_t(n);
    int64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    void* data = context->inner.get();
    const auto device = context->inner.device();
    return {data, context, &Context::release, device};
  }
  int64_t peak() const { return peak_; }
  void reset() { peak_ = live_.load(); }
  int64_t live() const { return live_; }

 private:
  struct Context {
    c10::DataPtr inner;
    size_t bytes;
    const CountingAllocator* owner;
    static void release(void* p) {
      auto* context = static_cast<Context*>(p);
      context->owner->live_ -= int64_t(context->bytes);
      delete context;
    }
  };
  c10::Allocator* base_;
  mutable std::atomic<int64_t> live_{0}, peak_{0};
};

// Installs a CountingAllocator for the scope; the previous allocator comes
// back afterwards (a higher priority each time, as c10 requires).
class CountedAllocations {
 public:
  CountedAllocations() : previous_(c10::GetCPUAllocator()), counting_(previous_) {
    c10::SetCPUAllocator(&counting_, ++priority_);
  }
  ~CountedAllocations() { c10::SetCPUAllocator(previous_, ++priority_); }
  int64_t peak_above_start() const { return counting_.peak() - start_; }
  void start() {
    counting_.reset();
    start_ = counting_.live();
  }

 private:
  static inline uint8_t priority_ = 10;
  c10::Allocator* previous_;
  CountingAllocator counting_;
  int64_t start_ = 0;
};

}  // namespace cmpi::testing
