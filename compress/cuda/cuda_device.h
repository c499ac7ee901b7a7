// The CUDA Device (device.h), built only with CMPI_CUDA: streams, events,
// pinned memory and copies through the CUDA runtime, and the device codecs
// as kernels (cuda_executor.cuh). This header has no CUDA types, so host
// code compiled by g++ uses it.
#pragma once

#include <memory>

#include "compress/cuda/device.h"

namespace cmpi::compress::cuda {

// Devices the CUDA runtime sees (0 when there is no GPU or no driver).
int cuda_device_count();
// Why cuda_device_count() is 0, in words, for test skips and reports.
std::string cuda_unavailable_reason();
// The CUDA device `ordinal` (made current for this thread).
std::unique_ptr<Device> make_cuda_device(int ordinal);

}  // namespace cmpi::compress::cuda
