#include "data/synthetic_images.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace cmpi::data {
namespace {

constexpr double kPi = 3.14159265358979323846;

// SplitMix64's mixer: a bijective, well-spread hash of a 64-bit counter.
uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A uniform double in (0, 1) from 53 bits of a hash.
double unit(uint64_t bits) {
  return (double(bits >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

}  // namespace

SyntheticImages::SyntheticImages(const SyntheticImageOptions& options)
    : options_(options), size_(options.image_size) {
  auto fail = [](const std::string& field, const std::string& why) {
    throw std::invalid_argument("synthetic images: " + field + " " + why);
  };
  if (options.image_size < 1)
    fail("image_size", "must be >= 1, got " + std::to_string(options.image_size));
  if (options.channels < 1)
    fail("channels", "must be >= 1, got " + std::to_string(options.channels));
  if (options.classes < 2) fail("classes", "must be >= 2, got " + std::to_string(options.classes));
  if (!(options.noise >= 0) || !std::isfinite(options.noise))
    fail("noise", "must be a finite number >= 0, got " + std::to_string(options.noise));
}

uint64_t SyntheticImages::sample_key(ImageSplit split, int64_t index) const {
  const uint64_t salt = split == ImageSplit::kTrain ? 0x7472616e : 0x76616c69;
  return mix(mix(options_.seed ^ salt) ^ uint64_t(index));
}

int64_t SyntheticImages::label(ImageSplit split, int64_t index) const {
  return int64_t(mix(sample_key(split, index)) % uint64_t(options_.classes));
}

void SyntheticImages::fill(ImageSplit split, int64_t index, float* pixels) const {
  const uint64_t key = sample_key(split, index);
  const int64_t y = label(split, index);
  const double theta = kPi * double(y) / double(options_.classes);
  const double frequency = 1.0 + double(y % 3);
  const double phase = 2 * kPi * unit(mix(key ^ 0x70686173));
  const double step = 2 * kPi * frequency / double(size_);
  const double dx = std::cos(theta) * step, dy = std::sin(theta) * step;
  uint64_t counter = mix(key ^ 0x6e6f6973);
  for (int64_t ch = 0; ch < options_.channels; ++ch) {
    // Each class lights the channels differently (never all dark).
    const double gain =
        0.6 + 0.4 * std::cos(2 * kPi * double(ch + y) / double(options_.channels + 1));
    for (int64_t r = 0; r < size_; ++r)
      for (int64_t c = 0; c < size_; ++c) {
        // Box-Muller from two counter-based uniforms.
        const double u1 = unit(mix(counter++)), u2 = unit(mix(counter++));
        const double gauss = std::sqrt(-2 * std::log(u1)) * std::cos(2 * kPi * u2);
        const double signal = gain * std::sin(dx * double(c) + dy * double(r) + phase);
        *pixels++ = float(signal + options_.noise * gauss);
      }
  }
}

}  // namespace cmpi::data
