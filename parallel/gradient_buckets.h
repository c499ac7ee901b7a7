// GradientBuckets: averages gradients over the data-parallel group in
// buckets. Parameters are visited in reverse registration order (the order
// backward produces their gradients), packed into one flat float buffer per
// bucket of at most `bucket_bytes` (a larger tensor gets a bucket of its
// own), summed with one allreduce per bucket through the group's policy (role
// `gradient`, buffer key = bucket index so error feedback keeps one residual
// per bucket) and unpacked. Callers scale their losses so that the sum over
// ranks is the mean gradient.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "comm/communicator.h"

namespace cmpi::parallel {

class GradientBuckets {
 public:
  GradientBuckets(std::vector<torch::Tensor> parameters, int64_t bucket_bytes);

  // Sums every parameter's gradient over `group`, in place. Parameters with
  // no gradient yet contribute zeros (and receive the sum).
  void allreduce(comm::Communicator& group);

  size_t bucket_count() const { return buckets_.size(); }
  int64_t element_count() const { return total_elements_; }

 private:
  struct Bucket {
    std::vector<size_t> parameters;  // indices into parameters_
    int64_t elements = 0;
  };

  std::vector<torch::Tensor> parameters_;
  std::vector<Bucket> buckets_;
  std::vector<float> buffer_;
  int64_t total_elements_ = 0;
};

}  // namespace cmpi::parallel
