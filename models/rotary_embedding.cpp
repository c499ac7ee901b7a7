// The angles are computed once in double precision and rounded to float, so
// they do not depend on how a platform's float sin/cos round for large p·θ.
#include "models/rotary_embedding.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace cmpi::models {

namespace {

// Llama 3's frequency scaling (as its release describes it): with the
// original context C, wavelengths 2π/θ shorter than C / high_freq_factor
// keep their θ, those longer than C / low_freq_factor are divided by
// `factor`, and those between blend the two linearly in C / wavelength.
torch::Tensor scaled_for_longer_context(const torch::Tensor& theta, const RopeScaling& s) {
  if (!(s.factor > 0)) return theta;
  if (!(s.high_freq_factor > s.low_freq_factor) || s.original_max_positions <= 0)
    throw std::invalid_argument(
        "rotary embedding: model.rope_high_freq_factor must exceed model.rope_low_freq_factor "
        "and model.rope_original_max_positions must be positive");
  const double context = double(s.original_max_positions);
  const auto wavelength = 2.0 * M_PI / theta;
  const auto smooth =
      (context / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  const auto blended = (1.0 - smooth) * theta / s.factor + smooth * theta;
  return torch::where(
      wavelength < context / s.high_freq_factor, theta,
      torch::where(wavelength > context / s.low_freq_factor, theta / s.factor, blended));
}

}  // namespace

RotaryEmbedding::RotaryEmbedding(int64_t head_dim, int64_t dims, double base, int64_t max_positions,
                                 const RopeScaling& scaling)
    : head_dim_(head_dim), dims_(dims) {
  if (dims <= 0 || dims % 2 != 0 || dims > head_dim)
    throw std::invalid_argument(
        "rotary embedding: the rotating dimensions per head (head_dim " + std::to_string(head_dim) +
        " x model.rotary_pct) must be even and positive, got " + std::to_string(dims));
  if (!(base > 1.0))
    throw std::invalid_argument("rotary embedding: model.rotary_base must exceed 1, got " +
                                std::to_string(base));
  const auto pair = torch::arange(dims / 2, torch::kDouble);
  const auto inverse_wavelength =
      scaled_for_longer_context(torch::pow(base, -2.0 * pair / double(dims)), scaling);  // θ_i
  const auto angles =
      torch::outer(torch::arange(max_positions, torch::kDouble), inverse_wavelength);
  cos_ = angles.cos().to(torch::kFloat);
  sin_ = angles.sin().to(torch::kFloat);
}

torch::Tensor RotaryEmbedding::apply(const torch::Tensor& x, int64_t first_position) const {
  const int64_t time = x.size(-2), half = dims_ / 2;
  if (x.size(-1) != head_dim_ || first_position < 0 || first_position + time > cos_.size(0))
    throw std::invalid_argument("rotary embedding: input " + c10::str(x.sizes()) + " at position " +
                                std::to_string(first_position) + " does not fit head_dim " +
                                std::to_string(head_dim_) + " and " + std::to_string(cos_.size(0)) +
                                " positions");
  const auto cos = cos_.narrow(0, first_position, time), sin = sin_.narrow(0, first_position, time);
  const auto first = x.narrow(-1, 0, half), second = x.narrow(-1, half, half);
  std::vector<torch::Tensor> parts{first * cos - second * sin, second * cos + first * sin};
  if (dims_ < head_dim_) parts.push_back(x.narrow(-1, dims_, head_dim_ - dims_));
  return torch::cat(parts, -1);
}

void RotaryEmbedding::to(const torch::Device& device) {
  cos_ = cos_.to(device);
  sin_ = sin_.to(device);
}

}  // namespace cmpi::models
