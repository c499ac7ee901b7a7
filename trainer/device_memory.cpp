#include "trainer/device_memory.h"

#include <c10/cuda/CUDACachingAllocator.h>

namespace cmpi::trainer {

DeviceMemoryPeak device_memory_peak(int cuda_device) {
  if (cuda_device < 0) return {};
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::DeviceIndex(cuda_device));
  const auto all = size_t(c10::CachingAllocator::StatType::AGGREGATE);
  return {stats.allocated_bytes[all].peak, stats.reserved_bytes[all].peak};
}

}  // namespace cmpi::trainer
