#include "bench/bench_dataset.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "io/float32_file.h"

namespace cmpi::bench {
namespace {

bool host_is_little_endian() {
  const uint32_t probe = 1;
  uint8_t first = 0;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

void swap_bytes(std::vector<float>& values) {
  for (float& v : values) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v, 4);
    bits = (bits >> 24) | ((bits >> 8) & 0xff00u) | ((bits << 8) & 0xff0000u) | (bits << 24);
    std::memcpy(&v, &bits, 4);
  }
}

// Uniform in (0, 1]: never 0, so log() below stays finite.
double open_unit(std::mt19937_64& rng) {
  return (double(rng() >> 11) + 1.0) * 0x1.0p-53;
}

}  // namespace

Dataset make_gaussian_dataset(size_t n, uint64_t seed) {
  Dataset data;
  data.name = "gaussian";
  data.source = "N(0,1), seed " + std::to_string(seed);
  data.values.resize(n);
  std::mt19937_64 rng(seed);
  const double two_pi = 6.283185307179586476925;
  for (size_t i = 0; i < n; i += 2) {
    double radius = std::sqrt(-2.0 * std::log(open_unit(rng)));
    double angle = two_pi * open_unit(rng);
    data.values[i] = float(radius * std::cos(angle));
    if (i + 1 < n) data.values[i + 1] = float(radius * std::sin(angle));
  }
  return data;
}

size_t f32_file_elements(const std::string& path) {
  return io::float32_file_layout(path).elements;
}

Dataset load_f32_dataset(const std::string& name, const std::string& path, size_t max_elements) {
  const io::Float32FileLayout layout = io::float32_file_layout(path);
  if (layout.raw)
    std::fprintf(stderr,
                 "warning: data file '%s' has no tensor header (io/tensor_file.h); reading it as "
                 "raw little-endian float32\n",
                 path.c_str());
  const size_t total = layout.elements;
  const size_t count = (max_elements != 0 && total > max_elements) ? max_elements : total;
  Dataset data;
  data.name = name;
  data.source = path;
  data.values = io::read_float32_values(path, layout, count);
  if (!host_is_little_endian()) swap_bytes(data.values);
  if (count < total)
    data.source += " (first " + std::to_string(count) + " of " + std::to_string(total) + " values)";
  return data;
}

DatasetStats compute_stats(const std::vector<float>& values) {
  DatasetStats stats;
  double sum_squares = 0;
  size_t finite = 0;
  stats.min = std::numeric_limits<double>::infinity();
  stats.max = -std::numeric_limits<double>::infinity();
  for (float v : values) {
    if (!std::isfinite(v)) {
      ++stats.nonfinite;
      continue;
    }
    ++finite;
    sum_squares += double(v) * v;
    stats.min = std::min(stats.min, double(v));
    stats.max = std::max(stats.max, double(v));
  }
  if (finite == 0) {
    stats.min = stats.max = 0;
    return stats;
  }
  stats.rms = std::sqrt(sum_squares / double(finite));
  return stats;
}

std::string dataset_name_from_path(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = base.rfind('.');
  if (dot != std::string::npos && dot > 0) base = base.substr(0, dot);
  return base.empty() ? path : base;
}

}  // namespace cmpi::bench
