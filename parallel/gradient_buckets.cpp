#include "parallel/gradient_buckets.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace cmpi::parallel {

GradientBuckets::GradientBuckets(std::vector<torch::Tensor> parameters, int64_t bucket_bytes)
    : parameters_(std::move(parameters)) {
  if (bucket_bytes < int64_t(sizeof(float)))
    throw std::invalid_argument("gradient bucket size must hold at least one float");
  const int64_t bucket_elements = bucket_bytes / int64_t(sizeof(float));
  Bucket current;
  for (size_t i = parameters_.size(); i-- > 0;) {
    const auto& p = parameters_[i];
    if (p.scalar_type() != torch::kFloat)
      throw std::invalid_argument("gradient buckets hold float32 parameters only");
    const int64_t n = p.numel();
    if (current.elements > 0 && current.elements + n > bucket_elements) {
      buckets_.push_back(std::move(current));
      current = Bucket();
    }
    current.parameters.push_back(i);
    current.elements += n;
    total_elements_ += n;
  }
  if (current.elements > 0) buckets_.push_back(std::move(current));
  int64_t largest = 0;
  for (const auto& b : buckets_) largest = std::max(largest, b.elements);
  buffer_.resize(size_t(largest));
}

void GradientBuckets::allreduce(comm::Communicator& group) {
  torch::NoGradGuard no_grad;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const Bucket& bucket = buckets_[b];
    float* cursor = buffer_.data();
    for (size_t i : bucket.parameters) {
      auto& p = parameters_[i];
      const int64_t n = p.numel();
      if (p.grad().defined()) {
        auto g = p.grad().contiguous();
        std::memcpy(cursor, g.data_ptr<float>(), size_t(n) * sizeof(float));
      } else {
        std::fill(cursor, cursor + n, 0.0f);
      }
      cursor += n;
    }
    group.allreduce(buffer_.data(), size_t(bucket.elements), comm::Role::kGradient);
    cursor = buffer_.data();
    for (size_t i : bucket.parameters) {
      auto& p = parameters_[i];
      const int64_t n = p.numel();
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      auto view = torch::from_blob(cursor, p.sizes(), torch::kFloat);
      p.grad().copy_(view);
      cursor += n;
    }
  }
}

}  // namespace cmpi::parallel
