// How a device tensor crosses a group today: the Communicator's calls from
// the training stack take host memory (its device-buffer calls, MemoryKind::
// kDevice, are not yet ordered with LibTorch's CUDA streams), so a tensor on
// a GPU travels through a host copy and the result goes back to its device.
// Copies to and from pageable host memory are synchronous with LibTorch's
// current stream: the values are final when they return. On the CPU these
// are the tensors themselves (no copy beyond what the caller made before).
#pragma once

#include <torch/torch.h>

namespace cmpi::parallel {

// x's values in contiguous host memory the caller only reads: x itself
// (made contiguous) on the CPU, a copy from a device.
inline torch::Tensor host_contiguous(const torch::Tensor& x) {
  return x.is_cpu() ? x.contiguous() : x.to(torch::kCPU).contiguous();
}

// A contiguous host copy of x the caller may overwrite.
inline torch::Tensor host_copy(const torch::Tensor& x) {
  return x.is_cpu() ? x.clone(torch::MemoryFormat::Contiguous) : x.to(torch::kCPU).contiguous();
}

// A host result back on `device` (itself for the CPU).
inline torch::Tensor on_device(const torch::Tensor& host, const torch::Device& device) {
  return device.is_cpu() ? host : host.to(device);
}

}  // namespace cmpi::parallel
