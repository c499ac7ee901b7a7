// CountingAllocator: counts every LibTorch CPU allocation while installed
// (live and peak bytes), so tests can measure memory claims instead of
// estimating them. CountedAllocations installs one for a scope; it must
// outlive every tensor allocated while it was installed (their release
// reports to it), so create it before them.
#pragma once

#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <cstdint>
#include <new>

namespace cmpi::testing {

class CountingAllocator final : public c10::Allocator {
 public:
  // `base` must support raw allocation (raw_deleter(): LibTorch's default
  // CPU allocator does).
  explicit CountingAllocator(c10::Allocator* base) : base_(base) {}
  // Each block carries a header before the data (who counted it, its size,
  // how to free it), so the data pointer is its own context, as
  // Allocator::raw_allocate requires (some CPU kernels, e.g. GeLU's, use it).
  c10::DataPtr allocate(size_t n) override {
    auto* block = static_cast<char*>(base_->raw_allocate(n + kHeader));
    new (block) Header{this, n, base_->raw_deleter()};
    const int64_t now = live_ += int64_t(n);
    int64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    void* data = block + kHeader;
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
  int64_t peak() const { return peak_; }
  void reset() { peak_ = live_.load(); }
  int64_t live() const { return live_; }

 private:
  struct Header {
    const CountingAllocator* owner;
    size_t bytes;
    c10::DeleterFnPtr base_release;
  };
  static constexpr size_t kHeader = 64;  // keeps the data 64-byte aligned
  static_assert(sizeof(Header) <= kHeader, "header fits");
  static void release(void* data) {
    if (!data) return;
    char* block = static_cast<char*>(data) - kHeader;
    const Header header = *reinterpret_cast<Header*>(block);
    header.owner->live_ -= int64_t(header.bytes);
    header.base_release(block);
  }
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
  int64_t live() const { return counting_.live(); }
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
