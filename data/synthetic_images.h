// SyntheticImages: labelled images that carry a learnable signal, generated
// on demand from (seed, split, sample index) alone, so every data-parallel
// split of a global batch sees exactly the images one rank would.
//
// Image i of a split has label y = hash(seed, split, i) mod classes and holds
// an oriented sine grating whose orientation and frequency depend on y:
//   pixel(ch, r, c) = gain(y, ch) · sin(2π f_y (c cos θ_y + r sin θ_y) / S + φ_i)
//                     + noise · N(0, 1)
// with θ_y = π y / classes, f_y = 1 + (y mod 3) cycles per image side, a
// per-image random phase φ_i and a per-class channel gain, so neither a
// single pixel nor the mean intensity gives the class away: a model has to
// see the pattern. Torch-free: it writes raw floats.
#pragma once

#include <cstdint>

namespace cmpi::data {

enum class ImageSplit { kTrain, kValid };

struct SyntheticImageOptions {
  uint64_t seed = 42;
  int64_t image_size = 16;  // S: square images S x S
  int64_t channels = 3;
  int64_t classes = 10;
  double noise = 0.5;  // standard deviation of the added Gaussian noise
};

class SyntheticImages {
 public:
  // Throws std::invalid_argument naming the field for a size, channel or
  // class count < 1 (classes < 2) or a negative or non-finite noise.
  explicit SyntheticImages(const SyntheticImageOptions& options);

  int64_t pixels_per_image() const { return options_.channels * size_ * size_; }
  const SyntheticImageOptions& options() const { return options_; }

  int64_t label(ImageSplit split, int64_t index) const;
  // Writes image `index` of `split` as [channels, S, S] float32 into `pixels`
  // (pixels_per_image() values).
  void fill(ImageSplit split, int64_t index, float* pixels) const;

 private:
  uint64_t sample_key(ImageSplit split, int64_t index) const;

  SyntheticImageOptions options_;
  int64_t size_;
};

}  // namespace cmpi::data
