#include "trainer/device_memory.h"

#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>

namespace cmpi::trainer {

DeviceMemoryPeak device_memory_peak(int cuda_device) {
  if (cuda_device < 0) return {};
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(c10::DeviceIndex(cuda_device));
  const auto all = size_t(c10::CachingAllocator::StatType::AGGREGATE);
  return {stats.allocated_bytes[all].peak, stats.reserved_bytes[all].peak};
}

uint64_t device_free_bytes(int cuda_device) {
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(cuda_device) != cudaSuccess)
    return 0;
  size_t free = 0, total = 0;
  const bool known = cudaMemGetInfo(&free, &total) == cudaSuccess;
  cudaSetDevice(previous);
  return known ? uint64_t(free) : 0;
}

}  // namespace cmpi::trainer
