// What run.peak_flops: auto divides MFU by on a CUDA run: the rate of one
// large GEMM in the run's precision on the rank's GPU, measured at start-up
// (the CPU run's figure is the BLAS probe's, trainer/blas_probe.h).
#pragma once

#include <torch/torch.h>

#include "config/config_enums.h"

namespace cmpi::trainer {

// FLOP/s of an n x n x n product (bf16/fp16 in 16 bits with float32
// accumulation, fp32 in float32), the best of 5 timings of 4 products after
// a warm-up; `device` must be a CUDA device.
double device_gemm_flops(const torch::Device& device, config::Precision precision,
                         int64_t n = 8192);

}  // namespace cmpi::trainer
