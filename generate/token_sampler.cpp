#include "generate/token_sampler.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace cmpi::generate {

void check_sampling_options(const SamplingOptions& o) {
  if (!(o.temperature >= 0.0) || !std::isfinite(o.temperature))
    throw std::invalid_argument("--temperature must be 0 (greedy) or positive, got " +
                                std::to_string(o.temperature));
  if (o.top_k < 0)
    throw std::invalid_argument("--top-k must be 0 (all tokens) or positive, got " +
                                std::to_string(o.top_k));
  if (!(o.top_p > 0.0 && o.top_p <= 1.0))
    throw std::invalid_argument("--top-p must lie in (0, 1], got " + std::to_string(o.top_p));
}

std::string describe(const SamplingOptions& o) {
  if (o.temperature == 0.0) return "greedy";
  std::ostringstream out;
  out << "temperature " << o.temperature;
  if (o.top_k > 0) out << ", top-k " << o.top_k;
  if (o.top_p < 1.0) out << ", top-p " << o.top_p;
  return out.str();
}

TokenSampler::TokenSampler(const SamplingOptions& options)
    : options_(options), generator_(at::make_generator<at::CPUGeneratorImpl>(options.seed)) {
  check_sampling_options(options_);
}

int64_t TokenSampler::next(const torch::Tensor& logits) {
  if (options_.temperature == 0.0) return logits.argmax().item<int64_t>();
  auto scaled = logits.to(torch::kFloat) / options_.temperature;
  const float minus_infinity = -std::numeric_limits<float>::infinity();
  if (options_.top_k > 0 && options_.top_k < scaled.size(0)) {
    const auto kth = std::get<0>(scaled.topk(options_.top_k)).min();
    scaled = scaled.masked_fill(scaled < kth, minus_infinity);
  }
  if (options_.top_p < 1.0) {
    const auto [sorted, order] = scaled.sort(/*dim=*/0, /*descending=*/true);
    const auto probabilities = sorted.softmax(0);
    // A token is dropped when the tokens above it already reach p; the
    // highest is always kept.
    const auto above = probabilities.cumsum(0) - probabilities;
    const auto dropped_sorted = above >= options_.top_p;
    const auto dropped = torch::zeros_like(dropped_sorted).scatter(0, order, dropped_sorted);
    scaled = scaled.masked_fill(dropped, minus_infinity);
  }
  return torch::multinomial(scaled.softmax(0), 1, /*replacement=*/false, generator_)
      .item<int64_t>();
}

}  // namespace cmpi::generate
