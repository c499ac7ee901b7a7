#include "trainer/blas_probe.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <ATen/Version.h>
#include <torch/torch.h>

namespace cmpi::trainer {
namespace {

bool contains(const std::string& s, const char* part) {
  return s.find(part) != std::string::npos;
}

// Shared objects whose file name looks like a BLAS implementation.
int collect_blas(struct dl_phdr_info* info, size_t, void* data) {
  auto* found = static_cast<std::vector<std::string>*>(data);
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
  const std::string file = std::filesystem::path(info->dlpi_name).filename().string();
  if (contains(file, "blas") || contains(file, "mkl_rt") || contains(file, "blis")) {
    std::error_code ec;
    const auto real = std::filesystem::canonical(info->dlpi_name, ec);
    found->push_back(ec ? std::string(info->dlpi_name) : real.string());
  }
  return 0;
}

std::string name_of(const std::string& path, bool& reference) {
  reference = false;
  // The path decides: OpenBLAS's LAPACK may be loaded beside a reference
  // libblas.so.3, so its symbols alone prove nothing about the GEMM.
  if (contains(path, "openblas")) {
    // OpenBLAS says what it is, including the kernel it picked for this CPU.
    using ConfigFn = char* (*)();
    if (auto config = reinterpret_cast<ConfigFn>(dlsym(RTLD_DEFAULT, "openblas_get_config")))
      return std::string("OpenBLAS (") + config() + ")";
    return "OpenBLAS";
  }
  if (contains(path, "mkl")) return "Intel MKL";
  if (contains(path, "blis")) return "BLIS";
  if (contains(path, "atlas")) return "ATLAS";
  if (contains(path, "/blas/")) {
    reference = true;
    return "reference BLAS (netlib)";
  }
  return "unknown BLAS";
}

// The BLAS LibTorch was built against ("mkl", "open", "generic", ...), from
// its build configuration's BLAS_INFO entry; "" if it does not say.
std::string libtorch_blas_info() {
  const std::string config = at::show_config();
  const std::string key = "BLAS_INFO=";
  const size_t at = config.find(key);
  if (at == std::string::npos) return "";
  const size_t end = config.find_first_of(", \n", at + key.size());
  return config.substr(at + key.size(),
                       end == std::string::npos ? std::string::npos : end - at - key.size());
}

// The best of several timings of a x b (512x256 by 256x1024), GFLOP/s. The
// best, and up to 20 of them within a quarter second, because the rate is
// also MFU's peak: on a machine other processes share, a timing the
// scheduler interrupted would understate what the core does.
double best_gemm_gflops(const torch::Tensor& a, const torch::Tensor& b) {
  double best = 0, total = 0;
  const double flops = 2.0 * 512 * 256 * 1024;
  for (int rep = 0; rep < 20; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    const auto c = torch::mm(a, b);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s > 0) best = std::max(best, flops / s / 1e9);
    total += s;
    if (rep >= 1 && (s > 0.2 || total > 0.25)) break;  // a slow BLAS: two timings are enough
  }
  return best;
}

}  // namespace

BlasReport probe_blas(int threads, config::Precision precision) {
  BlasReport report;
  report.threads = std::max(1, threads);
  at::set_num_threads(report.threads);
  // LibTorch loads its BLAS lazily on some builds: one product first.
  auto a = torch::randn({512, 256});
  auto b = torch::randn({256, 1024});
  torch::mm(a, b);
  std::vector<std::string> libraries;
  dl_iterate_phdr(collect_blas, &libraries);
  // PyTorch's wheels link MKL statically into libtorch_cpu: no BLAS object is
  // loaded for it, and one that is (preloaded, or another library's) is not
  // what LibTorch's products call.
  const bool mkl_inside = libtorch_blas_info() == "mkl" &&
                          std::none_of(libraries.begin(), libraries.end(),
                                       [](const std::string& p) { return contains(p, "mkl"); });
  if (mkl_inside) libraries.clear();
  // Prefer the generic libblas.so.3 entry point over helper objects
  // (libgfortran-linked kernels, cblas wrappers) when several are loaded.
  auto chosen = std::find_if(libraries.begin(), libraries.end(),
                             [](const std::string& p) { return contains(p, "libblas"); });
  if (chosen == libraries.end() && !libraries.empty()) chosen = libraries.begin();
  if (chosen != libraries.end()) report.path = *chosen;
  if (mkl_inside)
    report.name = "Intel MKL (linked into LibTorch)";
  else
    report.name = report.path.empty() ? "no BLAS library found (LibTorch's own kernels)"
                                      : name_of(report.path, report.reference);

  report.gemm_gflops = best_gemm_gflops(a, b);
  if (precision == config::Precision::kBf16) {
    const auto a16 = a.to(torch::kBFloat16), b16 = b.to(torch::kBFloat16);
    torch::mm(a16, b16);  // the first bf16 product may pick its kernel
    report.bf16_gemm_gflops = best_gemm_gflops(a16, b16);
  }
  return report;
}

std::string describe(const BlasReport& report) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "blas: %s%s%s%s | GEMM 512x256x1024: %.1f GFLOP/s on %d thread%s",
                report.name.c_str(), report.path.empty() ? "" : " [", report.path.c_str(),
                report.path.empty() ? "" : "]", report.gemm_gflops, report.threads,
                report.threads == 1 ? "" : "s");
  if (report.bf16_gemm_gflops <= 0) return buf;
  char bf16[64];
  std::snprintf(bf16, sizeof bf16, " | bf16: %.1f GFLOP/s", report.bf16_gemm_gflops);
  return std::string(buf) + bf16;
}

std::string reference_blas_warning(const BlasReport& report) {
  if (!report.reference) return "";
  return "WARNING: LibTorch runs on the reference BLAS (" + report.path +
         "), about 10x slower than an optimized one: every step's compute, and so every "
         "throughput figure, is distorted.\nWARNING: install OpenBLAS (`apt-get install "
         "libopenblas0-openmp`, which scripts/setup.sh does) or point libblas.so.3 at it with "
         "`update-alternatives --config libblas.so.3-$(gcc -print-multiarch)`.\n";
}

}  // namespace cmpi::trainer
