// The peak FLOP/s per rank that MFU divides by (run.peak_flops):
//   auto   the rate measured at start-up: on the CPU ranks this runtime
//          trains on, the BLAS probe's GEMM in the run's precision
//          (trainer/blas_probe.h), the best a matmul reaches on this core;
//   a device name from the table below, for a run whose ranks are those
//          devices (or to quote MFU against one): its datasheet's dense
//          (no structured sparsity) tensor rate for training.precision;
//   a number, FLOP/s per rank ("312e12").
// Table (NVIDIA datasheets, dense, TFLOP/s; held by the device profiles of
// plan/device_profile.h, a100 being a100-80gb's): fp32 / tf32 / bf16 / fp16:
//   v100  15.7 / -     / -     / 125     (SXM2; no bf16, no tf32)
//   a100  19.5 / 156   / 312   / 312     (SXM and PCIe alike)
//   h100  67   / 494.7 / 989.4 / 989.4   (SXM5)
//   h200  67   / 494.7 / 989.4 / 989.4   (the H100's compute, more memory)
// An fp32 run is held against the plain fp32 rate: LibTorch's matmuls use
// TF32 only when a program allows it, and this one does not.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config_enums.h"

namespace cmpi::plan {

struct PeakFlops {
  double flops_per_second = 0;  // 0: measured at start-up (auto)
  std::string source;           // "a100 bf16 datasheet", "run.peak_flops", ...
};

// The names the table knows, for errors and docs.
std::vector<std::string> known_devices();

// run.peak_flops resolved for `precision`. Throws std::invalid_argument
// saying why (an unknown device, a device without that precision, a number
// that is not positive); its message does not name the key.
PeakFlops resolve_peak_flops(const std::string& spec, config::Precision precision);

}  // namespace cmpi::plan
