// Seeded float data for codec tests: Gaussian values, a smooth signal with
// noise in its lowest mantissa bits, and floats from raw bit patterns.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace cmpi::testing {

inline float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline std::vector<float> gaussian(size_t n, float sigma, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// n N(0, 1) values drawn from `rng`, which goes on from where they end.
inline std::vector<float> gaussian(std::mt19937_64& rng, size_t n) {
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

// A slowly varying signal with a little seeded noise in the last mantissa bits.
inline std::vector<float> smooth(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    float x = static_cast<float>(std::sin(0.001 * double(i)) + 2.0);
    std::memcpy(&bits, &x, 4);
    v[i] = from_bits(bits ^ static_cast<uint32_t>(rng() & 3));
  }
  return v;
}

}  // namespace cmpi::testing
