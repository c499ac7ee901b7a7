// BLAS probe: which BLAS library LibTorch's matrix products run on, and how
// fast one GEMM is on this rank, so that a slow BLAS is reported before it
// skews every figure of a run.
//
// PyTorch's wheels (the project's LibTorch) carry MKL inside libtorch_cpu; the
// probe reads that from LibTorch's build configuration (BLAS_INFO=mkl). A
// LibTorch built against an external BLAS (Debian's calls whatever
// libblas.so.3 resolves to, an alternatives link) runs on the library it
// finds: the reference BLAS runs a 512x256x1024 GEMM at ~3 GFLOP/s on a
// modern core, OpenBLAS at ~40. The probe then finds the loaded library by
// walking the process's shared objects (dl_iterate_phdr) and resolving its
// real path. Either way it times a GEMM of that shape through LibTorch.
#pragma once

#include <string>

#include "config/config_enums.h"

namespace cmpi::trainer {

struct BlasReport {
  std::string path;  // real path of the loaded BLAS, empty if none was found
  std::string name;  // "OpenBLAS 0.3.21 ...", "reference BLAS", ...
  bool reference = false;
  double gemm_gflops = 0;  // best of up to 20 512x256x1024 float GEMMs
  int threads = 1;
  // The same GEMM in bf16 when the run computes in bf16 (0: not measured).
  // fp16 runs are emulated in float32 arithmetic on the CPU: their matmuls
  // run at the float rate.
  double bf16_gemm_gflops = 0;
  // The rate of the run's precision: MFU's peak under run.peak_flops auto.
  double run_precision_gflops() const {
    return bf16_gemm_gflops > 0 ? bf16_gemm_gflops : gemm_gflops;
  }
};

// Sets LibTorch's intra-op threads to `threads` and measures (~10 ms on
// OpenBLAS, ~0.5 s on the reference BLAS), in float and, for a bf16 run, in
// bf16.
BlasReport probe_blas(int threads, config::Precision precision = config::Precision::kFp32);

// "blas: OpenBLAS 0.3.21 (/usr/lib/.../libblas.so.3), GEMM 512x256x1024: 38.1 GFLOP/s on 1
// thread", then " | bf16: 20.4 GFLOP/s" when bf16 was measured.
std::string describe(const BlasReport& report);

// A multi-line warning when the reference BLAS is in use, else "".
std::string reference_blas_warning(const BlasReport& report);

}  // namespace cmpi::trainer
