// Datasets the benchmarks run on: seeded synthetic Gaussian floats, and
// float32 tensor files (io/tensor_file.h: gradients and activations captured
// from a run of the project's GPT by scripts/capture_bench_data.sh, or any
// --data file). A file without the tensor header is read as raw little-endian
// float32, the format before the header, with a warning naming it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cmpi::bench {

struct Dataset {
  std::string name;    // "gaussian", "gradients", or a --data file's stem
  std::string source;  // how it was made: "N(0,1) seed 42" or the file path
  std::vector<float> values;
};

// Summary used for the header lines and for data-relative codec settings.
struct DatasetStats {
  double rms = 0;
  double min = 0;
  double max = 0;
  size_t nonfinite = 0;  // NaN or Inf values (counted, excluded from rms/min/max)
};

// n samples of N(0, 1), the same for the same seed on every platform
// (own Box-Muller on a fixed generator, not std::normal_distribution).
Dataset make_gaussian_dataset(size_t n, uint64_t seed);

// Number of floats in a float32 tensor file (or a raw float32 file). Throws
// std::runtime_error naming the file if it cannot be opened, is empty, has a
// header this build does not read (another dtype or version) or one whose
// shape disagrees with the bytes after it, or, raw, its size is not a
// multiple of 4 bytes.
size_t f32_file_elements(const std::string& path);

// Reads up to max_elements floats from a float32 tensor file (or a raw
// little-endian float32 file, with a warning on stderr naming it). Throws
// std::runtime_error naming the file as f32_file_elements does, or if reading
// fails.
Dataset load_f32_dataset(const std::string& name, const std::string& path, size_t max_elements);

DatasetStats compute_stats(const std::vector<float>& values);

// "gradients" for ".../gradients.f32".
std::string dataset_name_from_path(const std::string& path);

}  // namespace cmpi::bench
