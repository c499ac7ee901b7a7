#include "data/blended_sample_order.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace cmpi::data {

BlendedSampleOrder blend_samples(const std::vector<double>& weights, int64_t total_samples) {
  double sum = 0;
  for (double w : weights) {
    if (!(w >= 0) || !std::isfinite(w))
      throw std::invalid_argument("blend weights must be finite and >= 0");
    sum += w;
  }
  if (weights.empty() || !(sum > 0))
    throw std::invalid_argument("blend weights must add up to more than 0");
  std::vector<double> normalised(weights.size());
  for (size_t d = 0; d < weights.size(); ++d) normalised[d] = weights[d] / sum;

  BlendedSampleOrder order;
  order.samples_per_dataset.assign(weights.size(), 0);
  order.dataset.resize(size_t(std::max<int64_t>(total_samples, 0)));
  order.dataset_sample.resize(order.dataset.size());
  for (size_t i = 0; i < order.dataset.size(); ++i) {
    const double so_far = std::max(double(i), 1.0);
    size_t lagging = 0;
    double largest_lag = -INFINITY;
    for (size_t d = 0; d < weights.size(); ++d) {
      const double lag = normalised[d] * so_far - double(order.samples_per_dataset[d]);
      if (lag > largest_lag) {
        largest_lag = lag;
        lagging = d;
      }
    }
    order.dataset[i] = int32_t(lagging);
    order.dataset_sample[i] = order.samples_per_dataset[lagging]++;
  }
  return order;
}

}  // namespace cmpi::data
