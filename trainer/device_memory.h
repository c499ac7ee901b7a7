// The CUDA caching allocator's statistics for the run's device, for the run
// summary's memory object: what a GPU run's memory claims are read from.
#pragma once

#include <cstdint>

namespace cmpi::trainer {

// The most bytes of tensors alive at once on CUDA device `cuda_device` since
// the process started (the caching allocator's peak allocated bytes), and
// the most it held from the driver (reserved). Both 0 for cuda_device < 0
// (a CPU run), without touching CUDA.
struct DeviceMemoryPeak {
  int64_t allocated_bytes = 0;
  int64_t reserved_bytes = 0;
};
DeviceMemoryPeak device_memory_peak(int cuda_device);

// The bytes free on CUDA device `cuda_device` now (cudaMemGetInfo), for the
// memory pre-flight of a GPU run; 0 if the driver does not say.
uint64_t device_free_bytes(int cuda_device);

}  // namespace cmpi::trainer
