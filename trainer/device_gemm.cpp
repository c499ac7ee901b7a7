#include "trainer/device_gemm.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace cmpi::trainer {

double device_gemm_flops(const torch::Device& device, config::Precision precision, int64_t n) {
  if (!device.is_cuda())
    throw std::logic_error("device_gemm_flops: " + device.str() + " is not a CUDA device");
  const auto dtype = precision == config::Precision::kBf16   ? torch::kBFloat16
                     : precision == config::Precision::kFp16 ? torch::kHalf
                                                             : torch::kFloat;
  const auto options = torch::TensorOptions().dtype(dtype).device(device);
  const auto a = torch::randn({n, n}, options), b = torch::randn({n, n}, options);
  constexpr int kProducts = 4;
  const auto run = [&] {
    for (int i = 0; i < kProducts; ++i) (void)torch::mm(a, b);
    torch::cuda::synchronize(device.index());
  };
  run();  // warm-up: cuBLAS's handle and workspace, the clocks
  double best = 1e30;
  for (int t = 0; t < 5; ++t) {
    const auto start = std::chrono::steady_clock::now();
    run();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 2.0 * double(n) * double(n) * double(n) * kProducts / best;
}

}  // namespace cmpi::trainer
