// CudaExecutor: runs the CMPI_HD steps of the device codecs as kernels on a
// CUDA stream, one thread per index (a grid-stride loop covers any count).
// The functors are plain structs of pointers and sizes, passed by value.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace cmpi::compress::cuda {

template <class F>
__global__ void for_each_index(F f, uint64_t count) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) f(i);
}

template <class F>
__global__ void run_once(F f) {
  f();
}

// Reports a failed launch (bad configuration, no device) by throwing.
void check_launch(const char* what);

class CudaExecutor {
 public:
  // streams[id] is the cudaStream_t of StreamId id (owned by CudaDevice).
  explicit CudaExecutor(const cudaStream_t* streams) : streams_(streams) {}

  template <class F>
  void for_each(int stream, uint64_t count, const F& f) {
    if (count == 0) return;
    constexpr uint32_t kThreads = 256;
    // Enough blocks to fill the device; the grid-stride loop does the rest.
    const uint64_t blocks = (count + kThreads - 1) / kThreads;
    const uint32_t grid = static_cast<uint32_t>(blocks < 65535u * 8 ? blocks : 65535u * 8);
    for_each_index<<<grid, kThreads, 0, streams_[stream]>>>(f, count);
    check_launch("for_each_index");
  }

  template <class F>
  void single(int stream, const F& f) {
    run_once<<<1, 1, 0, streams_[stream]>>>(f);
    check_launch("run_once");
  }

 private:
  const cudaStream_t* streams_;
};

}  // namespace cmpi::compress::cuda
